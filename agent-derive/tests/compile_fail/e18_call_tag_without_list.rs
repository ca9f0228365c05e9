use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    /// @intent "Delete a row"
    Delete,
}

fn main() {}
