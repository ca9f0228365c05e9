//! What an exploration found ([`ExploreReport`], [`ExploreFailure`]), the properties it checks
//! ([`Property`]) and why it did not run ([`ExploreError`]).

use std::fmt;

use serde::Serialize;

use crate::engine::session::Transcript;

/// A property `explore` checks at every step (`docs/guide.md` §Let an agent try everything).
/// Its name in a report is its kebab-case spelling (`update-never-panics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Property {
    /// No `update` panicked (no `update panicked` error in any answer's `drain.errors`, the
    /// agent's or the human's).
    UpdateNeverPanics,
    /// No effect still runs once its session is closed and the host's `cancel_grace` passed.
    NoEffectOutlivesItsSession,
    /// What the gate says is what happens: an action listed available is accepted (or refused
    /// only by its `@validates`), one listed unavailable (or not listed) is refused
    /// `unavailable` with its reason, a `@humanOnly` one is refused `human-only`, and a
    /// payload outside the schema is refused `invalid`.
    GateTellsTheTruth,
    /// No `@redact` value (those the app starts with, and those the generated human put in
    /// with their own dispatches) is in any answer an agent got.
    NoRedactedValueReachesTheAgent,
    /// Each answer's `stateDiff` applied to the agent's previous state gives its `stateAfter`
    /// (when no other commit came in between: the answer's `seq` says so).
    StateDiffApplies,
    /// The human's undo of an undoable agent commit, with no later commit, restores the
    /// whole state from before it.
    UndoRestores,
    /// The state after every step serializes, deserializes and serializes again to the same
    /// JSON.
    StateRoundTrips,
    /// The state after every step satisfies [`App::invariant`](crate::app::App::invariant).
    InvariantHolds,
}

impl Property {
    /// Every property, in the order they are checked.
    pub const ALL: [Property; 8] = [
        Property::UpdateNeverPanics,
        Property::NoEffectOutlivesItsSession,
        Property::GateTellsTheTruth,
        Property::NoRedactedValueReachesTheAgent,
        Property::StateDiffApplies,
        Property::UndoRestores,
        Property::StateRoundTrips,
        Property::InvariantHolds,
    ];

    /// The kebab-case name reports use.
    pub fn name(self) -> &'static str {
        match self {
            Property::UpdateNeverPanics => "update-never-panics",
            Property::NoEffectOutlivesItsSession => "no-effect-outlives-its-session",
            Property::GateTellsTheTruth => "gate-tells-the-truth",
            Property::NoRedactedValueReachesTheAgent => "no-redacted-value-reaches-the-agent",
            Property::StateDiffApplies => "state-diff-applies",
            Property::UndoRestores => "undo-restores",
            Property::StateRoundTrips => "state-round-trips",
            Property::InvariantHolds => "invariant-holds",
        }
    }
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A property that did not hold, at a step of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    pub(crate) property: Property,
    /// The step (1-based; the step after the last for what the session's close checks).
    pub(crate) step: usize,
    pub(crate) detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at step {}: {}",
            self.property, self.step, self.detail
        )
    }
}

/// Why `explore` did not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExploreError {
    /// The app is paired (its server only relays apps that run in their own process, or mints
    /// paired sessions by default): `explore` runs the app in this process.
    #[error(
        "explore runs the app in this process, and this server's apps are paired ({0}): \
         explore the app itself (`testing::explore(app)`) without the pairing options"
    )]
    Paired(String),
    /// `run` was called inside a tokio runtime: it runs its own (call it from a plain
    /// `#[test]`, not a `#[tokio::test]`).
    #[error(
        "explore runs its own tokio runtime (its clock paused) and was called inside one: \
         call it from a plain #[test], not a #[tokio::test]"
    )]
    InsideRuntime,
    /// The in-process server could not be made.
    #[error("explore could not start: {0}")]
    Setup(String),
    /// No variant of the app can be generated (every one has a field of a schema the
    /// generator does not understand and no `@example` to take its values from).
    #[error("explore has nothing to send: {0}")]
    NothingToSend(String),
}

/// What an exploration found. It serializes for a snapshot test (`insta`): runs are
/// deterministic under their seed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ExploreReport {
    /// The app explored.
    pub app: String,
    /// The seed of the generator.
    pub seed: u64,
    /// The cases asked for.
    pub cases: u32,
    /// The steps of each case, at most.
    pub steps_per_case: usize,
    /// The properties checked at every step.
    pub properties: Vec<Property>,
    /// What the generator could not do, each with why: a variant it skips (a field whose
    /// schema it does not understand, with no `@example` to take values from).
    pub skipped: Vec<String>,
    /// The first property that failed, its run shrunk; `None` when every case passed.
    pub failure: Option<ExploreFailure>,
    /// The steps run in all, shrinking included (for a measure of speed; not serialized).
    #[serde(skip)]
    pub steps_run: u64,
    /// How many times each property was checked, shrinking included (not serialized).
    #[serde(skip)]
    pub checks: Vec<(Property, u64)>,
}

impl ExploreReport {
    /// Whether every case passed.
    pub fn passed(&self) -> bool {
        self.failure.is_none()
    }

    /// How many times `property` was checked.
    pub fn checked(&self, property: Property) -> u64 {
        self.checks
            .iter()
            .find(|(p, _)| *p == property)
            .map_or(0, |(_, n)| *n)
    }

    /// Panics with the failure (its property, step, minimal run and transcript) when a case
    /// failed.
    #[track_caller]
    pub fn assert_passed(&self) {
        if let Some(failure) = &self.failure {
            panic!("explore found a failing run of {}:\n{failure}", self.app);
        }
    }
}

/// A property that failed, on the shrunk (minimal) run that still fails it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ExploreFailure {
    /// The property.
    pub property: Property,
    /// The step of the minimal run where it failed (1-based).
    pub step: usize,
    /// What happened.
    pub detail: String,
    /// The minimal run, one line per step (what the agent or the human did).
    pub run: Vec<String>,
    /// The minimal run as a transcript (`testing::replay` runs it; `transcript_json` writes
    /// it as a file). Not serialized: its ids and times change from one run to the next.
    #[serde(skip)]
    pub transcript: Transcript,
}

impl ExploreFailure {
    /// The minimal run's transcript as the JSON file `testing::read_transcript` reads.
    pub fn transcript_json(&self) -> String {
        serde_json::to_string_pretty(&self.transcript).unwrap_or_default()
    }
}

impl fmt::Display for ExploreFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "property `{}` failed at step {} of {}: {}",
            self.property,
            self.step,
            self.run.len(),
            self.detail
        )?;
        writeln!(f, "minimal run:")?;
        for (i, line) in self.run.iter().enumerate() {
            writeln!(f, "  {}. {line}", i + 1)?;
        }
        writeln!(f, "its transcript (testing::replay runs it):")?;
        f.write_str(&self.transcript_json())
    }
}
