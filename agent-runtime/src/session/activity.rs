//! The activity log: the last 100 entries of a session, and the payload summaries they carry.

use std::collections::VecDeque;

use agent_schema::protocol::{LogEntry, LogKind};
use serde_json::Value;

/// How many entries a session keeps.
pub const LOG_CAPACITY: usize = 100;

/// A ring of the newest [`LOG_CAPACITY`] entries.
#[derive(Debug, Default)]
pub struct ActivityLog {
    entries: VecDeque<LogEntry>,
}

impl ActivityLog {
    /// Appends an entry, dropping the oldest when full.
    pub fn push(&mut self, entry: LogEntry) {
        if self.entries.len() == LOG_CAPACITY {
            self.entries.pop_front();
        }
        self.entries.push_back(entry);
    }

    /// Entries newest first, optionally filtered by kind, at most `n`.
    pub fn recent(&self, n: usize, kind: Option<&str>) -> Vec<LogEntry> {
        self.entries
            .iter()
            .rev()
            .filter(|e| kind.is_none_or(|k| e.kind.as_str() == k))
            .take(n)
            .cloned()
            .collect()
    }

    /// Number of entries kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

/// The label of a message in log entries: its intent when non-empty, else the variant.
pub fn message_intent(intent: Option<&str>, variant: Option<&str>) -> String {
    match (intent.filter(|i| !i.is_empty()), variant) {
        (Some(i), _) => i.to_string(),
        (None, Some(v)) => v.to_string(),
        (None, None) => "Send message".to_string(),
    }
}

/// The payload summary of a message (`semantics.md` §9): up to three `key=value` items of the
/// keys other than `type`, plus `…` when there are more; `None` when there are no other keys.
pub fn payload_detail(msg: &Value) -> Option<String> {
    let obj = msg.as_object()?;
    let keys: Vec<(&String, &Value)> = obj.iter().filter(|(k, _)| k.as_str() != "type").collect();
    if keys.is_empty() {
        return None;
    }
    let mut items: Vec<String> = keys
        .iter()
        .take(3)
        .map(|(k, v)| format!("{k}={}", truncate(&summarize(v))))
        .collect();
    if keys.len() > 3 {
        items.push("…".to_string());
    }
    Some(items.join(" "))
}

fn summarize(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::String(_) | Value::Bool(_) | Value::Number(_) => v.to_string(),
        Value::Array(a) => format!("[{}]", a.len()),
        Value::Object(o) => {
            let mut s = String::from("{");
            s.push_str(&o.keys().take(3).cloned().collect::<Vec<_>>().join(","));
            if o.len() > 3 {
                s.push_str(",…");
            }
            s.push('}');
            s
        }
    }
}

fn truncate(s: &str) -> String {
    if s.chars().count() > 30 {
        let mut t: String = s.chars().take(29).collect();
        t.push('…');
        t
    } else {
        s.to_string()
    }
}

/// A fresh log entry of `kind` at `at` with every optional key absent.
pub fn entry(kind: LogKind, at: u64) -> LogEntry {
    let id = match kind {
        LogKind::Narrate => {
            let uuid = uuid::Uuid::new_v4().to_string();
            format!("narrate-{at}-{}", &uuid[..8])
        }
        _ => uuid::Uuid::new_v4().to_string(),
    };
    LogEntry {
        id,
        at,
        kind,
        variant: None,
        intent: None,
        detail: None,
        state_diff: None,
        tid: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn payload_details_follow_the_spec() {
        assert_eq!(
            payload_detail(&json!({"type":"addItem","id":"abc","qty":2})).as_deref(),
            Some("id=\"abc\" qty=2")
        );
        assert_eq!(
            payload_detail(&json!({"type":"x","a":null,"b":true,"c":[1,2,3],"d":{"x":1}}))
                .as_deref(),
            Some("a=null b=true c=[3] …")
        );
        assert_eq!(
            payload_detail(&json!({"type":"x","o":{"k1":1,"k2":2,"k3":3,"k4":4}})).as_deref(),
            Some("o={k1,k2,k3,…}")
        );
        assert_eq!(
            payload_detail(&json!({"type":"x","e":{}})).as_deref(),
            Some("e={}")
        );
        let s = "a".repeat(40);
        assert_eq!(
            payload_detail(&json!({"type":"x","s":s})).unwrap(),
            format!("s=\"{}…", "a".repeat(28))
        );
        assert_eq!(payload_detail(&json!({"type":"inc"})), None);
    }

    #[test]
    fn ring_keeps_the_newest_hundred() {
        let mut log = ActivityLog::default();
        for i in 0..101 {
            let mut e = entry(LogKind::Read, i);
            e.intent = Some(format!("#{i}"));
            log.push(e);
        }
        assert_eq!(log.len(), 100);
        let all = log.recent(1000, None);
        assert_eq!(all[0].at, 100);
        assert_eq!(all.last().unwrap().at, 1);
    }

    #[test]
    fn narrate_ids_carry_the_time() {
        let e = entry(LogKind::Narrate, 1234);
        assert!(e.id.starts_with("narrate-1234-"));
        assert_eq!(e.id.len(), "narrate-1234-".len() + 8);
    }

    #[test]
    fn recent_filters_then_takes() {
        let mut log = ActivityLog::default();
        for (i, k) in [
            LogKind::Read,
            LogKind::Narrate,
            LogKind::Read,
            LogKind::Read,
        ]
        .into_iter()
        .enumerate()
        {
            log.push(entry(k, i as u64));
        }
        let reads = log.recent(2, Some("read"));
        assert_eq!(reads.iter().map(|e| e.at).collect::<Vec<_>>(), vec![3, 2]);
    }
}
