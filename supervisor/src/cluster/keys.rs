//! The registry's key layout under `key_prefix`: `servers/<id>` (a JSON array of the
//! server's advertised pull URLs) and `streams/<app>/<stream>` (the holder's id), every
//! key under its server's lease.

/// A key of the registry, read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    Server(String),
    Stream(String, String),
}

pub fn server(prefix: &str, id: &str) -> String {
    format!("{prefix}servers/{id}")
}

pub fn stream(prefix: &str, app: &str, stream: &str) -> String {
    format!("{prefix}streams/{app}/{stream}")
}

/// What `key` names, if it is one of ours (anything else under the prefix is ignored).
pub fn parse(prefix: &str, key: &[u8]) -> Option<Key> {
    let key = std::str::from_utf8(key).ok()?.strip_prefix(prefix)?;
    if let Some(id) = key.strip_prefix("servers/") {
        return (!id.is_empty() && !id.contains('/')).then(|| Key::Server(id.to_owned()));
    }
    let (app, stream) = key.strip_prefix("streams/")?.split_once('/')?;
    let fine = |name: &str| !name.is_empty() && !name.contains('/');
    (fine(app) && fine(stream)).then(|| Key::Stream(app.to_owned(), stream.to_owned()))
}

/// A server key's value: its advertised URLs (a value that is not a JSON array of
/// strings advertises none).
pub fn urls(value: &[u8]) -> Vec<String> {
    serde_json::from_slice(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_read_back_as_written() {
        let p = "/strom/";
        assert_eq!(
            parse(p, server(p, "o1").as_bytes()),
            Some(Key::Server("o1".into()))
        );
        assert_eq!(
            parse(p, stream(p, "live", "x").as_bytes()),
            Some(Key::Stream("live".into(), "x".into()))
        );
        for bad in [
            "/other/servers/o1",
            "/strom/streams/live",
            "/strom/streams/a/b/c",
            "/strom/x",
        ] {
            assert_eq!(parse(p, bad.as_bytes()), None, "{bad}");
        }
        assert_eq!(urls(br#"["rtmp://a:1935"]"#), ["rtmp://a:1935"]);
        assert!(urls(b"garbage").is_empty());
    }
}
