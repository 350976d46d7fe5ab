//! The tokens of deleted viewer sessions, so that their next requests get 403: bounded
//! in time and in number, the oldest deletions forgotten first.

use super::{MAX_REVOKED, REVOKED_MEMORY};
use std::collections::{BTreeSet, VecDeque};
use std::time::Instant;

/// The tokens of deleted sessions, remembered for [`REVOKED_MEMORY`] and at most
/// [`MAX_REVOKED`] of them (the oldest deletions are forgotten first).
#[derive(Debug, Default)]
pub(super) struct Revoked {
    pub(super) tokens: BTreeSet<u128>,
    /// Tokens in the order they were deleted, with when.
    order: VecDeque<(Instant, u128)>,
}

impl Revoked {
    pub(super) fn insert(&mut self, token: u128, now: Instant) {
        if self.tokens.insert(token) {
            self.order.push_back((now, token));
        }
        while self.order.len() > MAX_REVOKED {
            self.pop_oldest();
        }
    }

    pub(super) fn forget_older(&mut self, now: Instant) {
        while self
            .order
            .front()
            .is_some_and(|(at, _)| now.duration_since(*at) >= REVOKED_MEMORY)
        {
            self.pop_oldest();
        }
    }

    fn pop_oldest(&mut self) {
        if let Some((_, token)) = self.order.pop_front() {
            self.tokens.remove(&token);
        }
    }
}
