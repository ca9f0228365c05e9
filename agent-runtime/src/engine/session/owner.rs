//! The session's state as its owner sees it (`docs/security.md` §The owner sees their own
//! data): whole, the `@redact` fields and what [`App::redact`] masks included, with the JSON
//! Pointers of what agents do not see. Only the human routes read it (the owner's identity
//! decides there); no operation an agent can call reaches this module.

use serde_json::Value;

use super::{redact, Session, SessionError};
use crate::algo::diff::diff;
use crate::app::{overrides_redact, App};

/// The whole state of a session and where agents see less of it.
#[derive(Debug, Clone)]
pub(crate) struct OwnerState {
    /// The typed state serialized without redaction.
    pub(crate) state: Value,
    /// JSON Pointers of the values agents do not see (sorted, no duplicates): the fields the
    /// `@redact` plan drops and the values the app's redaction hook masks.
    pub(crate) hidden_from_agents: Vec<String>,
}

impl<A: App> Session<A> {
    /// Whether agents see less than the owner: the state type has `@redact` fields or the app
    /// overrides [`App::redact`]. When not, the agents' view is the whole state.
    pub(crate) fn redacts(&self) -> bool {
        !self.core.catalog.redact_plan().is_empty() || overrides_redact(&*self.core.app)
    }

    /// The whole state, unredacted (for the owner only).
    pub(crate) fn whole_state(&self) -> Result<Value, SessionError> {
        self.with_state(|s| serde_json::to_value(s).map_err(unserializable))
    }

    /// The whole state and the pointers of what agents do not see, both read from the same
    /// typed state (one read lock), so they describe the same commit.
    pub(crate) fn owner_state(&self) -> Result<OwnerState, SessionError> {
        let redacts = self.redacts();
        let app = &*self.core.app;
        let plan = self.core.catalog.redact_plan();
        self.with_state(|s| {
            let state = serde_json::to_value(s).map_err(unserializable)?;
            let hidden_from_agents = if redacts {
                let agents = redact(app, plan, s).map_err(SessionError::Internal)?;
                hidden_pointers(&agents, &state)
            } else {
                Vec::new()
            };
            Ok(OwnerState {
                state,
                hidden_from_agents,
            })
        })
    }
}

fn unserializable(e: serde_json::Error) -> SessionError {
    SessionError::Internal(format!("state failed to serialize: {e}"))
}

/// Where the agents' view of a state differs from the whole state: the paths of the patch that
/// takes the first to the second (a dropped field is an `add`, a masked value a `replace`).
fn hidden_pointers(agents: &Value, whole: &Value) -> Vec<String> {
    let mut paths: Vec<String> = diff(agents, whole)
        .iter()
        .map(|op| op.path().to_owned())
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

#[cfg(test)]
mod tests {
    use super::hidden_pointers;
    use serde_json::json;

    #[test]
    fn the_hidden_pointers_are_the_fields_dropped_and_the_values_masked() {
        let whole = json!({
            "count": 1,
            "apiKey": "k",
            "entries": [{"label": "a", "password": "p"}, {"label": "b", "password": "q"}],
            "note": "secret"
        });
        let agents = json!({
            "count": 1,
            "entries": [{"label": "a"}, {"label": "b"}],
            "note": "***"
        });
        assert_eq!(
            hidden_pointers(&agents, &whole),
            [
                "/apiKey",
                "/entries/0/password",
                "/entries/1/password",
                "/note"
            ]
        );
        assert!(hidden_pointers(&whole, &whole).is_empty());
    }
}
