use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    /// Deletes everything @requiresConfirm
    Delete,
}

fn main() {}
