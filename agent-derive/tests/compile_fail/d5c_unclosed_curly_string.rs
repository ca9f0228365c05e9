use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    /// @intent(“never closed"
    Inc,
}

fn main() {}
