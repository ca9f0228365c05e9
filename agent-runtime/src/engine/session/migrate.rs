//! Reading a stored state back when the app changed since it was committed
//! (`docs/stores.md` §Upgrades): the state as stored when it still deserializes, else what
//! [`App::migrate`] makes of its JSON. A state nothing can read is never replaced here: the
//! caller keeps the stored copy and refuses the session.
//!
//! Why a state did not read is said twice ([`Unread`]): serde's error text quotes the value it
//! could not read (`invalid type: string "…", expected u64`), a `@redact` one as readily as
//! any, and so can [`App::migrate`]'s error or panic. Agents get fixed words; the full text
//! goes to the operator's log only (`docs/security.md` §What agents see).

use serde_json::error::Category;
use serde_json::Value;

use crate::app::App;

/// Why a stored state did not read as it is, or at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unread {
    /// Fixed words, quoting nothing stored: what agents (and the session's log) may read.
    pub(crate) shown: String,
    /// The same with serde's and [`App::migrate`]'s own texts: for the operator's log only.
    pub(crate) full: String,
}

impl Unread {
    /// Writes the full text to the operator's log (`tracing`, target `tea_agent_runtime::store`)
    /// under `what` happened to `session`.
    pub(crate) fn log(&self, session: &str, what: &str) {
        tracing::error!(target: "tea_agent_runtime::store", session = %session, "{what}: {}", self.full);
    }
}

/// A stored state, read back.
pub(crate) enum Read<S> {
    /// It deserialized as it is.
    AsStored(S),
    /// It did not (`why`); [`App::migrate`] carried it over.
    Migrated {
        /// This version's state.
        state: S,
        /// Why the stored JSON did not deserialize as it is.
        why: Unread,
    },
}

impl<S> Read<S> {
    /// The state, however it was read.
    pub(crate) fn into_state(self) -> S {
        match self {
            Read::AsStored(state) | Read::Migrated { state, .. } => state,
        }
    }
}

/// What a failed read of the stored JSON was, in words that quote nothing of it.
fn kind_of(e: &serde_json::Error) -> &'static str {
    match e.classify() {
        Category::Data => "a field's type or shape changed",
        Category::Syntax | Category::Eof => "it is not JSON",
        Category::Io => "it could not be read",
    }
}

/// Reads the stored JSON `text`, committed under `stored_hash`: as it is, else through
/// [`App::migrate`] (a panic in the hook is caught). The error says why neither worked.
pub(crate) fn read_state<A: App>(
    app: &A,
    text: &str,
    stored_hash: &str,
) -> Result<Read<A::State>, Unread> {
    let why = match serde_json::from_str::<A::State>(text) {
        Ok(state) => return Ok(Read::AsStored(state)),
        Err(e) => Unread {
            shown: kind_of(&e).to_owned(),
            full: e.to_string(),
        },
    };
    let value: Value = serde_json::from_str(text).map_err(|e| Unread {
        shown: format!(
            "the stored state is not JSON ({}; the full error is in the server's log)",
            kind_of(&e)
        ),
        full: format!("the stored state is not JSON ({e})"),
    })?;
    let migrated = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        app.migrate(value, stored_hash)
    }));
    let (shown, full) = match migrated {
        Ok(Ok(state)) => return Ok(Read::Migrated { state, why }),
        Ok(Err(e)) => (
            "App::migrate could not carry it over".to_owned(),
            format!("App::migrate could not carry it over: {e}"),
        ),
        Err(payload) => (
            "App::migrate panicked".to_owned(),
            format!("App::migrate panicked: {}", super::panic_text(&*payload)),
        ),
    };
    let said = |why: &str, then: &str| {
        format!("the stored state no longer deserializes ({why}) and {then}")
    };
    Err(Unread {
        shown: format!(
            "{} (the full error is in the server's log)",
            said(&why.shown, &shown)
        ),
        full: said(&why.full, &full),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state whose `pin` was text and is now a number.
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)] // read by serde only
    struct Pin {
        pin: u64,
    }

    #[test]
    fn a_type_change_is_told_without_the_value() {
        let e = serde_json::from_str::<Pin>(r#"{"pin":"hunter2"}"#).expect_err("a string");
        assert!(e.to_string().contains("hunter2"), "serde quotes it: {e}");
        assert!(!kind_of(&e).contains("hunter2"));
        assert_eq!(kind_of(&e), "a field's type or shape changed");
        let e = serde_json::from_str::<Value>(r#"{"pin":"hunter2"#).expect_err("cut");
        assert_eq!(kind_of(&e), "it is not JSON");
    }
}
