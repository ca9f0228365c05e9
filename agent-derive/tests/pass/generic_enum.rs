//! A generic message enum: the derive adds the bounds `AgentMsg` needs.
use tea_agent_derive::AgentMsg;
use tea_agent_schema::AgentMsg as _;
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

/// The kind enum is not generic: bindings name it the same whatever the parameters.
#[allow(dead_code)]
fn kinds() -> tea_agent_schema::Bindings<MsgKind> {
    use tea_agent_schema::VariantKind as _;
    assert_eq!(Msg::<u8, 2>::Reset.kind(), MsgKind::Reset);
    assert_eq!(MsgKind::Set.wire_name(), "set");
    tea_agent_schema::Bindings::only([MsgKind::Set])
}
