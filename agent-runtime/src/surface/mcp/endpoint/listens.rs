//! The `subscriptions/listen` streams of 2026-07-28 open per token (`docs/mcp.md`
//! §Notifications): each holds a watch on the token's session, so a token holds at most
//! `McpOptions::max_listens_per_token` of them at once; one more is refused with a clear error
//! until one closes.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// The listen streams open, per token id.
#[derive(Debug, Default)]
pub(crate) struct ListenSlots {
    open: Mutex<HashMap<String, usize>>,
    max_per_token: usize,
}

/// A listen stream's slot, given back when dropped.
#[derive(Debug)]
pub(crate) struct ListenSlot {
    slots: Arc<ListenSlots>,
    tid: String,
}

impl ListenSlots {
    /// At most `max_per_token` streams per token (at least 1).
    pub(crate) fn new(max_per_token: usize) -> Self {
        ListenSlots {
            open: Mutex::default(),
            max_per_token: max_per_token.max(1),
        }
    }

    /// A slot for one more stream of token `tid`; `Err(max)` when it holds `max` already.
    pub(crate) fn take(self: &Arc<Self>, tid: &str) -> Result<ListenSlot, usize> {
        let mut open = self.open.lock();
        let count = open.entry(tid.to_owned()).or_default();
        if *count >= self.max_per_token {
            return Err(self.max_per_token);
        }
        *count += 1;
        Ok(ListenSlot {
            slots: self.clone(),
            tid: tid.to_owned(),
        })
    }

    /// How many streams token `tid` holds.
    #[cfg(test)]
    fn held(&self, tid: &str) -> usize {
        self.open.lock().get(tid).copied().unwrap_or_default()
    }
}

impl Drop for ListenSlot {
    fn drop(&mut self) {
        let mut open = self.slots.open.lock();
        if let Some(count) = open.get_mut(&self.tid) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.tid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_holds_at_most_its_streams_and_gets_them_back() {
        let slots = Arc::new(ListenSlots::new(2));
        let a = slots.take("t").expect("first");
        let b = slots.take("t").expect("second");
        assert_eq!(slots.take("t").err(), Some(2));
        let other = slots.take("u").expect("another token");
        drop(a);
        let c = slots.take("t").expect("a slot came back");
        drop((b, c, other));
        assert_eq!((slots.held("t"), slots.held("u")), (0, 0));
        assert!(slots.open.lock().is_empty());
    }
}
