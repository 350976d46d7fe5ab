//! Machine facts for `server_status`, sampled in the background.
//!
//! CPU load needs two readings some time apart; sampling inside a request would make
//! `server_status` slow, so a dedicated thread refreshes a snapshot every second and the
//! API only copies it.

use std::sync::Mutex;
use std::time::Duration;
use strom_ipc::sync::locked;
use sysinfo::{CpuRefreshKind, MemoryRefreshKind, RefreshKind, System};

const SAMPLE_INTERVAL: Duration = Duration::from_secs(1);

/// The latest reading.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SystemSnapshot {
    pub available_processors: u64,
    /// Whole-system CPU load, 0.0 to 1.0.
    pub cpu_load: f64,
    pub total_memory: u64,
    pub free_memory: u64,
    pub total_swap: u64,
    pub free_swap: u64,
}

#[derive(Debug, Default)]
pub struct SystemSampler {
    latest: Mutex<SystemSnapshot>,
}

impl SystemSampler {
    /// Takes a first reading now and starts the sampling thread.
    pub fn start() -> std::io::Result<std::sync::Arc<Self>> {
        let refresh = RefreshKind::nothing()
            .with_cpu(CpuRefreshKind::nothing().with_cpu_usage())
            .with_memory(MemoryRefreshKind::everything());
        let mut system = System::new_with_specifics(refresh);
        let sampler = std::sync::Arc::new(Self::default());
        sampler.record(&mut system);
        let shared = std::sync::Arc::clone(&sampler);
        std::thread::Builder::new()
            .name("strom-sysinfo".to_owned())
            .spawn(move || {
                loop {
                    std::thread::sleep(SAMPLE_INTERVAL);
                    shared.record(&mut system);
                }
            })?;
        Ok(sampler)
    }

    fn record(&self, system: &mut System) {
        system.refresh_cpu_usage();
        system.refresh_memory();
        let snapshot = SystemSnapshot {
            available_processors: system.cpus().len() as u64,
            cpu_load: (f64::from(system.global_cpu_usage()) / 100.0).clamp(0.0, 1.0),
            total_memory: system.total_memory(),
            free_memory: system.available_memory(),
            total_swap: system.total_swap(),
            free_swap: system.free_swap(),
        };
        *locked(&self.latest) = snapshot;
    }

    pub fn snapshot(&self) -> SystemSnapshot {
        *locked(&self.latest)
    }
}
