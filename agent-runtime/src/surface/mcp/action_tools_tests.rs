//! Unit tests of the action tools: names, schemas from shapes, option keys, the listed
//! tools and their hints.

use super::*;

#[test]
fn names_are_clean_unique_and_short() {
    let mut taken = HashSet::new();
    assert_eq!(
        tool_name("Matrix/AddCriteria", &mut taken),
        "do_Matrix_AddCriteria"
    );
    assert_eq!(
        tool_name("Matrix.AddCriteria", &mut taken),
        "do_Matrix_AddCriteria_2"
    );
    let long = "x".repeat(100);
    let a = tool_name(&long, &mut taken);
    let b = tool_name(&long, &mut taken);
    assert_eq!(a.len(), 64);
    assert_eq!(b.len(), 64);
    assert_ne!(a, b);
    assert_eq!(tool_name("inc", &mut taken), "do_inc");
}

#[test]
fn shapes_become_schemas() {
    let description = json!({"messages": {"discriminant": "type", "variants": {
        "add": {"text": {"type": "string", "priority": "should", "hint": "what to do"},
                "tags": {"kind": "array", "element": "string"},
                "due": {"type": "number", "optional": true}},
        "Matrix/Reset": {}
    }}});
    let catalog = ActionCatalog::from_description(&description);
    let add = catalog.find("do_add").unwrap();
    assert_eq!(add.payload["required"], json!(["text", "tags"]));
    assert_eq!(add.payload["properties"]["tags"]["items"]["type"], "string");
    assert_eq!(add.hints, vec![("text".into(), "what to do".into())]);
    assert!(catalog.find("do_Matrix_Reset").is_some());
    let request = add.message_request(
        json!({"text": "x", "tags": [], "_reason": "asked", "_idempotencyKey": "k"})
            .as_object()
            .unwrap()
            .clone(),
    );
    assert_eq!(
        request,
        json!({"msg": {"type": "add", "text": "x", "tags": []}, "waitFor": "idle",
               "reason": "asked", "idempotencyKey": "k"})
    );
}

#[test]
fn option_keys_never_clash_with_fields() {
    let payload = object_schema(&json!({"_reason": "string"}));
    assert_eq!(free_key(&payload, "_reason"), "__reason");
    assert_eq!(free_key(&payload, "_idempotencyKey"), "_idempotencyKey");
}

/// A description with three variants: a plain one, a gated `@requiresConfirm` one that
/// `@emits`, and a `@humanOnly` one.
fn annotated() -> Value {
    json!({
        "messages": {"discriminant": "type", "variants": {
            "inc": {}, "purge": {"id": "string"}, "signOut": {}
        }},
        "annotations": {
            "inc": {"intent": "increment"},
            "purge": {"intent": "purge an item", "requiresConfirm": true,
                      "emits": ["notify"], "routeGate": "state.count > 0",
                      "routeGateReason": "there is something to purge"},
            "signOut": {"dispatchMode": "human-only"}
        }
    })
}

#[test]
fn every_variant_an_agent_may_send_is_listed_in_declaration_order() {
    let catalog = ActionCatalog::from_description(&annotated());
    let names: Vec<&str> = catalog.tools().iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["do_inc", "do_purge"]);
    // A human-only variant keeps its name (a call answers `human-only`), unlisted.
    assert!(catalog.find("do_signOut").is_some());
}

#[test]
fn hints_follow_the_annotations() {
    let catalog = ActionCatalog::from_description(&annotated());
    let [inc, purge] = catalog.tools() else {
        panic!("two tools")
    };
    let a = inc.annotations.as_ref().unwrap();
    assert_eq!(inc.title.as_deref(), Some("increment"));
    assert_eq!(a.title.as_deref(), Some("increment"));
    assert_eq!(
        (
            a.read_only_hint,
            a.destructive_hint,
            a.idempotent_hint,
            a.open_world_hint
        ),
        (Some(false), Some(false), Some(false), Some(false))
    );
    let a = purge.annotations.as_ref().unwrap();
    assert_eq!(
        (
            a.read_only_hint,
            a.destructive_hint,
            a.idempotent_hint,
            a.open_world_hint
        ),
        (Some(false), Some(true), Some(false), Some(true))
    );
    let description = purge.description.as_deref().unwrap();
    assert!(
        description.contains(
            "Available only when the state allows it (`state.count > 0`); otherwise refused: \
             there is something to purge."
        ),
        "{description}"
    );
    assert!(!inc
        .description
        .as_deref()
        .unwrap()
        .contains("Available only"));
}

#[test]
fn an_unavailable_call_is_a_tool_error_naming_what_is_available() {
    let catalog = ActionCatalog::from_description(&annotated());
    let purge = catalog.find("do_purge").unwrap();
    let action = |variant: &str, available: Option<bool>| Action {
        variant: variant.into(),
        intent: None,
        requires_confirm: false,
        dispatch_mode: DispatchMode::Shared,
        source: tea_agent_schema::protocol::ActionSource::Binding,
        selector_hint: None,
        payload_hint: None,
        available,
        unavailable_reason: None,
        warning: None,
        examples: vec![],
        emits: vec![],
        field_hints: vec![],
    };
    let available = [action("inc", None), action("purge", Some(false))];
    let result = catalog.unavailable(purge, Some("closed"), &available);
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        result.structured_content,
        Some(
            json!({"status": "rejected", "reason": "unavailable", "detail": "closed",
                    "availableNow": ["do_inc"]})
        )
    );
}

#[test]
fn the_output_schema_is_the_status_alone() {
    let schema = output_schema();
    let statuses = schema["properties"]["status"]["enum"].as_array().unwrap();
    assert!(statuses.contains(&json!("dispatched")), "{statuses:?}");
    assert!(statuses.contains(&json!("rejected")), "{statuses:?}");
    assert!(
        statuses.contains(&json!("pending-confirmation")),
        "{statuses:?}"
    );
    assert!(serde_json::to_string(&schema).unwrap().len() < 400);
}
