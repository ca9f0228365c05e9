//! The activity log: the last 100 entries of a session within a byte budget, and the payload
//! summaries they carry.

use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::Value;
use tea_agent_schema::protocol::{LogEntry, LogKind, PatchOp};

use super::retained::{self, Retained, RetainedRing, RingCharge};
use crate::config::{json_len, Budgets};

/// How many entries a session keeps.
pub(crate) const LOG_CAPACITY: usize = 100;

/// Characters a message's variant or intent keeps in a log entry.
pub(crate) const LABEL_CHARS: usize = 128;

/// One kept entry: its kind (for the filter) and its compact JSON text (its tree would take
/// several times its text on the heap), with its stamp.
#[derive(Debug)]
struct Kept {
    kind: LogKind,
    /// Shared with the event that published the entry.
    text: Arc<str>,
    stamp: u64,
}

impl Kept {
    fn cost(&self) -> usize {
        retained::text_cost(self.text.len(), std::mem::size_of::<Kept>())
    }
}

/// A ring of the newest [`LOG_CAPACITY`] entries holding at most `total_bytes` (of their
/// JSON), and giving way to the host's budget of what sessions retain (`retained.rs`,
/// charged what each entry takes on the heap).
#[derive(Debug)]
pub(crate) struct ActivityLog {
    /// Entries oldest first.
    entries: VecDeque<Kept>,
    bytes: usize,
    total_bytes: usize,
    charge: RingCharge,
}

impl Default for ActivityLog {
    fn default() -> Self {
        ActivityLog::new(
            Budgets::default().log_total_bytes,
            Retained::unbounded().charge(),
        )
    }
}

impl RetainedRing for ActivityLog {
    fn oldest_stamp(&self) -> Option<u64> {
        self.entries.front().map(|e| e.stamp)
    }

    fn drop_oldest(&mut self) {
        if let Some(old) = self.entries.pop_front() {
            self.bytes -= old.text.len();
            self.charge.sub(old.cost());
        }
    }

    fn charge(&mut self) -> &mut RingCharge {
        &mut self.charge
    }
}

impl ActivityLog {
    /// An empty log keeping at most `total_bytes` of entries, counted in `charge`.
    pub(crate) fn new(total_bytes: usize, charge: RingCharge) -> Self {
        ActivityLog {
            entries: VecDeque::new(),
            bytes: 0,
            total_bytes,
            charge,
        }
    }

    /// Appends an entry (already bounded, see [`bound_entry`]), dropping the oldest while the
    /// log is over its count or bytes, then the oldest across the host's sessions while they
    /// retain more than the host's budget.
    pub(crate) fn push(&mut self, entry: LogEntry) {
        let Ok(text) = serde_json::to_string(&entry) else {
            return;
        };
        self.push_text(entry.kind, Arc::from(text));
    }

    /// [`Self::push`] of an entry of `kind` already serialized to `text` (serialized once
    /// for the log and the event that publishes it).
    pub(crate) fn push_text(&mut self, kind: LogKind, text: Arc<str>) {
        self.bytes += text.len();
        let mut kept = Kept {
            kind,
            text,
            stamp: 0,
        };
        kept.stamp = self.charge.add(kept.cost());
        self.entries.push_back(kept);
        while self.entries.len() > LOG_CAPACITY
            || (self.bytes > self.total_bytes && self.entries.len() > 1)
        {
            self.drop_oldest();
        }
        retained::settle(self);
    }

    /// Entries newest first, optionally filtered by kind, at most `n`.
    pub(crate) fn recent(&self, n: usize, kind: Option<&str>) -> Vec<LogEntry> {
        self.entries
            .iter()
            .rev()
            .filter(|e| kind.is_none_or(|k| e.kind.as_str() == k))
            .take(n)
            .filter_map(|e| serde_json::from_str(&e.text).ok())
            .collect()
    }

    /// Bytes kept.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.bytes
    }

    /// Number of entries kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

/// The label of a message in log entries: its intent when non-empty, else the variant.
pub(crate) fn message_intent(intent: Option<&str>, variant: Option<&str>) -> String {
    match (intent.filter(|i| !i.is_empty()), variant) {
        (Some(i), _) => i.to_string(),
        (None, Some(v)) => v.to_string(),
        (None, None) => "Send message".to_string(),
    }
}

/// The payload summary of a message (`docs/semantics.md` §9): up to three `key=value` items of the
/// keys other than `type`, plus `…` when there are more; `None` when there are no other keys.
pub(crate) fn payload_detail(msg: &Value) -> Option<String> {
    let obj = msg.as_object()?;
    let keys: Vec<(&String, &Value)> = obj.iter().filter(|(k, _)| k.as_str() != "type").collect();
    if keys.is_empty() {
        return None;
    }
    let mut items: Vec<String> = keys
        .iter()
        .take(3)
        .map(|(k, v)| format!("{}={}", clip(k, 30), clip(&summarize(v), 30)))
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
            let keys: Vec<String> = o.keys().take(3).map(|k| clip(k, 30)).collect();
            s.push_str(&keys.join(","));
            if o.len() > 3 {
                s.push_str(",…");
            }
            s.push('}');
            s
        }
    }
}

/// `s` cut to `max` characters, the last one `…` when cut.
pub(crate) fn clip(s: &str, max: usize) -> String {
    if s.chars().nth(max).is_some() {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    } else {
        s.to_string()
    }
}

/// Gives `entry` a copy of `diff` when its JSON (`bytes`) fits in `limit`; otherwise says in
/// its `detail` that it was left out, as [`bound_entry`] does (a big commit's ops are not
/// copied only to be dropped).
pub(crate) fn attach_diff(entry: &mut LogEntry, diff: &[PatchOp], limit: usize) {
    let bytes = json_len(diff);
    if bytes <= limit {
        entry.state_diff = Some(diff.to_vec());
    } else {
        omit_diff(entry, bytes, limit);
    }
}

fn omit_diff(entry: &mut LogEntry, bytes: usize, limit: usize) {
    let note = format!("stateDiff omitted: {bytes} bytes; the limit is {limit}");
    entry.detail = Some(match entry.detail.take() {
        Some(t) => format!("{t} ({note})"),
        None => note,
    });
}

/// Brings `entry` within `limit` bytes and returns its size: a `stateDiff` that does not fit
/// is dropped (and `detail` says so); then over-long texts are clipped, as a last resort (the
/// callers bound narration texts and labels before).
pub(crate) fn bound_entry(entry: &mut LogEntry, limit: usize) -> usize {
    let mut size = json_len(entry);
    if size <= limit {
        return size;
    }
    if let Some(d) = entry.state_diff.take() {
        omit_diff(entry, json_len(&d), limit);
        size = json_len(entry);
    }
    for field in 0..3 {
        if size <= limit {
            break;
        }
        let text = match field {
            0 => &mut entry.detail,
            1 => &mut entry.intent,
            _ => &mut entry.variant,
        };
        if let Some(t) = text.as_mut() {
            *t = clip(t, LABEL_CHARS);
        }
        size = json_len(entry);
    }
    size
}

/// `entry`'s JSON text within `limit` bytes: serialized once when it fits (the usual case),
/// else brought within it by [`bound_entry`] first and serialized again.
pub(crate) fn bounded_text(entry: &mut LogEntry, limit: usize) -> serde_json::Result<String> {
    // Room for a usual entry (an id, a kind, an intent, a token id) at once: serde_json's
    // 128 bytes to start with grew once for nearly every entry.
    let mut text = Vec::with_capacity(256);
    serde_json::to_writer(&mut text, entry)?;
    if text.len() > limit {
        bound_entry(entry, limit);
        text.clear();
        serde_json::to_writer(&mut text, entry)?;
    }
    String::from_utf8(text).map_err(<serde_json::Error as serde::ser::Error>::custom)
}

/// A fresh log entry of `kind` at `at` with every optional key absent.
pub(crate) fn entry(kind: LogKind, at: u64) -> LogEntry {
    let id = match kind {
        LogKind::Narrate => {
            let uuid = uuid::Uuid::new_v4().to_string();
            format!("narrate-{at}-{}", &uuid[..8])
        }
        // Encoded in place: `to_string` goes through the formatting machinery, which showed
        // in the profile of every read.
        _ => uuid::Uuid::new_v4()
            .hyphenated()
            .encode_lower(&mut uuid::Uuid::encode_buffer())
            .to_owned(),
    };
    LogEntry {
        id,
        at,
        kind,
        variant: None,
        intent: None,
        detail: None,
        seq: None,
        undid: Vec::new(),
        no_undo: None,
        state_diff: None,
        tid: None,
        confirm_id: None,
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
    fn huge_keys_and_values_are_summarized() {
        let big = "k".repeat(1 << 20);
        let d = payload_detail(&json!({"type":"x", big.clone(): {big.clone(): 1}})).unwrap();
        assert!(d.len() < 200, "{}", d.len());
    }

    #[test]
    fn entries_over_the_budget_lose_their_diff_and_say_so() {
        let mut e = entry(LogKind::Dispatched, 1);
        e.state_diff = Some(vec![serde_json::from_value(
            json!({"op":"replace","path":"/s","value":"x".repeat(100_000)}),
        )
        .unwrap()]);
        let size = bound_entry(&mut e, 16 * 1024);
        assert!(size <= 16 * 1024);
        assert!(e.state_diff.is_none());
        assert!(e.detail.unwrap().contains("the limit is 16384"));
        let mut e = entry(LogKind::Blocked, 1);
        e.variant = Some("v".repeat(1 << 20));
        assert!(bound_entry(&mut e, 16 * 1024) <= 16 * 1024);
        // The text of one that fits is its plain serialization; of one that does not, the
        // bounded entry's.
        let mut fits = entry(LogKind::Read, 1);
        fits.intent = Some("read the state".into());
        let text = bounded_text(&mut fits, 16 * 1024).unwrap();
        assert_eq!(text, serde_json::to_string(&fits).unwrap());
        let mut over = entry(LogKind::Blocked, 1);
        over.variant = Some("v".repeat(1 << 20));
        let text = bounded_text(&mut over, 16 * 1024).unwrap();
        assert!(text.len() <= 16 * 1024, "{}", text.len());
        assert_eq!(text, serde_json::to_string(&over).unwrap());
    }

    #[test]
    fn the_log_keeps_its_byte_total() {
        let mut log = ActivityLog::new(50_000, Retained::unbounded().charge());
        for i in 0..100 {
            let mut e = entry(LogKind::Narrate, i);
            e.detail = Some("n".repeat(10_000));
            log.push(e);
        }
        assert!(log.bytes() <= 50_000);
        assert_eq!(log.len(), 4);
        assert_eq!(log.recent(1, None)[0].at, 99);
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
