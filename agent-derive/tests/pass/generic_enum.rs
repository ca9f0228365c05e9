//! A generic message enum: the derive adds the bounds `AgentMsg` needs.
use agent_derive::AgentMsg;
use agent_schema::AgentMsg as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Msg<T, const N: usize> {
    /// @intent("Set the value")
    Set { value: T },
    /// @requiresConfirm
    Reset,
}

fn main() {
    assert_eq!(<Msg<u32, 3>>::variants()[0].wire_name, "set");
    assert_eq!(Msg::<String, 1>::Reset.variant_name(), "reset");
    assert!(<Msg<String, 1>>::variants()[1].annotations.requires_confirm);
}
