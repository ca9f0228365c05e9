use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    Pair(i32, i32),
    Empty(),
    #[serde(skip)]
    Ignored(i32, i32),
}

fn main() {}
