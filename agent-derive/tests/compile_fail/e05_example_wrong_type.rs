use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Msg {
    /// @example({"n":1})
    /// @example({"type":"dec"})
    Inc,
}

fn main() {}
