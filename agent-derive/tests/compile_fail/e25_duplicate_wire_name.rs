use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Msg {
    AddRow,
    #[serde(rename = "addRow")]
    InsertRow,
}

fn main() {}
