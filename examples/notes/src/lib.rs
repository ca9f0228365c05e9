//! A notes app an agent can drive: the `State`, the tagged `Msg` and the `App`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tea_agent_runtime::app::App;
use tea_agent_runtime::AgentMsg;

/// One session's notes.
#[derive(Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct State {
    /// The notes, oldest first.
    pub notes: Vec<Note>,
    /// The next note's id.
    pub next_id: u32,
    /// The key the app syncs with; agents never see it.
    /// @redact
    pub sync_key: String,
}

/// A note.
#[derive(Clone, Serialize, Deserialize, JsonSchema)]
pub struct Note {
    /// Its id.
    pub id: u32,
    /// What it says.
    pub text: String,
}

/// What can happen to the notes.
#[derive(Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Msg {
    /// @intent("add a note")
    Add {
        /// @validates("size(v) > 0 && size(v) <= 200")
        text: String,
    },
    /// @intent("delete a note") @requiresConfirm
    Delete { id: u32 },
    /// @intent("clear all notes") @requiresConfirm
    /// @routeGated("size(state.notes) > 0", "there are no notes to clear")
    ClearAll,
    /// @intent("set the sync key") @humanOnly
    SetSyncKey { key: String },
}

/// The app: no effects, so `init` and `update` are all it writes.
pub struct Notes;

impl App for Notes {
    type State = State;
    type Msg = Msg;
    type Effect = ();

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn init(&self) -> (State, Vec<()>) {
        (State::default(), vec![])
    }

    fn update(&self, state: &mut State, msg: Msg) -> Vec<()> {
        match msg {
            Msg::Add { text } => {
                state.next_id += 1;
                state.notes.push(Note {
                    id: state.next_id,
                    text,
                });
            }
            Msg::Delete { id } => state.notes.retain(|n| n.id != id),
            Msg::ClearAll => state.notes.clear(),
            Msg::SetSyncKey { key } => state.sync_key = key,
        }
        vec![]
    }
}
