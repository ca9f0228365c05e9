//! Tests that measure or load the whole process: memory under hostile load (the resident size
//! of this process), a big session's memory and what many sessions retain, and 100 concurrent
//! agents. One test binary; each module was a test file of its own. Its tests run one at a
//! time ([`SERIAL`]) so their figures and latencies do not mix, as they did in processes of
//! their own.

mod busy_sessions;
mod hostile_memory;
mod keyed_flood;
mod load;
mod session_memory;

/// Held by every test of this binary for its whole run.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
