//! The one error type every parser in this crate returns: parsers never panic,
//! they say what was short, unknown or malformed.

/// Why a payload, record or NAL unit could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The input ended before the named structure was complete.
    #[error("truncated {0}")]
    Truncated(&'static str),
    /// Well-formed, but a codec, packet type or version this crate does not handle.
    #[error("unsupported {0}")]
    Unsupported(&'static str),
    /// A field holds a value the specification forbids.
    #[error("invalid {0}")]
    Invalid(&'static str),
}
