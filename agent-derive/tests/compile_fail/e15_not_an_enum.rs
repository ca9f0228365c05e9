use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
struct Msg {
    count: i32,
}

fn main() {}
