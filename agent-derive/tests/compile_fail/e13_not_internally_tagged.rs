use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
enum External {
    Inc,
}

#[derive(AgentMsg)]
#[serde(tag = "type", content = "c")]
enum Adjacent {
    Inc,
}

#[derive(AgentMsg)]
#[serde(untagged)]
enum Untagged {
    Inc {},
}

fn main() {}
