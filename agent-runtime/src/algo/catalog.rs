//! The checked schema of a host's app, built once at start-up: the message model, the
//! validator, the affordance lister, the annotation records and the cached describe document.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::Value;
use tea_agent_schema::describe::DescribeDocument;
use tea_agent_schema::protocol::{Action, ValidationOutcome};
use tea_agent_schema::redact::RedactPlan;
use tea_agent_schema::shape::StartupNote;
use tea_agent_schema::startup::{CheckedTypes, StartupError, StartupErrors};
use tea_agent_schema::{Bindings, MessageAnnotations, MsgModel};

use crate::algo::affordances::{Affordances, Listed, Offer};
use crate::algo::cel_eval::PredicateCache;
use crate::algo::validate::Validator;
use crate::app::App;
use crate::config::DispatchPolicy;

/// Why a host could not be built: every start-up error of the app's types at once (see
/// [`StartupErrors`] and [`describe`]).
pub type CatalogError = StartupErrors;

/// The describe document of `app`, after every start-up check [`Host::new`](crate::Host::new)
/// runs (the same code: it builds the host's [`Catalog`]). A snapshot test of it fails
/// exactly when the host's start would, with the same errors: those of
/// [`tea_agent_schema::describe()`] (the `Msg` schema, nested tags, the state's `@redact` tags,
/// examples, the field paths and CEL of expressions), plus the constraint keywords of the
/// messages (compiled by the validator) and the effect type's `@redact` tags (when
/// [`App::effect_preview`] shows effects). Name, version and docs are the app's.
pub fn describe<A: App>(app: &A) -> Result<DescribeDocument, CatalogError> {
    Catalog::checked(app).map(|(_, document)| document)
}

/// The checked schema of one app.
pub struct Catalog {
    model: MsgModel,
    annotations: HashMap<String, MessageAnnotations>,
    validator: Validator,
    affordances: Affordances,
    describe: Value,
    redact_plan: Arc<RedactPlan>,
    /// The `@redact` fields of the effect type, when the app shows its effects.
    effect_plan: Option<RedactPlan>,
    /// The same document serialized once: `/describe` embeds it as is.
    describe_json: Arc<RawValue>,
    /// The lean document `/observe` embeds (no `annotations`), serialized once.
    observe_json: Arc<RawValue>,
    schema_hash: String,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("variants", &self.model.variant_names())
            .field("schema_hash", &self.schema_hash)
            .finish_non_exhaustive()
    }
}

impl Catalog {
    /// Builds the catalog of `app`: runs every start-up check (see [`describe`]), compiles
    /// the constraint validators and caches the describe document. Fails with every error
    /// found, not only the first.
    pub fn build<A: App>(app: &A) -> Result<Catalog, CatalogError> {
        Catalog::checked(app).map(|(catalog, _)| catalog)
    }

    /// [`Catalog::build`], with the describe document.
    fn checked<A: App>(app: &A) -> Result<(Catalog, DescribeDocument), CatalogError> {
        let mut checked = CheckedTypes::of::<A::Msg, A::State>();
        log_notes(app.name(), &checked.notes);
        let effect_plan = match app.effect_preview().into_schema() {
            Some(schema) => RedactPlan::from_schema(&schema)
                .map_err(|e| {
                    checked
                        .errors
                        .extend(e.into_iter().map(StartupError::Effect))
                })
                .ok(),
            None => None,
        };
        let predicates = Arc::new(PredicateCache::new());
        let validator = checked.model.as_ref().and_then(|model| {
            Validator::reporting(model, predicates.clone())
                .map_err(|e| checked.errors.extend(e.into_iter().map(StartupError::from)))
                .ok()
        });
        let (model, redact_plan, state) = checked.finish()?;
        let Some(validator) = validator else {
            unreachable!("a validator that was not built left its error in the list")
        };
        let affordances = Affordances::new(&model, predicates);
        let docs = app.docs();
        let document =
            DescribeDocument::new(app.name(), app.version(), state, &model, docs.as_ref());
        let describe = document.to_value();
        let describe_json = raw(&describe);
        let observe_json = raw(&document.to_lean_value());
        let annotations = model
            .variants
            .iter()
            .map(|v| (v.wire_name.clone(), v.annotations.clone()))
            .collect();
        let catalog = Catalog {
            annotations,
            validator,
            affordances,
            schema_hash: document.schema_hash.clone(),
            describe_json,
            observe_json,
            describe,
            redact_plan: Arc::new(redact_plan),
            effect_plan,
            model,
        };
        Ok((catalog, document))
    }

    /// The message model.
    pub fn model(&self) -> &MsgModel {
        &self.model
    }

    /// The annotation record of `variant`.
    pub fn annotations(&self, variant: &str) -> Option<&MessageAnnotations> {
        self.annotations.get(variant)
    }

    /// Validates a message (`docs/semantics.md` §2).
    pub fn validate(&self, msg: &Value, policy: DispatchPolicy) -> ValidationOutcome {
        self.validator.validate(msg, policy)
    }

    /// [`Catalog::validate`], with the `@validates` sources that could not be evaluated (see
    /// [`Validator::validate_reporting`]).
    pub(crate) fn validate_reporting(
        &self,
        msg: &Value,
        policy: DispatchPolicy,
    ) -> (ValidationOutcome, Vec<String>) {
        self.validator.validate_reporting(msg, policy)
    }

    /// `list_actions` for a state (`docs/semantics.md` §4); `bindings` as wire names, `state`
    /// the redacted JSON state.
    pub fn list_actions(
        &self,
        bindings: &Bindings<&str>,
        hook: Option<&[Value]>,
        state: &Value,
    ) -> Vec<Action> {
        self.affordances.list(bindings, hook, state)
    }

    /// `list_actions` in the compact form a session keeps, with the route gates answered by
    /// `gate` (see [`Affordances::pick`]).
    pub(crate) fn pick_actions(
        &self,
        bindings: &Bindings<&str>,
        hook: Option<&[Value]>,
        gate: &mut dyn FnMut(usize) -> crate::algo::route_gates::Verdict,
    ) -> Vec<Listed> {
        self.affordances.pick(bindings, hook, gate)
    }

    /// The actions of a compact list.
    pub(crate) fn render_actions(&self, listed: &[Listed]) -> Vec<Action> {
        self.affordances.render(listed)
    }

    /// The listing of a compact list (see [`Affordances::listing`]).
    pub(crate) fn listing(
        &self,
        listed: Vec<Listed>,
        previous: Option<&crate::algo::affordances::Listing>,
    ) -> crate::algo::affordances::Listing {
        self.affordances.listing(listed, previous)
    }

    /// Whether a compact list offers the variant `wire_name` (see [`Affordances::offer`]).
    pub(crate) fn offer(&self, listed: &[Listed], wire_name: &str) -> Offer {
        self.affordances.offer(listed, wire_name)
    }

    /// The app's distinct route gates.
    pub(crate) fn gates(&self) -> &Arc<crate::algo::route_gates::GateSet> {
        self.affordances.gates()
    }

    /// The `@redact` fields of the state.
    pub fn redact_plan(&self) -> &Arc<RedactPlan> {
        &self.redact_plan
    }

    /// The `@redact` fields of the effect type, `None` when the app does not show its
    /// effects to agents ([`App::effect_preview`]).
    pub(crate) fn effect_plan(&self) -> Option<&RedactPlan> {
        self.effect_plan.as_ref()
    }

    /// The describe document (`docs/lap.md` §5.4).
    pub fn describe(&self) -> &Value {
        &self.describe
    }

    /// The describe document, serialized.
    pub fn describe_json(&self) -> &RawValue {
        &self.describe_json
    }

    /// The describe document as the `/describe` answer (shares the serialized text).
    pub fn description(&self) -> tea_agent_schema::protocol::Description {
        tea_agent_schema::protocol::Description(self.describe_json.clone())
    }

    /// The lean describe document `/observe` embeds: no `annotations` (each action carries
    /// its own); shares the serialized text.
    pub fn observe_description(&self) -> tea_agent_schema::protocol::Description {
        tea_agent_schema::protocol::Description(self.observe_json.clone())
    }

    /// The `schemaHash`.
    pub fn schema_hash(&self) -> &str {
        &self.schema_hash
    }
}

/// `value` serialized once (a JSON value always serializes).
fn raw(value: &Value) -> Arc<RawValue> {
    serde_json::value::to_raw_value(value)
        .unwrap_or_else(|_| RawValue::NULL.to_owned())
        .into()
}

/// Logs what the type checks of the expressions found that is not an error: each warning at
/// WARN, and the dynamic parts of the schemas (not checked) on one INFO line.
fn log_notes(app: &str, notes: &[StartupNote]) {
    let mut dynamic = Vec::new();
    for note in notes {
        match note {
            StartupNote::Warning { .. } => {
                tracing::warn!(app, "CEL expression may fail at run time: {note}");
            }
            _ => dynamic.push(note.to_string()),
        }
    }
    if !dynamic.is_empty() {
        tracing::info!(
            app,
            "CEL expressions read parts of the state or message schemas the type checker does \
             not understand (dynamic, not checked): {}",
            dynamic.join("; ")
        );
    }
}
