//! Pairing (`pairing.md`): an app that runs outside the server (a browser tab running LLui, a
//! desktop or terminal app using `client`) dials out to `/agent/ws`; the server relays the
//! agent's LAP calls to it as `rpc` frames and answers from what it sends back.
//!
//! A paired session is the second kind of session behind the operation table: the gate admits
//! its token like any other, then `lap::serve` forwards the operation instead of running
//! it on a hosted session, so LAP, MCP and the bridge work unchanged.
//!
//! - [`frames`]: the wire frames, shared by the server and the client.
//! - [`records`]: which tokens are paired ([`is_paired`]) and their life cycle, all in the
//!   token store (durable with a durable token store)
//!   and the token life-cycle steps.
//! - `hub`: the live sockets and everything waiting on them.
//! - `socket`: `GET /agent/ws`.
//! - `lap`: the operations of a paired session.

pub mod frames;
#[cfg(feature = "pairing")]
pub(crate) mod hub;
#[cfg(feature = "pairing")]
pub(crate) mod lap;
#[cfg(feature = "pairing")]
pub mod records;
#[cfg(feature = "pairing")]
pub(crate) mod socket;

#[cfg(feature = "pairing-client")]
pub mod client;

#[cfg(feature = "pairing")]
pub use records::{is_paired, PAIRED_SESSION_PREFIX};

/// The path of the pairing socket.
pub const SOCKET_PATH: &str = "/agent/ws";

#[cfg(feature = "pairing-client")]
fn socket_path() -> &'static str {
    SOCKET_PATH
}

/// Options of pairing (`ServerOptions::pairing`).
#[derive(Debug, Clone)]
pub struct PairingOptions {
    /// `POST /agent/mint` without a body mints a paired session (as LLui's server does);
    /// otherwise only `{"paired": true}` does and a bare mint starts a hosted session.
    pub mint_paired: bool,
    /// How long a closed socket's token waits in `pending-resume` for the app to come back
    /// (default 60 s).
    pub grace_ms: u64,
    /// How long a forwarded read waits for the app's answer before 504 (default 15 s).
    pub forward_timeout_ms: u64,
    /// How long confirmation outcomes are kept for `/confirm-result` (default 5 min).
    pub outcome_ms: u64,
    /// `Retry-After` of a 503 for a live record without a socket (default 5 s).
    pub retry_after_s: u64,
}

impl Default for PairingOptions {
    fn default() -> Self {
        PairingOptions {
            mint_paired: false,
            grace_ms: 60_000,
            forward_timeout_ms: 15_000,
            outcome_ms: 5 * 60_000,
            retry_after_s: 5,
        }
    }
}

/// The pairing state of a server.
#[cfg(feature = "pairing")]
pub(crate) struct Pairing {
    pub hub: hub::Hub,
    pub options: PairingOptions,
}

#[cfg(feature = "pairing")]
impl Pairing {
    pub fn new(options: PairingOptions, entry_bytes: usize) -> Self {
        Pairing {
            hub: hub::Hub::new(options.outcome_ms, options.grace_ms, entry_bytes),
            options,
        }
    }
}
