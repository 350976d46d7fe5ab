//! Who may publish: Adobe-style credentials, signed publishing (`publishsign`), the
//! optional approval handler, and the deny list.

pub mod adobe;
pub mod answer;
pub mod handler;
mod query;

pub use query::{param, split_query};

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
