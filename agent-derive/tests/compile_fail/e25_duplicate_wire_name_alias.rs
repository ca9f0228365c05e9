use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    Save,
    #[serde(alias = "Save")]
    Store,
}

fn main() {}
