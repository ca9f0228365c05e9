//! The LAP surface over real HTTP: confirmations, dispatch, the gate, an agent's own
//! proposals, versions, the human side (events, the console page), async extensions and
//! state serialization. One test binary; each module was a test file of its own.

mod async_extensions;
mod confirm;
mod console_page;
mod dispatch;
mod gate;
mod human_events;
mod pending;
mod state_serialization;
mod transcript;
mod undo;
mod versions;
mod work;
