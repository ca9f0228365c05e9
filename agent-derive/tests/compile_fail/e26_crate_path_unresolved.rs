use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
#[agent(crate = "no_such_crate::schema")]
enum Msg {
    Inc,
}

fn main() {}
