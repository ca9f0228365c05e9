//! The data model of the agent surface.
//!
//! - [`AgentMsg`]: the trait `#[derive(AgentMsg)]` implements on an app's `Msg` enum.
//! - [`MessageAnnotations`], [`DispatchMode`], [`FieldTags`]: what the doc-comment tags say.
//! - [`tags`]: the tag grammar, shared by the derive (at compile time) and the runtime.
//!
//! No async and no HTTP live here.

#![warn(missing_docs)]

pub mod annotations;
pub mod msg;
pub mod protocol;
pub mod tags;

pub use annotations::{
    DispatchMode, FieldTags, MessageAnnotations, StaticAnnotations, StaticFieldTags,
};
pub use msg::{AgentMsg, VariantDescriptor};
