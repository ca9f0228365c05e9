//! Object schemas before their properties are resolved: unwrapping `$ref`/`allOf`/nullable
//! wrappers down to properties (rules R2, R4, R5, R12 of `docs/annotations.md` §7.3), merging
//! `allOf` parts, and a property's own tags (§7.4).
//!
//! Layering: depends on `resolver` (the state), `keywords`, `pointer` and `error`, never on
//! `resolve`: resolving the properties (the field rule) is `resolve.rs`'s, which
//! calls [`Resolver::raw_object`] here.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::annotations::FieldTags;
use crate::shape::error::SchemaError;
use crate::shape::keywords::{
    nullable_part, only_annotations, single_type, sub, Located, Nullable, Src,
};
use crate::shape::pointer::child;
use crate::shape::resolver::{Resolver, MAX_DEPTH};

/// Whether `$ref` hops spend budget (everywhere except at the variant level).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spend {
    Yes,
    No,
}

/// One property of an object schema not yet resolved.
pub(crate) struct RawProp<'a> {
    pub(crate) name: String,
    pub(crate) schema: Src<'a>,
    pub(crate) pointer: String,
    /// The budget its type is resolved with (a `$ref` hop to its object spent some).
    pub(crate) budget: u32,
}

/// An object schema (after R2–R5 unwrapping) whose properties are not yet resolved.
pub(crate) struct RawObject<'a> {
    pub(crate) props: Vec<RawProp<'a>>,
    pub(crate) required: Vec<String>,
    pub(crate) deny_unknown: bool,
    pub(crate) nullable: bool,
}

impl<'a> RawObject<'a> {
    fn merge(parts: Vec<RawObject<'a>>) -> RawObject<'a> {
        let mut out = RawObject {
            props: Vec::new(),
            required: Vec::new(),
            deny_unknown: false,
            nullable: !parts.is_empty(),
        };
        for part in parts {
            for prop in part.props {
                if !out.props.iter().any(|p| p.name == prop.name) {
                    out.props.push(prop);
                }
            }
            for r in part.required {
                if !out.required.contains(&r) {
                    out.required.push(r);
                }
            }
            out.deny_unknown |= part.deny_unknown;
            out.nullable &= part.nullable;
        }
        out
    }
}

impl<'a> Resolver<'a> {
    /// The schema as an object with unresolved properties, following R2–R5; `None` when it is
    /// not an object schema. An `allOf` part that is a bare `{"type":"object"}` (an empty
    /// struct such as `struct Empty {}`) counts as an object with no properties.
    pub(crate) fn raw_object(
        &mut self,
        s: &Src<'a>,
        pointer: &str,
        budget: u32,
        spend: Spend,
    ) -> Option<RawObject<'a>> {
        if self.depth >= MAX_DEPTH {
            return None;
        }
        self.depth += 1;
        let out = self.raw_object_inner(s, pointer, budget, spend);
        self.depth -= 1;
        out
    }

    fn raw_object_inner(
        &mut self,
        s: &Src<'a>,
        pointer: &str,
        budget: u32,
        spend: Spend,
    ) -> Option<RawObject<'a>> {
        let map = s.as_object()?;
        if map.contains_key("$ref") {
            if !only_annotations(map, &["$ref", "nullable"]) {
                return self.composite(s, map, pointer, budget, spend);
            }
            let (target, tp) = self.target(map)?;
            let budget = match spend {
                Spend::Yes => budget.checked_sub(1)?,
                Spend::No => budget,
            };
            let mut raw = self.raw_object(&target, &tp, budget, spend)?;
            raw.nullable |= map.get("nullable") == Some(&Value::Bool(true));
            return Some(raw);
        }
        if let Some(part) = nullable_part(s, pointer) {
            let mut raw = match part {
                Nullable::Members(mut rest) if rest.len() == 1 => {
                    let (m, mp) = rest.remove(0);
                    self.raw_object(&m, &mp, budget, spend)?
                }
                Nullable::Members(_) => return None,
                Nullable::Stripped(m) => {
                    self.raw_object(&Cow::Owned(Value::Object(m)), pointer, budget, spend)?
                }
            };
            raw.nullable = true;
            return Some(raw);
        }
        if let Some(all) = map.get("allOf") {
            if all.as_array().map(Vec::len) == Some(1) && only_annotations(map, &["allOf"]) {
                let member = sub(s, |v| v.get("allOf")?.get(0))?;
                return self.raw_object(&member, &format!("{pointer}/allOf/0"), budget, spend);
            }
            return self.composite(s, map, pointer, budget, spend);
        }
        if ["const", "enum", "oneOf", "anyOf"]
            .iter()
            .any(|k| map.contains_key(*k))
        {
            return None;
        }
        if map.contains_key("type") && single_type(map) != Some("object") {
            return None;
        }
        match map.get("properties") {
            Some(Value::Object(props)) => {
                let props = props
                    .keys()
                    .filter_map(|name| {
                        let schema = sub(s, |v| v.get("properties")?.get(name))?;
                        Some(RawProp {
                            name: name.clone(),
                            schema,
                            pointer: child(&format!("{pointer}/properties"), name),
                            budget,
                        })
                    })
                    .collect();
                let required = match map.get("required") {
                    Some(Value::Array(r)) => r
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect(),
                    _ => Vec::new(),
                };
                Some(RawObject {
                    props,
                    required,
                    deny_unknown: map.get("additionalProperties") == Some(&Value::Bool(false)),
                    nullable: false,
                })
            }
            Some(_) => None,
            None => {
                let bare = single_type(map) == Some("object")
                    && !["additionalProperties", "patternProperties", "propertyNames"]
                        .iter()
                        .any(|k| map.contains_key(*k));
                bare.then(|| RawObject {
                    props: Vec::new(),
                    required: Vec::new(),
                    deny_unknown: false,
                    nullable: false,
                })
            }
        }
    }

    /// `allOf: [{"$ref"}, members…, {siblings}]`: every part must be an object; merged in order.
    fn composite(
        &mut self,
        s: &Src<'a>,
        map: &Map<String, Value>,
        pointer: &str,
        budget: u32,
        spend: Spend,
    ) -> Option<RawObject<'a>> {
        let mut parts: Vec<Located<'a>> = Vec::new();
        if let Some(r) = map.get("$ref") {
            let mut only_ref = Map::new();
            only_ref.insert("$ref".into(), r.clone());
            parts.push((Cow::Owned(Value::Object(only_ref)), pointer.to_owned()));
        }
        if let Some(all) = map.get("allOf") {
            let all = all.as_array()?;
            for i in 0..all.len() {
                let member = sub(s, |v| v.get("allOf")?.get(i))?;
                parts.push((member, format!("{pointer}/allOf/{i}")));
            }
        }
        let mut rest = map.clone();
        rest.remove("$ref");
        rest.remove("allOf");
        if !only_annotations(&rest, &[]) {
            parts.push((Cow::Owned(Value::Object(rest)), pointer.to_owned()));
        }
        if parts.is_empty() {
            return None;
        }
        let mut raws = Vec::with_capacity(parts.len());
        for (part, pp) in &parts {
            raws.push(self.raw_object(part, pp, budget, spend)?);
        }
        Some(RawObject::merge(raws))
    }

    /// The `@should`/`@validates` tags of a property's own `title` + `description` (§7.4).
    /// A malformed doc gives no tags and is recorded in `tag_errors`
    /// ([`SchemaError::NestedTag`]).
    pub(super) fn property_tags(&mut self, s: &Src<'a>, pointer: &str) -> FieldTags {
        if let Some(tags) = self.nested_tags.get(pointer) {
            return tags.clone();
        }
        let doc = property_doc(s);
        let tags = if doc.contains('@') {
            crate::tags::parse_nested_field_doc(&doc).unwrap_or_else(|errors| {
                self.tag_errors.push(SchemaError::NestedTag {
                    pointer: pointer.to_owned(),
                    errors,
                });
                FieldTags::default()
            })
        } else {
            FieldTags::default()
        };
        self.nested_tags.insert(pointer.to_owned(), tags.clone());
        tags
    }
}

/// A property's own doc: `title` then `description`, joined by `"\n"`.
fn property_doc(s: &Value) -> String {
    ["title", "description"]
        .iter()
        .filter_map(|k| s.get(*k)?.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}
