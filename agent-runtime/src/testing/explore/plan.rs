//! A run as proptest generates and shrinks it: a list of [`StepPlan`]s, each a few abstract
//! choices resolved against the app's state when the step runs (which actions are listed
//! then, which ids exist). Every choice shrinks toward 0, and 0 is the simplest one (the first
//! listed action, the synthesized `payloadHint`, an approval), so a shrunk run reads plainly.

use proptest::prelude::*;
use proptest::sample::Index;

/// What one step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StepKind {
    /// The agent sends an action it reads as available, with a payload inside its schema.
    Available,
    /// The agent sends an available action with a payload just outside its schema.
    OutsideSchema,
    /// The agent sends an action listed unavailable, or not listed at all.
    Unavailable,
    /// The agent sends a `@humanOnly` action.
    HumanOnly,
    /// The human dispatches a message of their own (a `@humanOnly` one when there is one),
    /// its strings seeded with values agents must never see when they land in `@redact`
    /// fields.
    HumanDispatch,
    /// The human undoes the agent's last commit.
    Undo,
}

impl StepKind {
    /// The kind a draw in `0..100` selects (0 is the simplest).
    fn from_draw(d: u8) -> StepKind {
        match d {
            0..=67 => StepKind::Available,
            68..=75 => StepKind::OutsideSchema,
            76..=83 => StepKind::Unavailable,
            84..=88 => StepKind::HumanOnly,
            89..=94 => StepKind::HumanDispatch,
            _ => StepKind::Undo,
        }
    }
}

/// How the human answers a proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    Approve,
    Reject,
    /// Approves an edited message (another payload of the same variant).
    Edit,
}

/// One step, before it meets the state.
#[derive(Clone)]
pub(crate) struct StepPlan {
    pub(crate) kind: StepKind,
    /// Which of the candidate actions.
    pub(crate) pick: Index,
    /// The payload's choices, in the order the generator asks for them (0 when used up).
    pub(crate) draws: Vec<u32>,
    pub(crate) decision: Decision,
}

impl std::fmt::Debug for StepPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:?}(pick {}, draws {:?}, {:?})",
            self.kind,
            self.pick.index(1 << 16),
            self.draws,
            self.decision
        )
    }
}

/// Runs of `1..=steps` steps.
pub(crate) fn runs(steps: usize) -> impl Strategy<Value = Vec<StepPlan>> {
    proptest::collection::vec(step(), 1..=steps.max(1))
}

fn step() -> impl Strategy<Value = StepPlan> {
    (
        0u8..100,
        any::<Index>(),
        proptest::collection::vec(any::<u32>(), 0..12),
        0u8..10,
    )
        .prop_map(|(kind, pick, draws, decision)| StepPlan {
            kind: StepKind::from_draw(kind),
            pick,
            draws,
            decision: match decision {
                0..=4 => Decision::Approve,
                5..=7 => Decision::Reject,
                _ => Decision::Edit,
            },
        })
}

/// The choices of one payload, read in order; past the end every choice is 0.
#[derive(Debug)]
pub(crate) struct Draws<'a> {
    values: &'a [u32],
    at: usize,
}

impl<'a> Draws<'a> {
    pub(crate) fn new(values: &'a [u32]) -> Self {
        Draws { values, at: 0 }
    }

    /// A choice among `n` (0 when `n` is 0 or 1, without using a draw).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        let v = self.values.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        v as usize % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_read_in_order_then_zero() {
        let mut d = Draws::new(&[7, 3]);
        assert_eq!(d.below(1), 0);
        assert_eq!(d.below(5), 2);
        assert_eq!(d.below(2), 1);
        assert_eq!(d.below(9), 0);
    }

    #[test]
    fn the_simplest_draw_is_an_available_action_approved() {
        assert_eq!(StepKind::from_draw(0), StepKind::Available);
        assert_eq!(StepKind::from_draw(99), StepKind::Undo);
    }
}
