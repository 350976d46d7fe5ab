//! `GET /manage/server_status`: connections and out rate summed from the workers'
//! last heartbeats, and machine facts from the background sampler. Nothing here waits on
//! a worker or samples the CPU, so it answers in microseconds.

use crate::api::ApiState;
use crate::api::dto::{ServerStatus, SysInfo, format_load};
use axum::Json;
use axum::extract::State;

const MB: u64 = 1024 * 1024;

#[utoipa::path(get, path = "/manage/server_status", responses((status = 200, body = crate::api::dto::ServerStatus)))]
pub async fn get(State(state): State<ApiState>) -> Json<ServerStatus> {
    let supervisor = &state.supervisor;
    let mut connections = 0;
    let mut out_rate = 0;
    let mut ram_cache = 0;
    let mut file_cache = 0;
    for worker in supervisor.workers.all() {
        let status = worker.status();
        connections += status.counters.connections;
        out_rate += status.out_rate_bps;
        ram_cache += status.counters.ram_cache_bytes;
        file_cache += status.counters.file_cache_bytes;
    }
    let system = supervisor.system.snapshot();
    let ram_mb = ram_cache / MB;
    let file_mb = file_cache / MB;
    let max_ram_mb = supervisor.instance.ram_cache_size_mb;
    let max_file_mb = supervisor.instance.file_cache_size_mb;
    Json(ServerStatus {
        Connections: connections,
        OutRate: out_rate,
        SysInfo: SysInfo {
            ap: system.available_processors,
            scl: format_load(system.cpu_load),
            tpms: system.total_memory,
            fpms: system.free_memory,
            tsss: system.total_swap,
            fsss: system.free_swap,
            RamCacheSize: ram_mb,
            FileCacheSize: file_mb,
            MaxRamCacheSize: max_ram_mb,
            MaxFileCacheSize: max_file_mb,
        },
        RamCacheSize: ram_mb,
        FileCacheSize: file_mb,
        MaxRamCacheSize: max_ram_mb,
        MaxFileCacheSize: max_file_mb,
    })
}
