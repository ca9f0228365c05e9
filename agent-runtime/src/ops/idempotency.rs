//! `idempotencyKey` on `/message` (`lap.md` §5.7): a retried call within 10 minutes gets the
//! first call's answer, byte for byte, without dispatching again.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use serde_json::Value;
use tokio::sync::watch;

/// How long a key stays bound to its first answer.
pub const IDEMPOTENCY_WINDOW_MS: u64 = 10 * 60 * 1000;
/// Records kept per token; one more drops the oldest.
pub const MAX_RECORDS_PER_TOKEN: usize = 1024;

/// The final HTTP answer of a first call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredAnswer {
    /// Its status.
    pub status: StatusCode,
    /// Its body bytes.
    pub body: String,
    /// Extra headers of the answer (for example `x-llui-reconnect`).
    pub headers: Vec<(String, String)>,
}

/// One key's record.
#[derive(Debug)]
pub struct Record {
    created_at: u64,
    msg: Value,
    answer: watch::Receiver<Option<StoredAnswer>>,
}

impl Record {
    /// Whether `msg` is JSON-equal to the first call's message.
    pub fn same_message(&self, msg: &Value) -> bool {
        &self.msg == msg
    }

    /// Waits for the first call's answer (`None` if the first call died without one).
    pub async fn answer(&self) -> Option<StoredAnswer> {
        let mut rx = self.answer.clone();
        let result = rx.wait_for(Option::is_some).await;
        result.ok().and_then(|a| a.clone())
    }
}

/// What a call with a key is.
#[derive(Debug)]
pub enum Claim {
    /// The first call: it must store its answer through the sender.
    First(watch::Sender<Option<StoredAnswer>>),
    /// A repeat of a live record.
    Repeat(Arc<Record>),
}

/// One token's live records, oldest first, each under its idempotency key.
type TokenRecords = VecDeque<(String, Arc<Record>)>;

/// Records per token.
#[derive(Debug, Default)]
pub struct IdempotencyStore {
    by_token: Mutex<HashMap<String, TokenRecords>>,
}

impl IdempotencyStore {
    /// Claims `key` for `tid` at `now`.
    pub fn claim(&self, tid: &str, key: &str, msg: &Value, now: u64) -> Claim {
        let mut map = self.by_token.lock().unwrap_or_else(|e| e.into_inner());
        let records = map.entry(tid.to_string()).or_default();
        records.retain(|(_, r)| r.created_at + IDEMPOTENCY_WINDOW_MS > now);
        if let Some((_, r)) = records.iter().find(|(k, _)| k == key) {
            return Claim::Repeat(r.clone());
        }
        let (tx, rx) = watch::channel(None);
        records.push_back((
            key.to_string(),
            Arc::new(Record {
                created_at: now,
                msg: msg.clone(),
                answer: rx,
            }),
        ));
        if records.len() > MAX_RECORDS_PER_TOKEN {
            records.pop_front();
        }
        Claim::First(tx)
    }

    /// Forgets every record of `tid` (revoked, or its session closed).
    pub fn forget_token(&self, tid: &str) {
        self.by_token
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(tid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn repeats_get_the_first_answer_within_the_window() {
        let store = IdempotencyStore::default();
        let msg = json!({"type":"inc"});
        let Claim::First(tx) = store.claim("t", "k1", &msg, 0) else {
            panic!("first call expected")
        };
        let Claim::Repeat(rec) = store.claim("t", "k1", &msg, 10) else {
            panic!("repeat expected")
        };
        assert!(rec.same_message(&msg));
        assert!(!rec.same_message(&json!({"type":"dec"})));
        let answer = StoredAnswer {
            status: StatusCode::OK,
            body: "{}".into(),
            headers: vec![],
        };
        tx.send_replace(Some(answer.clone()));
        assert_eq!(rec.answer().await, Some(answer));
        // Another token is a different scope.
        assert!(matches!(store.claim("u", "k1", &msg, 10), Claim::First(_)));
        // After the window the key is free again.
        assert!(matches!(
            store.claim("t", "k1", &msg, IDEMPOTENCY_WINDOW_MS),
            Claim::First(_)
        ));
    }

    #[tokio::test]
    async fn a_dead_first_call_answers_none() {
        let store = IdempotencyStore::default();
        let msg = json!({"type":"inc"});
        let Claim::First(tx) = store.claim("t", "k", &msg, 0) else {
            panic!()
        };
        let Claim::Repeat(rec) = store.claim("t", "k", &msg, 1) else {
            panic!()
        };
        drop(tx);
        assert_eq!(rec.answer().await, None);
    }

    #[test]
    fn at_most_1024_records_per_token() {
        let store = IdempotencyStore::default();
        let msg = json!({"type":"inc"});
        for i in 0..=MAX_RECORDS_PER_TOKEN {
            let _ = store.claim("t", &format!("k{i}"), &msg, 0);
        }
        // k0 was dropped: claiming it again is a first call.
        assert!(matches!(store.claim("t", "k0", &msg, 0), Claim::First(_)));
    }
}
