use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    /// @requiresConfirm(true)
    Delete,
}

fn main() {}
