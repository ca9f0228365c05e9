use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    Set {
        /// The weight.
        /// @validates("v >= 0 &&")
        weight: f64,
        /// @validates("")
        name: String,
    },
}

fn main() {}
