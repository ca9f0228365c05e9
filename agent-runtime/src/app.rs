//! The trait an application implements to be driven by agents: a TEA app (`State`, `Msg`,
//! `update`, effects as data) plus optional hooks that shape what agents see.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
pub use tea_agent_schema::protocol::Progress;
pub use tea_agent_schema::Bindings;
use tea_agent_schema::{AgentContext, AgentDocs, AgentMsg};

/// The error an effect task returns; its `Display` ends up in `drain.errors`
/// (`effect failed: <error>`).
pub type EffectError = Box<dyn std::error::Error + Send + Sync>;

/// The error [`App::migrate`] returns: why a stored state could not be carried over.
pub type MigrationError = Box<dyn std::error::Error + Send + Sync>;

/// A TEA application that agents can drive.
///
/// One value of the implementing type serves every session of a host; per-session data lives in
/// [`App::State`].
pub trait App: Send + Sync + Sized + 'static {
    /// The application state. Serialized (then [`App::redact`]ed) for everything agents see;
    /// deserialized when a durable store brings a session back.
    type State: Serialize + serde::de::DeserializeOwned + JsonSchema + Clone + Send + Sync + 'static;
    /// The message enum, annotated with agent tags.
    type Msg: AgentMsg + Clone + Sync;
    /// Effects as data. `would_dispatch` predicts them without running them, and shows
    /// agents what they carry only when [`App::effect_preview`] says so.
    type Effect: Serialize + Send + 'static;

    /// The app's name (the describe document's `name`). The default is the implementing
    /// type's name without its module path (`NotesApp` for `my_crate::NotesApp`).
    fn name(&self) -> &str {
        short_type_name(std::any::type_name::<Self>())
    }

    /// The app's version (the describe document's `version`). The default, `0.0.0`, says no
    /// version was given; `env!("CARGO_PKG_VERSION")` is the usual override.
    fn version(&self) -> &str {
        "0.0.0"
    }

    /// The initial state of a new session and the effects to start with.
    fn init(&self) -> (Self::State, Vec<Self::Effect>);

    /// Applies one message to the state and returns the effects to run.
    fn update(&self, state: &mut Self::State, msg: Self::Msg) -> Vec<Self::Effect>;

    /// Runs one effect. It may send follow-up messages into the same session through `ctx`.
    /// An `Err` (or a panic) is reported in `drain.errors`; the session keeps running.
    ///
    /// An app without effects (`type Effect = ();`, `update` returning `vec![]`) need not
    /// write it. The default runs nothing and fails: an app that returns effects and forgot
    /// this method sees `effect failed: App::run_effect is not implemented …` in
    /// `drain.errors` instead of effects silently lost.
    fn run_effect(
        &self,
        effect: Self::Effect,
        ctx: EffectContext<Self::Msg>,
    ) -> impl Future<Output = Result<(), EffectError>> + Send + 'static {
        drop((effect, ctx));
        std::future::ready(Err(EffectError::from(
            "App::run_effect is not implemented: the effect was not run",
        )))
    }

    /// Whether `would_dispatch` shows agents the effects it predicts. The default,
    /// [`EffectPreview::hidden`], shows only how many there are: an effect can carry what
    /// agents must not see (a `@redact` key passed to a call), and the state's `@redact` tags
    /// do not follow a value into an effect. [`EffectPreview::redacted`] shows them without
    /// the fields the effect type tags `/// @redact`.
    fn effect_preview(&self) -> EffectPreview<Self::Effect> {
        EffectPreview::hidden()
    }

    /// Static documentation for agents (`docs` in the describe document).
    fn docs(&self) -> Option<AgentDocs> {
        None
    }

    /// Per-state narrative and hints (`observe.context`, `describe_context`).
    fn context(&self, _state: &Self::State) -> Option<AgentContext> {
        None
    }

    /// Messages the app explicitly offers now (`list_actions` pass 2). `Some` makes the hook
    /// explicit: `@agentOnly` variants are then listed only when returned here.
    fn affordances(&self, _state: &Self::State) -> Option<Vec<Self::Msg>> {
        None
    }

    /// The variants the app's UI currently lets the user trigger (`list_actions` pass 1), as
    /// kinds of the `MsgKind` enum `#[derive(AgentMsg)]` generates beside `Msg`:
    /// `Bindings::only([MsgKind::Add, MsgKind::Clear])`.
    ///
    /// The default, [`Bindings::all`], offers agents every variant they may send (every
    /// variant not `@humanOnly`), in declaration order, each with its synthesized
    /// `payloadHint`. An app overrides it to narrow the list to what its UI shows now; bound
    /// variants are listed `source: "binding"`, `payloadHint: null`, and a bound `@humanOnly`
    /// variant stays hidden from agents (`docs/semantics.md` §4).
    fn bindings(&self, _state: &Self::State) -> Bindings<<Self::Msg as AgentMsg>::Kind> {
        Bindings::all()
    }

    /// Whether the human may undo a commit of `variant` although its message starts effects
    /// (its variant is tagged `@emits`, or its `update` returned effects). An undo reverts
    /// the state only, never what the effects did (`docs/semantics.md` §12), so the default
    /// is no: answer `true` for a variant whose effects are harmless to leave done.
    fn undoable_with_effects(&self, _variant: &str) -> bool {
        false
    }

    /// Removes or masks, in place, what agents must not see in the serialized state, for
    /// masking that depends on values. A field agents must never see is better tagged
    /// `/// @redact` in the state type: it is never serialized at all.
    ///
    /// **The slow path**: an app that overrides this hook has its whole state serialized,
    /// hooked and diffed at every commit (cost proportional to the state); without it, a
    /// commit costs what it changes plus a walk of the typed state.
    fn redact(&self, state: &mut Value) {
        default_redact(state);
    }

    /// An outline of what the app shows (`describe_visible_content`).
    fn outline(&self, _state: &Self::State) -> Option<VisibleContent> {
        None
    }

    /// Named regions of the UI (`query_dom`).
    fn regions(&self, _state: &Self::State) -> Vec<Region> {
        Vec::new()
    }

    /// Carries a stored state that no longer deserializes as [`App::State`] (the app changed
    /// since it was committed) over to this version's state. `stored` is the JSON the store
    /// holds, `stored_schema_hash` the `schemaHash` it was committed under (it covers the state
    /// schema, so an app can tell its old versions apart).
    ///
    /// Runs when a durable session is loaded (and whenever a stored state is read back), before
    /// any commit; the result is committed as the next sequence number with a `Session
    /// migrated` log entry. An `Err` or a panic leaves the stored state untouched: the session
    /// refuses to load (503 `paused` saying why) until a version that can read it is deployed
    /// (`docs/stores.md` §Upgrades). Nothing is ever reset.
    ///
    /// The default is [`fill_missing_fields`] from the initial state: a field added to `State`
    /// takes its value from `init()`. A field with `#[serde(default)]` needs no migration at
    /// all.
    fn migrate(
        &self,
        stored: Value,
        _stored_schema_hash: &str,
    ) -> Result<Self::State, MigrationError> {
        fill_missing_fields(&self.init().0, stored)
    }

    /// What must hold of every state the app reaches, beyond what its type says (ids unique,
    /// a counter ahead of every id it numbered, …): `Err` says what does not. The runtime
    /// never calls it while serving; `testing::explore` (feature `explore`) checks it after
    /// every step of its runs (`docs/guide.md` §Let an agent try everything). The default
    /// holds for every state.
    fn invariant(&self, _state: &Self::State) -> Result<(), String> {
        Ok(())
    }
}

/// `path::to::Type<Args>` → `Type`.
fn short_type_name(full: &'static str) -> &'static str {
    let without_args = full.split('<').next().unwrap_or(full);
    without_args.rsplit("::").next().unwrap_or(without_args)
}

/// The default [`App::migrate`]: `stored` with the fields it lacks taken from `initial`, then
/// deserialized. First only the top-level fields are filled; when that does not deserialize,
/// every nested object sharing at least one key with the object at the same place in
/// `initial` is filled too (objects with no key in common, such as another enum variant or a
/// map's own entries, are left as stored). Stored values are never replaced, arrays never
/// filled.
pub fn fill_missing_fields<S>(initial: &S, stored: Value) -> Result<S, MigrationError>
where
    S: Serialize + serde::de::DeserializeOwned,
{
    let initial = serde_json::to_value(initial)?;
    let mut shallow = stored.clone();
    fill(&mut shallow, &initial, false);
    let first = match serde_json::from_value(shallow) {
        Ok(state) => return Ok(state),
        Err(e) => e,
    };
    let mut deep = stored;
    fill(&mut deep, &initial, true);
    serde_json::from_value(deep).map_err(|e| {
        if e.to_string() == first.to_string() {
            e.into()
        } else {
            format!("{first}; filled deeper: {e}").into()
        }
    })
}

/// Adds to `stored` the keys of `initial` it lacks (recursively when `deep`, into objects that
/// share a key with their counterpart).
fn fill(stored: &mut Value, initial: &Value, deep: bool) {
    let (Value::Object(stored), Value::Object(initial)) = (stored, initial) else {
        return;
    };
    for (key, value) in initial {
        match stored.get_mut(key) {
            None => {
                stored.insert(key.clone(), value.clone());
            }
            Some(inner) if deep => {
                let shares = match (&*inner, value) {
                    (Value::Object(a), Value::Object(b)) => b.keys().any(|k| a.contains_key(k)),
                    _ => false,
                };
                if shares {
                    fill(inner, value, true);
                }
            }
            Some(_) => {}
        }
    }
}

/// How `would_dispatch` shows agents the effects it predicts (see [`App::effect_preview`]).
pub struct EffectPreview<E> {
    /// The effect type's JSON Schema, whose `@redact` fields are left out; `None`: hidden.
    schema: Option<Value>,
    effect: PhantomData<fn() -> E>,
}

impl<E> EffectPreview<E> {
    /// Effects are left out of predictions: `would_dispatch` answers `"effects": []` and
    /// how many there are (`effectsHidden`).
    pub fn hidden() -> Self {
        EffectPreview {
            schema: None,
            effect: PhantomData,
        }
    }

    /// The effect type's schema when effects are shown.
    pub(crate) fn into_schema(self) -> Option<Value> {
        self.schema
    }
}

impl<E: JsonSchema> EffectPreview<E> {
    /// Effects are shown, serialized without the fields tagged `/// @redact` in `E` and the
    /// types inside it (the same tag, read the same way, as on the state). A field that
    /// carries a secret is tagged here even when the state field it came from is: the tags
    /// belong to types, not to values. A tag that does not parse fails host construction.
    pub fn redacted() -> Self {
        EffectPreview {
            schema: Some(tea_agent_schema::describe::state_schema::<E>()),
            effect: PhantomData,
        }
    }
}

impl<E> std::fmt::Debug for EffectPreview<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = if self.schema.is_some() {
            "redacted"
        } else {
            "hidden"
        };
        f.write_str(shown)
    }
}

/// What the default [`App::redact`] turns the probe into (see [`overrides_redact`]).
const REDACT_PROBE: &str = "\u{0}tea-agent-runtime: is App::redact the default?";

/// The body of the default [`App::redact`]: leaves every state alone (it answers the probe
/// of [`overrides_redact`] only).
fn default_redact(state: &mut Value) {
    if state.as_str() == Some(REDACT_PROBE) {
        *state = Value::Bool(true);
    }
}

/// Whether `app` overrides [`App::redact`]: only the default answers the probe.
pub(crate) fn overrides_redact<A: App>(app: &A) -> bool {
    let mut probe = Value::String(REDACT_PROBE.to_owned());
    app.redact(&mut probe);
    probe != Value::Bool(true)
}

/// What [`App::outline`] returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VisibleContent {
    /// The app's current route or address.
    pub url: Option<String>,
    /// The outline, top to bottom.
    pub outline: Vec<OutlineNode>,
}

/// One node of a visible-content outline, tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum OutlineNode {
    /// A heading.
    Heading {
        /// 1 for the top level.
        level: u8,
        /// The heading text.
        text: String,
    },
    /// A run of text.
    Text {
        /// The text.
        text: String,
    },
    /// A list.
    List {
        /// Its items.
        items: Vec<OutlineNode>,
    },
    /// A list item.
    Item {
        /// The item text.
        text: String,
        /// Nested nodes (absent on the wire when empty).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        children: Vec<OutlineNode>,
    },
    /// A button.
    Button {
        /// The label.
        text: String,
        /// Whether it is disabled.
        disabled: bool,
        /// The variant it dispatches, if any.
        #[serde(rename = "actionVariant")]
        action_variant: Option<String>,
    },
    /// An input.
    Input {
        /// Its label.
        label: Option<String>,
        /// Its current value.
        value: Option<String>,
        /// The input type (`text`, `number`, …).
        #[serde(rename = "type")]
        input_type: String,
    },
    /// A link.
    Link {
        /// The link text.
        text: String,
        /// Its target.
        href: String,
    },
}

/// A named region of the UI, answered by `query_dom`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Region {
    /// The region's name (what `query_dom {name}` looks for).
    pub name: String,
    /// Its text content.
    pub text: String,
    /// Attributes.
    #[serde(default)]
    pub attrs: std::collections::BTreeMap<String, String>,
}

/// Handed to [`App::run_effect`]: lets an effect send follow-up messages into its session,
/// report how far it got ([`EffectContext::progress`]) and learn that it was asked to stop
/// ([`EffectContext::cancelled`]).
pub struct EffectContext<M> {
    enqueue: Arc<dyn Fn(M) -> Result<(), SessionClosed> + Send + Sync>,
    work: Arc<dyn EffectWork>,
}

/// What an effect's context reaches of its work in the session engine: where its progress goes
/// and the signal that it was cancelled.
pub(crate) trait EffectWork: Send + Sync {
    /// Replaces the effect's progress (ignored once it ended).
    fn progress(&self, progress: Progress);
    /// The cancellation signal: `true` once the effect was asked to stop.
    fn cancel_signal(&self) -> tokio::sync::watch::Receiver<bool>;
}

impl<M> Clone for EffectContext<M> {
    fn clone(&self) -> Self {
        EffectContext {
            enqueue: self.enqueue.clone(),
            work: self.work.clone(),
        }
    }
}

impl<M> std::fmt::Debug for EffectContext<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EffectContext").finish_non_exhaustive()
    }
}

/// The session was closed; the message was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("session closed")]
pub struct SessionClosed;

impl<M> EffectContext<M> {
    /// A context whose `dispatch` calls `enqueue`, for the running effect `work`.
    pub(crate) fn new(
        enqueue: Arc<dyn Fn(M) -> Result<(), SessionClosed> + Send + Sync>,
        work: Arc<dyn EffectWork>,
    ) -> Self {
        EffectContext { enqueue, work }
    }

    /// Queues `msg` behind everything already in the session's inbox. Effect messages are
    /// trusted (they come from the app itself): no validation, no confirmation.
    pub fn dispatch(&self, msg: M) -> Result<(), SessionClosed> {
        (self.enqueue)(msg)
    }

    /// Reports how far the effect got (`Progress::steps(30, 100).with_text("importing")`).
    /// The report replaces the previous one: the agent waiting on the dispatch that started
    /// the effect, `observe`, the human's event stream and the console read the latest, so a
    /// flood of reports costs nothing more than one (`docs/semantics.md` §5.6). Ignored once
    /// the effect ended.
    pub fn progress(&self, progress: Progress) {
        self.work.progress(progress);
    }

    /// Whether the effect was asked to stop (by the human, by the agent whose message started
    /// it, or by that agent's MCP client).
    pub fn is_cancelled(&self) -> bool {
        *self.work.cancel_signal().borrow()
    }

    /// Resolves once the effect is asked to stop; an effect selects on it beside its work and
    /// returns. One that does not end within the host's
    /// [`cancel_grace`](crate::config::HostConfig::cancel_grace) has its task aborted.
    pub fn cancelled(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut signal = self.work.cancel_signal();
        async move {
            if signal.wait_for(|c| *c).await.is_err() {
                // The work is gone (the session dropped it): never resolves.
                std::future::pending::<()>().await;
            }
        }
    }
}

#[cfg(test)]
mod defaults_tests {
    //! An app that writes only `init` and `update` (issue: the `App` trait was learnt from
    //! compiler errors).
    use super::*;
    use crate::config::HostConfig;
    use crate::engine::session::DispatchOptions;
    use crate::security::MemoryAuditSink;
    use crate::{AgentMsg, Host};
    use serde_json::json;
    use tea_agent_schema::protocol::{SendResult, WaitFor};

    #[derive(Clone, Serialize, Deserialize, JsonSchema)]
    struct State {
        n: i64,
    }

    #[derive(Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
    #[serde(tag = "type", rename_all = "camelCase")]
    enum Msg {
        /// @intent("add one")
        Inc,
        /// @intent("start an effect the app forgot to run")
        Fetch,
    }

    struct Minimal;

    impl App for Minimal {
        type State = State;
        type Msg = Msg;
        type Effect = ();

        fn init(&self) -> (State, Vec<()>) {
            (State { n: 0 }, vec![])
        }

        fn update(&self, state: &mut State, msg: Msg) -> Vec<()> {
            match msg {
                Msg::Inc => {
                    state.n += 1;
                    vec![]
                }
                Msg::Fetch => vec![()],
            }
        }
    }

    #[test]
    fn the_name_is_the_type_name_and_the_version_is_unset() {
        assert_eq!(Minimal.name(), "Minimal");
        assert_eq!(Minimal.version(), "0.0.0");
        assert_eq!(short_type_name("a::b::Notes<x::Y>"), "Notes");
    }

    #[tokio::test]
    async fn an_effect_without_run_effect_is_reported_not_lost() {
        let host = Host::with_config(
            Minimal,
            HostConfig::default(),
            Arc::new(MemoryAuditSink::new()),
        )
        .unwrap();
        let session = host.create_session(None).unwrap();
        let drained = DispatchOptions::waiting_for(WaitFor::Drained);
        let inc = session
            .dispatch_as_human(&json!({"type": "inc"}), drained)
            .await
            .unwrap();
        let SendResult::Dispatched { drain, .. } = inc else {
            panic!("{inc:?}")
        };
        assert!(drain.errors.is_empty(), "{:?}", drain.errors);
        let fetch = session
            .dispatch_as_human(&json!({"type": "fetch"}), drained)
            .await
            .unwrap();
        let SendResult::Dispatched { drain, .. } = fetch else {
            panic!("{fetch:?}")
        };
        assert_eq!(drain.errors.len(), 1, "{:?}", drain.errors);
        assert!(
            drain.errors[0]
                .message
                .contains("App::run_effect is not implemented"),
            "{:?}",
            drain.errors
        );
    }
}
