//! From JSON Schema to the model: `resolve(S, budget)`, rules R1–R14 of `annotations.md`
//! §7.3 and the `$ref` budget. Objects are in [`super::object`], unions in [`super::union`].

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::annotations::FieldTags;
use crate::shape::keywords::{
    nullable_part, only_annotations, same_literal_kind, single_type, sub, union_members, Located,
    Nullable, Src,
};
use crate::shape::object::Spend;
use crate::shape::pointer::ref_target;
use crate::shape::union::resolve_members;
use crate::shape::{Constraints, SchemaError, TypeKind, TypeNode};

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
}

impl<'a> Resolver<'a> {
    pub(crate) fn new(root: &'a Value) -> Resolver<'a> {
        Resolver {
            root,
            depth: 0,
            nested_tags: HashMap::new(),
        }
    }

    pub(super) fn target(&self, map: &Map<String, Value>) -> Option<Located<'a>> {
        let reference = map.get("$ref")?.as_str()?;
        let (target, pointer) = ref_target(self.root, reference)?;
        Some((Cow::Borrowed(target), pointer))
    }

    /// `resolve(S, budget)`: the first matching rule of R1–R14 wins.
    pub(crate) fn resolve(
        &mut self,
        s: &Src<'a>,
        pointer: &str,
        budget: u32,
    ) -> Result<TypeNode, SchemaError> {
        if self.depth >= MAX_DEPTH {
            return Ok(TypeNode::unknown());
        }
        self.depth += 1;
        let out = self.resolve_inner(s, pointer, budget);
        self.depth -= 1;
        out
    }

    fn resolve_inner(
        &mut self,
        s: &Src<'a>,
        pointer: &str,
        budget: u32,
    ) -> Result<TypeNode, SchemaError> {
        // R1: `true`, `false` and non-objects.
        let Some(map) = s.as_object() else {
            return Ok(TypeNode::unknown());
        };
        // R2: a `$ref` with only annotation siblings; with other siblings it is an `allOf`.
        if map.contains_key("$ref") {
            if !only_annotations(map, &["$ref", "nullable"]) {
                return self.object_or_unknown(s, pointer, budget);
            }
            let mut node = match self.target(map) {
                Some((target, tp)) if budget > 0 => self.resolve(&target, &tp, budget - 1)?,
                _ => TypeNode::unknown(),
            };
            // OpenAPI-style `{"$ref": …, "nullable": true}` (R3 beside a plain reference).
            node.nullable |= map.get("nullable") == Some(&Value::Bool(true));
            return Ok(node);
        }
        // R3: nullable wrappers.
        if let Some(part) = nullable_part(s, pointer) {
            let mut node = match part {
                Nullable::Members(mut rest) if rest.len() == 1 => {
                    let (m, mp) = rest.remove(0);
                    self.resolve(&m, &mp, budget)?
                }
                Nullable::Members(rest) => resolve_members(self, rest, budget)?,
                Nullable::Stripped(m) => {
                    self.resolve(&Cow::Owned(Value::Object(m)), pointer, budget)?
                }
            };
            node.nullable = true;
            return Ok(node);
        }
        // R4 / R5: `allOf`.
        if let Some(Value::Array(all)) = map.get("allOf") {
            if all.len() == 1 && only_annotations(map, &["allOf"]) {
                let member = sub(s, |v| v.get("allOf")?.get(0)).unwrap_or(Cow::Owned(Value::Null));
                return self.resolve(&member, &format!("{pointer}/allOf/0"), budget);
            }
            return self.object_or_unknown(s, pointer, budget);
        }
        // R6: `const`.
        if let Some(c) = map.get("const") {
            return Ok(match c {
                Value::String(_) | Value::Number(_) | Value::Bool(_) => {
                    TypeNode::new(TypeKind::Enum(vec![c.clone()]))
                }
                _ => TypeNode::unknown(),
            });
        }
        // R7: `enum`.
        if let Some(values) = map.get("enum") {
            return Ok(match values {
                Value::Array(values) if same_literal_kind(values.iter()) => {
                    TypeNode::new(TypeKind::Enum(values.clone()))
                }
                _ => TypeNode::unknown(),
            });
        }
        // R8: `oneOf` / `anyOf`.
        if let Some(members) = union_members(s, pointer) {
            return resolve_members(self, members, budget);
        }
        // R9–R13 by `type`.
        let ty = single_type(map);
        Ok(match ty {
            Some("string") => TypeNode {
                constraints: Constraints::for_string(map),
                ..TypeNode::new(TypeKind::String)
            },
            Some(t @ ("integer" | "number")) => TypeNode {
                constraints: Constraints::for_number(map),
                ..TypeNode::new(TypeKind::Number {
                    integer: t == "integer",
                })
            },
            Some("boolean") => TypeNode::new(TypeKind::Boolean),
            Some("array") => match map.get("items") {
                Some(items) if items.is_object() || items.is_boolean() => {
                    let items = sub(s, |v| v.get("items")).unwrap_or(Cow::Owned(Value::Null));
                    let element = self.resolve(&items, &format!("{pointer}/items"), budget)?;
                    TypeNode {
                        constraints: Constraints::for_array(map),
                        ..TypeNode::new(TypeKind::Array(Box::new(element)))
                    }
                }
                _ => TypeNode::unknown(),
            },
            // R12: objects with properties; maps and bare objects are unknown.
            Some("object") if map.get("properties").is_some_and(Value::is_object) => {
                self.object_or_unknown(s, pointer, budget)?
            }
            None if !map.contains_key("type")
                && map.get("properties").is_some_and(Value::is_object) =>
            {
                self.object_or_unknown(s, pointer, budget)?
            }
            _ => TypeNode::unknown(),
        })
    }

    /// R5 / R12: the schema as an object node, or `"unknown"` when it is not one.
    fn object_or_unknown(
        &mut self,
        s: &Src<'a>,
        pointer: &str,
        budget: u32,
    ) -> Result<TypeNode, SchemaError> {
        match self.raw_object(s, pointer, budget, Spend::Yes) {
            Some(raw) => {
                let nullable = raw.nullable;
                let object = self.object_model(raw, None)?;
                Ok(TypeNode {
                    nullable,
                    ..TypeNode::new(TypeKind::Object(object))
                })
            }
            None => Ok(TypeNode::unknown()),
        }
    }
}
