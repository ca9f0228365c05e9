//! The example synthesizer (`payloadHint`, `docs/annotations.md` §7.6) and field hints (§7.7).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::shape::{FieldModel, ObjectModel, TypeKind, TypeNode, VariantModel};

/// `synthesize(variant)`: `{"type": <wire name>, …}` with a placeholder for every required
/// field and every optional field carrying `@should`: `""`, `0`, `false`, the first enum value,
/// nested objects, `[x]` / `[]`, the first branch of a union. Fields of unknown type are
/// omitted; `null` is never written.
pub fn payload_hint(variant: &VariantModel) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), Value::from(variant.wire_name.as_str()));
    synth_fields(&variant.payload, &mut out);
    Value::Object(out)
}

/// The placeholder of one bare type; `None` means OMIT.
pub fn synth_type(node: &TypeNode) -> Option<Value> {
    match &node.kind {
        TypeKind::String => Some(Value::from("")),
        TypeKind::Number { .. } => Some(Value::from(0)),
        TypeKind::Boolean => Some(Value::Bool(false)),
        TypeKind::Unknown => None,
        TypeKind::Enum(values) => values.first().cloned(),
        TypeKind::Object(object) => {
            let mut out = Map::new();
            synth_fields(object, &mut out);
            Some(Value::Object(out))
        }
        TypeKind::Array(element) => Some(Value::Array(synth_type(element).into_iter().collect())),
        TypeKind::Union(union) => {
            let first = union.branches.first()?;
            let mut out = Map::new();
            out.insert(
                union.discriminant.clone(),
                Value::from(first.value.as_str()),
            );
            synth_fields(&first.payload, &mut out);
            Some(Value::Object(out))
        }
    }
}

/// Appends the placeholders of `object`'s fields: optional fields only with `@should`.
fn synth_fields(object: &ObjectModel, out: &mut Map<String, Value>) {
    for field in &object.fields {
        if field.optional && field.hint.is_none() {
            continue;
        }
        if let Some(value) = synth_type(&field.ty) {
            out.insert(field.name.clone(), value);
        }
    }
}

/// One `fieldHints` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldHint {
    /// Where the hint applies: `a`, `a.b`, `a[]`, `a(kind=range).b`.
    pub path: String,
    /// The `@should` text, `validates: <src>`, or a discriminated-union summary.
    pub hint: String,
}

/// `fieldHints(variant)`: a depth-first walk over the fields in schema order.
pub fn field_hints(variant: &VariantModel) -> Vec<FieldHint> {
    let mut out = Vec::new();
    walk_fields(&variant.payload.fields, "", &mut out);
    out
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}.{name}")
    }
}

fn walk_fields(fields: &[FieldModel], prefix: &str, out: &mut Vec<FieldHint>) {
    for field in fields {
        let path = join(prefix, &field.name);
        if field.is_rich() {
            if let Some(hint) = field.hint.as_deref().filter(|h| !h.is_empty()) {
                out.push(FieldHint {
                    path: path.clone(),
                    hint: hint.to_owned(),
                });
            }
            if let Some(src) = field.validates.as_deref().filter(|s| !s.is_empty()) {
                out.push(FieldHint {
                    path: path.clone(),
                    hint: format!("validates: {src}"),
                });
            }
        }
        walk_type(&field.ty, &path, out);
    }
}

fn walk_type(node: &TypeNode, path: &str, out: &mut Vec<FieldHint>) {
    match &node.kind {
        TypeKind::Object(object) => walk_fields(&object.fields, path, out),
        TypeKind::Array(element) => walk_type(element, &format!("{path}[]"), out),
        TypeKind::Union(union) if !union.branches.is_empty() => {
            let values: Vec<String> = union
                .branches
                .iter()
                .map(|b| format!("'{}'", b.value))
                .collect();
            out.push(FieldHint {
                path: path.to_owned(),
                hint: format!(
                    "Discriminated union — set `{}` to one of: {}.",
                    union.discriminant,
                    values.join(", ")
                ),
            });
            for b in &union.branches {
                let prefix = format!("{path}({}={})", union.discriminant, b.value);
                walk_fields(&b.payload.fields, &prefix, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations::MessageAnnotations;
    use crate::shape::{BranchModel, TagSource, UnionModel};
    use serde_json::json;

    fn f(name: &str, ty: TypeNode) -> FieldModel {
        FieldModel {
            name: name.into(),
            optional: false,
            hint: None,
            validates: None,
            ty,
            pointer: String::new(),
            tag_source: TagSource::SchemaDescription,
        }
    }

    fn variant(fields: Vec<FieldModel>) -> VariantModel {
        VariantModel {
            wire_name: "v".into(),
            payload: ObjectModel {
                fields,
                deny_unknown: false,
            },
            annotations: MessageAnnotations::default(),
            pointer: String::new(),
        }
    }

    fn union(branches: Vec<(&str, Vec<FieldModel>)>) -> TypeNode {
        TypeNode::new(TypeKind::Union(UnionModel {
            discriminant: "kind".into(),
            branches: branches
                .into_iter()
                .map(|(value, fields)| BranchModel {
                    value: value.into(),
                    payload: ObjectModel {
                        fields,
                        deny_unknown: false,
                    },
                })
                .collect(),
        }))
    }

    #[test]
    fn omissions() {
        let empty_enum = TypeNode::new(TypeKind::Enum(vec![]));
        let no_branches = union(vec![]);
        let arr = |t: TypeNode| TypeNode::new(TypeKind::Array(Box::new(t)));
        let v = variant(vec![
            f("e", empty_enum),
            f("u", no_branches),
            f("a", arr(TypeNode::unknown())),
            f("n", TypeNode::new(TypeKind::Enum(vec![json!(3), json!(1)]))),
            f("b", TypeNode::new(TypeKind::Enum(vec![json!(true)]))),
            f("o", TypeNode::new(TypeKind::Object(ObjectModel::default()))),
            f("aa", arr(arr(TypeNode::new(TypeKind::Boolean)))),
        ]);
        assert_eq!(
            serde_json::to_string(&payload_hint(&v)).unwrap(),
            r#"{"type":"v","a":[],"n":3,"b":true,"o":{},"aa":[[false]]}"#
        );
    }

    #[test]
    fn optional_fields_need_should_even_nested() {
        let mut opt = f("opt", TypeNode::new(TypeKind::String));
        opt.optional = true;
        let mut should = f("should", TypeNode::new(TypeKind::Number { integer: true }));
        should.optional = true;
        should.hint = Some(String::new());
        let inner = TypeNode::new(TypeKind::Object(ObjectModel {
            fields: vec![opt.clone(), should.clone()],
            deny_unknown: false,
        }));
        let v = variant(vec![opt, should, f("inner", inner)]);
        assert_eq!(
            serde_json::to_string(&payload_hint(&v)).unwrap(),
            r#"{"type":"v","should":0,"inner":{"should":0}}"#
        );
        // An empty hint is not shown in field hints.
        assert_eq!(field_hints(&v), vec![]);
    }

    #[test]
    fn hint_paths() {
        let mut max = f("max", TypeNode::new(TypeKind::Number { integer: false }));
        max.hint = Some("Upper.".into());
        let mut id = f("id", TypeNode::new(TypeKind::String));
        id.validates = Some("size(v) > 0".into());
        let element = TypeNode::new(TypeKind::Object(ObjectModel {
            fields: vec![id, f("scale", union(vec![("a", vec![]), ("r", vec![max])]))],
            deny_unknown: false,
        }));
        let list = TypeNode::new(TypeKind::Array(Box::new(element)));
        let v = variant(vec![f("rows", list), f("empty", union(vec![]))]);
        assert_eq!(
            serde_json::to_value(field_hints(&v)).unwrap(),
            json!([
                {"path": "rows[].id", "hint": "validates: size(v) > 0"},
                {"path": "rows[].scale",
                 "hint": "Discriminated union — set `kind` to one of: 'a', 'r'."},
                {"path": "rows[].scale(kind=r).max", "hint": "Upper."}
            ])
        );
        assert_eq!(
            payload_hint(&v),
            json!({"type": "v", "rows": [{"id": "", "scale": {"kind": "a"}}]})
        );
    }
}
