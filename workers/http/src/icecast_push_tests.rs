#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use bytes::Bytes;
use strom_media::frame::Frame;
use strom_stream::PublisherInfo;
use tokio::net::TcpListener;

fn settings(port: u16) -> IcecastPushSettings {
    IcecastPushSettings {
        app: "live".into(),
        stream: "radio".into(),
        host: "127.0.0.1".into(),
        port,
        mount: "/radio".into(),
        user: "source".into(),
        password: "hackme".into(),
        name: String::new(),
        description: String::new(),
        genre: String::new(),
        public: false,
    }
}

#[test]
fn the_request_head_carries_credentials_and_description() {
    let version = env!("CARGO_PKG_VERSION");
    // base64("source:hackme")
    assert_eq!(
        request_head(&settings(8000), "audio/aac"),
        format!(
            "PUT /radio HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n\
             Authorization: Basic c291cmNlOmhhY2ttZQ==\r\nUser-Agent: strom/{version}\r\n\
             Content-Type: audio/aac\r\nIce-Public: 0\r\nIce-Name: live/radio\r\n\
             Expect: 100-continue\r\n\r\n"
        )
    );
    let mut described = settings(80);
    described.host = "::1".into();
    described.name = "Radio One".into();
    described.description = "All day".into();
    described.genre = "Jazz".into();
    described.public = true;
    let head = request_head(&described, "audio/mpeg");
    for line in [
        "Host: [::1]:80\r\n",
        "Content-Type: audio/mpeg\r\n",
        "Ice-Public: 1\r\n",
        "Ice-Name: Radio One\r\n",
        "Ice-Description: All day\r\n",
        "Ice-Genre: Jazz\r\n",
    ] {
        assert!(head.contains(line), "{line:?} missing from {head:?}");
    }
    assert!(!head.contains("Content-Length"), "{head}");
}

#[test]
fn the_title_request_is_percent_encoded() {
    let request = metadata_request(&settings(8000), "Tom & Jerry's ü");
    assert!(
        request.starts_with(
            "GET /admin/metadata?mount=%2Fradio&mode=updinfo\
             &song=Tom%20%26%20Jerry%27s%20%C3%BC&charset=UTF-8 HTTP/1.0\r\n"
        ),
        "{request}"
    );
    assert!(request.contains("Authorization: Basic c291cmNlOmhhY2ttZQ==\r\n"));
    assert!(request.ends_with("\r\n\r\n"));
}

#[test]
fn status_lines_give_their_code() {
    for (line, code) in [
        ("HTTP/1.1 100 Continue", Some(100)),
        ("HTTP/1.0 200 OK", Some(200)),
        ("HTTP/1.0 401 Authentication Required", Some(401)),
        ("HTTP/1.1 403 Mountpoint in use", Some(403)),
        ("ICY 401 Service Unavailable", None),
        ("HTTP/1.1 20 short", None),
        ("HTTP/1.1", None),
        ("", None),
        ("SSH-2.0-OpenSSH", None),
    ] {
        assert_eq!(status_code(line), code, "{line:?}");
    }
}

#[test]
fn the_backoff_doubles_to_thirty_seconds() {
    let mut backoff = Backoff::new();
    let waits: Vec<u64> = (0..7).map(|_| backoff.failed().as_secs()).collect();
    assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30]);
    backoff.reset();
    assert_eq!(backoff.failed(), FIRST_BACKOFF);
}

#[test]
fn the_password_never_prints() {
    let printed = format!("{:?}", settings(8000));
    assert!(!printed.contains("hackme"), "{printed}");
}

#[tokio::test]
async fn answers_are_read_up_to_their_blank_line() {
    let mut answer: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\naudio";
    assert_eq!(
        read_status(&mut answer).await.unwrap(),
        "HTTP/1.1 100 Continue"
    );
    assert_eq!(answer, b"audio", "nothing after the head is consumed");
    let mut cut: &[u8] = b"HTTP/1.0 403 Forb";
    assert!(matches!(
        read_status(&mut cut).await,
        Err(PushError::BadAnswer(line)) if line == "HTTP/1.0 403 Forb"
    ));
    let mut nothing: &[u8] = b"";
    assert!(matches!(
        read_status(&mut nothing).await,
        Err(PushError::Closed)
    ));
    let long = vec![b'a'; MAX_ANSWER_BYTES + 10];
    assert!(matches!(
        read_status(&mut &long[..]).await,
        Err(PushError::BadAnswer(_))
    ));
}

fn aac(config: bool, dts: i64, payload: &'static [u8]) -> Frame {
    Frame {
        track: Track::Audio,
        codec: Codec::Aac,
        dts,
        pts: dts,
        keyframe: false,
        config,
        control: false,
        payload: Bytes::from_static(payload),
        form: Default::default(),
    }
}

/// Reads a request head (up to its blank line).
async fn read_head(socket: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(socket.read(&mut byte).await.unwrap(), 1, "head cut short");
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap()
}

async fn accept(listener: &TcpListener) -> TcpStream {
    tokio::time::timeout(Duration::from_secs(10), listener.accept())
        .await
        .expect("the push connects")
        .unwrap()
        .0
}

/// A fake Icecast server refuses the first connection (403); the push comes back after
/// the backoff and sends ADTS audio once accepted; removing the entry ends the
/// connection and the hub reader.
#[tokio::test]
async fn pushes_audio_and_comes_back_after_a_refusal() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hub = Hub::default();
    let shutdown = CancellationToken::new();
    let pushes = IcecastPushes::new(
        hub.clone(),
        Arc::new(SessionIds::new(1)),
        Arc::new(Titles::default()),
        shutdown.clone(),
    );
    let mut rules = Rules::default();
    rules.icecast_pushes.push(settings(port));
    pushes.apply(&rules);
    pushes.apply(&rules);
    let key = StreamKey::new("live", "radio");
    assert_eq!(
        hub.reader_count(&key),
        1,
        "one reader however often applied"
    );

    let publishing = hub
        .own_publisher(
            &key,
            PublisherInfo {
                session_id: 7,
                ip: "127.0.0.1".into(),
                publish_time: 0,
                query: String::new(),
                source_url: None,
                relayed_from: None,
                protocol: "ICECAST",
                admitted_id: None,
            },
        )
        .unwrap();
    let feeder = tokio::spawn(async move {
        // AAC LC, 44.1 kHz, stereo.
        publishing.publish(aac(true, 0, &[0x12, 0x10]));
        for n in 0.. {
            publishing.publish(aac(false, n * 1920, &[0x21; 32]));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });

    let mut refused = accept(&listener).await;
    let head = read_head(&mut refused).await;
    assert!(head.starts_with("PUT /radio HTTP/1.1\r\n"), "{head}");
    assert!(head.contains("Content-Type: audio/aac\r\n"), "{head}");
    refused
        .write_all(b"HTTP/1.0 403 Mountpoint in use\r\n\r\n")
        .await
        .unwrap();
    drop(refused);
    let refused_at = Instant::now();

    let mut accepted = accept(&listener).await;
    assert!(
        refused_at.elapsed() >= Duration::from_millis(900),
        "came back before the backoff"
    );
    read_head(&mut accepted).await;
    accepted
        .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
        .await
        .unwrap();
    let mut adts = [0u8; 7 + 32];
    tokio::time::timeout(Duration::from_secs(10), accepted.read_exact(&mut adts))
        .await
        .expect("audio comes")
        .unwrap();
    assert_eq!((adts[0], adts[1] & 0xf6), (0xff, 0xf0), "an ADTS header");
    assert_eq!(&adts[7..], &[0x21; 32]);

    pushes.apply(&Rules::default());
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), accepted.read_to_end(&mut rest))
        .await
        .expect("the connection ends with its entry")
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), async {
        while hub.reader_count(&key) != 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the reader leaves");
    feeder.abort();
    shutdown.cancel();
}
