use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    Save {
        /// @intent("x")
        why: String,
        /// @humanOnly
        note: String,
    },
}

fn main() {}
