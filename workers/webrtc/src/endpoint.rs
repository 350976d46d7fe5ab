//! The WHEP and WHIP endpoints and session resources a request path names
//! (`/<app>/<stream>/whep.stream[/<resource>]`, the same with `whip.stream`).

use strom_stream::StreamKey;

/// The file names that mark a WHEP and a WHIP endpoint.
pub const WHEP: &str = "whep.stream";
pub const WHIP: &str = "whip.stream";

/// Which endpoint a path names.
#[derive(Debug, PartialEq, Eq)]
pub struct Target {
    pub key: StreamKey,
    pub publish: bool,
    /// The session resource (`.../whep.stream/<resource>`), if the path names one.
    pub resource: Option<String>,
}

/// `/<app>/<stream>/whep.stream[/<resource>]` or the same with `whip.stream`.
pub fn target(path: &str) -> Option<Target> {
    let mut parts = path.strip_prefix('/')?.split('/');
    let (app, stream, file) = (parts.next()?, parts.next()?, parts.next()?);
    let resource = parts.next().map(str::to_owned);
    if parts.next().is_some() || resource.as_deref() == Some("") {
        return None;
    }
    let publish = match file {
        WHEP => false,
        WHIP => true,
        _ => return None,
    };
    strom_ipc::names::check_pair(app, stream).ok()?;
    Some(Target {
        key: StreamKey::new(app, stream),
        publish,
        resource,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_and_resources_are_told_apart() {
        let whep = target("/live/cam/whep.stream").unwrap();
        assert_eq!(
            (whep.key.to_string(), whep.publish, whep.resource),
            ("live/cam".to_owned(), false, None)
        );
        let whip = target("/live/cam/whip.stream/12-abcd").unwrap();
        assert!(whip.publish);
        assert_eq!(whip.resource.as_deref(), Some("12-abcd"));
        assert!(target("/live/cam/playlist.m3u8").is_none());
        assert!(target("/live/cam/whep.stream/").is_none());
        assert!(target("/live/cam/whep.stream/a/b").is_none());
        assert!(target("/live/../whep.stream").is_none());
        assert!(target("live/cam/whep.stream").is_none());
    }
}
