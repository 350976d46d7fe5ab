//! Who may publish: Adobe-style credentials, signed publishing (`publishsign`), the
//! optional approval handler, and the deny list.

pub mod adobe;
pub mod handler;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_names_and_queries() {
        let (name, params) = split_query("live?authmod=adobe&user=bob&flag");
        assert_eq!(name, "live");
        assert_eq!(param(&params, "user"), Some("bob"));
        assert_eq!(param(&params, "flag"), Some(""));
        assert_eq!(split_query("live").1.len(), 0);
    }
}
