//! Why a worker could not carry out a request, as a type the API can map to a status.
//!
//! Workers answer a failed request with [`WorkerReply::Error`]; the supervisor turns the
//! [`FailureKind`] into an HTTP status instead of parsing a message. Replies from the
//! older encodings ([`WorkerReply::NotFound`], [`WorkerReply::Failed`]) are still
//! understood through [`WorkerReply::failure`]. A leaf: `messages` names it, not the
//! other way round.
//!
//! [`WorkerReply::Error`]: crate::messages::WorkerReply::Error
//! [`WorkerReply::NotFound`]: crate::messages::WorkerReply::NotFound
//! [`WorkerReply::Failed`]: crate::messages::WorkerReply::Failed
//! [`WorkerReply::failure`]: crate::messages::WorkerReply::failure

use serde::{Deserialize, Serialize};

/// The class of a failure. Appended only: the variant index is on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FailureKind {
    /// The named stream, archive or session does not exist on this worker.
    NotFound,
    /// Understood and valid, but the worker's state or policy says no (a conflict).
    Refused,
    /// The request's contents are unusable (a certificate that does not parse, say).
    Invalid,
    /// The worker broke while carrying it out.
    Internal,
    /// The worker cannot serve right now (unhealthy, out of descriptors); retrying later
    /// or after a restart may succeed.
    Unavailable,
    /// This worker does not handle this request at all: a routing bug in the supervisor.
    Unsupported,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame;
    use crate::messages::{WorkerReply, WorkerToSupervisor};

    #[test]
    fn old_encodings_read_as_typed_failures() {
        assert_eq!(
            WorkerReply::NotFound.failure(),
            Some((FailureKind::NotFound, ""))
        );
        assert_eq!(
            WorkerReply::Failed("boom".into()).failure(),
            Some((FailureKind::Internal, "boom"))
        );
        assert_eq!(
            WorkerReply::error(FailureKind::Invalid, "bad pem").failure(),
            Some((FailureKind::Invalid, "bad pem"))
        );
        assert_eq!(WorkerReply::Done.failure(), None);
    }

    /// The typed variant was appended after `SessionsPage` (index 14), so older variants
    /// keep their indices; the failure kinds' indices are on the wire too.
    #[test]
    fn typed_error_is_the_last_variant() {
        let reply = WorkerToSupervisor::Reply {
            id: 1,
            reply: WorkerReply::error(FailureKind::Unavailable, "x"),
        };
        let encoded = frame::encode(&reply, 0).unwrap();
        // Payload: Reply (1), id 1, variant 15, kind 4, message length 1, "x".
        assert_eq!(hex::encode(&encoded[5..]), "01010f040178");
        let mut buffer = encoded;
        let raw = frame::split_frame(&mut buffer).unwrap().unwrap();
        assert_eq!(
            frame::decode::<WorkerToSupervisor>(&raw.payload).unwrap(),
            reply
        );
    }
}
