//! A binding names a variant through the generated kind enum: a misspelt one does not compile.
use tea_agent_derive::AgentMsg;
use tea_agent_schema::Bindings;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum NoteMsg {
    /// @intent("Add a note")
    Add { text: String },
    Clear,
}

fn bindings() -> Bindings<NoteMsgKind> {
    Bindings::only([NoteMsgKind::Add, NoteMsgKind::Claer])
}

fn main() {
    let _ = bindings();
}
