//! The checked schema of a host's app, built once at start-up: the message model, the
//! validator, the affordance lister, the annotation records and the cached describe document.

use std::collections::HashMap;
use std::sync::Arc;

use agent_schema::describe::{state_schema, DescribeDocument};
use agent_schema::protocol::{Action, ValidationOutcome};
use agent_schema::redact::{strip_schema, RedactPlan};
use agent_schema::{Bindings, MessageAnnotations, MsgModel, SchemaError};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::algo::affordances::{Affordances, Listed};
use crate::algo::cel_eval::{check_syntax, PredicateCache};
use crate::algo::validate::{Validator, ValidatorError};
use crate::app::App;
use crate::config::DispatchPolicy;

/// Why a host could not be built.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// The `Msg` schema does not fit the derive's records, or a nested tag is malformed.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// A constraint schema could not be compiled.
    #[error(transparent)]
    Validator(#[from] ValidatorError),
    /// The describe document could not be serialized.
    #[error("describe document: {0}")]
    Describe(String),
    /// A `@redact` tag on a state field is malformed (a near miss such as `@redacted`).
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Redact(Vec<agent_schema::redact::RedactError>),
    /// A `@redact` tag in the effect type [`App::effect_preview`] shows is malformed.
    #[error("effect type: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    EffectRedact(Vec<agent_schema::redact::RedactError>),
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
    /// Builds the catalog of `app`: checks the `Msg` schema against the derive (variant lists,
    /// nested tags, nested `@validates` CEL syntax), runs the start-up checks against the real
    /// types (`MsgModel::check_startup`), compiles the constraint validators and
    /// caches the describe document.
    pub fn build<A: App>(app: &A) -> Result<Catalog, CatalogError> {
        let model = MsgModel::build::<A::Msg>()?;
        model.check_nested_validates(check_syntax)?;
        let mut state = state_schema::<A::State>();
        let redact_plan = Arc::new(RedactPlan::from_schema(&state).map_err(CatalogError::Redact)?);
        // Agents never see `@redact` fields, nor gates reading them (they read the redacted
        // state): the schema they are checked against and shown is the stripped one.
        strip_schema(&mut state);
        let effect_plan = match app.effect_preview().into_schema() {
            Some(schema) => {
                Some(RedactPlan::from_schema(&schema).map_err(CatalogError::EffectRedact)?)
            }
            None => None,
        };
        model.check_startup::<A::Msg>(&state)?;
        let predicates = Arc::new(PredicateCache::new());
        let validator = Validator::new(&model, predicates.clone())?;
        let affordances = Affordances::new(&model, predicates);
        let docs = app.docs();
        let document =
            DescribeDocument::new(app.name(), app.version(), state, &model, docs.as_ref());
        let describe = document.to_value();
        let raw = |v: &Value| -> Result<Arc<RawValue>, CatalogError> {
            Ok(serde_json::value::to_raw_value(v)
                .map_err(|e| CatalogError::Describe(e.to_string()))?
                .into())
        };
        let describe_json = raw(&describe)?;
        let observe_json = raw(&document.to_lean_value())?;
        let annotations = model
            .variants
            .iter()
            .map(|v| (v.wire_name.clone(), v.annotations.clone()))
            .collect();
        Ok(Catalog {
            annotations,
            validator,
            affordances,
            schema_hash: document.schema_hash.clone(),
            describe_json,
            observe_json,
            describe,
            redact_plan,
            effect_plan,
            model,
        })
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
        gate: &mut dyn FnMut(usize) -> bool,
    ) -> Vec<Listed> {
        self.affordances.pick(bindings, hook, gate)
    }

    /// The actions of a compact list.
    pub(crate) fn render_actions(&self, listed: &[Listed]) -> Vec<Action> {
        self.affordances.render(listed)
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
    pub fn description(&self) -> agent_schema::protocol::Description {
        agent_schema::protocol::Description(self.describe_json.clone())
    }

    /// The lean describe document `/observe` embeds: no `annotations` (each action carries
    /// its own); shares the serialized text.
    pub fn observe_description(&self) -> agent_schema::protocol::Description {
        agent_schema::protocol::Description(self.observe_json.clone())
    }

    /// The `schemaHash`.
    pub fn schema_hash(&self) -> &str {
        &self.schema_hash
    }
}
