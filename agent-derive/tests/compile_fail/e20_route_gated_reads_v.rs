use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    /// @routeGated("v > 0")
    Delete,
}

fn main() {}
