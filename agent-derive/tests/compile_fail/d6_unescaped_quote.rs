use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    /// @routeGated("state.mode == "admin"")
    Admin,
}

fn main() {}
