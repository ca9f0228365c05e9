//! Paired sessions over `/agent/ws`: the Rust pairing client, the console, durable pairing,
//! expiry, the lifecycle and the wire protocol. One test binary; each module was a test file
//! of its own. Its bounds (`pairing_bounds.rs`) measure the process's memory and capture the
//! global log: they keep a binary of their own.

mod client;
mod console;
mod durable;
mod expiry;
mod lifecycle;
mod resume;
mod wire;
