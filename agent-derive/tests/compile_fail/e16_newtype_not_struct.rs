use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    Set(i32),
    Tags(Vec<String>),
    Name(String),
    Label(&'static str),
    Pair((i32, i32)),
}

fn main() {}
