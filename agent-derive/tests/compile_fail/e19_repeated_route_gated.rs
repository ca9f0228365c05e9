use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    /// @routeGated("state.ready")
    /// @routeGated("state.admin", "admins only")
    Delete,
}

fn main() {}
