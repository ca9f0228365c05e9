use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
#[agent(crate = "not a path")]
enum Msg {
    Inc,
}

fn main() {}
