//! Rules entries scoped to an app or to one stream of it (`app` and `stream`, an empty
//! `stream` meaning the whole app): which one applies to a stream.

/// The entry of `entries` for `app/stream`: the stream's own, else its app's. `scope`
/// gives an entry's `(app, stream)`.
pub fn entry_for<'a, T>(
    entries: &'a [T],
    app: &str,
    stream: &str,
    scope: impl Fn(&T) -> (&str, &str),
) -> Option<&'a T> {
    let of_app = entries.iter().filter(|e| scope(e).0 == app);
    of_app
        .clone()
        .find(|e| scope(e).1 == stream)
        .or_else(|| of_app.clone().find(|e| scope(e).1.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_entry_beats_its_apps() {
        let entries = [("live", "", 1), ("live", "cam", 2), ("vod", "cam", 3)];
        let find = |app, stream| entry_for(&entries, app, stream, |e| (e.0, e.1)).map(|e| e.2);
        assert_eq!(find("live", "cam"), Some(2));
        assert_eq!(find("live", "other"), Some(1));
        assert_eq!(find("vod", "other"), None);
        assert_eq!(find("none", "cam"), None);
    }
}
