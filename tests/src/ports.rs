//! Ports for the servers the tests start on a port chosen beforehand (a fleet's replicas, the
//! load balancer, PostgreSQL, chromedriver): each process must be told its port, so the port is
//! picked first and bound later by the child.
//!
//! A port the kernel hands out for `127.0.0.1:0` lies in its ephemeral range, the same range it
//! draws from for the local end of every outgoing connection; with a hundred connections opening
//! meanwhile (HTTP clients, database pools), one could take the port before the child binds it
//! (`Address already in use`, seen in `lb_fleet`). So ports come from below that range, where
//! only explicit binds land, each handed out once per process and checked free when picked.

use std::net::TcpListener;
use std::sync::atomic::{AtomicU32, Ordering};

/// The lowest port handed out.
const LOWEST: u32 = 10_000;

/// The next candidate, as an offset into the range (starts from the process id, so two test
/// processes at once start apart).
static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);

/// The first port of the kernel's ephemeral range (Linux's default when it cannot be read).
fn ephemeral_start() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

/// A port nothing listens on now, outside the kernel's ephemeral range, not handed out before
/// by this process.
pub fn free_port() -> u16 {
    let end = ephemeral_start().min(u32::from(u16::MAX));
    if end <= LOWEST + 1_000 {
        return kernel_port();
    }
    let span = end - LOWEST;
    let _ = NEXT.compare_exchange(
        u32::MAX,
        std::process::id().wrapping_mul(7_919) % span,
        Ordering::Relaxed,
        Ordering::Relaxed,
    );
    for _ in 0..span {
        let offset = NEXT.fetch_add(1, Ordering::Relaxed) % span;
        let port = u16::try_from(LOWEST + offset).expect("below 65536");
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    kernel_port()
}

/// A port from the kernel (its ephemeral range).
fn kernel_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}
