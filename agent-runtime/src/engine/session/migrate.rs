//! Reading a stored state back when the app changed since it was committed
//! (`docs/stores.md` §Upgrades): the state as stored when it still deserializes, else what
//! [`App::migrate`] makes of its JSON. A state nothing can read is never replaced here: the
//! caller keeps the stored copy and refuses the session.

use serde_json::Value;

use crate::app::App;

/// A stored state, read back.
pub(crate) enum Read<S> {
    /// It deserialized as it is.
    AsStored(S),
    /// It did not (`why`); [`App::migrate`] carried it over.
    Migrated {
        /// This version's state.
        state: S,
        /// Why the stored JSON did not deserialize as it is.
        why: String,
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

/// Reads the stored JSON `text`, committed under `stored_hash`: as it is, else through
/// [`App::migrate`] (a panic in the hook is caught). The error says why neither worked.
pub(crate) fn read_state<A: App>(
    app: &A,
    text: &str,
    stored_hash: &str,
) -> Result<Read<A::State>, String> {
    let why = match serde_json::from_str::<A::State>(text) {
        Ok(state) => return Ok(Read::AsStored(state)),
        Err(e) => e.to_string(),
    };
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("the stored state is not JSON ({e})"))?;
    let migrated = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        app.migrate(value, stored_hash)
    }));
    match migrated {
        Ok(Ok(state)) => Ok(Read::Migrated { state, why }),
        Ok(Err(e)) => Err(format!(
            "the stored state no longer deserializes ({why}) and App::migrate could not carry \
             it over: {e}"
        )),
        Err(payload) => Err(format!(
            "the stored state no longer deserializes ({why}) and App::migrate panicked: {}",
            super::panic_text(&*payload)
        )),
    }
}
