//! Integer fields: what passes validation deserializes (`5.0`, `1e3`, `-0` and values outside
//! the field's 64-bit range are refused with a clear message).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tea_agent_derive::AgentMsg;
use tea_agent_runtime::cel_eval::PredicateCache;
use tea_agent_runtime::config::DispatchPolicy::Lenient;
use tea_agent_runtime::validate::Validator;
use tea_agent_schema::MsgModel;

#[derive(AgentMsg, JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type")]
enum Msg {
    Signed { n: i64 },
    Unsigned { n: u64 },
    Small { n: u8 },
    Float { x: f64 },
}

fn validator() -> Validator {
    let model = MsgModel::build::<Msg>().expect("model");
    Validator::new(&model, Arc::new(PredicateCache::new())).expect("validator")
}

/// Validation and deserialization agree on `msg`; returns the validation verdict.
fn agree(v: &Validator, msg: Value) -> (bool, String) {
    let outcome = v.validate(&msg, Lenient).to_json();
    let valid = outcome["ok"] == json!(true);
    let deserializes = serde_json::from_value::<Msg>(msg.clone()).is_ok();
    assert_eq!(
        valid, deserializes,
        "{msg}: validation says {valid}, serde says {deserializes}: {outcome}"
    );
    (valid, outcome.to_string())
}

fn raw(text: &str) -> Value {
    serde_json::from_str(text).expect("json")
}

#[test]
fn integer_fields_refuse_what_does_not_deserialize() {
    let v = validator();
    for ok in [
        r#"{"type":"Signed","n":5}"#,
        r#"{"type":"Signed","n":-9223372036854775808}"#,
        r#"{"type":"Signed","n":9223372036854775807}"#,
        r#"{"type":"Unsigned","n":18446744073709551615}"#,
        r#"{"type":"Small","n":255}"#,
        r#"{"type":"Float","x":5.0}"#,
        r#"{"type":"Float","x":-0}"#,
    ] {
        assert!(agree(&v, raw(ok)).0, "{ok}");
    }
    for (bad, says) in [
        (r#"{"type":"Signed","n":5.0}"#, "without a fraction"),
        (r#"{"type":"Signed","n":1e3}"#, "without a fraction"),
        (r#"{"type":"Signed","n":-0.0}"#, "minus zero"),
        (r#"{"type":"Signed","n":9223372036854775808}"#, "between"),
        (r#"{"type":"Signed","n":1.5}"#, "integer"),
        (r#"{"type":"Unsigned","n":-1}"#, ">= 0"),
        (r#"{"type":"Unsigned","n":18446744073709551616}"#, "integer"),
        (r#"{"type":"Small","n":256}"#, "<= 255"),
        (r#"{"type":"Small","n":2.0}"#, "without a fraction"),
    ] {
        let (valid, outcome) = agree(&v, raw(bad));
        assert!(!valid, "{bad}");
        assert!(outcome.contains(says), "{bad}: {outcome}");
    }
}

#[test]
fn minus_zero_as_written() {
    // serde_json reads `-0` as a float: an i64 field refuses it, and so does validation.
    let v = validator();
    let msg = raw(r#"{"type":"Signed","n":-0}"#);
    let (valid, _) = agree(&v, msg);
    assert!(!valid);
}
