//! An unknown tag is the only error: the derive still implements `AgentMsg`, so the app's
//! use of the enum as its `Msg` adds no "`Msg: AgentMsg` is not satisfied".
use tea_agent_derive::AgentMsg;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    /// @requireConfirm
    Delete,
    /// @intent("x")
    Inc,
}

trait App {
    type Msg: tea_agent_schema::AgentMsg;
}

struct Counter;

impl App for Counter {
    type Msg = Msg;
}

fn kind_of(msg: &Msg) -> MsgKind {
    tea_agent_schema::AgentMsg::kind(msg)
}

fn main() {
    let _ = kind_of(&Msg::Inc);
    let _ = MsgKind::Delete;
}
