use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Msg {
    /// @example({"a":[1})
    Inc,
}

fn main() {}
