//! The ffmpeg command line of one transcode: the source as MPEG-TS on stdin, each
//! rendition encoded with libx264 (and AAC, or the source's audio copied) and written as
//! MPEG-TS to its own Unix socket, which the worker listens on.
//!
//! Every rendition keeps the source's timestamps (`-copyts`) and puts its keyframes
//! where the source has them (`-force_key_frames source`, x264's own scene-cut
//! keyframes off, a GOP limit far above any source's), so the renditions' segments
//! start and end where the source's do and players switch between them cleanly.

use std::path::Path;
use strom_ipc::transcode_rules::{RenditionAudio, RenditionSpec};

/// x264's keyframe interval when the source sets none: only forced keyframes (the
/// source's) start GOPs.
const GOP_LIMIT: &str = "100000";

/// The arguments after `ffmpeg`, with `outputs[i]` the socket of `renditions[i]`.
pub fn arguments(renditions: &[RenditionSpec], outputs: &[&Path]) -> Vec<String> {
    let mut args: Vec<String> = [
        "-hide_banner",
        "-nostats",
        "-loglevel",
        "warning",
        "-fflags",
        "+genpts",
        "-f",
        "mpegts",
        "-i",
        "pipe:0",
        "-copyts",
    ]
    .map(String::from)
    .to_vec();
    for (rendition, output) in renditions.iter().zip(outputs) {
        let bitrate = format!("{}k", rendition.video_bitrate_kbps);
        let buffer = format!("{}k", rendition.video_bitrate_kbps.saturating_mul(2));
        args.extend(
            [
                "-map",
                "0:v:0",
                "-map",
                "0:a:0?",
                "-c:v",
                "libx264",
                "-preset",
                &rendition.preset,
                "-profile:v",
                &rendition.profile,
                "-pix_fmt",
                "yuv420p",
                "-vf",
                &format!("scale={}:{}", rendition.width, rendition.height),
                "-b:v",
                &bitrate,
                "-maxrate",
                &bitrate,
                "-bufsize",
                &buffer,
                "-force_key_frames",
                "source",
                "-sc_threshold",
                "0",
                "-g",
                GOP_LIMIT,
            ]
            .map(String::from),
        );
        if let Some(fps) = rendition.max_fps {
            args.extend(["-fpsmax".to_owned(), fps.to_string()]);
        }
        match rendition.audio {
            RenditionAudio::Passthrough => args.extend(["-c:a", "copy"].map(String::from)),
            RenditionAudio::Encode {
                bitrate_kbps,
                channels,
            } => args.extend([
                "-c:a".to_owned(),
                "aac".to_owned(),
                "-b:a".to_owned(),
                format!("{bitrate_kbps}k"),
                "-ac".to_owned(),
                channels.to_string(),
            ]),
        }
        args.extend(["-muxdelay", "0", "-muxpreload", "0", "-f", "mpegts"].map(String::from));
        args.push(format!("unix:{}", output.display()));
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendition(name: &str, audio: RenditionAudio, max_fps: Option<u32>) -> RenditionSpec {
        RenditionSpec {
            name: name.into(),
            width: 426,
            height: 240,
            video_bitrate_kbps: 400,
            max_fps,
            profile: "main".into(),
            preset: "veryfast".into(),
            audio,
        }
    }

    #[test]
    fn each_rendition_is_an_output_on_its_socket() {
        let renditions = [
            rendition("240p", RenditionAudio::Passthrough, None),
            rendition(
                "low",
                RenditionAudio::Encode {
                    bitrate_kbps: 64,
                    channels: 1,
                },
                Some(15),
            ),
        ];
        let (a, b) = (Path::new("/run/a.sock"), Path::new("/run/b.sock"));
        let args = arguments(&renditions, &[a, b]);
        let line = args.join(" ");
        assert!(line.starts_with("-hide_banner -nostats -loglevel warning"));
        assert!(line.contains("-f mpegts -i pipe:0 -copyts"));
        assert_eq!(line.matches("-c:v libx264").count(), 2);
        assert_eq!(line.matches("-force_key_frames source").count(), 2);
        assert!(line.contains("-vf scale=426:240 -b:v 400k -maxrate 400k -bufsize 800k"));
        assert!(line.contains("-c:a copy -muxdelay 0 -muxpreload 0 -f mpegts unix:/run/a.sock"));
        assert!(line.contains("-fpsmax 15 -c:a aac -b:a 64k -ac 1"));
        assert_eq!(args.last().map(String::as_str), Some("unix:/run/b.sock"));
    }
}
