//! Acceptance list `docs/semantics.md` §11.3 (`list_actions`), with fixture enums deriving
//! `AgentMsg` and the model built from their schemars schemas.

#![allow(dead_code)]

use std::sync::Arc;

use serde::Serialize;
use serde_json::{json, Value};
use tea_agent_runtime::affordances::Affordances;
use tea_agent_runtime::cel_eval::PredicateCache;
use tea_agent_schema::protocol::Action;
use tea_agent_schema::{AgentMsg, Bindings, MsgModel};

fn lister<M: AgentMsg>() -> Affordances {
    let model = MsgModel::build::<M>().expect("fixture model");
    Affordances::new(&model, Arc::new(PredicateCache::new()))
}

/// Explicit bindings (the reference protocol's list of wire names).
fn names<'a>(list: &[&'a str]) -> Bindings<&'a str> {
    Bindings::only(list.iter().copied())
}

fn to_json<M: Serialize>(msgs: &[M]) -> Vec<Value> {
    msgs.iter()
        .map(|m| serde_json::to_value(m).expect("fixture message serializes"))
        .collect()
}

/// `{"actions": […]}` as `list_actions` answers.
fn wire(actions: &[Action]) -> Value {
    json!({ "actions": actions })
}

/// `(variant, source)` of each action.
fn summary(actions: &[Action]) -> Vec<(String, String)> {
    actions
        .iter()
        .map(|a| {
            let source = serde_json::to_value(a.source).unwrap();
            (a.variant.clone(), source.as_str().unwrap().to_owned())
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[path = "actions_acceptance/fixtures.rs"]
mod fixtures;

use fixtures::*;

// ---------------------------------------------------------------------------------------------
// §11.3

#[test]
fn n01_nothing_listed() {
    // Explicitly no bindings (the reference's empty list), no hook: nothing.
    let a = lister::<Plain>();
    assert_eq!(
        wire(&a.list(&Bindings::none(), None, &json!({}))),
        json!({"actions": []})
    );
    let shop = lister::<Shop>();
    assert_eq!(shop.list(&Bindings::none(), None, &json!({})), vec![]);
}

#[test]
fn n01_default_bindings_list_every_variant_an_agent_may_send() {
    // The default (no `bindings` override): every variant not human-only, in declaration
    // order, `source: "schema"` and the synthesized hint.
    let a = lister::<Plain>();
    let actions = a.list(&Bindings::all(), None, &json!({}));
    assert_eq!(
        summary(&actions),
        pairs(&[("save", "schema"), ("rename", "schema")])
    );
    let hints: Vec<_> = actions.iter().map(|a| a.payload_hint.clone()).collect();
    assert_eq!(
        hints,
        [
            Some(json!({"type": "save"})),
            Some(json!({"type": "rename", "name": ""}))
        ]
    );
}

#[test]
fn n02_human_only_binding_is_filtered() {
    let a = lister::<Plain>();
    let actions = a.list(&names(&["delete", "save"]), None, &json!({}));
    assert_eq!(summary(&actions), pairs(&[("save", "binding")]));
}

#[test]
fn n03_bound_variant_without_intent() {
    let a = lister::<Plain>();
    let actions = a.list(&names(&["save"]), None, &json!({}));
    assert_eq!(
        serde_json::to_value(&actions[0]).unwrap(),
        json!({
            "variant": "save",
            "intent": null,
            "requiresConfirm": false,
            "dispatchMode": "shared",
            "source": "binding",
            "selectorHint": null,
            "payloadHint": null,
            "warning": null,
            "examples": [],
            "emits": [],
            "fieldHints": []
        })
    );
}

#[test]
fn annotation_fields_are_copied() {
    let a = lister::<Plain>();
    let actions = a.list(&names(&["rename"]), None, &json!({}));
    assert_eq!(
        serde_json::to_string(&actions[0]).unwrap(),
        concat!(
            r#"{"variant":"rename","intent":"Rename the workspace","requiresConfirm":true,"#,
            r#""dispatchMode":"shared","source":"binding","selectorHint":null,"payloadHint":null,"#,
            r#""warning":"costs money","examples":["{\"type\":\"rename\",\"name\":\"x\"}"],"#,
            r#""emits":["cloud/save","analytics/track"],"fieldHints":[]}"#
        )
    );
}

#[test]
fn n04_hook_payloads() {
    let a = lister::<Shop>();
    let hook = to_json(&[Shop::AddItem {
        id: "abc".into(),
        qty: 2,
    }]);
    let actions = a.list(&Bindings::none(), Some(&hook), &json!({}));
    let got = serde_json::to_value(&actions).unwrap();
    assert_eq!(
        got,
        json!([{
            "variant": "addItem",
            "intent": null,
            "requiresConfirm": false,
            "dispatchMode": "shared",
            "source": "always-affordable",
            "selectorHint": null,
            "payloadHint": {"id": "abc", "qty": 2},
            "warning": null,
            "examples": [],
            "emits": [],
            "fieldHints": []
        }])
    );
    let reset = to_json(&[Shop::Reset]);
    let actions = a.list(&Bindings::none(), Some(&reset), &json!({}));
    assert_eq!(summary(&actions), pairs(&[("reset", "always-affordable")]));
    assert_eq!(actions[0].payload_hint, None);
    assert_eq!(
        serde_json::to_value(&actions[0]).unwrap()["payloadHint"],
        Value::Null
    );
}

#[test]
fn n05_agent_only_from_schema() {
    let a = lister::<Matrix>();
    let actions = a.list(&Bindings::none(), None, &json!({}));
    let criteria: Vec<&Action> = actions
        .iter()
        .filter(|a| a.variant == "Matrix/AddCriteria")
        .collect();
    assert_eq!(criteria.len(), 1);
    let c = serde_json::to_value(criteria[0]).unwrap();
    assert_eq!(c["source"], "schema");
    assert_eq!(c["dispatchMode"], "agent-only");
    assert_eq!(c["intent"], "Add criteria");
    assert_eq!(
        serde_json::to_string(&c["payloadHint"]).unwrap(),
        r#"{"type":"Matrix/AddCriteria"}"#
    );
}

#[test]
fn n06_agent_only_also_bound() {
    let a = lister::<Matrix>();
    let actions = a.list(&names(&["Matrix/AddCriteria"]), None, &json!({}));
    let criteria: Vec<&Action> = actions
        .iter()
        .filter(|a| a.variant == "Matrix/AddCriteria")
        .collect();
    assert_eq!(criteria.len(), 1);
    let c = serde_json::to_value(criteria[0]).unwrap();
    assert_eq!(c["source"], "binding");
    assert_eq!(c["dispatchMode"], "agent-only");
    assert_eq!(c["payloadHint"], Value::Null);
}

#[test]
fn n07_unbound_shared_variants_are_hidden() {
    let a = lister::<Matrix>();
    let actions = a.list(&Bindings::none(), None, &json!({}));
    assert_eq!(
        summary(&actions),
        pairs(&[
            ("Matrix/AddAlternatives", "always-affordable"),
            ("Matrix/AddCriteria", "schema"),
        ])
    );
    let bound = a.list(&names(&["Matrix/Share"]), None, &json!({}));
    assert!(bound.iter().any(|x| x.variant == "Matrix/Share"));
    assert!(!bound.iter().any(|x| x.variant == "Matrix/Rename"));
}

#[test]
fn n08_always_affordable() {
    let a = lister::<Matrix>();
    let only = |actions: &[Action]| -> Vec<Value> {
        actions
            .iter()
            .filter(|x| x.variant == "Matrix/AddAlternatives")
            .map(|x| serde_json::to_value(x).unwrap())
            .collect()
    };
    let unbound = only(&a.list(&Bindings::none(), None, &json!({})));
    assert_eq!(unbound.len(), 1);
    assert_eq!(unbound[0]["source"], "always-affordable");
    assert_eq!(unbound[0]["dispatchMode"], "shared");
    assert_eq!(
        serde_json::to_string(&unbound[0]["payloadHint"]).unwrap(),
        r#"{"type":"Matrix/AddAlternatives"}"#
    );

    let bound = only(&a.list(&names(&["Matrix/AddAlternatives"]), None, &json!({})));
    assert_eq!(bound.len(), 1);
    assert_eq!(bound[0]["source"], "binding");

    let hook = to_json(&[Matrix::AddAlternatives {
        alternatives: Some(vec![Alternative {
            id: "a1".into(),
            title: "first".into(),
        }]),
    }]);
    let hooked = only(&a.list(&Bindings::none(), Some(&hook), &json!({})));
    assert_eq!(hooked.len(), 1);
    assert_eq!(hooked[0]["source"], "always-affordable");
    assert_eq!(
        hooked[0]["payloadHint"],
        json!({"alternatives": [{"id": "a1", "title": "first"}]})
    );
}

#[test]
fn n09_hook_human_only_is_dropped() {
    let a = lister::<Shop>();
    let hook = to_json(&[Shop::ClickButton, Shop::Reset]);
    let actions = a.list(&Bindings::none(), Some(&hook), &json!({}));
    assert_eq!(summary(&actions), pairs(&[("reset", "always-affordable")]));
}

#[test]
fn n10_synthesized_hints() {
    let a = lister::<Hinted>();
    let actions = a.list(&Bindings::none(), None, &json!({}));
    let hint = |variant: &str| {
        let action = actions.iter().find(|x| x.variant == variant).unwrap();
        serde_json::to_string(action.payload_hint.as_ref().unwrap()).unwrap()
    };
    assert_eq!(
        hint("bulk"),
        r#"{"type":"bulk","title":"","count":0,"published":false,"category":"a"}"#
    );
    assert_eq!(hint("save"), r#"{"type":"save","required":"","why":""}"#);
    // #15: the union's first branch.
    assert_eq!(
        hint("Cell/SetFormat"),
        r#"{"type":"Cell/SetFormat","format":{"kind":"exact"}}"#
    );
}

#[test]
fn n11_route_gate_with_and_without_reason() {
    let a = lister::<Gated>();
    let bindings = names(&["withReason", "withoutReason"]);
    let idle = json!({"matrixState": {"kind": "idle"}});
    let closed = serde_json::to_value(a.list(&bindings, None, &idle)).unwrap();
    assert_eq!(closed[0]["variant"], "withReason");
    assert_eq!(closed[0]["available"], json!(false));
    assert_eq!(closed[0]["unavailableReason"], "load a matrix first");
    assert_eq!(closed[1]["variant"], "withoutReason");
    assert_eq!(closed[1]["available"], json!(false));
    assert_eq!(
        closed[1]["unavailableReason"],
        "not available in the current state"
    );

    let loaded = json!({"matrixState": {"kind": "loaded"}});
    let open = serde_json::to_value(a.list(&bindings, None, &loaded)).unwrap();
    for action in open.as_array().unwrap() {
        assert!(action.get("available").is_none(), "{action}");
        assert!(action.get("unavailableReason").is_none(), "{action}");
    }
    // A gated `@agentOnly` variant listed by pass 4 is gated the same way.
    let score = a
        .list(&Bindings::none(), None, &idle)
        .into_iter()
        .find(|x| x.variant == "score")
        .unwrap();
    assert_eq!(score.available, Some(false));
    assert_eq!(
        score.unavailable_reason.as_deref(),
        Some("load a matrix first")
    );
}

#[test]
fn n12_gates_fail_closed() {
    let a = lister::<Gated>();
    // The bound `deep`, then the `@agentOnly` `score` of pass 4.
    let deep = a.list(&names(&["deep"]), None, &json!({}));
    assert_eq!(
        summary(&deep),
        pairs(&[("deep", "binding"), ("score", "schema")])
    );
    assert_eq!(deep[0].available, Some(false));
    let deep_open = a.list(
        &names(&["deep"]),
        None,
        &json!({"deeply": {"nested": {"value": 1}}}),
    );
    assert_eq!(deep_open[0].available, None);

    let non_boolean = a.list(&names(&["nonBoolean"]), None, &json!({"count": 3}));
    assert_eq!(non_boolean[0].available, Some(false));
    assert_eq!(
        non_boolean[0].unavailable_reason.as_deref(),
        Some("not available in the current state")
    );
    // Ungated actions never carry the keys.
    let open = a.list(&names(&["open"]), None, &json!(null));
    assert_eq!(
        (open[0].available, open[0].unavailable_reason.clone()),
        (None, None)
    );
}

#[test]
fn n13_explicit_hook_restricts_agent_only() {
    let a = lister::<Matrix>();
    let none: Vec<Value> = Vec::new();
    let empty = a.list(&Bindings::none(), Some(&none), &json!({}));
    assert!(!empty.iter().any(|x| x.variant == "Matrix/AddCriteria"));
    // `@alwaysAffordable` is not restricted by the hook.
    assert_eq!(
        summary(&empty),
        pairs(&[("Matrix/AddAlternatives", "always-affordable")])
    );

    let hook = to_json(&[Matrix::AddCriteria {
        criteria: json!([{"id": "c1"}]),
    }]);
    let listed = a.list(&Bindings::none(), Some(&hook), &json!({}));
    let criteria: Vec<&Action> = listed
        .iter()
        .filter(|x| x.variant == "Matrix/AddCriteria")
        .collect();
    assert_eq!(criteria.len(), 1);
    assert_eq!(
        serde_json::to_value(criteria[0].source).unwrap(),
        "always-affordable"
    );
    assert_eq!(
        criteria[0].payload_hint,
        Some(json!({"criteria": [{"id": "c1"}]}))
    );
}

#[test]
fn n14_unknown_bindings_are_dropped() {
    let a = lister::<Plain>();
    let actions = a.list(&names(&["save", "move", "drop"]), None, &json!({}));
    assert_eq!(summary(&actions), pairs(&[("save", "binding")]));
    // First occurrence of each binding only.
    let twice = a.list(&names(&["save", "rename", "save"]), None, &json!({}));
    assert_eq!(
        summary(&twice),
        pairs(&[("save", "binding"), ("rename", "binding")])
    );
}

#[test]
fn n15_field_hints() {
    let a = lister::<Hinted>();
    let bindings = names(&["weigh", "setCells"]);
    let actions = a.list(&bindings, None, &json!({}));
    let hints = |variant: &str| {
        let action = actions.iter().find(|x| x.variant == variant).unwrap();
        serde_json::to_value(&action.field_hints).unwrap()
    };
    assert_eq!(
        hints("weigh"),
        json!([
            {"path": "weight", "hint": "validates: v >= 0 && v <= 100"},
            {"path": "url", "hint": "Cite the source."},
            {"path": "url", "hint": "validates: size(v) > 0"}
        ])
    );
    assert_eq!(
        serde_json::to_string(&hints("setCells")).unwrap(),
        concat!(
            r#"[{"path":"cells","hint":"Each entry: {criterionId, alternativeId, value, meta?}."},"#,
            r#"{"path":"cells[].meta","hint":"Cite where the value came from."}]"#
        )
    );
    let format = a
        .list(&Bindings::none(), None, &json!({}))
        .into_iter()
        .find(|x| x.variant == "Cell/SetFormat")
        .unwrap();
    let format_hints = serde_json::to_value(&format.field_hints).unwrap();
    let format_hints = format_hints.as_array().unwrap();
    assert!(format_hints.contains(&json!({
        "path": "format",
        "hint": "Discriminated union — set `kind` to one of: 'exact', 'range', 'compound'."
    })));
    assert!(format_hints.contains(&json!({
        "path": "format(kind=range).max",
        "hint": "Upper bound for normalisation."
    })));
}

#[test]
fn n16_binding_then_hook_entries() {
    let a = lister::<Shop>();
    let hook = to_json(&[
        Shop::Navigate { to: "/a".into() },
        Shop::Navigate { to: "/b".into() },
    ]);
    let actions = a.list(&names(&["navigate"]), Some(&hook), &json!({}));
    assert_eq!(
        summary(&actions),
        pairs(&[
            ("navigate", "binding"),
            ("navigate", "always-affordable"),
            ("navigate", "always-affordable"),
        ])
    );
    assert_eq!(actions[0].payload_hint, None);
    assert_eq!(actions[1].payload_hint, Some(json!({"to": "/a"})));
    assert_eq!(actions[2].payload_hint, Some(json!({"to": "/b"})));
}

#[test]
fn n17_key_order() {
    let a = lister::<Gated>();
    let closed = a.list(&names(&["withReason"]), None, &json!({}));
    let keys: Vec<String> = match serde_json::to_value(&closed[0]).unwrap() {
        Value::Object(map) => map.keys().cloned().collect(),
        other => panic!("not an object: {other}"),
    };
    assert_eq!(
        keys,
        vec![
            "variant",
            "intent",
            "requiresConfirm",
            "dispatchMode",
            "source",
            "selectorHint",
            "payloadHint",
            "available",
            "unavailableReason",
            "warning",
            "examples",
            "emits",
            "fieldHints"
        ]
    );
    let open = a.list(&names(&["open"]), None, &json!({}));
    let text = serde_json::to_string(&open[0]).unwrap();
    assert_eq!(
        text,
        concat!(
            r#"{"variant":"open","intent":null,"requiresConfirm":false,"dispatchMode":"shared","#,
            r#""source":"binding","selectorHint":null,"payloadHint":null,"warning":null,"#,
            r#""examples":[],"emits":[],"fieldHints":[]}"#
        )
    );
}

#[test]
fn malformed_hook_entries_are_skipped() {
    let a = lister::<Shop>();
    let hook = vec![
        json!(null),
        json!({"notType": 1}),
        json!({"type": "bogus"}),
        json!({"type": 3}),
        json!({"type": "reset"}),
    ];
    let actions = a.list(&Bindings::none(), Some(&hook), &json!({}));
    assert_eq!(summary(&actions), pairs(&[("reset", "always-affordable")]));
}

#[test]
fn all_passes_in_order() {
    let a = lister::<Matrix>();
    let hook = to_json(&[Matrix::Rename { title: "t".into() }]);
    let actions = a.list(&names(&["Matrix/Share"]), Some(&hook), &json!({}));
    assert_eq!(
        summary(&actions),
        pairs(&[
            ("Matrix/Share", "binding"),
            ("Matrix/Rename", "always-affordable"),
            ("Matrix/AddAlternatives", "always-affordable"),
        ])
    );
}
