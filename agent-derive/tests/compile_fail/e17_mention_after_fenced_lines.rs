use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    /// ```
    /// @humanOnly
    /// ```
    /// ```text
    /// x
    /// ```
    /// see the @example tag
    Reset,
}

fn main() {}
