//! The compact wire form `MsgSchemaShape` (`docs/annotations.md` §7.2).

use serde_json::{Map, Value};

use crate::shape::{FieldModel, MsgModel, ObjectModel, TypeKind, TypeNode, VariantModel};

impl MsgModel {
    /// `{"discriminant":"type","variants":{<wire name>:{<field>: MsgSchemaField}}}`.
    pub fn to_wire(&self) -> Value {
        let mut variants = Map::new();
        for v in &self.variants {
            variants.insert(v.wire_name.clone(), v.to_wire());
        }
        let mut out = Map::new();
        out.insert(
            "discriminant".into(),
            Value::from(self.discriminant.as_str()),
        );
        out.insert("variants".into(), Value::Object(variants));
        Value::Object(out)
    }

    /// The annotation map of the describe document: every variant's wire name to its full
    /// nine-key record, in schema order.
    pub fn annotations_json(&self) -> Value {
        let mut out = Map::new();
        for v in &self.variants {
            out.insert(v.wire_name.clone(), annotation_value(v));
        }
        Value::Object(out)
    }
}

fn annotation_value(v: &VariantModel) -> Value {
    // MessageAnnotations holds only strings, bools and lists of strings: serializing it into a
    // `Value` cannot fail.
    serde_json::to_value(&v.annotations).unwrap_or(Value::Null)
}

impl VariantModel {
    /// The variant's `{<field>: MsgSchemaField}` map (`{}` for a unit variant).
    pub fn to_wire(&self) -> Value {
        self.payload.to_wire_fields()
    }
}

impl ObjectModel {
    /// `{<field>: MsgSchemaField}` in field order.
    pub fn to_wire_fields(&self) -> Value {
        let mut out = Map::new();
        for f in &self.fields {
            out.insert(f.name.clone(), f.to_wire());
        }
        Value::Object(out)
    }
}

impl FieldModel {
    /// `MsgSchemaField`: the bare type, or the rich form with keys in the order `type`,
    /// `optional`, `priority`, `hint`, `validates`.
    pub fn to_wire(&self) -> Value {
        let bare = self.ty.to_wire();
        if !self.is_rich() {
            return bare;
        }
        let mut out = Map::new();
        out.insert("type".into(), bare);
        if self.optional {
            out.insert("optional".into(), Value::Bool(true));
        }
        if let Some(hint) = &self.hint {
            out.insert("priority".into(), Value::from("should"));
            out.insert("hint".into(), Value::from(hint.as_str()));
        }
        if let Some(src) = &self.validates {
            out.insert("validates".into(), Value::from(src.as_str()));
        }
        Value::Object(out)
    }
}

impl TypeNode {
    /// `MsgSchemaBareType`. Nullability and constraints are not shown.
    pub fn to_wire(&self) -> Value {
        match &self.kind {
            TypeKind::Unknown => Value::from("unknown"),
            TypeKind::String => Value::from("string"),
            TypeKind::Number { .. } => Value::from("number"),
            TypeKind::Boolean => Value::from("boolean"),
            TypeKind::Enum(values) => {
                let mut out = Map::new();
                out.insert("enum".into(), Value::Array(values.clone()));
                Value::Object(out)
            }
            TypeKind::Object(object) => {
                let mut out = Map::new();
                out.insert("kind".into(), Value::from("object"));
                out.insert("shape".into(), object.to_wire_fields());
                Value::Object(out)
            }
            TypeKind::Array(element) => {
                let mut out = Map::new();
                out.insert("kind".into(), Value::from("array"));
                out.insert("element".into(), element.to_wire());
                Value::Object(out)
            }
            TypeKind::Union(union) => {
                let mut variants = Map::new();
                for b in &union.branches {
                    variants.insert(b.value.clone(), b.payload.to_wire_fields());
                }
                let mut out = Map::new();
                out.insert("kind".into(), Value::from("discriminated-union"));
                out.insert(
                    "discriminant".into(),
                    Value::from(union.discriminant.as_str()),
                );
                out.insert("variants".into(), Value::Object(variants));
                Value::Object(out)
            }
        }
    }
}
