//! Forwarding (`docs/lap.md` §7.2): what a forwarded tool does with an operation's outcome, the
//! description cache (`describe_app`, the `observe` schema-change note) and the connect flow.
//! The transport is a [`Forwarder`]: the operation gate called directly on the app server, HTTP
//! in the bridge (which converts the HTTP answer into the same typed outcome at its edge).

use parking_lot::Mutex;
use std::future::Future;

use rmcp::model::CallToolResult;
use serde_json::{json, Map, Value};

use super::format::{
    connect_failure, failure, forwarded_failure, schema_changed_note, success, success_with_text,
};
use crate::ops::{ApiError, Operation, Outcome};

/// Runs one operation with the bound token and `body` as its request, to its typed outcome.
/// Never fails otherwise: a request that got no answer is an error with code `network`.
pub(crate) trait Forwarder: Send + Sync {
    /// Sends the request and reads the answer.
    fn post(&self, op: Operation, body: Value) -> impl Future<Output = Outcome> + Send;
}

/// What a binding knows of the app's description: the `schemaHash` last seen (from
/// `observe`, connect or `describe_app`) and the full document last read by `describe_app`.
///
/// `observe` embeds a lean description without `annotations`, so only a `describe_app` answer
/// fills the document `describe_app` is served from; a new hash forgets it.
#[derive(Debug, Default)]
pub(crate) struct DescriptionCache(Mutex<Known>);

#[derive(Debug, Default)]
struct Known {
    /// `Some(Value::Null)` when a description had no `schemaHash`.
    hash: Option<Value>,
    full: Option<Value>,
}

fn hash_of(description: &Value) -> Value {
    description
        .get("schemaHash")
        .cloned()
        .unwrap_or(Value::Null)
}

impl DescriptionCache {
    /// The full description last read by `describe_app`, while its hash is current.
    pub(crate) fn get(&self) -> Option<Value> {
        self.0.lock().full.clone()
    }

    /// Caches a full description (a `describe_app` answer) and its hash.
    pub(crate) fn set(&self, description: Value) {
        let mut known = self.0.lock();
        known.hash = Some(hash_of(&description));
        known.full = Some(description);
    }

    /// Records the hash of a description seen elsewhere (`observe`, connect); a hash that
    /// differs from the cached one drops the cached full description.
    pub(crate) fn note_hash(&self, hash: Value) {
        let mut known = self.0.lock();
        if known.hash.as_ref() != Some(&hash) {
            known.full = None;
        }
        known.hash = Some(hash);
    }

    /// The `schemaHash` last seen (`null` when that description had none).
    pub(crate) fn get_hash(&self) -> Option<Value> {
        self.0.lock().hash.clone()
    }

    /// Forgets everything.
    pub(crate) fn clear(&self) {
        *self.0.lock() = Known::default();
    }
}

/// Runs a forwarded tool: `describe_app` from the cache when warm, else one LAP request; a
/// failed answer becomes the failure text, a fresh description is cached, and `observe` gets
/// the schema-change note when the cached `schemaHash` differs.
pub(crate) async fn forward_tool<F: Forwarder>(
    forwarder: &F,
    cache: &DescriptionCache,
    op: Operation,
    args: Map<String, Value>,
) -> CallToolResult {
    if op == Operation::Describe {
        if let Some(cached) = cache.get() {
            return success(cached);
        }
    }
    let (body, text) = match forwarder.post(op, Value::Object(args)).await {
        Ok(success) => success.into_parts(),
        Err(e) => return failed(op, &e),
    };
    match op {
        Operation::Describe => {
            cache.set(body.clone());
            success_with_text(body, text)
        }
        Operation::Observe => {
            let (body, changed) = note_schema_change(cache, body);
            if changed {
                success(body)
            } else {
                success_with_text(body, text)
            }
        }
        _ => success_with_text(body, text),
    }
}

/// Whether [`forward_tool`] passes a successful answer of `op` on unchanged (every operation
/// but `describe_app`'s and `observe`'s, which go through the description cache).
pub(crate) fn passes_on(op: Operation) -> bool {
    !matches!(op, Operation::Describe | Operation::Observe)
}

/// The tool error of a failed answer of `op`.
pub(crate) fn failed(op: Operation, error: &ApiError) -> CallToolResult {
    failure(forwarded_failure(op.tool(), op.lap_path(), error))
}

/// Adds `schemaChanged` and `schemaChangedNote` to an `observe` body when a hash was seen
/// before and the body description's `schemaHash` differs, and records the body's hash;
/// answers the body and whether the note was added.
pub(crate) fn note_schema_change(cache: &DescriptionCache, mut body: Value) -> (Value, bool) {
    let Some(description) = body.get("description").filter(|d| d.is_object()) else {
        return (body, false);
    };
    let new_hash = hash_of(description);
    let cached_hash = cache.get_hash();
    if cached_hash.as_ref() == Some(&new_hash) {
        return (body, false);
    }
    let mut changed = false;
    if let Some(old_hash) = cached_hash {
        if old_hash != new_hash {
            changed = true;
            if let Some(obj) = body.as_object_mut() {
                obj.insert("schemaChanged".into(), Value::Bool(true));
                obj.insert(
                    "schemaChangedNote".into(),
                    Value::String(schema_changed_note(
                        &hash_text(&old_hash),
                        &hash_text(&new_hash),
                    )),
                );
            }
        }
    }
    cache.note_hash(new_hash);
    (body, changed)
}

fn hash_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "unknown".into(),
        other => other.to_string(),
    }
}

/// The connect flow, after the binding is stored: `/observe {}`; a failure is the text of
/// `connect_session failed: observe failed: …` (the caller then drops the binding); success
/// records the description's hash and answers `{status:"connected", appName, appVersion, state,
/// actions, description, context}`.
pub(crate) async fn connect_flow<F: Forwarder>(
    forwarder: &F,
    cache: &DescriptionCache,
) -> Result<CallToolResult, String> {
    let body = match forwarder.post(Operation::Observe, json!({})).await {
        Ok(success) => success.into_parts().0,
        Err(e) => return Err(connect_failure(&e)),
    };
    let field = |k: &str| body.get(k).cloned().unwrap_or(Value::Null);
    let description = field("description");
    let described = |k: &str| description.get(k).cloned().unwrap_or(Value::Null);
    if description.is_object() {
        cache.note_hash(hash_of(&description));
    }
    Ok(success(json!({
        "status": "connected",
        "appName": described("name"),
        "appVersion": described("version"),
        "state": field("state"),
        "actions": field("actions"),
        "description": description,
        "context": field("context"),
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Success;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Answers from a fixed table and counts requests.
    struct Table {
        calls: AtomicUsize,
        answer: fn(Operation) -> Outcome,
    }

    /// A success with `body`.
    fn ok(body: Value) -> Outcome {
        Ok(Success::of(body, true).unwrap())
    }

    impl Forwarder for Table {
        async fn post(&self, op: Operation, _body: Value) -> Outcome {
            self.calls.fetch_add(1, Ordering::SeqCst);
            (self.answer)(op)
        }
    }

    fn observe_with(hash: &str) -> Value {
        json!({"state":{"n":1},"actions":[],"description":{"name":"app","version":"1","schemaHash":hash},"context":null})
    }

    #[test]
    fn schema_change_note() {
        let cache = DescriptionCache::default();
        // No cache → no note.
        let (body, _) = note_schema_change(&cache, observe_with("h1"));
        assert!(body.get("schemaChanged").is_none());
        // Same hash → no note.
        let (body, _) = note_schema_change(&cache, observe_with("h1"));
        assert!(body.get("schemaChanged").is_none());
        // Different hash → note naming both, and the cache is replaced.
        let (body, _) = note_schema_change(&cache, observe_with("h2"));
        assert_eq!(body["schemaChanged"], true);
        let note = body["schemaChangedNote"].as_str().unwrap();
        assert!(note.contains("h1") && note.contains("h2") && note.contains("stale"));
        assert_eq!(cache.get_hash(), Some(json!("h2")));
        // observe never fills the full description describe_app is served from.
        assert_eq!(cache.get(), None);
    }

    #[test]
    fn a_new_hash_forgets_the_full_description() {
        let cache = DescriptionCache::default();
        cache.set(json!({"name":"app","annotations":{},"schemaHash":"h1"}));
        cache.note_hash(json!("h1"));
        assert_eq!(cache.get().unwrap()["annotations"], json!({}));
        let (body, changed) = note_schema_change(&cache, observe_with("h2"));
        assert!(changed && body["schemaChanged"] == true);
        assert_eq!(cache.get(), None);
    }

    #[tokio::test]
    async fn describe_is_served_from_the_cache_when_warm() {
        let f = Table {
            calls: AtomicUsize::new(0),
            answer: |_| ok(json!({"name":"app","schemaHash":"h"})),
        };
        let cache = DescriptionCache::default();
        let first = forward_tool(&f, &cache, Operation::Describe, Map::new()).await;
        assert_eq!(first.structured_content.unwrap()["name"], "app");
        let second = forward_tool(&f, &cache, Operation::Describe, Map::new()).await;
        assert_eq!(second.structured_content.unwrap()["schemaHash"], "h");
        assert_eq!(f.calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn connect_flow_answers_connected_or_fails() {
        let ok = Table {
            calls: AtomicUsize::new(0),
            answer: |_| ok(observe_with("h")),
        };
        let cache = DescriptionCache::default();
        let r = connect_flow(&ok, &cache).await.unwrap();
        let s = r.structured_content.unwrap();
        assert_eq!(s["status"], "connected");
        assert_eq!(s["appName"], "app");
        assert_eq!(s["appVersion"], "1");
        assert_eq!(s["state"], json!({"n":1}));
        assert_eq!(cache.get_hash(), Some(json!("h")));
        let bad = Table {
            calls: AtomicUsize::new(0),
            answer: |_| {
                Err(ApiError::answered(
                    401,
                    &json!({"error":{"code":"auth-failed"}}),
                ))
            },
        };
        assert_eq!(
            connect_flow(&bad, &DescriptionCache::default())
                .await
                .unwrap_err(),
            "connect_session failed: observe failed: status=401 code=auth-failed"
        );
    }

    #[tokio::test]
    async fn failed_answers_become_tool_errors() {
        let f = Table {
            calls: AtomicUsize::new(0),
            answer: |_| Err(ApiError::revoked()),
        };
        let r = forward_tool(
            &f,
            &DescriptionCache::default(),
            Operation::State,
            Map::new(),
        )
        .await;
        assert_eq!(r.is_error, Some(true));
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(
            v["content"][0]["text"],
            "get_state (/state) failed: status=403 code=revoked"
        );
    }
}
