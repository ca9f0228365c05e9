use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    /// Only for admins (@humanOnly).
    Reset,
}

fn main() {}
