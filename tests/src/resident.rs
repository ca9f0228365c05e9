//! The resident size of a process (`VmRSS` in `/proc/<pid>/status`), for the memory tests and
//! benchmarks.

/// One mebibyte.
pub const MIB: u64 = 1024 * 1024;

/// The resident size in bytes of process `pid`, or of this process for `None`; 0 where
/// `/proc` is missing.
pub fn resident_bytes(pid: Option<u32>) -> u64 {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_owned(),
    };
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// [`resident_bytes`] of this process, in whole MiB.
pub fn resident_mib() -> u64 {
    resident_bytes(None) / MIB
}
