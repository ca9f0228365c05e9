use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    /// @routeGated("todos.size() > 0")
    Delete,
}

fn main() {}
