//! The state of one resolution: the root schema, the nesting guard, the tags parsed so far,
//! and the `$ref` budget of a top-level field.
//!
//! Layering: depends only on `keywords` and `pointer`. The rules extend [`Resolver`] from the
//! modules above it: `object.rs` (object unwrapping), `resolve.rs` (R1–R14 and the field rule,
//! using `object` and `union`) and `build.rs` (the variants).

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::annotations::FieldTags;
use crate::shape::keywords::Located;
use crate::shape::pointer::ref_target;
use crate::shape::SchemaError;

/// The `$ref` budget of a top-level field.
pub(crate) const FIELD_BUDGET: u32 = 5;

/// Nesting guard on `resolve`/`raw_object` calls: deeper schemas resolve to `"unknown"`. It keeps
/// the stack well under 2 MiB (a tokio worker's) even in debug builds. schemars output stays far
/// below it: `$ref` hops are limited to 5 by the budget and each costs at most a few levels.
pub(crate) const MAX_DEPTH: usize = 64;

/// Resolves schemas of one root into model nodes.
pub(crate) struct Resolver<'a> {
    pub(super) root: &'a Value,
    /// Current nesting of `resolve`/`raw_object` calls (see [`MAX_DEPTH`]).
    pub(super) depth: usize,
    /// Tags parsed from property docs, by property pointer.
    pub(super) nested_tags: HashMap<String, FieldTags>,
    /// The malformed property docs met so far ([`SchemaError::NestedTag`], once per
    /// pointer): the property gets no tags and resolution goes on, so every one is reported.
    pub(super) tag_errors: Vec<SchemaError>,
}

impl<'a> Resolver<'a> {
    pub(crate) fn new(root: &'a Value) -> Resolver<'a> {
        Resolver {
            root,
            depth: 0,
            nested_tags: HashMap::new(),
            tag_errors: Vec::new(),
        }
    }

    /// The target of the `$ref` in `map`, with its pointer; `None` when there is no `$ref` or
    /// it does not resolve in the root.
    pub(super) fn target(&self, map: &Map<String, Value>) -> Option<Located<'a>> {
        let reference = map.get("$ref")?.as_str()?;
        let (target, pointer) = ref_target(self.root, reference)?;
        Some((Cow::Borrowed(target), pointer))
    }
}
