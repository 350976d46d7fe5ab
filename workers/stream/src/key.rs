//! The name of a live stream: `app/stream`, the key of a worker's hub and of the bus.
//!
//! A leaf module: the hub, its events and everything that looks streams up share it
//! without depending on each other.

/// `app/stream`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamKey {
    pub app: String,
    pub stream: String,
}

impl StreamKey {
    pub fn new(app: impl Into<String>, stream: impl Into<String>) -> Self {
        Self {
            app: app.into(),
            stream: stream.into(),
        }
    }
}

impl std::fmt::Display for StreamKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.app, self.stream)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_as_app_slash_stream() {
        let key = StreamKey {
            app: "live".into(),
            stream: "cam".into(),
        };
        assert_eq!(key.to_string(), "live/cam");
    }
}
