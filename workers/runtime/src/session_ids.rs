//! Session ids unique across workers and worker restarts, and exact in JavaScript.
//!
//! An id is `generation << 32 | counter`: the supervisor gives every process it starts a
//! new generation, so two processes never hand out the same id. Generations stay below
//! 2^21, which keeps every id below 2^53 (`Number.MAX_SAFE_INTEGER`).

use std::sync::atomic::{AtomicU32, Ordering};

pub use strom_ipc::contract::MAX_GENERATION;

#[derive(Debug)]
pub struct SessionIds {
    generation: u64,
    next: AtomicU32,
}

impl SessionIds {
    pub fn new(generation: u32) -> Self {
        Self {
            generation: u64::from(generation.min(MAX_GENERATION)),
            next: AtomicU32::new(1),
        }
    }

    pub fn next_id(&self) -> u64 {
        let counter = self.next.fetch_add(1, Ordering::Relaxed);
        (self.generation << 32) | u64::from(counter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_differ_between_generations_and_fit_in_a_double() {
        let a = SessionIds::new(1);
        let b = SessionIds::new(2);
        let first = a.next_id();
        assert_ne!(first, a.next_id());
        assert_ne!(first, b.next_id());
        let last = SessionIds::new(u32::MAX).next_id();
        assert!(last < (1u64 << 53));
    }
}
