use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg<'a> {
    Rename { to: &'a str },
}

fn main() {}
