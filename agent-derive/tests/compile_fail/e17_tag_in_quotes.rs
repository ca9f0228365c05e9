use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    /// Unlike "@humanOnly" variants, this one is shared.
    Reset,
}

fn main() {}
