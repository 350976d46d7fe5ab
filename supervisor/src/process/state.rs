//! Where a worker slot is in its life, as supervision moves it and the API shows it.
//!
//! A leaf: supervision writes it and the worker table stores it, without either module
//! needing the other for the type.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerState {
    Starting,
    Ready,
    BackingOff,
    Stopping,
    Stopped,
}

impl WorkerState {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerState::Starting => "starting",
            WorkerState::Ready => "ready",
            WorkerState::BackingOff => "backing_off",
            WorkerState::Stopping => "stopping",
            WorkerState::Stopped => "stopped",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The API shows these words; they must not change.
    #[test]
    fn states_have_stable_names() {
        let names = [
            WorkerState::Starting,
            WorkerState::Ready,
            WorkerState::BackingOff,
            WorkerState::Stopping,
            WorkerState::Stopped,
        ]
        .map(WorkerState::as_str);
        assert_eq!(
            names,
            ["starting", "ready", "backing_off", "stopping", "stopped"]
        );
    }
}
