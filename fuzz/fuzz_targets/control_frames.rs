//! Control channel frames between supervisor and workers (a confused or compromised
//! peer must not crash the other side).
#![no_main]

use libfuzzer_sys::fuzz_target;
use strom_ipc::frame::{decode, split_frame};
use strom_ipc::messages::{SupervisorToWorker, WorkerToSupervisor};

fuzz_target!(|data: &[u8]| {
    let mut buffer = data.to_vec();
    while let Ok(Some(raw)) = split_frame(&mut buffer) {
        let _ = decode::<SupervisorToWorker>(&raw.payload);
        let _ = decode::<WorkerToSupervisor>(&raw.payload);
    }
    let _ = decode::<SupervisorToWorker>(data);
    let _ = decode::<WorkerToSupervisor>(data);
});
