//! Acceptance list `docs/annotations.md` §8.4 #63–#68 (flatten, newtype variants, `schema_with`,
//! tags on nested fields, host construction errors) and rich fields from the descriptor (§8.2).

#![allow(dead_code)]

mod common;

use std::borrow::Cow;

use common::{assert_draft07_same, d, model_of, payload, wire_of};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tea_agent_schema::annotations::{StaticAnnotations, StaticFieldTags};
use tea_agent_schema::shape::SchemaError;
use tea_agent_schema::VariantDescriptor;

// #63, #63a
#[derive(JsonSchema, Serialize, Deserialize)]
struct Extra {
    e1: String,
    e2: Option<i64>,
}
#[derive(JsonSchema, Serialize, Deserialize)]
struct Payload {
    /// @should("the row id")
    id: String,
    qty: u32,
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Flat {
    V {
        a: bool,
        #[serde(flatten)]
        extra: Extra,
    },
    Wrap(Payload),
}

#[test]
fn a63_flatten_and_newtype_variant() {
    assert_eq!(
        wire_of::<Flat>(&[d("v"), d("wrap")]),
        json!({"discriminant": "type", "variants": {
            "v": {"a": "boolean", "e1": "string", "e2": {"type": "number", "optional": true}},
            "wrap": {"id": {"type": "string", "priority": "should", "hint": "the row id"},
                "qty": "number"}}})
    );
    let model = model_of::<Flat>(&[d("v"), d("wrap")]).unwrap();
    let wrap = model.variant("wrap").unwrap();
    assert!(wrap.annotations.is_default());
    assert_eq!(wrap.fields()[0].pointer, "/$defs/Payload/properties/id");
}

// #64
fn rating(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"enum": [1, 2, 3, 4, 5]})
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type")]
enum Rated {
    #[serde(rename = "v")]
    V {
        #[schemars(schema_with = "rating")]
        rating: u8,
    },
}

#[test]
fn a64_schema_with() {
    assert_eq!(
        payload::<Rated>(),
        json!({"rating": {"enum": [1, 2, 3, 4, 5]}})
    );
}

// #65, #66
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Cell {
    criterion_id: String,
    /// Cite where the value came from.
    /// @should("Cite where the value came from.")
    meta: Option<String>,
    /// @validates("v.matches('^https?:')")
    url: String,
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum HintedFormat {
    Exact,
    Range {
        min: f64,
        /// @should("Upper bound.")
        max: f64,
    },
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type")]
enum Nested {
    #[serde(rename = "v")]
    V {
        cells: Vec<Cell>,
        format: HintedFormat,
    },
}

#[test]
fn a65_a66_nested_tags() {
    let p = payload::<Nested>();
    assert_eq!(
        p["cells"],
        json!({"kind": "array", "element": {"kind": "object", "shape": {
            "criterionId": "string",
            "meta": {"type": "string", "optional": true, "priority": "should",
                "hint": "Cite where the value came from."},
            "url": {"type": "string", "validates": "v.matches('^https?:')"}}}})
    );
    assert_eq!(
        p["format"]["variants"]["range"],
        json!({"min": "number", "max": {"type": "number", "priority": "should", "hint": "Upper bound."}})
    );
    let model = model_of::<Nested>(&[d("v")]).unwrap();
    let cells = &model.variants[0].fields()[0];
    let tea_agent_schema::shape::TypeKind::Array(cell) = &cells.ty.kind else {
        panic!("{cells:?}")
    };
    let tea_agent_schema::shape::TypeKind::Object(cell) = &cell.kind else {
        panic!("{cell:?}")
    };
    let url = cell.field("url").unwrap();
    assert_eq!(url.pointer, "/$defs/Cell/properties/url");
    assert_eq!(url.validates.as_deref(), Some("v.matches('^https?:')"));
}

// #67
#[derive(JsonSchema, Serialize, Deserialize)]
struct BadCel {
    /// @validates("v >")
    n: i32,
}
#[derive(JsonSchema, Serialize, Deserialize)]
struct BadCall {
    /// @should("never closed)
    n: i32,
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type")]
enum WithBadCel {
    #[serde(rename = "v")]
    V { inner: BadCel },
}
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type")]
enum WithBadCall {
    #[serde(rename = "v")]
    V { inner: BadCall },
}

#[test]
fn a67_bad_nested_validates_fails_host_construction() {
    let model = model_of::<WithBadCel>(&[d("v")]).unwrap();
    let errors = model.startup_errors::<WithBadCel>(&json!({}));
    let [err @ SchemaError::Startup { variant, field, .. }] = errors.as_slice() else {
        panic!("unexpected {errors:?}")
    };
    assert_eq!((variant.as_str(), field.as_deref()), ("v", Some("inner.n")));
    let text = err.to_string();
    // What is wrong on the first line, the parser's message as the fix on the second.
    assert!(
        text.starts_with(
            "variant \"v\": `@validates` on `inner.n`: `@validates` expression is not valid \
             CEL\nhelp: ERROR: <input>:1:4:"
        ),
        "{text}"
    );
    assert_eq!(text.lines().count(), 2);

    let err = model_of::<WithBadCall>(&[d("v")]).unwrap_err();
    let SchemaError::NestedTag { pointer, errors } = &err else {
        panic!("unexpected {err:?}")
    };
    assert_eq!(pointer, "/$defs/BadCall/properties/n");
    assert_eq!(errors[0].code(), "D5");
    assert!(
        err.to_string()
            .contains("malformed `@should(…)`: a quoted string is never closed"),
        "{err}"
    );
}

// #68
struct HandWritten;
impl JsonSchema for HandWritten {
    fn schema_name() -> Cow<'static, str> {
        "HandWritten".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"oneOf": [
            {"type": "object", "properties": {"type": {"type": "string", "const": "inc"}},
             "required": ["type"]},
            {"type": "object", "properties": {"type": {"type": "string", "const": "reset"}},
             "required": ["type"]}]})
    }
}

#[test]
fn a68_variant_lists_differ() {
    let err = model_of::<HandWritten>(&[d("inc"), d("dec")]).unwrap_err();
    assert_eq!(
        err,
        SchemaError::VariantMismatch {
            derive: vec!["inc".into(), "dec".into()],
            schema: vec!["inc".into(), "reset".into()]
        }
    );
    let text = err.to_string();
    assert!(
        text.contains(r#"derive ["inc", "dec"]"#) && text.contains(r#"schema ["inc", "reset"]"#)
    );
}

// Field tags of the derived enum's own fields come from the descriptor (§8.2 #28–#31, #34).
#[derive(JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type")]
enum Rich {
    #[serde(rename = "v")]
    V {
        reason: Option<String>,
        title: String,
        weight: f64,
        url: Option<String>,
        plain: String,
    },
}
static RICH_FIELDS: [StaticFieldTags; 4] = [
    StaticFieldTags {
        wire_name: "reason",
        hint: Some("why the change"),
        validates: None,
    },
    StaticFieldTags {
        wire_name: "title",
        hint: Some("h"),
        validates: None,
    },
    StaticFieldTags {
        wire_name: "weight",
        hint: None,
        validates: Some("v >= 0 && v <= 100"),
    },
    StaticFieldTags {
        wire_name: "url",
        hint: Some("Cite the source."),
        validates: Some("size(v) > 0"),
    },
];

#[test]
fn rich_fields_from_the_descriptor() {
    let desc = VariantDescriptor {
        wire_name: "v",
        annotations: StaticAnnotations::DEFAULT,
        fields: &RICH_FIELDS,
    };
    let p = &wire_of::<Rich>(&[desc])["variants"]["v"];
    assert_eq!(
        serde_json::to_string(p).unwrap(),
        concat!(
            r#"{"reason":{"type":"string","optional":true,"priority":"should","hint":"why the change"},"#,
            r#""title":{"type":"string","priority":"should","hint":"h"},"#,
            r#""weight":{"type":"number","validates":"v >= 0 && v <= 100"},"#,
            r#""url":{"type":"string","optional":true,"priority":"should","hint":"Cite the source.","validates":"size(v) > 0"},"#,
            r#""plain":"string"}"#
        )
    );
}

#[test]
fn draft07_output_gives_the_same_shape() {
    assert_draft07_same::<Flat>(&[d("v"), d("wrap")]);
    assert_draft07_same::<Rated>(&[d("v")]);
    assert_draft07_same::<Nested>(&[d("v")]);
}
