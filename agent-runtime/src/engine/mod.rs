//! The session engine and its stores: a hosted session's single writer task (`session`), the
//! table of sessions of a host (`host`), the durable and in-memory stores (`store`) and the
//! live state of paired sessions (`paired`: sockets, cached `hello`, waiters).
//!
//! Imports point at the pure algorithms, the foundation and `security`; never at the
//! operation core or a surface.

pub(crate) mod host;
#[cfg(any(feature = "pairing", feature = "pairing-client"))]
pub(crate) mod paired;
pub(crate) mod session;
pub(crate) mod store;
