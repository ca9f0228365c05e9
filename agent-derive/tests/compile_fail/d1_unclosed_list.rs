use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    /// Saves.
    /// @emits("a", "b"
    Save,
}

fn main() {}
