//! Where a worker slot is in its life, as supervision moves it and the API shows it.
//!
//! A leaf: supervision writes it and the worker table stores it, without either module
//! needing the other for the type.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerState {
    Starting,
    Ready,
    /// The process runs but missed its last heartbeat: it may be hung (or stopped with
    /// SIGSTOP). It goes back to `Ready` when it answers again, or is killed and restarted
    /// once it stays silent for the heartbeat deadline.
    Unresponsive,
    BackingOff,
    Stopping,
    Stopped,
}

impl WorkerState {
    /// Every state, in the order monitoring lists them.
    pub const ALL: [WorkerState; 6] = [
        WorkerState::Starting,
        WorkerState::Ready,
        WorkerState::Unresponsive,
        WorkerState::BackingOff,
        WorkerState::Stopping,
        WorkerState::Stopped,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            WorkerState::Starting => "starting",
            WorkerState::Ready => "ready",
            WorkerState::Unresponsive => "unresponsive",
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
        let names = WorkerState::ALL.map(WorkerState::as_str);
        assert_eq!(
            names,
            [
                "starting",
                "ready",
                "unresponsive",
                "backing_off",
                "stopping",
                "stopped"
            ]
        );
    }
}
