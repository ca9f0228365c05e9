//! E28: a `@validates` on a field whose Rust type the derive can read is type-checked where it
//! is written; fields of other types are left to the start-up checks.
use tea_agent_derive::AgentMsg;

#[derive(AgentMsg)]
#[serde(tag = "type")]
enum Msg {
    Set {
        /// @validates("size(v) > 0")
        count: u32,
        /// @validates("v > 'a'")
        weight: f64,
        /// @validates("v.foo == 'x'")
        name: String,
        /// @validates("v.exists(t, t > 'a')")
        ratings: Option<Vec<u8>>,
        /// Fine: the right kinds.
        /// @validates("size(v) > 0 && v.all(s, size(s) < 10)")
        tags: Vec<String>,
        /// Not a plain type: checked at start-up.
        /// @validates("v.foo == 1")
        other: Other,
    },
}

struct Other;

fn main() {}
