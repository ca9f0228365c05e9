//! Pairing's two ends (`docs/pairing.md`): the server's `GET /agent/ws` (`socket`), where apps that
//! run elsewhere pair their sessions with this server, and the client (`client`, feature
//! `pairing-client`) that hosts an app in its own process and pairs it with a server by URL and
//! token. The paired session itself (hub, records, frames) is in the engine; its operations are
//! the operation core's.

#[cfg(feature = "pairing-client")]
pub mod client;
#[cfg(feature = "fleet")]
mod fleet_socket;
#[cfg(feature = "pairing")]
pub(crate) mod socket;
#[cfg(feature = "pairing")]
mod writer;

#[cfg(feature = "pairing-client")]
fn socket_path() -> &'static str {
    crate::engine::paired::SOCKET_PATH
}
