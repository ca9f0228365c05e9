//! Pure algorithms: no I/O, no tasks, no clock of their own. Payload validation
//! (`validate`), the affordance lister (`affordances`), CEL evaluation (`cel_eval`) and the
//! route gates built on it (`route_gates`), the JSON Patch diff (`diff`), incremental
//! snapshots (`snapshot`) walked through tracked collections (`tracked`) and kept as compact
//! trees (`tree`), state reads by path
//! (`state_path`), answers shortened to a budget (`bounded`) and an app's checked schema (`catalog`).
//!
//! Imports point only at the foundation (`app`, `clock`, `config`) and at each other.

pub(crate) mod affordances;
pub(crate) mod bounded;
pub(crate) mod catalog;
pub(crate) mod cel_eval;
pub(crate) mod diff;
pub(crate) mod inverse;
pub(crate) mod route_gates;
pub(crate) mod snapshot;
pub(crate) mod state_path;
pub(crate) mod tracked;
pub(crate) mod tree;
pub(crate) mod validate;
