use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Msg {
    /// @example({'type':'select'})
    Select,
}

fn main() {}
