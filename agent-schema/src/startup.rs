//! The start-up checks of an app's types, and the list of every error they find.
//!
//! [`CheckedTypes::of`] runs every check that needs only the `Msg` and `State` types: the
//! `Msg` schema against the derive, the tags of nested fields, the `@redact` tags of the
//! state, the examples, and the field paths and CEL of the expressions
//! ([`MsgModel::startup_errors`]). [`describe`](crate::describe::describe) and the runtime's
//! host construction both call it, so they report the same errors; the runtime adds the
//! checks that need it (the constraint keywords its validator compiles, the effect type's
//! `@redact` tags) to the same list.
//!
//! Nothing stops at the first error: a malformed nested tag leaves its field untagged and the
//! other checks go on, and every example, expression and field is checked. Only a `Msg` schema
//! that does not fit the derive at all (no model to check) ends the message checks early.

use std::fmt;

use schemars::JsonSchema;
use serde_json::Value;

use crate::describe::state_schema;
use crate::msg::AgentMsg;
use crate::redact::{strip_schema, RedactError, RedactPlan};
use crate::shape::{MsgModel, SchemaError, StartupNote};

/// One error found at start-up: what is wrong and where (variant, field, tag, or the JSON
/// Pointer of a property).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StartupError {
    /// The `Msg` schema does not fit the derive, a nested field's tag is malformed, or a
    /// start-up check of the messages failed (an example, an expression's field path or CEL).
    Msg(SchemaError),
    /// A `@redact` tag on a field of the state is malformed (a near miss such as
    /// `@redacted`).
    State(RedactError),
    /// A `@redact` tag on a field of the effect type is malformed; checked by the runtime,
    /// when the app shows its effects to agents.
    Effect(RedactError),
    /// The constraint keywords of a message property do not compile (for example an invalid
    /// `pattern`); checked by the runtime, which compiles them.
    Constraint {
        /// JSON Pointer of the property inside the `Msg` schema.
        pointer: String,
        /// The JSON Schema compiler's message.
        message: String,
    },
}

impl fmt::Display for StartupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartupError::Msg(error) => error.fmt(f),
            StartupError::State(error) => error.fmt(f),
            StartupError::Effect(error) => write!(f, "effect type: {error}"),
            StartupError::Constraint { pointer, message } => write!(
                f,
                "the constraints of the property at {pointer} do not compile: {message}"
            ),
        }
    }
}

impl std::error::Error for StartupError {}

/// Every error found at start-up, in check order (never empty).
///
/// `Display`: a lone error is its own text; several are counted on a first line, then listed
/// one per line (`- `, a `help:` line indented under its error). `Debug` prints the same
/// text, so `describe(…).unwrap()` in a test shows the list as it is meant to be read.
#[derive(Clone, PartialEq, Eq)]
pub struct StartupErrors {
    errors: Vec<StartupError>,
}

impl StartupErrors {
    /// The errors, in check order.
    pub fn errors(&self) -> &[StartupError] {
        &self.errors
    }

    /// The errors, in check order.
    pub fn into_vec(self) -> Vec<StartupError> {
        self.errors
    }
}

impl fmt::Display for StartupErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [only] = self.errors.as_slice() {
            return only.fmt(f);
        }
        write!(f, "{} start-up errors:", self.errors.len())?;
        for error in &self.errors {
            write!(f, "\n- {}", error.to_string().replace('\n', "\n  "))?;
        }
        Ok(())
    }
}

impl fmt::Debug for StartupErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for StartupErrors {}

/// What the type checks of an app give: the parts built and every error found.
#[derive(Debug)]
pub struct CheckedTypes {
    /// The message model; `None` when the `Msg` schema does not fit the derive.
    pub model: Option<MsgModel>,
    /// The `@redact` fields of the state; `None` when a tag is malformed.
    pub redact_plan: Option<RedactPlan>,
    /// The schemars JSON Schema of the state without its `@redact` fields: the one agents
    /// see and route gates are checked against.
    pub state_schema: Value,
    /// Every error found, in check order: the `Msg` schema and nested tags, the state's
    /// `@redact` tags, then each variant's examples and expressions.
    pub errors: Vec<StartupError>,
    /// What the type checks of the expressions found that is not an error: warnings and
    /// the dynamic parts of the schemas they could not check (the runtime logs them).
    pub notes: Vec<StartupNote>,
}

impl CheckedTypes {
    /// Runs every start-up check of the message type `M` and the state type `S` (see the
    /// module docs).
    pub fn of<M: AgentMsg, S: JsonSchema>() -> CheckedTypes {
        let mut errors = Vec::new();
        let schema = schemars::SchemaGenerator::default().into_root_schema_for::<M>();
        let model = match MsgModel::from_schema_reporting(schema.as_value(), M::variants()) {
            Ok((model, tag_errors)) => {
                errors.extend(tag_errors.into_iter().map(StartupError::Msg));
                Some(model)
            }
            Err(error) => {
                errors.push(StartupError::Msg(error));
                None
            }
        };
        let mut state = state_schema::<S>();
        let redact_plan = RedactPlan::from_schema(&state)
            .map_err(|e| errors.extend(e.into_iter().map(StartupError::State)))
            .ok();
        // Agents never see `@redact` fields, nor gates reading them (they read the redacted
        // state): the schema they are checked against and shown is the stripped one.
        strip_schema(&mut state);
        let mut notes = Vec::new();
        if let Some(model) = &model {
            let (found, found_notes) = model.startup_check::<M>(&state);
            errors.extend(found.into_iter().map(StartupError::Msg));
            notes = found_notes;
        }
        CheckedTypes {
            model,
            redact_plan,
            state_schema: state,
            errors,
            notes,
        }
    }

    /// The model, the state's plan and its stripped schema when no error was found (the
    /// caller's own checks included, pushed onto [`CheckedTypes::errors`]); else every error.
    pub fn finish(self) -> Result<(MsgModel, RedactPlan, Value), StartupErrors> {
        match (self.model, self.redact_plan) {
            (Some(model), Some(plan)) if self.errors.is_empty() => {
                Ok((model, plan, self.state_schema))
            }
            // A missing part always comes with its error: the list is not empty.
            _ => Err(StartupErrors {
                errors: self.errors,
            }),
        }
    }
}
