use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    /// Deletes.
    /// @requireConfirm
    Delete,
    /// @Intent("x")
    Inc,
    /// @warn("costs money")
    Buy,
    /// @examples({})
    Dec,
    /// Not close, ignored: @see @todo @someOtherTag
    Ok,
}

fn main() {}
