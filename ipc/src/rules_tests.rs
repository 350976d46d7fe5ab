//! Tests of the rules types (`rules.rs`), kept beside it so that file stays readable.

use super::*;

#[test]
fn srt_origins_name_their_address_and_options_and_hide_the_passphrase() {
    let origin = "SRT://origin:9000?passphrase=0123456789ab&latency=200";
    assert!(is_srt_origin(origin));
    assert!(!is_srt_origin("rtmp://origin"));
    assert!(!is_srt_origin("srt:"));
    let (address, parameters) = srt_origin_parts(origin);
    assert_eq!(address, "origin:9000");
    assert_eq!(
        parameters,
        vec![
            ("passphrase".to_owned(), "0123456789ab".to_owned()),
            ("latency".to_owned(), "200".to_owned())
        ]
    );
    assert_eq!(
        EdgeRule::url(origin, "live", "x"),
        "srt://origin:9000?streamid=#!::r=live/x,m=request"
    );
}

#[test]
fn a_stream_overrides_its_app_which_overrides_the_defaults() {
    let delivery = DeliverySettings {
        outputs: vec![DeliveryOutput::Hls],
        segment_duration_secs: 6,
        part_target_ms: 500,
        dash_segment_addressing: DashAddressing::Timeline,
        apps: vec![AppDelivery {
            app: "live".into(),
            outputs: Some(vec![DeliveryOutput::Dash]),
            segment_duration_secs: Some(4),
            dash_segment_addressing: Some(DashAddressing::Number),
        }],
        streams: vec![StreamDelivery {
            app: "live".into(),
            stream: "s".into(),
            outputs: None,
            segment_duration_secs: Some(2),
            dash_segment_addressing: None,
        }],
        abr: Vec::new(),
    };
    let other = delivery.for_stream("other", "s");
    assert_eq!(
        (other.outputs, other.segment_duration_secs),
        (&[DeliveryOutput::Hls][..], 6)
    );
    let app = delivery.for_stream("live", "t");
    assert_eq!(
        (app.outputs, app.segment_duration_secs),
        (&[DeliveryOutput::Dash][..], 4)
    );
    let stream = delivery.for_stream("live", "s");
    assert_eq!(
        (stream.outputs, stream.segment_duration_secs),
        (&[DeliveryOutput::Dash][..], 2)
    );
    assert!(!stream.has(DeliveryOutput::Hls));
    assert_eq!(other.dash_segment_addressing, DashAddressing::Timeline);
    assert_eq!(
        stream.dash_segment_addressing,
        DashAddressing::Number,
        "its app's"
    );
}

#[test]
fn output_names_round_trip() {
    for output in DeliveryOutput::ALL {
        assert_eq!(DeliveryOutput::from_name(output.as_str()), Some(output));
    }
    assert_eq!(DeliveryOutput::from_protocol(OutputProtocol::Rtmp), None);
}

#[test]
fn a_transcoded_stream_and_its_renditions_share_the_abr_group() {
    use crate::transcode_rules::{Ladder, RenditionAudio, RenditionSpec};
    let mut rules = Rules::default();
    rules.transcoding.ladders.push(Ladder {
        app: "live".into(),
        stream: String::new(),
        renditions: vec![RenditionSpec {
            name: "low".into(),
            width: 320,
            height: 180,
            video_bitrate_kbps: 300,
            max_fps: None,
            profile: "main".into(),
            preset: "veryfast".into(),
            audio: RenditionAudio::Passthrough,
        }],
        source_rendition: true,
    });
    let group = rules.abr_group("live", "my_cam_abr").unwrap();
    let members: Vec<&str> = group.streams.iter().map(|m| &m.stream[..]).collect();
    assert_eq!(members, ["my_cam", "my_cam_low"]);
    for member in ["my_cam", "my_cam_low"] {
        let groups = rules.abr_groups_with("live", member);
        let names: Vec<&str> = groups.iter().map(|g| &g.stream[..]).collect();
        assert_eq!(names, ["my_cam_abr"], "{member}");
    }
    assert!(
        rules.abr_groups_with("vod", "my_cam").is_empty(),
        "no ladder"
    );
    assert!(rules.abr_group("live", "my_cam").is_none());
}
