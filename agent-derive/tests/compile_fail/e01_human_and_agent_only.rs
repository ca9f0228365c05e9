use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    /// @humanOnly
    /// @agentOnly
    Both,
}

fn main() {}
