//! The surfaces: how callers reach the operation core. HTTP (`lap`: the LAP routes, the
//! management and human routes, the OpenAPI document), `mcp` (`/agent/mcp` and the stdio
//! bridge), `pairing` (`/agent/ws` and the pairing client), the human `console` page, the probes
//! (`health`) and the routes replicas of a fleet call on each other (`fleet`).
//!
//! A surface imports the operation core and what lies below it, never another surface; the
//! top-level `server` mounts them side by side.

#[cfg(feature = "console")]
pub(crate) mod console;
pub(crate) mod cors;
#[cfg(feature = "fleet")]
pub(crate) mod fleet;
pub(crate) mod health;
pub(crate) mod lap;
#[cfg(feature = "mcp")]
pub(crate) mod mcp;
#[cfg(feature = "oauth")]
pub(crate) mod oauth;
#[cfg(any(feature = "pairing", feature = "pairing-client"))]
pub(crate) mod pairing;
