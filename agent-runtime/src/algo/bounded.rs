//! Answers within a budget (`docs/mcp.md` §Answers within a budget): the bounded view of a
//! JSON answer whose compact text is longer than a budget.
//!
//! Large arrays, objects and strings are shortened to their first elements (entries in their
//! stored order, characters) so that the answer's compact JSON, with `"truncated": true` and
//! the list of what was cut (`"elided"`), fits the budget. Each elided part names its place in
//! the answer (a JSON Pointer), its kind, its full size, how many elements are shown, and, when
//! it lies in the session's state, the `query_state` call that reads the rest
//! (`{"tool":"query_state","arguments":{"path","offset","limit"}}`, `limit` chosen from the
//! elements' average size so that the page fits the budget).
//!
//! Sizes are measured with an early stop at what is being checked against, so the work is
//! proportional to the budget and the shape walked, not to the whole answer. Deterministic;
//! never panics; the first elements are kept in order.

use serde_json::{json, Map, Value};

/// The smallest budget honoured: below it, not even the list of elided parts would fit.
pub(crate) const MIN_BUDGET: usize = 2_000;

/// Below this allowance a child is not shortened further: its container keeps fewer
/// elements instead.
const MIN_SHARE: usize = 400;

/// How many times the view is shortened further when the list of elided parts did not fit.
const PASSES: usize = 6;

/// Where the session's state sits in an answer, so an elided part of it is named as the
/// `query_state` call that reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Place {
    /// JSON Pointer of the state (or of the value read) in the answer: `/state`, `/value` …
    pub(crate) answer: String,
    /// JSON Pointer, in the state, of the value at `answer`.
    pub(crate) state: String,
    /// The position in the state of the first element at `answer` (a page's `offset`; 0
    /// otherwise).
    pub(crate) offset: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Array,
    Object,
    String,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Array => "array",
            Kind::Object => "object",
            Kind::String => "string",
        }
    }
}

/// A part shortened by [`fit`]: where, what, its full size, and the size of one of its
/// elements (characters of JSON text; for a string, of one character), to size a page.
#[derive(Debug)]
struct Cut {
    path: String,
    kind: Kind,
    size: usize,
    element: usize,
}

/// `answer` as is when its compact JSON fits `budget` (at least [`MIN_BUDGET`]), else its
/// bounded view: shortened, with `"truncated": true` and `"elided": [...]` at the top level.
#[cfg(test)]
pub(crate) fn bounded(answer: Value, budget: usize, place: Option<&Place>) -> Value {
    if size_within(&answer, budget).is_some() {
        return answer;
    }
    shortened(answer, budget, place)
}

/// The bounded view of `answer`, known to be over `budget`.
pub(crate) fn shortened(answer: Value, budget: usize, place: Option<&Place>) -> Value {
    let budget = budget.max(MIN_BUDGET);
    let mut answer = match answer {
        Value::Object(map) => map,
        other => {
            let mut map = Map::new();
            map.insert("value".into(), other);
            map
        }
    };
    answer.remove("truncated");
    answer.remove("elided");
    let mut answer = Value::Object(answer);
    let mut cuts = Vec::new();
    // A quarter of the budget is kept for the list of elided parts.
    let mut allowance = budget - budget / 4;
    for _ in 0..PASSES {
        fit(&mut answer, allowance, &mut String::new(), &mut cuts);
        let elided = elided(&answer, &cuts, budget, place);
        let wrapper = r#","truncated":true,"elided":"#.len();
        let fits = size_within(&answer, budget)
            .and_then(|a| size_within(&elided, budget).map(|e| a + e + wrapper))
            .is_some_and(|total| total <= budget);
        if fits {
            if let Value::Object(map) = &mut answer {
                map.insert("truncated".into(), Value::Bool(true));
                map.insert("elided".into(), elided);
            }
            return answer;
        }
        allowance = allowance * 3 / 5;
    }
    json!({
        "truncated": true,
        "elided": [],
        "note": "this answer does not fit the budget even shortened; read the state in parts \
                 with query_state {path, offset, limit}",
    })
}

/// Shortens `value` (at `path` in the answer) until its compact JSON fits `allowance`,
/// recording what it cut.
fn fit(value: &mut Value, allowance: usize, path: &mut String, cuts: &mut Vec<Cut>) {
    if size_within(value, allowance).is_some() {
        return;
    }
    match value {
        Value::String(s) => {
            let size = s.chars().count();
            let (keep, bytes) = prefix_chars(s, allowance.saturating_sub(2));
            let kept = s[..keep].chars().count();
            let element = if kept == 0 {
                1
            } else {
                bytes.div_ceil(kept).max(1)
            };
            s.truncate(keep);
            record(cuts, path, Kind::String, size, element);
        }
        Value::Array(items) => {
            let n = items.len();
            if n.saturating_mul(MIN_SHARE) <= allowance {
                let budget = allowance.saturating_sub(n + 1);
                let sizes: Vec<usize> = items
                    .iter()
                    .map(|v| size_within(v, budget).unwrap_or(usize::MAX))
                    .collect();
                let share = fair_share(&sizes, budget);
                for (i, item) in items.iter_mut().enumerate() {
                    if sizes[i] > share {
                        descend(path, &i.to_string(), |path| fit(item, share, path, cuts));
                    }
                }
                return;
            }
            let element = items
                .first()
                .map_or(1, |v| size_within(v, usize::MAX).unwrap_or(1).max(1));
            let mut used = 2;
            let mut keep = 0;
            for item in items.iter_mut() {
                let left = allowance.saturating_sub(used + 1);
                match size_within(item, left) {
                    Some(s) => {
                        used += s + 1;
                        keep += 1;
                    }
                    None => {
                        if left >= MIN_SHARE {
                            descend(path, &keep.to_string(), |path| fit(item, left, path, cuts));
                            keep += 1;
                        }
                        break;
                    }
                }
            }
            let element = average(items, keep).unwrap_or(element);
            items.truncate(keep);
            record(cuts, path, Kind::Array, n, element);
        }
        Value::Object(map) => {
            let n = map.len();
            if n.saturating_mul(MIN_SHARE) <= allowance {
                let keys: usize = map.keys().map(|k| str_size(k) + 1).sum();
                let budget = allowance.saturating_sub(n + 1 + keys);
                let sizes: Vec<usize> = map
                    .values()
                    .map(|v| size_within(v, budget).unwrap_or(usize::MAX))
                    .collect();
                let share = fair_share(&sizes, budget);
                for (i, (key, item)) in map.iter_mut().enumerate() {
                    if sizes[i] > share {
                        descend(path, key, |path| fit(item, share, path, cuts));
                    }
                }
                return;
            }
            let element = map
                .iter()
                .next()
                .map_or(1, |(k, v)| entry_size(k, v, usize::MAX).unwrap_or(1));
            let mut used = 2;
            let mut keep = 0;
            for (key, item) in map.iter_mut() {
                let left = allowance.saturating_sub(used + 1);
                match entry_size(key, item, left) {
                    Some(s) => {
                        used += s + 1;
                        keep += 1;
                    }
                    None => {
                        let left = left.saturating_sub(str_size(key) + 1);
                        if left >= MIN_SHARE {
                            descend(path, key, |path| fit(item, left, path, cuts));
                            keep += 1;
                        }
                        break;
                    }
                }
            }
            let kept: usize = map
                .iter()
                .take(keep)
                .map(|(k, v)| entry_size(k, v, usize::MAX).unwrap_or(0))
                .sum();
            let element = if keep > 0 {
                kept.div_ceil(keep).max(1)
            } else {
                element
            };
            let mut i = 0;
            map.retain(|_, _| {
                i += 1;
                i <= keep
            });
            record(cuts, path, Kind::Object, n, element);
        }
        // A scalar is never longer than a few dozen characters.
        _ => {}
    }
}

/// Runs `f` with `segment` appended to the pointer `path`.
fn descend(path: &mut String, segment: &str, f: impl FnOnce(&mut String)) {
    let len = path.len();
    path.push('/');
    path.push_str(&segment.replace('~', "~0").replace('/', "~1"));
    f(path);
    path.truncate(len);
}

/// Records a cut at `path`, unless a pass before already did (its full size stands).
fn record(cuts: &mut Vec<Cut>, path: &str, kind: Kind, size: usize, element: usize) {
    if !cuts.iter().any(|c| c.path == path) {
        cuts.push(Cut {
            path: path.to_owned(),
            kind,
            size,
            element: element.max(1),
        });
    }
}

/// The average size of the first `keep` items, when there are any.
fn average(items: &[Value], keep: usize) -> Option<usize> {
    if keep == 0 {
        return None;
    }
    let total: usize = items
        .iter()
        .take(keep)
        .map(|v| size_within(v, usize::MAX).unwrap_or(0))
        .sum();
    Some(total.div_ceil(keep).max(1))
}

/// Max-min fairness: the largest share such that every part keeps `min(size, share)` within
/// `budget` in all.
fn fair_share(sizes: &[usize], budget: usize) -> usize {
    let mut sorted: Vec<usize> = sizes.to_vec();
    sorted.sort_unstable();
    let mut left = budget;
    let mut count = sorted.len();
    for size in sorted {
        if count == 0 || size > left / count {
            break;
        }
        left -= size;
        count -= 1;
    }
    left.checked_div(count).unwrap_or(left)
}

/// The list of elided parts still shortened in `answer`, with the calls that read them.
fn elided(answer: &Value, cuts: &[Cut], budget: usize, place: Option<&Place>) -> Value {
    // A page's answer costs its envelope besides its elements.
    let page = (budget - budget / 4).saturating_sub(200);
    let entries = cuts.iter().filter_map(|cut| {
        let shown = match (cut.kind, answer.pointer(&cut.path)?) {
            (Kind::Array, Value::Array(items)) => items.len(),
            (Kind::Object, Value::Object(map)) => map.len(),
            (Kind::String, Value::String(s)) => s.chars().count(),
            _ => return None,
        };
        if shown >= cut.size {
            return None;
        }
        let mut entry = Map::new();
        entry.insert("path".into(), Value::from(cut.path.as_str()));
        entry.insert("kind".into(), Value::from(cut.kind.name()));
        entry.insert("size".into(), Value::from(cut.size));
        entry.insert("shown".into(), Value::from(shown));
        match place.and_then(|p| state_read(answer, p, &cut.path, shown)) {
            Some((path, offset)) => {
                let limit = (page / (cut.element + 1)).max(1);
                entry.insert(
                    "read".into(),
                    json!({"tool": "query_state",
                           "arguments": {"path": path, "offset": offset, "limit": limit}}),
                );
            }
            None => {
                entry.insert(
                    "note".into(),
                    Value::from("not part of the state: no call reads it in parts"),
                );
            }
        }
        Some(Value::Object(entry))
    });
    Value::Array(entries.collect())
}

/// The state pointer and offset of the part at `path` in the answer, `shown` elements of it
/// being in the answer; `None` outside the state.
fn state_read(answer: &Value, place: &Place, path: &str, shown: usize) -> Option<(String, usize)> {
    let rest = path.strip_prefix(place.answer.as_str())?;
    if rest.is_empty() {
        return Some((place.state.clone(), place.offset + shown));
    }
    let rest = rest.strip_prefix('/')?;
    let mut state = place.state.clone();
    let mut segments = rest.split('/');
    let paged_array =
        place.offset > 0 && answer.pointer(&place.answer).is_some_and(Value::is_array);
    if paged_array {
        let index: usize = segments.next()?.parse().ok()?;
        state.push('/');
        state.push_str(&(index + place.offset).to_string());
    }
    for segment in segments {
        state.push('/');
        state.push_str(segment);
    }
    Some((state, shown))
}

/// The longest prefix of `s` (a char boundary) whose JSON string escaping takes at most
/// `room` bytes, and those bytes.
fn prefix_chars(s: &str, room: usize) -> (usize, usize) {
    let mut used = 0;
    for (i, c) in s.char_indices() {
        let cost = char_size(c);
        if used + cost > room {
            return (i, used);
        }
        used += cost;
    }
    (s.len(), used)
}

/// The bytes `c` takes inside a JSON string as serde_json writes it.
fn char_size(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// The length of `s` as a JSON string.
fn str_size(s: &str) -> usize {
    2 + s.chars().map(char_size).sum::<usize>()
}

/// The length of `"key":value`, when within `cap`.
fn entry_size(key: &str, value: &Value, cap: usize) -> Option<usize> {
    let head = str_size(key) + 1;
    if head > cap {
        return None;
    }
    size_within(value, cap - head).map(|s| s + head)
}

/// The length of `value`'s compact JSON text when it is at most `cap`; `None` as soon as it
/// is known to be longer.
pub(crate) fn size_within(value: &Value, cap: usize) -> Option<usize> {
    let size = match value {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => n.to_string().len(),
        Value::String(s) => {
            let mut size = 2;
            for c in s.chars() {
                size += char_size(c);
                if size > cap {
                    return None;
                }
            }
            size
        }
        Value::Array(items) => {
            let mut size = 1 + items.len().max(1);
            if size > cap {
                return None;
            }
            for item in items {
                size += size_within(item, cap - size)?;
            }
            size
        }
        Value::Object(map) => {
            let mut size = 1 + map.len().max(1);
            if size > cap {
                return None;
            }
            for (key, item) in map {
                size += entry_size(key, item, cap - size)?;
            }
            size
        }
    };
    (size <= cap).then_some(size)
}

#[cfg(test)]
#[path = "bounded_tests.rs"]
mod tests;
