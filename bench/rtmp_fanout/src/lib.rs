//! What the fan-out load generators share (`rtmp-fanout` here, `webrtc-fanout` in
//! bench/webrtc_fanout): the server's CPU time and RSS sampled from `/proc` (a process
//! tree: strom's supervisor and workers, nginx's master and worker), `ksoftirqd/N`, the
//! cores' busy ticks, and the percentiles and rounding of their reports.

use std::collections::HashMap;

/// CPU ticks (utime + stime) and RSS of a process tree.
#[derive(Clone, Copy, Default)]
pub struct Sample {
    pub ticks: u64,
    pub rss_kb: u64,
    pub procs: usize,
}

/// `(ppid, utime + stime)` from `/proc/<pid>/stat`.
pub fn proc_stat(pid: u32) -> Option<(u32, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = text
        .get(text.rfind(')')? + 1..)?
        .split_whitespace()
        .collect();
    let num = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    Some((u32::try_from(num(1)?).ok()?, num(11)? + num(12)?))
}

fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Sums over `roots` and all their descendants (strom's supervisor and workers, nginx's
/// master and worker).
pub fn sample_tree(roots: &[u32]) -> Sample {
    let mut parent = HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
            && let Some((ppid, ticks)) = proc_stat(pid)
        {
            parent.insert(pid, (ppid, ticks));
        }
    }
    let mut tree: Vec<u32> = roots
        .iter()
        .copied()
        .filter(|p| parent.contains_key(p))
        .collect();
    let mut i = 0;
    while i < tree.len() {
        let p = tree[i];
        tree.extend(
            parent
                .iter()
                .filter(|(c, (pp, _))| *pp == p && !tree.contains(c))
                .map(|(c, _)| *c)
                .collect::<Vec<_>>(),
        );
        i += 1;
    }
    tree.iter().fold(Sample::default(), |s, pid| Sample {
        ticks: s.ticks + parent.get(pid).map_or(0, |(_, t)| *t),
        rss_kb: s.rss_kb + rss_kb(*pid),
        procs: s.procs + 1,
    })
}

/// The pid of `ksoftirqd/<core>`, where the kernel moves the network work of that core
/// under load.
pub fn ksoftirqd_pid(core: usize) -> Option<u32> {
    let name = format!("(ksoftirqd/{core})");
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.contains(&name).then_some(pid)
    })
}

/// Clock ticks per second of `/proc`'s CPU times.
pub fn tick_hz() -> f64 {
    // SAFETY: sysconf only reads a constant of the C library.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64
}

/// `(busy, total)` ticks of every CPU from `/proc/stat` (busy excludes idle and iowait).
pub fn core_ticks() -> Vec<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    stat.lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .map(|l| {
            let v: Vec<u64> = l
                .split_whitespace()
                .skip(1)
                .filter_map(|f| f.parse().ok())
                .collect();
            let total: u64 = v.iter().take(8).sum();
            let idle = v.get(3).unwrap_or(&0) + v.get(4).unwrap_or(&0);
            (total - idle, total)
        })
        .collect()
}

/// Busy % of every CPU between two [`core_ticks`] samples.
pub fn core_busy_pct(before: &[(u64, u64)], after: &[(u64, u64)]) -> Vec<f64> {
    before
        .iter()
        .zip(after)
        .map(|((b1, t1), (b2, t2))| {
            round1(b2.saturating_sub(*b1) as f64 * 100.0 / (t2.saturating_sub(*t1)).max(1) as f64)
        })
        .collect()
}

/// The `p` quantile of microsecond values, in milliseconds with one decimal.
pub fn percentile(sorted: &[u64], p: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let i = ((sorted.len() as f64 * p) as usize).min(last);
    Some(round1(sorted[i] as f64 / 1000.0))
}

pub fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_own_process() {
        assert_eq!(percentile(&[], 0.5), None);
        assert_eq!(percentile(&[1000, 2000, 3000, 4000], 0.5), Some(3.0));
        assert_eq!(percentile(&[1000, 2000, 3000, 4000], 1.0), Some(4.0));
        let me = sample_tree(&[std::process::id()]);
        assert!(me.procs >= 1 && me.rss_kb > 0);
        assert!(tick_hz() >= 1.0);
        let ticks = core_ticks();
        assert!(!ticks.is_empty());
        assert_eq!(core_busy_pct(&ticks, &ticks).len(), ticks.len());
    }
}
