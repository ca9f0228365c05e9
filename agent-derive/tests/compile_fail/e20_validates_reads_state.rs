use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    Set {
        /// @validates("v <= state.max")
        value: i32,
    },
}

fn main() {}
