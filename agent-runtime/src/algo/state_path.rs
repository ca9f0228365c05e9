//! State reads by path (semantics §8.1 and §8.2).
//!
//! - [`get_state`] is lenient: a missing path, `""` or `"/"` give the whole state, empty
//!   segments are dropped (`a/b` works without a leading slash), and any miss is simply "no
//!   value".
//! - [`query_state`] is strict RFC 6901 and explains every miss with the spec's `detail` text.
//!
//! Both unescape a segment by replacing `~1` with `/`, then `~0` with `~` (so `~01` is `~1`).
//! The state given to them is the redacted state; these functions do no redaction. They read
//! the snapshot's compact tree ([`crate::algo::tree`]), parsing only the one list element a
//! path goes into.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::sync::Arc;

use serde_json::Value;
use tea_agent_schema::protocol::{QueryStateResponse, StateResponse};

use crate::algo::tree::{unpack, Node};

/// A place a walk reached: a node of the tree, or a value inside the one packed element the
/// walk went into (parsed into `held`, which outlives the walk).
#[derive(Clone, Copy)]
enum At<'a> {
    Node(&'a Node),
    Value(&'a Value),
}

impl<'a> At<'a> {
    /// `node`, or the value of its text when it is packed.
    fn of(node: &'a Node, held: &'a OnceCell<Value>) -> At<'a> {
        match node {
            Node::Packed(raw) => At::Value(held.get_or_init(|| unpack(raw))),
            node => At::Node(node),
        }
    }

    fn key(self, key: &str, held: &'a OnceCell<Value>) -> Option<At<'a>> {
        match self {
            At::Node(Node::Object(map)) => map.get(key).map(|n| At::of(n, held)),
            At::Value(Value::Object(map)) => map.get(key).map(At::Value),
            _ => None,
        }
    }

    fn index(self, index: usize, held: &'a OnceCell<Value>) -> Option<At<'a>> {
        match self {
            At::Node(Node::Array(items)) => items.get(index).map(|n| At::of(n, held)),
            At::Value(Value::Array(items)) => items.get(index).map(At::Value),
            _ => None,
        }
    }

    /// The length of an array.
    fn array_len(self) -> Option<usize> {
        match self {
            At::Node(Node::Array(items)) => Some(items.len()),
            At::Value(Value::Array(items)) => Some(items.len()),
            _ => None,
        }
    }

    fn is_object(self) -> bool {
        matches!(
            self,
            At::Node(Node::Object(_)) | At::Value(Value::Object(_))
        )
    }

    fn is_null(self) -> bool {
        matches!(self, At::Node(Node::Null) | At::Value(Value::Null))
    }

    /// The kind name of a scalar, as the detail messages print it.
    fn kind(self) -> &'static str {
        match self {
            At::Node(Node::String(_)) | At::Value(Value::String(_)) => "string",
            At::Node(Node::Number(_)) | At::Value(Value::Number(_)) => "number",
            At::Node(Node::Bool(_)) | At::Value(Value::Bool(_)) => "boolean",
            At::Node(Node::Null) | At::Value(Value::Null) => "null",
            At::Node(Node::Array(_)) | At::Value(Value::Array(_)) => "array",
            At::Node(_) | At::Value(Value::Object(_)) => "object",
        }
    }

    fn to_value(self) -> Value {
        match self {
            At::Node(node) => node.to_value(),
            At::Value(value) => value.clone(),
        }
    }
}

/// Whether `path` names the whole state for [`get_state`] (none, `""`, `"/"`, only slashes).
pub(crate) fn is_whole(path: Option<&str>) -> bool {
    path.is_none_or(|p| p.split('/').all(str::is_empty))
}

/// Lenient read (`get_state`): the value at `path`, or `None` when any segment misses.
///
/// No path, `""` and `"/"` give the whole state. Otherwise the path is split on `/`, empty
/// segments are dropped, each segment is unescaped, and an array needs a segment of decimal
/// digits within bounds. A walk through a scalar or null is a miss.
pub(crate) fn get_state(state: &Node, path: Option<&str>) -> Option<Value> {
    let held = OnceCell::new();
    let mut current = At::of(state, &held);
    for raw in path.unwrap_or("").split('/').filter(|s| !s.is_empty()) {
        let segment = unescape(raw);
        current = if let Some(len) = current.array_len() {
            if !segment.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            // All digits: the only parse failure is overflow, which is out of bounds anyway.
            let index: usize = segment.parse().ok()?;
            if index >= len {
                return None;
            }
            current.index(index, &held)?
        } else {
            current.key(segment.as_ref(), &held)?
        };
    }
    Some(current.to_value())
}

/// The `get_state` answer: `{"state": V}`, or `{}` when the path misses.
pub(crate) fn get_state_response(state: &Node, path: Option<&str>) -> StateResponse {
    StateResponse {
        state: get_state(state, path)
            .and_then(|v| serde_json::value::to_raw_value(&v).ok().map(Arc::from)),
        ..StateResponse::default()
    }
}

/// Strict read (`query_state`, RFC 6901): the value at `pointer`, or the `detail` explaining
/// why there is none.
///
/// `""` gives the whole state. A pointer not starting with `/` is refused. A value that is
/// `null` is found; walking *through* a null is a miss. Array indices must be `0` or
/// `[1-9][0-9]*` and within bounds (`01` is refused).
pub(crate) fn query_state(state: &Node, pointer: &str) -> Result<Value, String> {
    let held = OnceCell::new();
    walk_strict(state, pointer, &held).map(At::to_value)
}

/// The place `pointer` names, walked strictly ([`query_state`]).
fn walk_strict<'a>(
    state: &'a Node,
    pointer: &str,
    held: &'a OnceCell<Value>,
) -> Result<At<'a>, String> {
    let mut current = At::of(state, held);
    if pointer.is_empty() {
        return Ok(current);
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(format!(
            "path must be empty or start with '/' (got: {})",
            json_string(pointer)
        ));
    };
    for (i, raw) in rest.split('/').enumerate() {
        let segment = unescape(raw);
        current = if current.is_null() {
            return Err(format!(
                "path {} walks through null at segment {i} ({})",
                json_string(pointer),
                json_string(&segment)
            ));
        } else if current.is_object() {
            match current.key(segment.as_ref(), held) {
                Some(value) => value,
                None => {
                    return Err(format!(
                        "path {} — key {} not present at segment {i}",
                        json_string(pointer),
                        json_string(&segment)
                    ));
                }
            }
        } else if let Some(len) = current.array_len() {
            match strict_index(&segment).and_then(|k| current.index(k, held)) {
                Some(value) => value,
                None => {
                    return Err(format!(
                        "path {} — array at segment {i} has length {len}, can't index by {}",
                        json_string(pointer),
                        json_string(&segment)
                    ));
                }
            }
        } else {
            return Err(format!(
                "path {} walks through non-object ({}) at segment {i} ({})",
                json_string(pointer),
                current.kind(),
                json_string(&segment)
            ));
        };
    }
    Ok(current)
}

/// The `query_state` answer: `{"found":true,"value":V}` or `{"found":false,"detail":D}`.
pub(crate) fn query_state_response(state: &Node, pointer: &str) -> QueryStateResponse {
    QueryStateResponse::new(query_state(state, pointer).as_ref().map_err(Clone::clone))
}

/// A page of a value: from `offset` (elements, entries, characters), at most `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Page {
    pub(crate) offset: u64,
    pub(crate) limit: Option<u64>,
}

/// The `query_state` answer for a page: the found value's elements `page` names, with
/// `total`, `offset` and `nextOffset`; only the page's elements are copied out of the tree.
pub(crate) fn query_state_page(state: &Node, pointer: &str, page: Page) -> QueryStateResponse {
    let held = OnceCell::new();
    let found = walk_strict(state, pointer, &held).and_then(|at| match at {
        At::Node(Node::Array(items)) => {
            let (range, total) = window(items.len(), page);
            Ok((
                Value::Array(items[range].iter().map(Node::to_value).collect()),
                total,
            ))
        }
        At::Node(Node::Object(map)) => {
            let (range, total) = window(map.len(), page);
            let entries = map.iter().skip(range.start).take(range.len());
            Ok((
                Value::Object(entries.map(|(k, v)| (k.clone(), v.to_value())).collect()),
                total,
            ))
        }
        At::Node(Node::String(s)) => Ok(page_string(s, page)),
        At::Value(value) => page_value(value, page).map_err(|kind| not_pageable(pointer, kind)),
        other => Err(not_pageable(pointer, other.kind())),
    });
    paged(found, page)
}

/// A page of a value read whole (a paired app's answer), or the kind of a value that has none.
pub(crate) fn page_value(value: &Value, page: Page) -> Result<(Value, usize), &'static str> {
    match value {
        Value::Array(items) => {
            let (range, total) = window(items.len(), page);
            Ok((Value::Array(items[range].to_vec()), total))
        }
        Value::Object(map) => {
            let (range, total) = window(map.len(), page);
            let entries = map.iter().skip(range.start).take(range.len());
            Ok((
                Value::Object(entries.map(|(k, v)| (k.clone(), v.clone())).collect()),
                total,
            ))
        }
        Value::String(s) => Ok(page_string(s, page)),
        other => Err(At::Value(other).kind()),
    }
}

/// The answer of a page read: `found` with `(page, total)`, or the detail of a miss.
pub(crate) fn paged(found: Result<(Value, usize), String>, page: Page) -> QueryStateResponse {
    match found {
        Ok((value, total)) => {
            let shown = match &value {
                Value::Array(items) => items.len(),
                Value::Object(map) => map.len(),
                Value::String(s) => s.chars().count(),
                _ => 0,
            };
            let end = usize::try_from(page.offset)
                .unwrap_or(usize::MAX)
                .min(total)
                .saturating_add(shown);
            let mut response = QueryStateResponse::new(Ok(&Value::Null));
            response.value = Some(value);
            response.total = Some(total as u64);
            response.offset = Some(page.offset);
            response.next_offset = (end < total).then_some(end as u64);
            response
        }
        Err(detail) => QueryStateResponse::new(Err(detail)),
    }
}

/// The detail of a page asked of a scalar.
pub(crate) fn not_pageable(pointer: &str, kind: &str) -> String {
    format!(
        "offset and limit page an array, an object or a string; the value at {} is {kind}",
        json_string(pointer)
    )
}

/// The indices `page` takes of `len` elements, and `len`.
fn window(len: usize, page: Page) -> (std::ops::Range<usize>, usize) {
    let start = usize::try_from(page.offset).unwrap_or(usize::MAX).min(len);
    let end = match page.limit {
        Some(limit) => start.saturating_add(usize::try_from(limit).unwrap_or(usize::MAX)),
        None => len,
    };
    (start..end.min(len), len)
}

/// A page of a string's characters, and its length in characters.
fn page_string(s: &str, page: Page) -> (Value, usize) {
    let total = s.chars().count();
    let (range, _) = window(total, page);
    let text: String = s.chars().skip(range.start).take(range.len()).collect();
    (Value::String(text), total)
}

/// `~1` → `/`, then `~0` → `~`; borrows when the segment has no `~`.
fn unescape(segment: &str) -> Cow<'_, str> {
    if segment.contains('~') {
        Cow::Owned(segment.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(segment)
    }
}

/// An RFC 6901 array index: `0` or `[1-9][0-9]*` (no sign, no leading zero).
fn strict_index(segment: &str) -> Option<usize> {
    let bytes = segment.as_bytes();
    let well_formed = match bytes {
        [] => false,
        [b'0'] => true,
        [first, rest @ ..] => {
            (b'1'..=b'9').contains(first) && rest.iter().all(|b| b.is_ascii_digit())
        }
    };
    if well_formed {
        segment.parse().ok()
    } else {
        None
    }
}

/// `s` as a JSON string literal (quoted and escaped).
fn json_string(s: &str) -> String {
    Value::from(s).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // The reads on the tree of a value, answering owned values.
    fn tree(state: &Value) -> Node {
        Node::from_value(state.clone())
    }
    fn get_state(state: &Value, path: Option<&str>) -> Option<Value> {
        super::get_state(&tree(state), path)
    }
    fn get_state_response(state: &Value, path: Option<&str>) -> StateResponse {
        super::get_state_response(&tree(state), path)
    }
    fn query_state(state: &Value, pointer: &str) -> Result<Value, String> {
        super::query_state(&tree(state), pointer)
    }
    fn query_state_response(state: &Value, pointer: &str) -> QueryStateResponse {
        super::query_state_response(&tree(state), pointer)
    }

    fn app_state() -> Value {
        json!({
            "count": 42,
            "user": {"name": "Bob"},
            "items": ["first", "second"]
        })
    }

    // §11.6 #2
    #[test]
    fn get_state_acceptance() {
        let state = app_state();
        assert_eq!(get_state(&state, None), Some(state.clone()));
        assert_eq!(get_state(&state, Some("/count")), Some(json!(42)));
        assert_eq!(get_state(&state, Some("/user/name")), Some(json!("Bob")));
        assert_eq!(get_state(&state, Some("")), Some(state.clone()));
        assert_eq!(get_state(&state, Some("/")), Some(state.clone()));
        assert_eq!(get_state(&state, Some("/missing")), None);
        assert_eq!(get_state(&state, Some("/items/0")), Some(json!("first")));
        assert_eq!(get_state(&state, Some("user/name")), Some(json!("Bob")));

        assert_eq!(
            serde_json::to_value(get_state_response(&state, None)).unwrap(),
            json!({ "state": state.clone() })
        );
        assert_eq!(
            serde_json::to_value(get_state_response(&state, Some("/count"))).unwrap(),
            json!({"state": 42})
        );
        assert_eq!(
            serde_json::to_string(&get_state_response(&state, Some("/missing"))).unwrap(),
            "{}"
        );
    }

    #[test]
    fn get_state_misses_and_escapes() {
        let state = json!({"a/b": 1, "c~d": {"x": null}, "list": [1, 2], "s": "str"});
        assert_eq!(get_state(&state, Some("/a~1b")), Some(json!(1)));
        assert_eq!(get_state(&state, Some("/c~0d/x")), Some(json!(null)));
        assert_eq!(get_state(&state, Some("//list//1")), Some(json!(2)));
        assert_eq!(get_state(&state, Some("/list/2")), None);
        assert_eq!(get_state(&state, Some("/list/-1")), None);
        assert_eq!(get_state(&state, Some("/list/x")), None);
        assert_eq!(
            get_state(&state, Some("/list/99999999999999999999999")),
            None
        );
        assert_eq!(get_state(&state, Some("/s/0")), None);
        assert_eq!(get_state(&state, Some("/c~0d/x/y")), None);
    }

    // §11.6 #3
    #[test]
    fn query_state_acceptance() {
        let state = json!({
            "user": "alice",
            "auth": {"user": {"id": "u1"}},
            "items": [{"id": "a"}, {"id": "b"}],
            "a/b": 1,
            "c~d": 2,
            "~1": 3
        });
        assert_eq!(query_state(&state, ""), Ok(state.clone()));
        assert_eq!(query_state(&state, "/user"), Ok(json!("alice")));
        assert_eq!(query_state(&state, "/auth/user/id"), Ok(json!("u1")));
        assert_eq!(query_state(&json!([10, 20, 30]), "/1"), Ok(json!(20)));
        assert_eq!(query_state(&state, "/items/1/id"), Ok(json!("b")));

        let missing = query_state(&state, "/missing").unwrap_err();
        assert!(missing.contains("missing"));
        assert_eq!(
            missing,
            r#"path "/missing" — key "missing" not present at segment 0"#
        );

        assert_eq!(
            query_state(&state, "/items/5").unwrap_err(),
            r#"path "/items/5" — array at segment 1 has length 2, can't index by "5""#
        );

        let through_null = query_state(&json!({"a": null}), "/a/b").unwrap_err();
        assert!(through_null.contains("null"));
        assert_eq!(
            through_null,
            r#"path "/a/b" walks through null at segment 1 ("b")"#
        );

        let through_number = query_state(&json!({"a": 5}), "/a/b").unwrap_err();
        assert!(through_number.contains("non-object (number)"));
        assert_eq!(
            through_number,
            r#"path "/a/b" walks through non-object (number) at segment 1 ("b")"#
        );

        assert_eq!(query_state(&state, "/a~1b"), Ok(json!(1)));
        assert_eq!(query_state(&state, "/c~0d"), Ok(json!(2)));
        assert_eq!(query_state(&state, "/~01"), Ok(json!(3)));

        let relative = query_state(&state, "a").unwrap_err();
        assert!(relative.contains("start with"));
        assert_eq!(
            relative,
            r#"path must be empty or start with '/' (got: "a")"#
        );

        assert_eq!(
            serde_json::to_value(query_state_response(&json!({"user": null}), "/user")).unwrap(),
            json!({"found": true, "value": null})
        );
        assert_eq!(
            serde_json::to_string(&query_state_response(&json!({"user": null}), "/user")).unwrap(),
            r#"{"found":true,"value":null}"#
        );

        assert_eq!(
            query_state(&state, "/items/01").unwrap_err(),
            r#"path "/items/01" — array at segment 1 has length 2, can't index by "01""#
        );
        assert_eq!(
            serde_json::to_value(query_state_response(&state, "/items/01")).unwrap(),
            json!({
                "found": false,
                "detail": r#"path "/items/01" — array at segment 1 has length 2, can't index by "01""#
            })
        );
    }

    #[test]
    fn query_state_pages() {
        let state = tree(
            &json!({"list": [0, 1, 2, 3, 4], "map": {"b": 1, "a": 2, "c": 3},
                                 "text": "héllo", "n": 5}),
        );
        let page = |path: &str, offset, limit| {
            serde_json::to_value(query_state_page(&state, path, Page { offset, limit })).unwrap()
        };
        assert_eq!(
            page("/list", 1, Some(2)),
            json!({"found": true, "value": [1, 2], "total": 5, "offset": 1, "nextOffset": 3})
        );
        assert_eq!(
            page("/list", 3, None),
            json!({"found": true, "value": [3, 4], "total": 5, "offset": 3})
        );
        assert_eq!(
            page("/list", 9, Some(2)),
            json!({"found": true, "value": [], "total": 5, "offset": 9})
        );
        // Entries in their stored order.
        assert_eq!(
            page("/map", 1, Some(1)),
            json!({"found": true, "value": {"a": 2}, "total": 3, "offset": 1, "nextOffset": 2})
        );
        assert_eq!(
            page("/text", 1, Some(3)),
            json!({"found": true, "value": "éll", "total": 5, "offset": 1, "nextOffset": 4})
        );
        assert_eq!(
            page("/n", 0, Some(1))["detail"],
            "offset and limit page an array, an object or a string; the value at \"/n\" is number"
        );
        assert_eq!(page("/missing", 0, None)["found"], false);
        assert_eq!(
            page_value(
                &json!([1, 2, 3]),
                Page {
                    offset: 2,
                    limit: Some(5)
                }
            ),
            Ok((json!([3]), 3))
        );
    }

    #[test]
    fn query_state_strict_details() {
        let state = json!({"": {"k": true}, "list": [1], "flag": false, "s": "x"});
        // An empty segment is the key "".
        assert_eq!(query_state(&state, "/"), Ok(json!({"k": true})));
        assert_eq!(query_state(&state, "//k"), Ok(json!(true)));
        assert_eq!(
            query_state(&state, "/list/"),
            Err(r#"path "/list/" — array at segment 1 has length 1, can't index by """#.into())
        );
        assert_eq!(
            query_state(&state, "/list/-"),
            Err(r#"path "/list/-" — array at segment 1 has length 1, can't index by "-""#.into())
        );
        assert_eq!(query_state(&state, "/list/0"), Ok(json!(1)));
        assert_eq!(
            query_state(&state, "/flag/x"),
            Err(r#"path "/flag/x" walks through non-object (boolean) at segment 1 ("x")"#.into())
        );
        assert_eq!(
            query_state(&state, "/s/0"),
            Err(r#"path "/s/0" walks through non-object (string) at segment 1 ("0")"#.into())
        );
        assert_eq!(
            query_state(&json!(null), "/x"),
            Err(r#"path "/x" walks through null at segment 0 ("x")"#.into())
        );
        // Segments are reported unescaped, as JSON strings.
        assert_eq!(
            query_state(&state, "/a~1\"b"),
            Err(r#"path "/a~1\"b" — key "a/\"b" not present at segment 0"#.into())
        );
    }
}
