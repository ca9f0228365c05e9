//! `schemaHash` (`docs/annotations.md` §7.8): SHA-256 over canonical JSON.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The canonical JSON text of `value`: object keys sorted by Unicode code point at every level,
/// array order kept, no whitespace, strings escaped and numbers printed as serde_json does.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            // `str` ordering compares UTF-8 bytes, which is code point order.
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(key.as_str()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// `schemaHash`: the first 32 lowercase hex chars of SHA-256 over the canonical JSON of
/// `{"annotations": A, "messages": M, "stateSchema": S}`. `annotations` must hold the full
/// record of every variant.
pub fn schema_hash(annotations: &Value, messages: &Value, state_schema: &Value) -> String {
    let mut doc = Map::new();
    doc.insert("annotations".into(), annotations.clone());
    doc.insert("messages".into(), messages.clone());
    doc.insert("stateSchema".into(), state_schema.clone());
    let digest = Sha256::digest(canonical_json(&Value::Object(doc)).as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations::MessageAnnotations;
    use serde_json::json;

    fn d() -> MessageAnnotations {
        MessageAnnotations::default()
    }

    fn ann(entries: &[(&str, MessageAnnotations)]) -> Value {
        let mut m = Map::new();
        for (k, a) in entries {
            m.insert((*k).to_owned(), serde_json::to_value(a).unwrap());
        }
        Value::Object(m)
    }

    #[test]
    fn vector_1_empty() {
        let a = json!({});
        let m = json!({"discriminant":"type","variants":{}});
        let s = json!({});
        let mut doc = Map::new();
        doc.insert("stateSchema".into(), s.clone());
        doc.insert("messages".into(), m.clone());
        doc.insert("annotations".into(), a.clone());
        assert_eq!(
            canonical_json(&Value::Object(doc)),
            r#"{"annotations":{},"messages":{"discriminant":"type","variants":{}},"stateSchema":{}}"#
        );
        assert_eq!(schema_hash(&a, &m, &s), "21999bd7031e77404f526705d82025a3");
    }

    #[test]
    fn vector_2_two_default_records() {
        let a = ann(&[("inc", d()), ("set", d())]);
        let m = json!({"discriminant":"type","variants":{"inc":{},"set":{"v":"number"}}});
        let s = json!({"type":"object","properties":{"count":{"type":"integer"}},
            "required":["count"]});
        assert!(
            canonical_json(&json!({"annotations": a.clone()})).starts_with(
                r#"{"annotations":{"inc":{"alwaysAffordable":false,"dispatchMode":"shared","#
            )
        );
        assert_eq!(schema_hash(&a, &m, &s), "be592b009c2ceb3d39c5fa768aebcb66");
    }

    #[test]
    fn vector_3_intent_and_example() {
        let inc = MessageAnnotations {
            intent: Some("Increment".into()),
            examples: vec![r#"{"type":"inc"}"#.into()],
            ..d()
        };
        let a = ann(&[("inc", inc)]);
        let m = json!({"discriminant":"type","variants":{"inc":{}}});
        assert_eq!(
            schema_hash(&a, &m, &json!({})),
            "8649730573e3b2791829df8689bb5883"
        );
    }

    #[test]
    fn vector_4_non_ascii_and_tab() {
        let del = MessageAnnotations {
            intent: Some("Löschen — sicher?".into()),
            warning: Some("tab\there".into()),
            requires_confirm: true,
            ..d()
        };
        let a = ann(&[("del", del)]);
        let m = json!({"discriminant":"type","variants":{"del":{"id":{"type":"string",
            "optional":true,"priority":"should","hint":"the row id"}}}});
        let text = canonical_json(&a);
        assert!(text.contains(r#""intent":"Löschen — sicher?""#));
        assert!(text.contains(r#""warning":"tab\there""#));
        assert_eq!(
            schema_hash(&a, &m, &json!({"type":"object"})),
            "d3a5ab6eb58332836cecc01eef7ceb4d"
        );
    }

    #[test]
    fn canonical_escapes_like_serde_json() {
        let v = json!({"b":"a/b \"q\" \\ \u{8}\u{c}\n\r\t\u{1}\u{1f}é","a":[3,1.5,-0.0,null,true],
            "é":1,"Z":2,"":0});
        assert_eq!(
            canonical_json(&v),
            "{\"\":0,\"Z\":2,\"a\":[3,1.5,-0.0,null,true],\
             \"b\":\"a/b \\\"q\\\" \\\\ \\b\\f\\n\\r\\t\\u0001\\u001fé\",\"é\":1}"
        );
    }

    #[test]
    fn key_order_does_not_matter_and_changes_do() {
        let a = ann(&[("inc", d()), ("set", d())]);
        let m = json!({"discriminant":"type","variants":{"inc":{},"set":{"v":"number"}}});
        let s = json!({"type":"object","properties":{"count":{"type":"integer"}}});
        let h = schema_hash(&a, &m, &s);
        assert_eq!(h.len(), 32);
        assert!(h
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)));
        assert_eq!(h, schema_hash(&a, &m, &s));
        let m2 = json!({"variants":{"set":{"v":"number"},"inc":{}},"discriminant":"type"});
        let s2 = json!({"properties":{"count":{"type":"integer"}},"type":"object"});
        let a2 = ann(&[("set", d()), ("inc", d())]);
        assert_eq!(h, schema_hash(&a2, &m2, &s2));

        let changed_m = json!({"discriminant":"type","variants":{"inc":{},"set":{"v":"string"}}});
        assert_ne!(h, schema_hash(&a, &changed_m, &s));
        let changed_s = json!({"type":"object"});
        assert_ne!(h, schema_hash(&a, &m, &changed_s));
        let one_field = MessageAnnotations {
            always_affordable: true,
            ..d()
        };
        assert_ne!(
            h,
            schema_hash(&ann(&[("inc", one_field), ("set", d())]), &m, &s)
        );
        let empty_intent = MessageAnnotations {
            intent: Some(String::new()),
            ..d()
        };
        assert_ne!(
            h,
            schema_hash(&ann(&[("inc", empty_intent), ("set", d())]), &m, &s)
        );
    }
}
