//! `name?key=value&...` as RTMP clients send app and stream names (Adobe credentials,
//! `publishsign`, `wmsAuthSign`). Uses nothing outside the standard library: the fuzz
//! target `signatures` compiles this file by path.

/// Splits `name?query` into the name and its query parameters.
pub fn split_query(raw: &str) -> (&str, Vec<(String, String)>) {
    match raw.split_once('?') {
        Some((name, query)) => (
            name,
            query
                .split('&')
                .filter(|pair| !pair.is_empty())
                .map(|pair| {
                    let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                    (key.to_owned(), value.to_owned())
                })
                .collect(),
        ),
        None => (raw, Vec::new()),
    }
}

pub fn param<'a>(params: &'a [(String, String)], key: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}
