use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "kind")]
enum Msg {
    Inc,
}

fn main() {}
