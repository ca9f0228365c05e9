use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    /// @intent("this string is far too long to be shown in one excerpt", "x")
    Inc,
    /// Fine.
    Ok,
    /// @requiresConfirm(yes)
    Delete,
}

fn main() {}
