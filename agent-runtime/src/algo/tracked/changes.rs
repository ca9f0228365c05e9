//! The change records a tracked collection keeps beside its elements: an identity, a version
//! raised by every change, and for each chunk of [`CHUNK`] positions the version of its last
//! change.

use std::sync::atomic::{AtomicU64, Ordering};

use super::handshake::{self, Offer};

/// How many positions share one change record.
pub(crate) const CHUNK: usize = 16;

/// A fresh identity. Process-wide on purpose: two collections must never share one,
/// whichever sessions they belong to.
fn fresh_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn chunk_count(len: usize) -> usize {
    len.div_ceil(CHUNK)
}

/// The change records of a collection of `len` positions.
#[derive(Debug)]
pub(crate) struct Changes {
    /// Unique to one collection value.
    id: u64,
    /// Raised by every change.
    pub(crate) version: u64,
    /// For each chunk of positions, the version of its last change. Chunks past the length
    /// may be left over after a shrink; they send nothing.
    chunks: Vec<u64>,
}

impl Changes {
    /// The records of a new collection of `len` positions.
    pub(crate) fn new(len: usize) -> Self {
        Changes {
            id: fresh_id(),
            version: 0,
            chunks: vec![0; chunk_count(len)],
        }
    }

    /// Records a change at `index`.
    pub(crate) fn touch(&mut self, index: usize) {
        self.version += 1;
        if let Some(c) = self.chunks.get_mut(index / CHUNK) {
            *c = self.version;
        }
    }

    /// Records a change of every position from `from` on; `len` is the length now.
    pub(crate) fn touch_from(&mut self, from: usize, len: usize) {
        self.version += 1;
        let version = self.version;
        self.chunks.resize(chunk_count(len), version);
        let start = (from / CHUNK).min(self.chunks.len());
        self.chunks[start..].fill(version);
    }

    /// What the snapshot walker is told about a collection of `len` positions.
    pub(crate) fn offer(&self, len: usize) -> Offer {
        Offer {
            id: self.id,
            version: self.version,
            len,
        }
    }

    /// The positions (below `len`) changed after `version` or at `held` and beyond, in order.
    pub(crate) fn changed_since(
        &self,
        version: u64,
        held: usize,
        len: usize,
    ) -> impl Iterator<Item = usize> + '_ {
        self.chunks
            .iter()
            .enumerate()
            .flat_map(move |(c, &changed)| {
                let start = c * CHUNK;
                let end = (start + CHUNK).min(len);
                let from = if changed > version {
                    start
                } else {
                    start.max(held)
                };
                from..end
            })
    }

    /// The collection's side of the handshake with the snapshot walker, for a collection of
    /// `len` positions: runs `start` (its `serialize_seq` or `serialize_map`) with the offer
    /// made, then sends each position through `each`: all of them in order, or, when the
    /// walker replied, only those changed since what it holds, each announced first.
    pub(crate) fn send<C, E>(
        &self,
        len: usize,
        start: impl FnOnce() -> Result<C, E>,
        mut each: impl FnMut(&mut C, usize) -> Result<(), E>,
    ) -> Result<C, E> {
        let (started, reply) = handshake::offer(self.offer(len), start);
        let mut sink = started?;
        match reply {
            None => {
                for index in 0..len {
                    each(&mut sink, index)?;
                }
            }
            Some(reply) => {
                for index in self.changed_since(reply.version, reply.held, len) {
                    handshake::announce_index(index);
                    each(&mut sink, index)?;
                }
            }
        }
        Ok(sink)
    }
}
