//! The relay: a server for apps that run elsewhere (an LLui app in a browser tab, a desktop or
//! terminal app) and pair with it over `/agent/ws` (`docs/pairing.md`). It hosts no app of its
//! own: a bare `POST /agent/mint` (what LLui's client sends) starts a paired session, and a
//! mint that asks for a hosted one is refused (`PairingOptions::hosted_mints` off). LAP, MCP,
//! the bridge and the console then reach the paired app.
//!
//! `cargo run --example relay [-- --help]`: the examples' flags and `AGENT_*` variables
//! (`docs/operations.md` §Configuration); the server binary to deploy for LLui apps.

use std::future::Future;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tea_agent_runtime::app::EffectContext;
use tea_agent_runtime::app::{App, EffectError};
use tea_agent_runtime::AgentMsg;

/// The relay's own app type: the server needs one, but never hosts it (every session of a
/// relay is paired, and its app answers from where it runs).
#[derive(Debug, Clone, Copy, Default)]
pub struct Relay;

/// Nothing: a relay keeps no state of its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct State {}

/// The one message of an app that is never hosted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
#[agent(crate = "tea_agent_runtime::tea_agent_schema")]
pub enum Msg {
    /// @intent("nothing: every session of a relay is paired and its app answers") @humanOnly
    Noop,
}

impl App for Relay {
    type State = State;
    type Msg = Msg;
    type Effect = ();

    fn name(&self) -> &str {
        "relay"
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn init(&self) -> (State, Vec<()>) {
        (State {}, Vec::new())
    }

    fn update(&self, _: &mut State, _: Msg) -> Vec<()> {
        Vec::new()
    }

    fn run_effect(
        &self,
        _: (),
        _: EffectContext<Msg>,
    ) -> impl Future<Output = Result<(), EffectError>> + Send + 'static {
        std::future::ready(Ok(()))
    }
}
