//! The data model of the agent surface.
//!
//! - [`AgentMsg`]: the trait `#[derive(AgentMsg)]` implements on an app's `Msg` enum;
//!   [`VariantKind`]: the payload-free kinds of its variants; [`Bindings`]: which of them an
//!   app's UI offers.
//! - [`MessageAnnotations`], [`DispatchMode`], [`FieldTags`]: what the doc-comment tags say.
//! - [`tags`]: the tag grammar, shared by the derive (at compile time) and the runtime.
//! - [`shape`]: the message model built from the schemars schema and its `MsgSchemaShape`;
//!   [`synth`]: `payloadHint` and field hints; [`describe`](mod@describe) and [`hash`]: the describe
//!   document and `schemaHash`; [`compact`]: the compact state schema agents read.
//! - [`redact`]: the `@redact` fields of a state, from its schema.
//! - [`startup`]: the start-up checks of an app's types, every error at once.
//!
//! No async and no HTTP live here.

#![warn(missing_docs)]

pub mod annotations;
pub mod bindings;
pub mod compact;
pub mod describe;
pub mod hash;
pub mod msg;
pub mod protocol;
pub mod redact;
pub mod shape;
pub mod startup;
pub mod synth;
pub mod tags;

pub use annotations::{
    DispatchMode, FieldTags, MessageAnnotations, StaticAnnotations, StaticFieldTags,
};
pub use bindings::Bindings;
pub use describe::{describe, AgentContext, AgentDocs, DescribeDocument};
pub use msg::{AgentMsg, VariantDescriptor, VariantKind};
pub use shape::{MsgModel, SchemaError};
pub use startup::{StartupError, StartupErrors};

// Lets `#[derive(AgentMsg)]` name this crate as `::tea_agent_schema` inside its own tests.
extern crate self as tea_agent_schema;

/// What the code emitted by `#[derive(AgentMsg)]` names; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use schemars;
    pub use serde;
}
