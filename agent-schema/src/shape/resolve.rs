//! From JSON Schema to the model: `resolve(S, budget)`, rules R1–R14 of `docs/annotations.md`
//! §7.3 and the `$ref` budget, and the field rule (§4.1, §7.4) over an object's properties.
//!
//! Layering: the top of the resolution rules. `resolve` and the field rule call each other (a
//! property's type is resolved, an object type's properties are fields), so both live here.
//! Below: `object` (unwrapping object schemas), `union` (R8 over resolved members), `resolver`
//! (the state), `keywords`, `pointer`, `model`, `constraints` and `error`.

use std::borrow::Cow;

use serde_json::Value;

use crate::msg::VariantDescriptor;
use crate::shape::constraints::Constraints;
use crate::shape::error::SchemaError;
use crate::shape::keywords::{
    nullable_part, only_annotations, same_literal_kind, single_type, sub, union_members, Located,
    Nullable, Src,
};
use crate::shape::model::{FieldModel, ObjectModel, TagSource, TypeKind, TypeNode};
use crate::shape::object::{RawObject, RawProp, Spend};
use crate::shape::resolver::{Resolver, MAX_DEPTH};
use crate::shape::union::union_of;

impl<'a> Resolver<'a> {
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
                Nullable::Members(rest) => self.resolve_members(rest, budget)?,
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
            return self.resolve_members(members, budget);
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

    /// R8 over the (non-null) members of a `oneOf`/`anyOf`, each resolved at `budget` (a `$ref`
    /// hop inside a member spends budget for that member only).
    fn resolve_members(
        &mut self,
        members: Vec<Located<'a>>,
        budget: u32,
    ) -> Result<TypeNode, SchemaError> {
        let mut nodes = Vec::with_capacity(members.len());
        for (member, pointer) in &members {
            nodes.push(self.resolve(member, pointer, budget)?);
        }
        Ok(union_of(nodes))
    }

    /// The field rule over every property of `raw`. `descriptor` is the derive's record when
    /// `raw` is a variant of the derived enum: its fields' tags come from there; every other
    /// property's tags come from its own doc (§7.4).
    pub(crate) fn object_model(
        &mut self,
        raw: RawObject<'a>,
        descriptor: Option<&VariantDescriptor>,
    ) -> Result<ObjectModel, SchemaError> {
        let mut fields = Vec::with_capacity(raw.props.len());
        for prop in raw.props {
            let required = raw.required.contains(&prop.name);
            fields.push(self.field(prop, required, descriptor)?);
        }
        Ok(ObjectModel {
            fields,
            deny_unknown: raw.deny_unknown,
        })
    }

    /// `field(name, S, required, tags, budget)`.
    fn field(
        &mut self,
        prop: RawProp<'a>,
        required: bool,
        descriptor: Option<&VariantDescriptor>,
    ) -> Result<FieldModel, SchemaError> {
        let (tags, tag_source) = match descriptor.and_then(|d| d.field(&prop.name)) {
            Some(t) => (t.to_field_tags(), TagSource::Derive),
            None => (
                self.property_tags(&prop.schema, &prop.pointer),
                TagSource::SchemaDescription,
            ),
        };
        let ty = self.resolve(&prop.schema, &prop.pointer, prop.budget)?;
        Ok(FieldModel {
            optional: !required || ty.nullable,
            name: prop.name,
            hint: tags.hint,
            validates: tags.validates,
            ty,
            pointer: prop.pointer,
            tag_source,
        })
    }
}
