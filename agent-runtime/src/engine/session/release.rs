//! Giving the memory of a big commit back to the operating system (`docs/stores.md` §Memory).
//!
//! A commit that changes a lot (a `bulkAdd` of thousands of elements) allocates and frees far
//! more than the state keeps: the parsed message, the ops carrying the new values, the walks'
//! trees, the stored patch's text, the answer. glibc's allocator keeps freed memory in its
//! per-thread arenas instead of returning it, so the process's resident size stays at the
//! commit's peak for good. After a commit whose patch is at least [`RELEASE_AFTER_BYTES`] of
//! JSON, the session asks glibc to return the free pages (`malloc_trim`), once the answer has
//! had time to be written: [`SETTLE`] after the last of a burst of big commits (and once more
//! [`AGAIN`] later, for an answer a slow client read slowly), so a burst costs two trims. The
//! trim acts on the whole process: a host keeps one [`Release`] for all its sessions. Elsewhere (another libc, another allocator) this does nothing.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The compact JSON size of a commit's patch from which its memory is given back.
pub(crate) const RELEASE_AFTER_BYTES: usize = 1024 * 1024;

/// How long after the commit: its answer and events are built and sent by then.
const SETTLE: Duration = Duration::from_millis(1000);

/// When the release is done once more.
const AGAIN: Duration = Duration::from_secs(5);

/// The releases of a host's sessions (clones share one schedule).
#[derive(Debug, Default, Clone)]
pub(crate) struct Release {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    /// A release is waiting for the burst to settle.
    waiting: AtomicBool,
    /// Counts the big commits, so the waiting release sees one that came meanwhile.
    big_commits: AtomicU64,
}

impl Release {
    /// Called with the JSON size of each published patch.
    pub(crate) fn after_commit(&self, patch_bytes: usize) {
        if patch_bytes < RELEASE_AFTER_BYTES {
            return;
        }
        // Outside a runtime (a host driven from synchronous code) the next big commit in one
        // will.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let shared = &self.shared;
        shared.big_commits.fetch_add(1, Ordering::AcqRel);
        if shared.waiting.swap(true, Ordering::AcqRel) {
            return;
        }
        let shared = shared.clone();
        runtime.spawn(async move {
            let mut seen = shared.big_commits.load(Ordering::Acquire);
            loop {
                tokio::time::sleep(SETTLE).await;
                let now = shared.big_commits.load(Ordering::Acquire);
                if now == seen {
                    break;
                }
                seen = now;
            }
            // A big commit from now on schedules its own release.
            shared.waiting.store(false, Ordering::Release);
            // The trim walks every arena: on the blocking pool, off the runtime's workers.
            let _ = tokio::task::spawn_blocking(release_free_memory).await;
            // Once more for what was freed late: an answer a slow client read slowly.
            tokio::time::sleep(AGAIN).await;
            let _ = tokio::task::spawn_blocking(release_free_memory).await;
        });
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn release_free_memory() {
    // SAFETY: `malloc_trim` only returns free pages of glibc's heaps to the kernel; it takes
    // no pointer and is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_free_memory() {}
