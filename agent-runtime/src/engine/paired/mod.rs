//! The live side of paired sessions (`docs/pairing.md`): an app that runs outside the server (a
//! browser tab running LLui, a desktop or terminal app using the pairing client) dials out to
//! `/agent/ws`, and the operation core answers the agent's calls by relaying them to it.
//!
//! - [`frames`]: the wire frames, shared by the server and the client.
//! - `records`: which tokens are paired ([`drives_paired_session`]) and their life cycle, all in the
//!   token store (durable with a durable token store).
//! - `hub`: the live sockets and everything waiting on them; `link`: what it keeps per token,
//!   bounded in bytes; `outbound`: a socket's queue, bounded in bytes, and its close signal.
//! - `fleet` (feature `fleet`): this replica in a fleet: its sockets' leases in the shared
//!   store, the key that signs hops between replicas, its heartbeat.

#[cfg(feature = "fleet")]
pub(crate) mod fleet;
pub(crate) mod frames;
#[cfg(feature = "pairing")]
pub(crate) mod hub;
#[cfg(feature = "pairing")]
pub(crate) mod link;
#[cfg(feature = "pairing")]
pub(crate) mod outbound;
#[cfg(feature = "pairing")]
pub(crate) mod records;

#[cfg(feature = "pairing")]
pub(crate) use records::drives_paired_session;

/// The path of the pairing socket.
pub(crate) const SOCKET_PATH: &str = "/agent/ws";
