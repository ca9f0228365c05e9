//! A probe app for runtime tests: it records every message `update` sees, and has variants
//! that panic, fail an effect, or keep the session busy.

use std::future::Future;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tea_agent_runtime::app::EffectContext;
use tea_agent_runtime::app::{App, Bindings, EffectError};
use tea_agent_runtime::AgentMsg;

/// Probe state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProbeState {
    /// Incremented by `inc`.
    pub count: i64,
    /// Every variant `update` was called with, in order.
    pub applied: Vec<String>,
    /// The last deleted account.
    pub deleted: Option<String>,
    /// A secret the redact hook removes.
    pub secret: String,
}

/// Probe messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ProbeMsg {
    /// @intent("increment")
    Inc,
    /// @humanOnly @intent("click button")
    ClickButton,
    /// @requiresConfirm @intent("delete account")
    DeleteAccount {
        /// The account.
        user_id: String,
    },
    /// @intent("set a value")
    Set {
        /// @validates("v >= 0 && v <= 100")
        value: i64,
    },
    /// @intent("set an unchecked value")
    SetRaw {
        /// Any `i32`.
        n: i32,
    },
    /// Panics in update.
    Crash,
    /// Starts an effect that fails after `afterMs`.
    #[serde(rename_all = "camelCase")]
    FailLater {
        /// Delay before failing.
        after_ms: u64,
    },
    /// Starts an effect that sends `inc` `times` times, every `everyMs`.
    #[serde(rename_all = "camelCase")]
    Ticks {
        /// How many.
        times: u32,
        /// Interval.
        every_ms: u64,
    },
    /// Changes the redacted secret.
    Rotate,
}

/// Probe effects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum ProbeEffect {
    /// Fails after a delay.
    #[serde(rename = "probe/fail")]
    Fail {
        /// Delay.
        after_ms: u64,
    },
    /// Sends `inc` repeatedly.
    #[serde(rename = "probe/ticks")]
    Ticks {
        /// How many.
        times: u32,
        /// Interval.
        every_ms: u64,
    },
}

/// The probe app.
#[derive(Debug, Clone, Copy, Default)]
pub struct Probe;

impl App for Probe {
    type State = ProbeState;
    type Msg = ProbeMsg;
    type Effect = ProbeEffect;

    fn name(&self) -> &str {
        "probe"
    }

    fn version(&self) -> &str {
        "1.0.0"
    }

    fn init(&self) -> (ProbeState, Vec<ProbeEffect>) {
        (
            ProbeState {
                count: 0,
                applied: Vec::new(),
                deleted: None,
                secret: "s0".into(),
            },
            Vec::new(),
        )
    }

    fn update(&self, state: &mut ProbeState, msg: ProbeMsg) -> Vec<ProbeEffect> {
        let name = serde_json::to_value(&msg)
            .ok()
            .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_owned));
        state.applied.push(name.unwrap_or_default());
        match msg {
            ProbeMsg::Inc => state.count += 1,
            ProbeMsg::ClickButton => {}
            ProbeMsg::DeleteAccount { user_id } => state.deleted = Some(user_id),
            ProbeMsg::Set { value } => state.count = value,
            ProbeMsg::SetRaw { n } => state.count = i64::from(n),
            ProbeMsg::Crash => panic!("scoring crashed: bad row"),
            ProbeMsg::FailLater { after_ms } => return vec![ProbeEffect::Fail { after_ms }],
            ProbeMsg::Ticks { times, every_ms } => {
                return vec![ProbeEffect::Ticks { times, every_ms }]
            }
            ProbeMsg::Rotate => state.secret = format!("{}!", state.secret),
        }
        Vec::new()
    }

    fn run_effect(
        &self,
        effect: ProbeEffect,
        ctx: EffectContext<ProbeMsg>,
    ) -> impl Future<Output = Result<(), EffectError>> + Send + 'static {
        // The future must not borrow `self`: it outlives this call.
        let (times, every_ms, fail) = match effect {
            ProbeEffect::Fail { after_ms } => (0, after_ms, true),
            ProbeEffect::Ticks { times, every_ms } => (times, every_ms, false),
        };
        async move {
            if fail {
                tokio::time::sleep(Duration::from_millis(every_ms)).await;
                return Err("mid-drain failure".into());
            }
            for _ in 0..times {
                tokio::time::sleep(Duration::from_millis(every_ms)).await;
                ctx.dispatch(ProbeMsg::Inc)?;
            }
            Ok(())
        }
    }

    fn bindings(&self, _state: &ProbeState) -> Bindings<ProbeMsgKind> {
        Bindings::only([ProbeMsgKind::Inc, ProbeMsgKind::ClickButton])
    }

    fn redact(&self, state: &mut serde_json::Value) {
        if let Some(o) = state.as_object_mut() {
            o.remove("secret");
        }
    }
}
