//! What every input, output and request handler of the MPEG-TS worker shares: the hub and
//! its gate, session ids, counters, input status, SRT connections and output state.

use crate::input_status::InputStatus;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use strom_ipc::rules::Rules;
use strom_stream::Hub;
use strom_worker_runtime::sync::locked;
use strom_worker_runtime::{SessionIds, WorkerCounters};

/// What every receive task needs.
pub struct MpegTsShared {
    pub hub: Hub,
    pub ids: Arc<SessionIds>,
    pub counters: Arc<WorkerCounters>,
    /// Status of every input, by `Cameras` id.
    pub status: Mutex<HashMap<String, Arc<InputStatus>>>,
    /// Connected SRT peers.
    pub srt: crate::srt_connections::Connections,
    /// SRT connections and RIST stats of the TS outputs.
    pub outputs: crate::outputs::state::OutputState,
    /// The front door (over `hub`): who may publish and play, the rules in force and
    /// the deny list.
    pub gate: Arc<strom_stream::Gate>,
}

impl MpegTsShared {
    pub fn rules(&self) -> Arc<Rules> {
        self.gate.rules()
    }

    /// The status of input `id`, created on first use.
    pub fn status_of(&self, id: &str) -> Arc<InputStatus> {
        Arc::clone(locked(&self.status).entry(id.to_owned()).or_default())
    }
}
