use tea_agent_derive::AgentMsg;

/// The app's messages.
/// @intent("x")
#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    Inc,
}

fn main() {}
