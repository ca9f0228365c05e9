//! Acceptance list `docs/semantics.md` §11.2 (payload validation), with fixture enums deriving
//! `AgentMsg` and the model built from their schemars schemas.

#![allow(dead_code)]

use std::sync::Arc;

use serde_json::{json, Value};
use tea_agent_runtime::cel_eval::PredicateCache;
use tea_agent_runtime::config::DispatchPolicy::{self, Lenient, Strict};
use tea_agent_runtime::validate::Validator;
use tea_agent_schema::protocol::{IssueCode, ValidationOutcome};
use tea_agent_schema::{AgentMsg, MsgModel};

#[path = "validate_acceptance/fixtures.rs"]
mod fixtures;

use fixtures::*;

fn validator<M: AgentMsg>() -> Validator {
    let model = MsgModel::build::<M>().expect("fixture model");
    Validator::new(&model, Arc::new(PredicateCache::new())).expect("fixture validator")
}

fn check(v: &Validator, msg: Value, policy: DispatchPolicy) -> ValidationOutcome {
    v.validate(&msg, policy)
}

fn lenient(v: &Validator, msg: Value) -> Value {
    v.validate(&msg, Lenient).to_json()
}

fn strict(v: &Validator, msg: Value) -> Value {
    v.validate(&msg, Strict).to_json()
}

fn ok() -> Value {
    json!({"ok": true})
}

/// `(path, code)` of every error.
fn codes(out: &ValidationOutcome) -> Vec<(String, IssueCode)> {
    out.errors
        .iter()
        .map(|e| (e.path.clone(), e.code))
        .collect()
}

#[test]
fn n01_not_an_object_and_missing_type() {
    let v = validator::<Msg>();
    for msg in [json!(null), json!([]), json!("x"), json!(3), json!(true)] {
        assert_eq!(
            lenient(&v, msg),
            json!({"ok": false, "errors": [
                {"path": "", "code": "not-object", "message": "msg must be a plain object"}
            ]})
        );
    }
    for msg in [
        json!({}),
        json!({"type": 42}),
        json!({"type": null}),
        json!({"notType": 1}),
    ] {
        assert_eq!(
            strict(&v, msg),
            json!({"ok": false, "errors": [
                {"path": "type", "code": "missing", "message": "msg.type must be a string variant tag"}
            ]})
        );
    }
}

#[test]
fn n02_unknown_variant_lists_schema_order() {
    let v = validator::<CellMsg>();
    let out = lenient(&v, json!({"type": "Bogus", "value": 3}));
    assert_eq!(
        out,
        json!({"ok": false, "errors": [{
            "path": "type",
            "code": "unknown-variant",
            "message": "'Bogus' is not a known variant. Legal values: 'Cell/SetRating', 'Cell/SetFormat'."
        }]})
    );
}

#[test]
fn n03_enum_of_numbers() {
    let v = validator::<CellMsg>();
    let exact = serde_json::to_string(&lenient(&v, json!({"type": "Cell/SetRating", "value": 3})));
    assert_eq!(exact.unwrap(), r#"{"ok":true}"#);
    assert_eq!(
        lenient(&v, json!({"type": "Cell/SetRating", "value": 4})),
        ok()
    );
    // Numbers by numeric value.
    assert_eq!(
        lenient(&v, json!({"type": "Cell/SetRating", "value": 4.0})),
        ok()
    );
    let six = check(&v, json!({"type": "Cell/SetRating", "value": 6}), Lenient);
    assert_eq!(
        serde_json::to_string(&six.errors[0]).unwrap(),
        r#"{"path":"value","code":"not-in-enum","message":"'6' is not in the enum. Legal values: 1, 2, 3, 4, 5."}"#
    );
    let quoted = check(&v, json!({"type": "Cell/SetRating", "value": "4"}), Lenient);
    assert_eq!(codes(&quoted), vec![("value".into(), IssueCode::NotInEnum)]);
    assert_eq!(
        quoted.errors[0].message,
        "'4' is not in the enum. Legal values: 1, 2, 3, 4, 5."
    );
    let missing = check(&v, json!({"type": "Cell/SetRating"}), Lenient);
    assert_eq!(codes(&missing), vec![("value".into(), IssueCode::Missing)]);
    assert_eq!(missing.errors[0].message, "required field is missing");
    assert_eq!(missing.detail(), "value: required field is missing");
}

#[test]
fn n04_optional_field_and_wrong_type() {
    let v = validator::<Msg>();
    assert_eq!(lenient(&v, json!({"type": "create", "title": "T"})), ok());
    assert_eq!(
        lenient(
            &v,
            json!({"type": "create", "title": "T", "description": "d"})
        ),
        ok()
    );
    assert_eq!(
        lenient(&v, json!({"type": "count", "count": "three"})),
        json!({"ok": false, "errors": [
            {"path": "count", "code": "wrong-type", "message": "expected number, got string"}
        ]})
    );
}

#[test]
fn n05_unknown_typed_fields() {
    let v = validator::<Msg>();
    for payload in [json!(42), json!({"a": 1}), json!(null), json!([1, "x"])] {
        assert_eq!(
            lenient(&v, json!({"type": "maybeUntyped", "payload": payload})),
            ok()
        );
    }
    assert_eq!(lenient(&v, json!({"type": "maybeUntyped"})), ok());
    let missing = check(&v, json!({"type": "untyped"}), Lenient);
    assert_eq!(
        codes(&missing),
        vec![("payload".into(), IssueCode::Missing)]
    );
}

#[test]
fn n06_discriminated_union() {
    let v = validator::<CellMsg>();
    let set = |format: Value| json!({"type": "Cell/SetFormat", "format": format});
    assert_eq!(
        lenient(&v, set(json!({"kind": "range", "min": 0, "max": 100}))),
        ok()
    );
    assert_eq!(lenient(&v, set(json!({"kind": "exact"}))), ok());

    let empty = check(&v, set(json!({})), Lenient);
    assert_eq!(
        codes(&empty),
        vec![("format.kind".into(), IssueCode::MissingDiscriminant)]
    );
    assert_eq!(
        empty.errors[0].message,
        "discriminant 'kind' must be one of: 'exact', 'range', 'compound'"
    );
    // A non-string discriminant is missing too.
    let numeric = check(&v, set(json!({"kind": 1})), Lenient);
    assert_eq!(numeric.errors[0].code, IssueCode::MissingDiscriminant);

    let log = check(&v, set(json!({"kind": "logarithmic", "base": 10})), Lenient);
    assert_eq!(
        codes(&log),
        vec![("format.kind".into(), IssueCode::UnknownDiscriminantValue)]
    );
    assert_eq!(
        log.errors[0].message,
        "'logarithmic' is not a legal 'kind'. Legal values: 'exact', 'range', 'compound'."
    );

    let no_min = check(&v, set(json!({"kind": "range", "max": 100})), Lenient);
    assert_eq!(
        codes(&no_min),
        vec![("format(kind=range).min".into(), IssueCode::Missing)]
    );

    let wrong = check(
        &v,
        set(json!({"kind": "range", "min": "0", "max": 1})),
        Lenient,
    );
    assert_eq!(
        wrong.detail(),
        "format(kind=range).min: expected number, got string"
    );

    let not_object = check(&v, set(json!([1])), Lenient);
    assert_eq!(
        not_object.detail(),
        "format: expected discriminated-union object, got array"
    );

    // Strict extra-key checks apply inside branches; the discriminant is not an extra key.
    let extra = check(
        &v,
        set(json!({"kind": "compound", "formula": "x", "base": 2})),
        Strict,
    );
    assert_eq!(
        extra.detail(),
        "format(kind=compound).base: field 'base' is not in the schema. Legal fields: 'formula'."
    );
    let extra_exact = check(&v, set(json!({"kind": "exact", "base": 2})), Strict);
    assert_eq!(
        extra_exact.detail(),
        "format(kind=exact).base: field 'base' is not in the schema. Legal fields: (none)."
    );
    assert!(check(&v, set(json!({"kind": "exact", "base": 2})), Lenient).is_ok());
}

#[test]
fn n07_arrays() {
    let v = validator::<Msg>();
    let not_array = check(
        &v,
        json!({"type": "items", "items": "not-an-array"}),
        Lenient,
    );
    assert_eq!(
        codes(&not_array),
        vec![("items".into(), IssueCode::NotArray)]
    );
    assert_eq!(not_array.errors[0].message, "expected array, got string");

    let mixed = check(
        &v,
        json!({"type": "items", "items": [1, "two", 3, "four"]}),
        Lenient,
    );
    assert_eq!(
        codes(&mixed),
        vec![
            ("items[1]".into(), IssueCode::WrongType),
            ("items[3]".into(), IssueCode::WrongType)
        ]
    );
    assert_eq!(lenient(&v, json!({"type": "items", "items": []})), ok());
}

#[test]
fn n08_strict_extra_keys() {
    let v = validator::<Msg>();
    let msg = json!({"type": "create", "title": "X", "tilte": "X"});
    let out = check(&v, msg.clone(), Strict);
    assert_eq!(
        serde_json::to_value(&out.errors).unwrap(),
        json!([{
            "path": "tilte",
            "code": "unexpected-field",
            "message": "field 'tilte' is not in the schema. Legal fields: 'title', 'description'."
        }])
    );
    assert_eq!(lenient(&v, msg.clone()), ok());
    assert_eq!(v.validate(&msg, DispatchPolicy::default()).to_json(), ok());
}

#[test]
fn n09_untyped_warning_only_when_strict() {
    let v = validator::<Msg>();
    let msg = json!({"type": "untyped", "payload": {"whatever": 1}});
    let out = strict(&v, msg.clone());
    assert_eq!(out["ok"], json!(true));
    assert!(out.get("errors").is_none());
    let warnings = out["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0]["path"], "payload");
    assert_eq!(warnings[0]["code"], "untyped-field");
    let message = warnings[0]["message"].as_str().unwrap();
    assert!(message.contains("'unknown'"), "{message}");
    assert_eq!(
        message,
        "value accepted but field schema is 'unknown' — the validator could not structurally check it."
    );
    assert_eq!(
        serde_json::to_string(&lenient(&v, msg)).unwrap(),
        r#"{"ok":true}"#
    );
}

#[test]
fn n10_strict_nested_object() {
    let v = validator::<Msg>();
    let out = check(
        &v,
        json!({"type": "row", "row": {"id": "1", "lable": "x"}}),
        Strict,
    );
    assert_eq!(
        codes(&out),
        vec![
            ("row.label".into(), IssueCode::Missing),
            ("row.lable".into(), IssueCode::UnexpectedField)
        ]
    );
    assert_eq!(
        out.errors[1].message,
        "field 'lable' is not in the schema. Legal fields: 'id', 'label'."
    );
    let not_object = check(&v, json!({"type": "row", "row": 5}), Lenient);
    assert_eq!(not_object.detail(), "row: expected object, got number");
}

#[test]
fn n11_validates_numbers() {
    let v = validator::<Msg>();
    assert_eq!(lenient(&v, json!({"type": "weigh", "weight": 50})), ok());
    assert_eq!(lenient(&v, json!({"type": "weigh", "weight": 50.5})), ok());
    let out = check(&v, json!({"type": "weigh", "weight": 150}), Lenient);
    assert_eq!(
        codes(&out),
        vec![("weight".into(), IssueCode::ValidatesFailed)]
    );
    assert!(out.errors[0].message.contains("v >= 0 && v <= 100"));
    assert_eq!(
        out.errors[0].message,
        "value violates `@validates(\"v >= 0 && v <= 100\")`"
    );
    // Predicates run under both policies.
    assert!(!check(&v, json!({"type": "weigh", "weight": 150}), Strict).is_ok());
}

#[test]
fn n12_validates_skipped_after_type_error() {
    let v = validator::<Msg>();
    let out = check(&v, json!({"type": "weigh", "weight": "a string"}), Lenient);
    assert_eq!(codes(&out), vec![("weight".into(), IssueCode::WrongType)]);
}

#[test]
fn n13_validates_regex() {
    let v = validator::<Msg>();
    assert_eq!(
        lenient(&v, json!({"type": "slug", "slug": "my-cool-slug"})),
        ok()
    );
    let out = check(&v, json!({"type": "slug", "slug": "My Slug!"}), Lenient);
    assert_eq!(
        codes(&out),
        vec![("slug".into(), IssueCode::ValidatesFailed)]
    );
}

#[test]
fn n14_validates_evaluation_error_fails() {
    let v = validator::<Msg>();
    let out = check(&v, json!({"type": "check", "data": null}), Lenient);
    assert_eq!(
        codes(&out),
        vec![("data".into(), IssueCode::ValidatesFailed)]
    );
    assert_eq!(lenient(&v, json!({"type": "check", "data": "x"})), ok());
}

#[test]
fn n15_errors_in_field_order() {
    let v = validator::<Msg>();
    let out = check(&v, json!({"type": "pair", "b": "two", "a": 1}), Lenient);
    assert_eq!(
        codes(&out),
        vec![
            ("a".into(), IssueCode::WrongType),
            ("b".into(), IssueCode::WrongType)
        ]
    );
    assert_eq!(
        out.detail(),
        "a: expected string, got number; b: expected number, got string"
    );
}

#[test]
fn n16_null_on_optional_and_required() {
    let v = validator::<Msg>();
    assert_eq!(
        lenient(&v, json!({"type": "note", "note": null, "title": "t"})),
        ok()
    );
    let out = check(&v, json!({"type": "note", "title": null}), Lenient);
    assert_eq!(codes(&out), vec![("title".into(), IssueCode::WrongType)]);
    assert_eq!(out.errors[0].message, "expected string, got null");
}

#[test]
fn n17_constraints() {
    let v = validator::<Msg>();
    let name = "a name long enough to pass the predicate, which wants more than a hundred chars \
                in this fixture so that it normally passes";
    assert!(name.chars().count() > 100);
    assert_eq!(
        lenient(&v, json!({"type": "ranged", "n": 5, "name": name})),
        ok()
    );
    let high = check(
        &v,
        json!({"type": "ranged", "n": 11, "name": name}),
        Lenient,
    );
    assert_eq!(
        serde_json::to_value(&high.errors).unwrap(),
        json!([{"path": "n", "code": "constraint-failed", "message": "must be <= 10, got 11"}])
    );
    let fraction = check(
        &v,
        json!({"type": "ranged", "n": 1.5, "name": name}),
        Lenient,
    );
    assert_eq!(fraction.detail(), "n: expected an integer, got 1.5");
    let low = check(&v, json!({"type": "ranged", "n": 0, "name": name}), Lenient);
    assert_eq!(low.detail(), "n: must be >= 1, got 0");
    // A failing constraint suppresses that field's `@validates`.
    let short = check(&v, json!({"type": "ranged", "n": 5, "name": "ab"}), Lenient);
    assert_eq!(
        serde_json::to_value(&short.errors).unwrap(),
        json!([{
            "path": "name",
            "code": "constraint-failed",
            "message": "must be at least 3 characters long, got 2"
        }])
    );
    // Without a constraint error the predicate runs (and fails here).
    let predicate = check(
        &v,
        json!({"type": "ranged", "n": 5, "name": "abc"}),
        Lenient,
    );
    assert_eq!(
        codes(&predicate),
        vec![("name".into(), IssueCode::ValidatesFailed)]
    );
}

#[test]
fn n18_deny_unknown_fields_even_lenient() {
    let v = validator::<Msg>();
    let out = check(
        &v,
        json!({"type": "nested", "inner": {"a": 1, "b": 2}}),
        Lenient,
    );
    assert_eq!(
        serde_json::to_value(&out.errors).unwrap(),
        json!([{
            "path": "inner.b",
            "code": "unexpected-field",
            "message": "field 'b' is not in the schema. Legal fields: 'a'."
        }])
    );
}

#[test]
fn n19_serde_safety_net_and_unsigned_bounds() {
    let v = validator::<Msg>();
    // No bound on i32: the validator accepts 3000000000 and serde refuses it; the session
    // turns that into `invalid` with `msg does not deserialize: …`.
    let big = json!({"type": "wide", "big": 3_000_000_000u64, "small": 1});
    assert!(v.validate(&big, Strict).is_ok());
    let err = serde_json::from_value::<Msg>(big)
        .err()
        .expect("serde refuses");
    assert!(err.to_string().contains("3000000000"), "{err}");
    // schemars bounds u8.
    let small = check(&v, json!({"type": "wide", "big": 1, "small": 300}), Lenient);
    assert_eq!(
        serde_json::to_value(&small.errors).unwrap(),
        json!([{"path": "small", "code": "constraint-failed", "message": "must be <= 255, got 300"}])
    );
    let negative = check(&v, json!({"type": "wide", "big": 1, "small": -1}), Lenient);
    assert_eq!(negative.detail(), "small: must be >= 0, got -1");
}

#[test]
fn type_key_is_not_a_payload_field() {
    let v = validator::<Msg>();
    // `type` is never an unexpected field, and a unit-like payload reports M12n.
    assert_eq!(strict(&v, json!({"type": "create", "title": "t"})), ok());
    let out = check(
        &v,
        json!({"type": "weigh", "weight": 1, "type2": 0}),
        Strict,
    );
    assert_eq!(
        out.detail(),
        "type2: field 'type2' is not in the schema. Legal fields: 'weight'."
    );
}

#[test]
fn outcome_wire_forms() {
    let v = validator::<Msg>();
    let both = strict(&v, json!({"type": "untyped", "payload": 1, "extra": true}));
    assert_eq!(
        serde_json::to_string(&both).unwrap(),
        concat!(
            r#"{"ok":false,"errors":[{"path":"extra","code":"unexpected-field","#,
            r#""message":"field 'extra' is not in the schema. Legal fields: 'payload'."}],"#,
            r#""warnings":[{"path":"payload","code":"untyped-field","#,
            r#""message":"value accepted but field schema is 'unknown' — the validator could not structurally check it."}]}"#
        )
    );
}
