use tea_agent_derive::AgentMsg;

struct Extra {
    note: String,
}

struct Payload {
    id: String,
}

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    Save {
        id: String,
        /// @should("x")
        #[serde(flatten)]
        extra: Extra,
        /// @validates("v > 0")
        #[serde(skip)]
        cache: u8,
    },
    Wrap(
        /// @should("the payload")
        Payload,
    ),
}

fn main() {}
