use super::*;
use serde_json::json;

fn todos(n: usize) -> Value {
    let items: Vec<Value> = (0..n)
        .map(|i| json!({"id": i, "text": format!("todo number {i}"), "done": i % 3 == 0}))
        .collect();
    json!({"todos": items, "filter": "all", "nextId": n})
}

fn state_place() -> Place {
    Place {
        answer: "/state".into(),
        state: String::new(),
        offset: 0,
    }
}

fn len(v: &Value) -> usize {
    serde_json::to_string(v).unwrap().len()
}

#[test]
fn an_answer_that_fits_is_unchanged() {
    let answer = json!({"state": todos(3), "seq": 4});
    assert_eq!(
        bounded(answer.clone(), 40_000, Some(&state_place())),
        answer
    );
}

#[test]
fn sizes_are_the_compact_texts() {
    let values = [
        json!(null),
        json!([]),
        json!({}),
        json!([1, [2, {}], "a\"\\\n\u{1}é"]),
        json!({"a~/": {"b": [true, false, -1.5e300]}}),
        todos(20),
    ];
    for v in values {
        assert_eq!(size_within(&v, usize::MAX), Some(len(&v)), "{v}");
        assert_eq!(size_within(&v, len(&v)), Some(len(&v)));
        assert_eq!(size_within(&v, len(&v) - 1), None);
    }
}

#[test]
fn a_large_array_keeps_its_first_elements_and_names_the_read() {
    let state = todos(50_000);
    let answer = json!({"state": state.clone(), "seq": 7});
    let out = bounded(answer, 40_000, Some(&state_place()));
    assert!(len(&out) <= 40_000, "{}", len(&out));
    assert_eq!(out["truncated"], true);
    assert_eq!(out["seq"], 7);
    assert_eq!(out["state"]["filter"], "all");
    assert_eq!(out["state"]["nextId"], 50_000);
    let shown = out["state"]["todos"].as_array().unwrap();
    assert!(shown.len() > 100, "{}", shown.len());
    assert_eq!(shown[..], state["todos"].as_array().unwrap()[..shown.len()]);
    let elided = out["elided"].as_array().unwrap();
    assert_eq!(elided.len(), 1);
    let e = &elided[0];
    assert_eq!(e["path"], "/state/todos");
    assert_eq!(e["kind"], "array");
    assert_eq!(e["size"], 50_000);
    assert_eq!(e["shown"], shown.len());
    let args = &e["read"]["arguments"];
    assert_eq!(e["read"]["tool"], "query_state");
    assert_eq!(args["path"], "/todos");
    assert_eq!(args["offset"], shown.len());
    // A page of `limit` todos fits the budget.
    let limit = args["limit"].as_u64().unwrap() as usize;
    let page = &state["todos"].as_array().unwrap()[..limit];
    assert!(len(&json!({"found": true, "value": page, "total": 50_000, "offset": 0})) <= 40_000);
    assert!(limit > 100);
}

#[test]
fn deterministic() {
    let a = bounded(json!({"state": todos(5_000)}), 10_000, Some(&state_place()));
    let b = bounded(json!({"state": todos(5_000)}), 10_000, Some(&state_place()));
    assert_eq!(a, b);
}

#[test]
fn long_strings_and_large_objects_are_cut() {
    let map: Map<String, Value> = (0..10_000).map(|i| (format!("k{i}"), json!(i))).collect();
    let answer = json!({"value": {"text": "é".repeat(100_000), "map": map}});
    let place = Place {
        answer: "/value".into(),
        state: "/doc".into(),
        offset: 0,
    };
    let out = bounded(answer, 20_000, Some(&place));
    assert!(len(&out) <= 20_000);
    let elided = out["elided"].as_array().unwrap();
    let text = elided.iter().find(|e| e["kind"] == "string").unwrap();
    assert_eq!(text["path"], "/value/text");
    assert_eq!(text["size"], 100_000);
    assert_eq!(text["read"]["arguments"]["path"], "/doc/text");
    let shown = text["shown"].as_u64().unwrap() as usize;
    assert_eq!(
        out["value"]["text"].as_str().unwrap().chars().count(),
        shown
    );
    let map = elided.iter().find(|e| e["kind"] == "object").unwrap();
    assert_eq!(map["path"], "/value/map");
    assert_eq!(map["size"], 10_000);
    let kept = out["value"]["map"].as_object().unwrap();
    assert_eq!(kept.keys().next().unwrap(), "k0");
    assert_eq!(kept.len(), map["shown"].as_u64().unwrap() as usize);
}

#[test]
fn a_page_maps_its_indices_to_the_state() {
    // A page at offset 100 whose element 0 holds a long list.
    let big: Vec<Value> = (0..5_000).map(Value::from).collect();
    let answer = json!({"found": true, "value": [{"tags": big}], "offset": 100});
    let place = Place {
        answer: "/value".into(),
        state: "/items".into(),
        offset: 100,
    };
    let out = bounded(answer, 5_000, Some(&place));
    assert!(len(&out) <= 5_000);
    let e = &out["elided"][0];
    assert_eq!(e["path"], "/value/0/tags");
    assert_eq!(e["read"]["arguments"]["path"], "/items/100/tags");
    assert_eq!(e["read"]["arguments"]["offset"], e["shown"]);
}

#[test]
fn outside_the_state_a_note_says_so() {
    let answer = json!({"messages": (0..5_000).map(|i| format!("m{i}")).collect::<Vec<_>>()});
    let out = bounded(answer, 3_000, None);
    assert!(len(&out) <= 3_000);
    assert!(out["elided"][0].get("read").is_none());
    assert!(out["elided"][0]["note"].is_string());
}

#[test]
fn hostile_shapes_never_exceed_the_budget() {
    let deep = (0..100).fold(json!("x".repeat(10_000)), |v, _| {
        json!([v, "y".repeat(500)])
    });
    let wide: Map<String, Value> = (0..3_000)
        .map(|i| (format!("{i}{}", "k".repeat(50)), json!(vec![i; 40])))
        .collect();
    let cases = [
        json!({"a": "x".repeat(1_000_000)}),
        json!({"a": wide}),
        json!({ "k".repeat(100_000): 1 }),
        json!([[[[["y".repeat(50_000)]]]]]),
    ];
    for budget in [0, 2_000, 10_000] {
        for v in cases.iter().chain([&deep]) {
            let out = bounded(v.clone(), budget, None);
            assert!(
                len(&out) <= budget.max(MIN_BUDGET),
                "{budget}: {}",
                len(&out)
            );
            assert_eq!(out["truncated"], true);
        }
    }
}
