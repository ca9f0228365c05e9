//! Coalesced token touches of the database stores.

/// `lastSeenAt` updates waiting to be written: a LAP call touches its token every time, and
/// writing each touch would double the writes of `/message`. Touches are written at most once
/// a second per token by a flusher task; reads overlay the pending ones (those pending when
/// the read began and when it ended), so callers see every touch at once. A process killed loses at most the last second of `lastSeenAt` moves.
#[derive(Debug, Default)]
pub(crate) struct Touches {
    pending: parking_lot::Mutex<std::collections::HashMap<String, u64>>,
    flusher: std::sync::OnceLock<()>,
}

/// How often pending touches are written.
pub(crate) const TOUCH_FLUSH: std::time::Duration = std::time::Duration::from_secs(1);

impl Touches {
    /// Records a touch; answers whether the flusher must be started.
    pub(crate) fn add(&self, tid: &str, now: u64) -> bool {
        let mut pending = self.pending.lock();
        let at = pending.entry(tid.to_owned()).or_insert(now);
        *at = (*at).max(now);
        drop(pending);
        let mut start = false;
        self.flusher.get_or_init(|| start = true);
        start
    }

    /// The newest pending touch of `tid`.
    pub(crate) fn get(&self, tid: &str) -> Option<u64> {
        self.pending.lock().get(tid).copied()
    }

    /// Every pending touch, by token id (what a read overlays on the rows it reads).
    pub(crate) fn snapshot(&self) -> std::collections::HashMap<String, u64> {
        self.pending.lock().clone()
    }

    /// Every pending touch, to write: each stays pending (and overlaid on reads) until
    /// [`Self::written`], so a read between the two never sees the older stored value.
    pub(crate) fn pending(&self) -> Vec<(String, u64)> {
        self.pending
            .lock()
            .iter()
            .map(|(t, at)| (t.clone(), *at))
            .collect()
    }

    /// The touch of `tid` at `at` is stored: forgotten, unless a newer one came meanwhile.
    pub(crate) fn written(&self, tid: &str, at: u64) {
        let mut pending = self.pending.lock();
        if pending.get(tid) == Some(&at) {
            pending.remove(tid);
        }
    }
}
