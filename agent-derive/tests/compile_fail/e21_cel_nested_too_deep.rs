use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    /// @routeGated("((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((state.ready))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))")
    Delete,
}

fn main() {}
