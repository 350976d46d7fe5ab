//! The gate's decisions, one protocol-neutral table: credentials, publish control,
//! playback protection, the deny list and one owner per name across hubs.

use super::*;
use crate::key::StreamKey;
use std::net::{IpAddr, Ipv4Addr};
use strom_ipc::access_rules::AppAccess;
use strom_ipc::rules::{PlaybackProtection, ProtectedProtocol, PublishControl};
use strom_worker_runtime::{EventSender, play_signature, publish_sign};

const PEER: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7));

fn rules() -> Rules {
    let mut rules = Rules::default();
    rules.access.apps = vec![
        AppAccess {
            app: "secure".into(),
            login: "alice".into(),
            password: "wonder".into(),
            publish_control: None,
        },
        AppAccess {
            app: "signed".into(),
            login: String::new(),
            password: String::new(),
            publish_control: Some(PublishControl {
                password: "pw".into(),
                handler_url: None,
                handler_timeout_ms: 1000,
            }),
        },
    ];
    rules.protection.push(PlaybackProtection {
        app: "paid".into(),
        stream: String::new(),
        keys: vec!["k".into()],
        protocols: ProtectedProtocol::ALL.to_vec(),
        ppv_max_sessions: Some(1),
        skew_secs: 60,
    });
    rules
}

fn gate() -> Gate {
    Gate::new(Hub::default(), Arc::new(rules()), Vec::new())
}

fn info(session_id: u64) -> PublisherInfo {
    PublisherInfo {
        session_id,
        ip: PEER.to_string(),
        publish_time: 0,
        query: String::new(),
        source_url: None,
        relayed_from: None,
        protocol: "RTMP",
        admitted_id: None,
    }
}

/// Admits `access` as a publisher (of an app without a login or publish control) and
/// publishes with `control_id` as its publish-control id.
fn publish(
    gate: &Gate,
    access: &Access,
    control_id: Option<&str>,
    info: PublisherInfo,
) -> Result<Publishing, Refusal> {
    let mut admission = gate.admit_publisher(access)?;
    admission.control_id = control_id.map(str::to_owned);
    let session = sessions::SessionEntry::publisher(
        info.session_id,
        "RTMP",
        &admission,
        PEER,
        tokio_util::sync::CancellationToken::new(),
    );
    gate.publish(&admission, info, gate.sessions().open(session))
}

fn access(protocol: Protocol, app: &str, stream: &str) -> Access {
    Access::new(protocol, StreamKey::new(app, stream), PEER)
}

#[test]
fn an_app_login_applies_to_every_protocol() {
    let gate = gate();
    for protocol in [
        Protocol::Rtmp,
        Protocol::Srt,
        Protocol::Rtsp,
        Protocol::Icecast,
    ] {
        let bare = access(protocol, "secure", "x");
        assert_eq!(gate.admit_publisher(&bare), Err(Refusal::BadAuth));
        let wrong = bare.clone().with_credentials(Credentials::Login {
            login: "alice".into(),
            password: "guess".into(),
        });
        assert_eq!(gate.admit_publisher(&wrong), Err(Refusal::BadAuth));
        let right = bare.clone().with_credentials(Credentials::Login {
            login: "alice".into(),
            password: "wonder".into(),
        });
        assert!(gate.admit_publisher(&right).is_ok());
        let proven = bare.with_credentials(Credentials::Proven);
        assert!(gate.admit_publisher(&proven).is_ok());
    }
    assert!(
        gate.admit_publisher(&access(Protocol::Srt, "live", "x"))
            .is_ok()
    );
    assert_eq!(
        gate.publisher_login("secure"),
        Some(("alice".into(), "wonder".into()))
    );
    assert_eq!(gate.publisher_login("live"), None);
}

#[test]
fn publish_control_signs_and_denies_for_every_protocol() {
    let gate = gate();
    let sign = {
        let s = publish_sign::signature("cam1", "signed", "x", "pw", "");
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(format!("id=cam1&sign={s}"))
    };
    let unsigned = access(Protocol::Rtsp, "signed", "x");
    assert!(matches!(
        gate.admit_publisher(&unsigned),
        Err(Refusal::Denied(_))
    ));
    let signed = unsigned.with_signature(Some(sign));
    let admission = gate.admit_publisher(&signed).unwrap();
    assert_eq!(admission.control_id.as_deref(), Some("cam1"));
    gate.deny(&["cam1".into()]);
    assert!(matches!(
        gate.admit_publisher(&signed),
        Err(Refusal::Denied(_))
    ));
}

#[test]
fn protected_playback_needs_a_signature_over_rtsp_too() {
    let gate = gate();
    for protocol in [Protocol::Rtsp, Protocol::Hls, Protocol::Rtmp, Protocol::Srt] {
        let bare = access(protocol, "paid", "x");
        assert!(matches!(gate.admit_reader(&bare), Err(Refusal::Denied(_))));
    }
    // Signed in 2020 and valid for two centuries: the gate reads the wall clock.
    let (time, minutes) = ("1/1/2020 12:00:00 AM", "100000000");
    let hash = play_signature::hash("ppv-1", "k", time, minutes, "");
    let signature = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(format!(
            "server_time={time}&hash_value={hash}&validminutes={minutes}&id=ppv-1"
        ))
    };
    let signed = access(Protocol::Rtsp, "paid", "x").with_signature(Some(signature));
    let reading = gate.admit_reader(&signed).unwrap();
    assert_eq!(reading.ppv_id.as_deref(), Some("ppv-1"));
    assert!(reading.protected);
    assert!(matches!(
        gate.admit_reader_counting(&signed, |_| 1),
        Err(Refusal::Limit(_))
    ));
    gate.deny(&["ppv-1".into()]);
    assert!(matches!(
        gate.admit_reader(&signed),
        Err(Refusal::Denied(_))
    ));
    let open = gate
        .admit_reader(&access(Protocol::Rtsp, "live", "x"))
        .unwrap();
    assert!(!open.protected);
}

#[test]
fn one_owner_per_name_across_the_hubs_of_a_server() {
    let dir = tempfile::tempdir().unwrap();
    let (events, _received) = EventSender::detached();
    let rtmp = Gate::new(
        Hub::for_worker(events.clone(), dir.path()).unwrap(),
        Arc::new(rules()),
        Vec::new(),
    );
    let rtsp = Gate::new(
        Hub::for_worker(events, dir.path()).unwrap(),
        Arc::new(rules()),
        Vec::new(),
    );
    let owner = access(Protocol::Rtmp, "live", "tv");
    let intruder = access(Protocol::Rtsp, "live", "tv");
    let publishing = publish(&rtmp, &owner, None, info(1)).unwrap();
    assert_eq!(
        publish(&rtsp, &intruder, None, info(2)).err(),
        Some(Refusal::Busy(StreamKey::new("live", "tv")))
    );
    assert_eq!(
        Refusal::Busy(StreamKey::new("live", "tv")).to_string(),
        "live/tv is already being published",
        "the wording RTMP publishers have always got"
    );
    assert!(
        rtsp.hub().get(&intruder.key).is_none(),
        "the refusal left no trace"
    );
    // A relay of the owner's stream into the other worker is not a claim of the name.
    let mut relay = info(3);
    relay.relayed_from = Some("rtmp".into());
    let relayed = rtsp.hub().claim(&intruder.key, relay).unwrap();
    drop(relayed);
    drop(publishing);
    assert!(
        publish(&rtsp, &intruder, None, info(4)).is_ok(),
        "free once released"
    );
}

/// What an origin tells another strom's pull: "not found" only for a name that no
/// worker of the server produces and that reading would not start.
#[test]
fn a_stream_nothing_here_produces_or_starts_cannot_start() {
    let dir = tempfile::tempdir().unwrap();
    let (events, _received) = EventSender::detached();
    let mut with_edge = rules();
    with_edge.edges.push(strom_ipc::rules::EdgeRule {
        apps: vec!["edge".into()],
        origins: vec!["rtmp://origin".into()],
        idle_grace_secs: 10,
    });
    let rtmp = Gate::new(
        Hub::for_worker(events.clone(), dir.path()).unwrap(),
        Arc::new(with_edge.clone()),
        Vec::new(),
    );
    let ingest = Gate::new(
        Hub::for_worker(events, dir.path()).unwrap(),
        Arc::new(with_edge),
        Vec::new(),
    );
    let tv = StreamKey::new("live", "tv");
    assert!(rtmp.cannot_start(&tv) && ingest.cannot_start(&tv));
    assert!(
        !rtmp.cannot_start(&StreamKey::new("edge", "any")),
        "an edge app pulls it"
    );
    let publishing = publish(&rtmp, &access(Protocol::Rtmp, "live", "tv"), None, info(1)).unwrap();
    assert!(!rtmp.cannot_start(&tv), "published in this worker");
    assert!(
        !ingest.cannot_start(&tv),
        "published in another worker of the server"
    );
    drop(publishing);
    assert!(
        rtmp.cannot_start(&tv) && ingest.cannot_start(&tv),
        "released"
    );
}

#[test]
fn stream_requests_are_answered_by_the_gate() {
    let gate = gate();
    let reply = gate.answer(&strom_ipc::messages::WorkerRequest::IcecastMetadata {
        app: "live".into(),
        stream: "absent".into(),
        title: "t".into(),
        url: String::new(),
    });
    assert!(matches!(
        reply.and_then(|r| r.failure().map(|(kind, _)| kind)),
        Some(strom_ipc::FailureKind::NotFound)
    ));
    let _publishing = publish(&gate, &access(Protocol::Rtsp, "live", "on"), None, info(1)).unwrap();
    let reply = gate.answer(&strom_ipc::messages::WorkerRequest::IcecastMetadata {
        app: "live".into(),
        stream: "on".into(),
        title: "t".into(),
        url: String::new(),
    });
    assert_eq!(reply, Some(strom_ipc::messages::WorkerReply::Done));
    assert_eq!(
        gate.answer(&strom_ipc::messages::WorkerRequest::ListSessions),
        None,
        "the worker's own"
    );
}

#[test]
fn stream_and_publisher_lists_are_the_gates() {
    use strom_ipc::messages::{WorkerReply, WorkerRequest};
    let gate = gate();
    let _pushed = publish(
        &gate,
        &access(Protocol::Srt, "live", "pushed"),
        Some("cam-7"),
        PublisherInfo {
            protocol: "SRT",
            ..info(2)
        },
    )
    .unwrap();
    // A configured input claims through the hub: live, but not a publisher that
    // publish control lists.
    let _input = gate
        .hub
        .claim(
            &StreamKey::new("live", "input"),
            PublisherInfo {
                protocol: "MPEGTS",
                ..info(1)
            },
        )
        .unwrap();
    let Some(WorkerReply::Streams(mut streams)) = gate.answer(&WorkerRequest::ListStreams) else {
        panic!("no stream list");
    };
    streams.sort_by(|a, b| a.stream.cmp(&b.stream));
    let listed: Vec<_> = streams
        .iter()
        .map(|s| (s.stream.as_str(), s.protocol.as_str()))
        .collect();
    assert_eq!(listed, [("input", "MPEGTS"), ("pushed", "SRT")]);
    let Some(WorkerReply::Publishers(publishers)) = gate.answer(&WorkerRequest::ListPublishers)
    else {
        panic!("no publisher list");
    };
    assert_eq!(publishers.len(), 1, "{publishers:?}");
    assert_eq!(
        (publishers[0].key.as_str(), publishers[0].id.as_str()),
        ("2", "cam-7")
    );
    assert_eq!(publishers[0].stream, "live/pushed");
}

#[test]
fn an_admitted_reader_reads_the_stream_it_was_admitted_to_and_leaves_when_dropped() {
    let gate = gate();
    let reading = gate
        .admit_reader(&access(Protocol::Rtsp, "live", "open"))
        .unwrap();
    assert_eq!(reading.key(), &StreamKey::new("live", "open"));
    let session = |id| {
        let entry = sessions::SessionEntry::reader(
            id,
            "RTSP",
            &reading,
            PEER,
            tokio_util::sync::CancellationToken::new(),
        );
        gate.sessions().open(entry)
    };
    let reader = gate.read(&reading, Queue, session(7));
    let cursor = gate.read(&reading, Fanout, session(8));
    let listed: Vec<u64> = gate.sessions().list().iter().map(|s| s.id).collect();
    assert_eq!(
        listed,
        [7, 8],
        "a reader's session is listed while it reads"
    );
    assert_eq!(reader.place.id(), 7);
    assert_eq!(gate.hub().reader_count(reading.key()), 2);
    let early = reader.place.leave_handle();
    early.leave_now();
    assert_eq!(gate.hub().reader_count(reading.key()), 1);
    assert!(
        reader.frames.is_closed(),
        "leaving closes the reader's queue"
    );
    drop(reader);
    early.leave_now();
    assert_eq!(
        gate.hub().reader_count(reading.key()),
        1,
        "leaving twice changes nothing"
    );
    drop(cursor);
    assert!(
        gate.hub().get(reading.key()).is_none(),
        "the last reader's place took the stream with it"
    );
}

#[test]
fn merged_session_pages_walk_every_session_of_registry_and_worker_once() {
    use strom_ipc::messages::WorkerReply;
    use strom_ipc::status::SessionInfo;
    let session = |id: u64| SessionInfo {
        id,
        app: "live".into(),
        stream: "s".into(),
        protocol: "RTMP".into(),
        bytes_recv: 0,
        bytes_sent: 0,
        created: 0,
        last_access: 0,
        client_ip: "192.0.2.1".into(),
        user_agent: String::new(),
        ppv_id: None,
        dropped_frames: None,
    };
    // The registry holds the odd ids (and a run of its own), the worker the even ones.
    let registry: Vec<u64> = (1..=99).step_by(2).chain(200..230).collect();
    let worker: Vec<u64> = (2..=100).step_by(2).collect();
    let page = |ids: &[u64], after: u64, limit: u32| {
        strom_ipc::paging::sessions_page(ids.iter().map(|id| (*id, *id)), after, limit, session)
    };
    let mut walked = Vec::new();
    let mut after = 0;
    loop {
        let merged =
            strom_ipc::paging::merge_pages(page(&registry, after, 7), page(&worker, after, 7), 7);
        let WorkerReply::SessionsPage { sessions, more } = merged else {
            panic!("not a page");
        };
        assert!(sessions.len() <= 7);
        walked.extend(sessions.iter().map(|s| s.id));
        match sessions.last() {
            Some(last) if more => after = last.id,
            _ => break,
        }
    }
    let mut every: Vec<u64> = registry.iter().chain(&worker).copied().collect();
    every.sort_unstable();
    assert_eq!(walked, every, "each session once, in order");
}

#[test]
fn the_registry_lists_deletes_and_closes_denied_sessions() {
    use sessions::SessionEntry;
    let gate = gate();
    let key = StreamKey::new("live", "s");
    let entry = |id: u64| {
        SessionEntry::new(
            id,
            "RTMP",
            &key,
            "192.0.2.1",
            tokio_util::sync::CancellationToken::new(),
        )
    };
    let reading = gate
        .admit_reader(&access(Protocol::Rtmp, "live", "s"))
        .unwrap();
    let mut admission = gate
        .admit_publisher(&access(Protocol::Rtmp, "live", "s"))
        .unwrap();
    admission.control_id = Some("cam-1".to_owned());
    let player = gate.sessions().open(entry(1));
    let publisher = SessionEntry::publisher(
        2,
        "RTMP",
        &admission,
        PEER,
        tokio_util::sync::CancellationToken::new(),
    );
    let publisher = gate.sessions().open(publisher.unlisted());
    let ppv = SessionEntry::reader(3, "RTMP", &reading, PEER, Default::default())
        .with_ppv_id(Some("ppv-9".into()));
    let ppv = gate.sessions().open(ppv);
    let listed: Vec<u64> = gate.sessions().list().iter().map(|s| s.id).collect();
    assert_eq!(
        listed,
        [1, 3],
        "an unlisted publisher stays out of the list"
    );
    assert_eq!(gate.sessions().ppv_sessions("ppv-9"), 1);
    let killed: Vec<u64> = gate
        .sessions()
        .kill(&[2, 1, 9])
        .iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(killed, [1], "nor can it be deleted by id");
    assert!(player.kill.is_cancelled() && !publisher.kill.is_cancelled());
    let listed: Vec<u64> = gate.sessions().list().iter().map(|s| s.id).collect();
    assert_eq!(listed, [3], "an ended session is no longer listed");
    let denied = gate
        .sessions()
        .kill_publishers(&["cam-1".to_owned(), "ppv-9".to_owned()]);
    assert_eq!(denied.len(), 2);
    assert!(
        publisher.kill.is_cancelled() && ppv.kill.is_cancelled(),
        "a denied id's sessions close"
    );
    assert_eq!(gate.sessions().ppv_sessions("ppv-9"), 0);
    drop((player, publisher, ppv));
    assert!(gate.sessions().get(1).is_none() && gate.sessions().get(2).is_none());
}

#[test]
fn sessions_end_with_their_handles_and_caps_count_alike_sessions() {
    use sessions::{Caps, SessionEntry};
    let gate = gate();
    let reading = gate
        .admit_reader(&access(Protocol::Rtsp, "live", "h"))
        .unwrap();
    let open = |id| {
        let entry = SessionEntry::reader(id, "RTSP", &reading, PEER, Default::default());
        gate.sessions().open(entry)
    };
    let reader = gate.read(&reading, Queue, open(1));
    assert_eq!(reader.place.session().map(|s| s.id), Some(1));
    assert!(
        reader
            .place
            .session()
            .and_then(|s| s.dropped.get())
            .is_some()
    );
    drop(reader);
    assert!(
        gate.sessions().get(1).is_none(),
        "dropping the reader ends the session"
    );
    let admission = gate
        .admit_publisher(&access(Protocol::Rtsp, "live", "h"))
        .unwrap();
    let session = SessionEntry::publisher(2, "RTSP", &admission, PEER, Default::default());
    let publishing = gate
        .publish(&admission, info(2), gate.sessions().open(session))
        .unwrap();
    assert!(gate.sessions().get(2).is_some());
    // A refused publish ends its session at once.
    let session = SessionEntry::publisher(3, "RTSP", &admission, PEER, Default::default());
    assert!(
        gate.publish(&admission, info(3), gate.sessions().open(session))
            .is_err()
    );
    assert!(gate.sessions().get(3).is_none());
    drop(publishing);
    assert!(
        gate.sessions().get(2).is_none(),
        "dropping the publish ends the session"
    );
    let caps = Caps {
        total: 3,
        per_client: 2,
    };
    let capped = |id, ip: &str| {
        let key = StreamKey::new("live", "h");
        let entry = SessionEntry::new(id, "MPEGTS", &key, ip, Default::default());
        gate.sessions().open_capped(entry, caps)
    };
    let a = capped(10, "10.0.0.1").unwrap();
    let _b = capped(11, "10.0.0.1").unwrap();
    assert!(capped(12, "10.0.0.1").is_none(), "per client");
    let _c = capped(13, "10.0.0.2").unwrap();
    assert!(capped(14, "10.0.0.3").is_none(), "in all");
    // Another protocol's sessions count apart.
    let other = SessionEntry::new(
        15,
        "HLS",
        &StreamKey::new("live", "h"),
        "10.0.0.1",
        Default::default(),
    );
    assert!(gate.sessions().open_capped(other, caps).is_some());
    drop(a);
    assert!(capped(16, "10.0.0.1").is_some());
}

/// The cluster registry's copy: a name another server holds is refused while the copy
/// is current (not while etcd is unreachable), and a publisher whose name the copy then
/// gives to another server is ended, unlisted (RTMP) or not.
#[test]
fn names_held_by_another_server_are_refused_and_their_late_publishers_ended() {
    use strom_ipc::cluster::{ClusterUpdate, StreamEntry};
    let gate = gate();
    let held = |stream: &str, server: &str, connected: bool| ClusterUpdate {
        own_id: Some("me".into()),
        connected,
        streams: vec![StreamEntry {
            app: "live".into(),
            stream: stream.into(),
            server: Some(server.into()),
        }],
        ..ClusterUpdate::default()
    };
    gate.apply_cluster(held("taken", "other", true));
    let refused = publish(
        &gate,
        &access(Protocol::Srt, "live", "taken"),
        None,
        info(1),
    );
    assert!(
        matches!(refused, Err(Refusal::Busy(_))),
        "{:?}",
        refused.err()
    );
    let mine = publish(
        &gate,
        &access(Protocol::Rtmp, "live", "mine"),
        None,
        info(2),
    );
    assert!(mine.is_ok(), "a name nobody else holds is published");

    // etcd unreachable: the last copy refuses nothing.
    gate.apply_cluster(held("taken", "other", false));
    let admitted = publish(
        &gate,
        &access(Protocol::Rtmp, "live", "taken"),
        None,
        info(3),
    );
    assert!(admitted.is_ok(), "{:?}", admitted.as_ref().err());
    let kill = gate.sessions().get(3).unwrap().kill.clone();
    // Back, the registry names the other server: this publisher lost the name.
    gate.apply_cluster(held("taken", "other", true));
    assert!(kill.is_cancelled(), "the publisher of a lost name is ended");
    let own = gate.sessions().get(2).unwrap().kill.clone();
    gate.apply_cluster(held("mine", "me", true));
    assert!(!own.is_cancelled(), "this server's own claim ends nothing");
}
