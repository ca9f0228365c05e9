//! Unit tests of the resolution rules over hand-made schemas.

use serde_json::{json, Value};

use crate::annotations::{StaticAnnotations, StaticFieldTags};
use crate::msg::VariantDescriptor;
use crate::shape::{MsgModel, SchemaError, TagSource, TypeKind};

fn desc(name: &'static str) -> VariantDescriptor {
    VariantDescriptor {
        wire_name: name,
        annotations: StaticAnnotations::DEFAULT,
        fields: &[],
    }
}

/// A one-variant `Msg` schema `v` whose payload has the properties `props`.
fn one_variant(props: Value, required: &[&str], defs: Value) -> Value {
    let mut properties = json!({"type": {"type": "string", "const": "v"}});
    for (k, s) in props.as_object().unwrap() {
        properties[k] = s.clone();
    }
    let mut req = vec![json!("type")];
    req.extend(required.iter().map(|r| json!(r)));
    json!({"oneOf": [{"type": "object", "properties": properties, "required": req}],
        "$defs": defs})
}

/// The wire form of the payload of the single variant `v`.
fn wire_of(props: Value, required: &[&str], defs: Value) -> Value {
    let model = MsgModel::from_schema(&one_variant(props, required, defs), &[desc("v")]).unwrap();
    model.to_wire()["variants"]["v"].clone()
}

/// The wire form of one required field `f` of schema `s`.
fn field(s: Value, defs: Value) -> Value {
    wire_of(json!({ "f": s }), &["f"], defs)["f"].clone()
}

#[test]
fn r1_r14_unknown_forms() {
    for s in [
        json!(true),
        json!(false),
        json!({}),
        json!({"description": "x"}),
        json!({"type": "null"}),
        json!({"type": ["string", "number"]}),
        json!({"type": "array", "prefixItems": [{"type": "string"}]}),
        json!({"type": "array", "items": [{"type": "string"}]}),
        json!({"type": "array"}),
        json!({"type": "object"}),
        json!({"type": "object", "additionalProperties": {"type": "integer"}}),
        json!({"const": null}),
        json!({"const": {"a": 1}}),
        json!({"enum": ["a", 1]}),
        json!({"$ref": "#/$defs/Missing"}),
        json!({"$ref": "http://example.com/x.json"}),
        json!({"items": {"type": "string"}}),
    ] {
        assert_eq!(field(s.clone(), json!({})), json!("unknown"), "{s}");
    }
}

#[test]
fn primitives_and_literals() {
    assert_eq!(field(json!({"type": "string"}), json!({})), json!("string"));
    assert_eq!(
        field(json!({"type": ["integer"]}), json!({})),
        json!("number")
    );
    assert_eq!(field(json!({"type": "number"}), json!({})), json!("number"));
    assert_eq!(
        field(json!({"type": "boolean"}), json!({})),
        json!("boolean")
    );
    assert_eq!(
        field(json!({"const": "x"}), json!({})),
        json!({"enum": ["x"]})
    );
    assert_eq!(
        field(json!({"const": 2.5}), json!({})),
        json!({"enum": [2.5]})
    );
    assert_eq!(
        field(json!({"enum": [true, false]}), json!({})),
        json!({"enum": [true, false]})
    );
    assert_eq!(
        field(json!({"type": "string", "enum": ["a", "b"]}), json!({})),
        json!({"enum": ["a", "b"]})
    );
    // R8a: literal members of one kind merge, in member order.
    assert_eq!(
        field(
            json!({"oneOf": [{"enum": ["a", "c"]}, {"const": "b"}]}),
            json!({})
        ),
        json!({"enum": ["a", "c", "b"]})
    );
    assert_eq!(
        field(json!({"anyOf": [{"const": 1}, {"const": "b"}]}), json!({})),
        json!("unknown")
    );
    // R8c: a mix of literals and other types.
    assert_eq!(
        field(
            json!({"oneOf": [{"const": "a"}, {"type": "string"}]}),
            json!({})
        ),
        json!("unknown")
    );
}

#[test]
fn nullable_wrappers_make_fields_optional() {
    let defs = json!({"L": {"type": "string", "enum": ["a", "b"]}});
    let cases = [
        (json!({"type": ["string", "null"]}), json!("string")),
        (
            json!({"anyOf": [{"$ref": "#/$defs/L"}, {"type": "null"}]}),
            json!({"enum": ["a", "b"]}),
        ),
        (
            json!({"oneOf": [{"const": null}, {"type": "boolean"}]}),
            json!("boolean"),
        ),
        (json!({"enum": ["a", null]}), json!({"enum": ["a"]})),
        (
            json!({"type": ["string", "null"], "enum": ["x", null]}),
            json!({"enum": ["x"]}),
        ),
        (json!({"type": "number", "nullable": true}), json!("number")),
        (
            json!({"$ref": "#/$defs/L", "nullable": true}),
            json!({"enum": ["a", "b"]}),
        ),
        (
            json!({"anyOf": [{"enum": [null]}, {"const": "a"}, {"const": "b"}]}),
            json!({"enum": ["a", "b"]}),
        ),
    ];
    for (s, bare) in cases {
        assert_eq!(
            field(s.clone(), defs.clone()),
            json!({"type": bare, "optional": true}),
            "{s}"
        );
    }
    let model = MsgModel::from_schema(
        &one_variant(
            json!({"f": {"type": ["integer", "null"], "minimum": 0}}),
            &["f"],
            json!({}),
        ),
        &[desc("v")],
    )
    .unwrap();
    let f = &model.variants[0].fields()[0];
    assert!(f.ty.nullable && f.optional);
    assert_eq!(f.ty.constraints.minimum, Some(0.into()));
}

#[test]
fn optional_when_not_required() {
    let w = wire_of(
        json!({"a": {"type": "string"}, "b": {"type": "integer", "default": 0}}),
        &["a"],
        json!({}),
    );
    assert_eq!(
        w,
        json!({"a": "string", "b": {"type": "number", "optional": true}})
    );
}

#[test]
fn refs_and_draft07_forms() {
    let defs = json!({"Item": {"type": "object", "properties": {"id": {"type": "string"}},
        "required": ["id"]}});
    let object = json!({"kind": "object", "shape": {"id": "string"}});
    assert_eq!(field(json!({"$ref": "#/$defs/Item"}), defs.clone()), object);
    assert_eq!(
        field(
            json!({"$ref": "#/$defs/Item", "description": "d"}),
            defs.clone()
        ),
        object
    );
    assert_eq!(
        field(json!({"allOf": [{"$ref": "#/$defs/Item"}]}), defs.clone()),
        object
    );
    // draft-07: `definitions`, single-value enum literal, allOf wrapper beside properties.
    let root = json!({
        "oneOf": [{"type": "object",
            "properties": {"type": {"type": "string", "enum": ["wrap"]}},
            "required": ["type"],
            "allOf": [{"$ref": "#/definitions/Item"}]}],
        "definitions": defs});
    let model = MsgModel::from_schema(&root, &[desc("wrap")]).unwrap();
    assert_eq!(model.to_wire()["variants"]["wrap"], json!({"id": "string"}));
}

#[test]
fn all_of_merges_objects() {
    let defs = json!({
        "A": {"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "string"}},
              "required": ["x"]},
        "B": {"type": "object", "properties": {"y": {"type": "number"}, "z": {"type": "boolean"}},
              "required": ["y"], "additionalProperties": false}});
    let s = json!({"allOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}]});
    // Repeated `y` keeps A's schema; `required` is the union.
    assert_eq!(
        field(s.clone(), defs.clone()),
        json!({"kind": "object", "shape": {"x": "string", "y": "string",
            "z": {"type": "boolean", "optional": true}}})
    );
    let model = MsgModel::from_schema(
        &one_variant(json!({"f": s}), &["f"], defs.clone()),
        &[desc("v")],
    )
    .unwrap();
    match &model.variants[0].fields()[0].ty.kind {
        TypeKind::Object(o) => assert!(o.deny_unknown),
        other => panic!("not an object: {other:?}"),
    }
    // A non-object member makes the whole allOf unknown.
    let s = json!({"allOf": [{"$ref": "#/$defs/A"}, {"type": "string"}]});
    assert_eq!(field(s, defs), json!("unknown"));
}

#[test]
fn arrays_keep_bare_elements_and_item_constraints() {
    let s = json!({"type": "array", "items": {"type": ["string", "null"], "maxLength": 3},
        "minItems": 1, "uniqueItems": true, "minimum": 4});
    assert_eq!(
        field(s.clone(), json!({})),
        json!({"kind": "array", "element": "string"})
    );
    let model = MsgModel::from_schema(
        &one_variant(json!({"f": s}), &["f"], json!({})),
        &[desc("v")],
    )
    .unwrap();
    let ty = &model.variants[0].fields()[0].ty;
    assert_eq!(
        ty.constraint_schema(),
        Some(json!({"minItems": 1, "uniqueItems": true}))
    );
    let TypeKind::Array(element) = &ty.kind else {
        panic!("not an array")
    };
    assert!(element.nullable);
    assert_eq!(element.constraint_schema(), Some(json!({"maxLength": 3})));
}

#[test]
fn constraints_stay_on_their_type() {
    let model = MsgModel::from_schema(
        &one_variant(
            json!({
                "n": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255},
                "x": {"type": "number", "format": "float", "exclusiveMaximum": 1.5},
                "s": {"type": "string", "format": "email", "pattern": "^a", "minimum": 1},
                "e": {"type": "string", "enum": ["a"], "minLength": 4},
                "t": {"type": "array", "prefixItems": [true], "minItems": 2}}),
            &["n", "x", "s", "e", "t"],
            json!({}),
        ),
        &[desc("v")],
    )
    .unwrap();
    let schemas: Vec<Option<Value>> = model.variants[0]
        .fields()
        .iter()
        .map(|f| f.ty.constraint_schema())
        .collect();
    assert_eq!(
        schemas,
        vec![
            Some(json!({"type": "integer", "minimum": 0, "maximum": 255})),
            Some(json!({"exclusiveMaximum": 1.5})),
            Some(json!({"pattern": "^a", "format": "email"})),
            None,
            None,
        ]
    );
}

#[test]
fn budget_limits_ref_hops() {
    let defs = json!({"Node": {"type": "object", "properties": {
        "id": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
        "required": ["id", "children"]}});
    let mut w = field(json!({"$ref": "#/$defs/Node"}), defs);
    let mut levels = 0;
    while w["kind"] == "object" {
        levels += 1;
        assert_eq!(w["shape"]["id"], "string");
        w = w["shape"]["children"]["element"].clone();
    }
    assert_eq!(levels, 5);
    assert_eq!(w, json!("unknown"));
}

#[test]
fn self_referencing_defs_terminate() {
    let defs = json!({"A": {"$ref": "#/$defs/A"}, "B": {"allOf": [{"$ref": "#/$defs/B"}, {}]}});
    assert_eq!(
        field(json!({"$ref": "#/$defs/A"}), defs.clone()),
        json!("unknown")
    );
    assert_eq!(
        field(json!({"$ref": "#/$defs/B"}), defs.clone()),
        json!("unknown")
    );
    // At the variant level no budget is spent, but a cycle still ends (as an error).
    let root = json!({"oneOf": [{"$ref": "#/$defs/A"}], "$defs": defs});
    assert!(matches!(
        MsgModel::from_schema(&root, &[desc("v")]),
        Err(SchemaError::VariantNotObject { index: 0, .. })
    ));
    // Deeply nested inline schemas stop at the depth guard instead of exhausting the stack.
    let mut deep = json!({"type": "string"});
    for _ in 0..400 {
        deep = json!({"type": "array", "items": deep});
    }
    let mut w = field(deep, json!({}));
    let mut levels = 0;
    while w["kind"] == "array" {
        levels += 1;
        w = w["element"].clone();
    }
    assert!((30..400).contains(&levels), "{levels}");
    assert_eq!(w, json!("unknown"));
}

#[test]
fn discriminated_unions() {
    let branch = |kind: &str, extra: Value| {
        let mut props = json!({"kind": {"type": "string", "const": kind}});
        for (k, v) in extra.as_object().unwrap() {
            props[k] = v.clone();
        }
        json!({"type": "object", "properties": props, "required": ["kind"]})
    };
    let s =
        json!({"oneOf": [branch("a", json!({})), branch("b", json!({"n": {"type": "number"}}))]});
    assert_eq!(
        field(s, json!({})),
        json!({"kind": "discriminated-union", "discriminant": "kind",
            "variants": {"a": {}, "b": {"n": {"type": "number", "optional": true}}}})
    );
    // The first literal property of the first branch that discriminates wins: `tag` repeats a
    // value, so `kind` (later in the first branch) is chosen.
    let s = json!({"anyOf": [
        {"type": "object", "properties": {"tag": {"const": "x"}, "kind": {"enum": ["p"]}}},
        {"type": "object", "properties": {"kind": {"const": "q"}, "tag": {"const": "x"}}}]});
    let w = field(s, json!({}));
    assert_eq!(w["discriminant"], "kind");
    assert_eq!(
        w["variants"],
        json!({"p": {"tag": {"type": {"enum": ["x"]}, "optional": true}},
        "q": {"tag": {"type": {"enum": ["x"]}, "optional": true}}})
    );
    // No discriminant (untagged objects) → unknown; a non-object member → unknown.
    let s = json!({"anyOf": [
        {"type": "object", "properties": {"x": {"type": "integer"}}},
        {"type": "object", "properties": {"y": {"type": "string"}}}]});
    assert_eq!(field(s, json!({})), json!("unknown"));
    let s = json!({"oneOf": [branch("a", json!({})), {"type": "string"}]});
    assert_eq!(field(s, json!({})), json!("unknown"));
}

#[test]
fn variant_forms() {
    // A root without oneOf/anyOf is a single variant.
    let root = json!({"type": "object", "properties": {"type": {"const": "only"},
        "a": {"type": "string"}}, "required": ["type", "a"]});
    let model = MsgModel::from_schema(&root, &[desc("only")]).unwrap();
    assert_eq!(
        model.to_wire(),
        json!({"discriminant": "type", "variants": {"only": {"a": "string"}}})
    );
    assert_eq!(model.variants[0].pointer, "");
    // Unit variants, additionalProperties: false on the variant.
    let root = json!({"anyOf": [
        {"type": "object", "properties": {"type": {"const": "a"}}, "additionalProperties": false},
        {"type": "object", "properties": {"type": {"const": "b"}}}]});
    let model = MsgModel::from_schema(&root, &[desc("a"), desc("b")]).unwrap();
    assert!(model.variants[0].payload.deny_unknown);
    assert!(!model.variants[1].payload.deny_unknown);
    assert_eq!(model.variant_names(), vec!["a", "b"]);
    assert_eq!(model.variants[1].pointer, "/anyOf/1");
}

#[test]
fn variant_errors() {
    let root = json!({"oneOf": [
        {"type": "object", "properties": {"type": {"const": "a"}}},
        {"type": "string"}]});
    let err = MsgModel::from_schema(&root, &[desc("a"), desc("b")]).unwrap_err();
    assert_eq!(
        err,
        SchemaError::VariantNotObject {
            index: 1,
            variant: Some("b".into()),
            pointer: "/oneOf/1".into()
        }
    );
    assert!(err.to_string().contains("variant \"b\""));
    // A `type` that is not a string literal.
    let root = json!({"oneOf": [{"type": "object", "properties": {"type": {"type": "string"}}}]});
    assert!(matches!(
        MsgModel::from_schema(&root, &[desc("a")]),
        Err(SchemaError::VariantNotObject { index: 0, .. })
    ));
    let root = json!({"oneOf": [
        {"type": "object", "properties": {"type": {"const": "a"}}},
        {"type": "object", "properties": {"type": {"const": "a"}}}]});
    assert_eq!(
        MsgModel::from_schema(&root, &[desc("a"), desc("a")]).unwrap_err(),
        SchemaError::DuplicateVariant {
            wire_name: "a".into()
        }
    );
    let root = json!({"oneOf": [
        {"type": "object", "properties": {"type": {"const": "a"}}},
        {"type": "object", "properties": {"type": {"const": "c"}}}]});
    let err = MsgModel::from_schema(&root, &[desc("a"), desc("b")]).unwrap_err();
    assert_eq!(
        err,
        SchemaError::VariantMismatch {
            derive: vec!["a".into(), "b".into()],
            schema: vec!["a".into(), "c".into()]
        }
    );
    // Same names, other order.
    let err = MsgModel::from_schema(&root, &[desc("c"), desc("a")]).unwrap_err();
    assert!(matches!(err, SchemaError::VariantMismatch { .. }));
}

#[test]
fn tags_from_the_derive_and_from_docs() {
    static FIELDS: [StaticFieldTags; 1] = [StaticFieldTags {
        wire_name: "own",
        hint: Some("from derive"),
        validates: None,
    }];
    let d = VariantDescriptor {
        wire_name: "v",
        annotations: StaticAnnotations::DEFAULT,
        fields: &FIELDS,
    };
    let root = one_variant(
        json!({
            // The derive's record wins over the description of the variant's own field.
            "own": {"type": "string", "description": "@should(\"ignored\")"},
            // Not in the derive's record (a flattened field): read from its doc.
            "flat": {"type": "string", "title": "T", "description": "@validates(\"size(v) > 0\")"},
            "item": {"$ref": "#/$defs/Item"}}),
        &["own", "flat", "item"],
        json!({"Item": {"type": "object", "description": "@should(\"type doc, not a field doc\")",
            "properties": {"id": {"type": "string", "description": "Id.\n@should(\"the id\") @intent(\"x\")"}},
            "required": ["id"]}}),
    );
    let model = MsgModel::from_schema(&root, &[d]).unwrap();
    assert_eq!(
        model.to_wire()["variants"]["v"],
        json!({
            "own": {"type": "string", "priority": "should", "hint": "from derive"},
            "flat": {"type": "string", "validates": "size(v) > 0"},
            "item": {"kind": "object", "shape": {"id": {"type": "string", "priority": "should",
                "hint": "the id"}}}})
    );
    let fields = model.variants[0].fields();
    assert_eq!(fields[0].tag_source, TagSource::Derive);
    assert_eq!(fields[1].tag_source, TagSource::SchemaDescription);
    assert_eq!(fields[2].pointer, "/oneOf/0/properties/item");
    assert_eq!(fields[1].validates.as_deref(), Some("size(v) > 0"));
}

#[test]
fn malformed_nested_tag_names_the_pointer() {
    let root = one_variant(
        json!({"item": {"$ref": "#/$defs/It~em"}}),
        &["item"],
        json!({"It~em": {"type": "object",
            "properties": {"a/b": {"type": "string", "description": "@should(\"never closed"}}}}),
    );
    let root_str = root.to_string().replace("#/$defs/It~em", "#/$defs/It~0em");
    let root: Value = serde_json::from_str(&root_str).unwrap();
    let err = MsgModel::from_schema(&root, &[desc("v")]).unwrap_err();
    let SchemaError::NestedTag { pointer, errors } = &err else {
        panic!("unexpected {err:?}")
    };
    assert_eq!(pointer, "/$defs/It~0em/properties/a~1b");
    assert_eq!(errors.len(), 1);
    assert!(
        err.to_string().contains("`/$defs/It~0em/properties/a~1b`"),
        "{err}"
    );
}
