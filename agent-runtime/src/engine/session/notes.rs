//! The commit-note channel of a session, made only while someone listens: an idle session
//! (no dispatch waiting for its drain) holds no channel buffer.

use parking_lot::Mutex;
use std::sync::Arc;

use tokio::sync::broadcast;

use super::queue::CommitNote;

/// Capacity of the channel. A drain waiter that falls further behind still learns of its
/// own commit through `committed_through`.
const CAPACITY: usize = 64;

/// The session's commit notes (shared with its running effects).
#[derive(Debug, Default)]
pub(crate) struct Notes(Mutex<Option<broadcast::Sender<CommitNote>>>);

impl Notes {
    /// A new, empty note source.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Notes::default())
    }

    /// Receives every note sent from now on, until the listener is dropped.
    pub(crate) fn subscribe(self: &Arc<Self>) -> Listener {
        let rx = self
            .0
            .lock()
            .get_or_insert_with(|| broadcast::channel(CAPACITY).0)
            .subscribe();
        Listener {
            rx: Some(rx),
            notes: self.clone(),
        }
    }

    /// Sends `note` to the current receivers; with none, the channel is dropped.
    pub(crate) fn send(&self, note: CommitNote) {
        let mut channel = self.0.lock();
        if let Some(sender) = channel.as_ref() {
            if sender.receiver_count() == 0 {
                *channel = None;
            } else {
                let _ = sender.send(note);
            }
        }
    }
}

/// A receiver of notes; the last one dropped drops the channel.
#[derive(Debug)]
pub(crate) struct Listener {
    rx: Option<broadcast::Receiver<CommitNote>>,
    notes: Arc<Notes>,
}

impl std::ops::Deref for Listener {
    type Target = broadcast::Receiver<CommitNote>;

    fn deref(&self) -> &Self::Target {
        self.rx
            .as_ref()
            .expect("a listener holds its receiver until dropped")
    }
}

impl std::ops::DerefMut for Listener {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.rx
            .as_mut()
            .expect("a listener holds its receiver until dropped")
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        drop(self.rx.take());
        let mut channel = self.notes.0.lock();
        if channel.as_ref().is_some_and(|s| s.receiver_count() == 0) {
            *channel = None;
        }
    }
}
