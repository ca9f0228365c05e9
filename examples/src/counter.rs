//! The counter: the small conformance app every test suite relies on (`docs/lap.md` §11.8).

use std::future::Future;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tea_agent_runtime::app::EffectContext;
use tea_agent_runtime::app::{
    App, Bindings, EffectError, EffectPreview, OutlineNode, Region, VisibleContent,
};
use tea_agent_runtime::{AgentContext, AgentDocs, AgentMsg};

/// Which page the counter shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum View {
    // Plain comments: doc comments on the state's types reach the agent's context (the state
    // schema in `describe` and `observe`), and these names say it all.
    // The counter itself.
    Home,
    // A (pretend) reports page.
    Reports,
}

// The counter's state. On the wire: `{"count":0,"lastDelete":null,"view":"home"}`.
// Plain comments where the name says it all (doc comments reach the agent's context).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct State {
    pub count: i64,
    /// The id of the last deleted row.
    pub last_delete: Option<String>,
    pub view: View,
}

/// The counter's messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Msg {
    /// @intent("increment the counter")
    Inc,
    /// @intent("decrement the counter")
    Dec,
    /// @intent("reset the counter to zero")
    Reset,
    /// Deletes a row; the human has to confirm.
    /// @intent("delete a row") @warning("deleting cannot be undone")
    /// @example({"type":"delete","id":"42"}) @requiresConfirm
    Delete {
        /// The row id.
        id: String,
    },
    /// @humanOnly
    SignOut,
    /// @alwaysAffordable @intent("navigate to a page")
    /// @example({"type":"nav","to":"reports"})
    Nav {
        /// The page to show.
        to: View,
    },
    /// @intent("set the counter to a value")
    SetCount {
        /// @should("a value between 0 and 1000") @validates("v >= 0 && v <= 1000")
        value: i64,
    },
    /// @agentOnly @intent("add several amounts at once") @emits("audit/write")
    BulkAdd {
        /// The amounts to add.
        amounts: Vec<i64>,
    },
}

/// The counter's effects (`would_dispatch` shows them: they carry nothing secret).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
pub enum Effect {
    /// Writes an audit record (commits nothing, sends no message).
    #[serde(rename = "audit/write")]
    AuditWrite {
        /// The amounts that were added.
        amounts: Vec<i64>,
    },
}

/// The counter app.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counter;

impl App for Counter {
    type State = State;
    type Msg = Msg;
    type Effect = Effect;

    fn name(&self) -> &str {
        "counter"
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn effect_preview(&self) -> EffectPreview<Effect> {
        EffectPreview::redacted()
    }

    fn init(&self) -> (State, Vec<Effect>) {
        (
            State {
                count: 0,
                last_delete: None,
                view: View::Home,
            },
            Vec::new(),
        )
    }

    fn update(&self, state: &mut State, msg: Msg) -> Vec<Effect> {
        match msg {
            Msg::Inc => state.count = state.count.saturating_add(1),
            Msg::Dec => state.count = state.count.saturating_sub(1),
            Msg::Reset => state.count = 0,
            Msg::Delete { id } => state.last_delete = Some(id),
            Msg::SignOut => {}
            Msg::Nav { to } => state.view = to,
            Msg::SetCount { value } => state.count = value,
            Msg::BulkAdd { amounts } => {
                // Exact in i128, then clamped: neither the sum nor the count wraps (or panics).
                let total = amounts
                    .iter()
                    .fold(i128::from(state.count), |sum, &a| sum + i128::from(a));
                state.count = total.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
                return vec![Effect::AuditWrite { amounts }];
            }
        }
        Vec::new()
    }

    fn run_effect(
        &self,
        effect: Effect,
        _ctx: EffectContext<Msg>,
    ) -> impl Future<Output = Result<(), EffectError>> + Send + 'static {
        // The audit write is synchronous: the effect is already done when the future is made.
        match effect {
            Effect::AuditWrite { amounts } => {
                tracing::info!(target: "counter", ?amounts, "audit/write");
            }
        }
        std::future::ready(Ok(()))
    }

    fn docs(&self) -> Option<AgentDocs> {
        Some(AgentDocs {
            purpose: "A counter with a few extra actions, used to show and test the agent surface."
                .into(),
            overview: Some(
                "inc/dec/reset change the count; setCount sets it (0..=1000); delete asks the human first; nav switches pages."
                    .into(),
            ),
            cautions: Some(vec!["delete cannot be undone and needs the human's approval".into()]),
            examples: None,
        })
    }

    fn context(&self, state: &State) -> Option<AgentContext> {
        let view = match state.view {
            View::Home => "home",
            View::Reports => "reports",
        };
        Some(AgentContext {
            summary: format!("viewing {view}, count is {}", state.count),
            hints: vec!["use inc/dec for small steps and setCount for big jumps".into()],
            cautions: Vec::new(),
        })
    }

    fn bindings(&self, _state: &State) -> Bindings<MsgKind> {
        Bindings::only([
            MsgKind::Inc,
            MsgKind::Dec,
            MsgKind::Reset,
            MsgKind::SetCount,
            MsgKind::Delete,
            MsgKind::SignOut,
        ])
    }

    fn outline(&self, state: &State) -> Option<VisibleContent> {
        let button = |text: &str, variant: &str| OutlineNode::Button {
            text: text.into(),
            disabled: false,
            action_variant: Some(variant.into()),
        };
        Some(VisibleContent {
            url: Some(match state.view {
                View::Home => "/".into(),
                View::Reports => "/reports".into(),
            }),
            outline: vec![
                OutlineNode::Heading {
                    level: 1,
                    text: "Counter".into(),
                },
                OutlineNode::Text {
                    text: state.count.to_string(),
                },
                button("+", "inc"),
                button("-", "dec"),
                button("Reset", "reset"),
            ],
        })
    }

    fn regions(&self, state: &State) -> Vec<Region> {
        let region = |name: &str, text: String| Region {
            name: name.into(),
            text,
            attrs: Default::default(),
        };
        vec![
            region("count", state.count.to_string()),
            region("inc", "+".into()),
            region("dec", "-".into()),
        ]
    }
}

#[cfg(test)]
mod saturation_tests {
    use super::*;

    fn at(count: i64) -> State {
        let mut state = Counter.init().0;
        state.count = count;
        state
    }

    #[test]
    fn inc_dec_and_bulk_add_saturate() {
        let mut s = at(i64::MAX);
        Counter.update(&mut s, Msg::Inc);
        assert_eq!(s.count, i64::MAX);
        let mut s = at(i64::MIN);
        Counter.update(&mut s, Msg::Dec);
        assert_eq!(s.count, i64::MIN);
        let mut s = at(0);
        Counter.update(
            &mut s,
            Msg::BulkAdd {
                amounts: vec![i64::MAX, i64::MAX, 5],
            },
        );
        assert_eq!(s.count, i64::MAX);
        let mut s = at(i64::MAX);
        Counter.update(
            &mut s,
            Msg::BulkAdd {
                amounts: vec![1, -1],
            },
        );
        assert_eq!(s.count, i64::MAX, "exact sum, not step-wise clamping");
        let mut s = at(0);
        Counter.update(
            &mut s,
            Msg::BulkAdd {
                amounts: vec![i64::MIN, -1],
            },
        );
        assert_eq!(s.count, i64::MIN);
    }
}
