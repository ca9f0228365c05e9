//! `#[derive(AgentMsg)]`: reads agent tags from the doc comments of a serde-internally-tagged
//! `Msg` enum, checks them at compile time, and implements `tea_agent_schema::AgentMsg`.
//!
//! ```ignore
//! #[derive(AgentMsg, Serialize, Deserialize, JsonSchema)]
//! #[serde(tag = "type", rename_all = "camelCase")]
//! enum Msg {
//!     /// Removes a row.
//!     /// @intent("Delete a row") @requiresConfirm
//!     DeleteRow { id: String },
//! }
//! ```
//!
//! Beside `Msg` it generates `MsgKind`, the variants without their payloads, that
//! `App::bindings` names them with.
//!
//! The grammar of the tags and the exact error texts are those of `tea_agent_schema::tags`; every
//! error of one enum is reported at once, each on the `///` line holding the offending `@`.
//!
//! Emitted code names the runtime types through `::tea_agent_schema`, so the app depends on
//! `tea-agent-schema`. An app that only depends on a crate re-exporting it writes
//! `#[agent(crate = "that_crate::schema")]` on the enum.

#![warn(missing_docs)]

mod agent_attr;
mod cel_check;
mod checks;
mod docs;
mod emit;
mod errors;
mod model;

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

use crate::errors::Errors;
use crate::model::Model;

/// Implements `tea_agent_schema::AgentMsg` for a `#[serde(tag = "type")]` enum, and generates
/// beside it `<Enum>Kind` (`MsgKind` for `Msg`): a fieldless `Copy` enum with the same variant
/// names and visibility, implementing `tea_agent_schema::VariantKind`, that bindings name variants
/// with (a misspelt one does not compile).
///
/// Wire names follow serde: `rename` (the deserialize name), `rename_all`, `rename_all_fields`;
/// `#[serde(skip)]` / `#[serde(skip_deserializing)]` variants get no record. Supported
/// variants: unit, struct (`V { … }`), and newtype holding a struct (`V(Payload)`).
///
/// `serde` is also declared as a helper attribute (as schemars does), so the derive reads the
/// enum's `#[serde(…)]` attributes whichever derives sit beside it.
#[proc_macro_derive(AgentMsg, attributes(agent, serde))]
pub fn derive_agent_msg(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand(&input).into()
}

/// The expansion: the impl, or every error found. Every path consumes the collector with
/// [`Errors::check`] (dropping it unchecked panics).
///
/// With errors in the tags of an enum the derive could read, the impl is emitted too (the
/// records of the variants in error without their tags), under a where clause the compiler
/// only checks where the impl is used: the `compile_error!`s are then the only diagnostics,
/// with no second "`Msg: AgentMsg` is not satisfied" at the app's `type Msg = Msg;`.
fn expand(input: &DeriveInput) -> proc_macro2::TokenStream {
    let mut errors = Errors::new();
    let Some(model) = Model::build(input, &mut errors) else {
        return errors.check().err().unwrap_or_default();
    };
    let records = checks::check(&model, &mut errors);
    match errors.check() {
        Ok(()) => emit::emit(&model, &records, false),
        Err(mut compile_errors) => {
            compile_errors.extend(emit::emit(&model, &records, true));
            compile_errors
        }
    }
}
