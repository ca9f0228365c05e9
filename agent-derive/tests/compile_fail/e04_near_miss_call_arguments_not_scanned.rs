use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    /// @intnet(x @humanOnly)
    Reset,
}

fn main() {}
