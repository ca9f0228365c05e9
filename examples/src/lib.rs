//! Example apps driven by agents. The runnable binaries (`cargo run --example counter`,
//! `cargo run --example todo`, `cargo run --example relay`) are thin wrappers around [`serve`];
//! tests use the apps directly.

pub mod config;
pub mod counter;
pub mod metrics;
pub mod relay;
pub mod serve;
pub mod todo;
#[cfg(feature = "tui")]
pub mod tui;
