//! MCP sessions deleted by another replica (`docs/mcp.md` §Sessions across replicas): with a
//! fleet's store, every deleted binding is announced to every replica (PostgreSQL `NOTIFY` on
//! `agent_mcp_changes`, [`McpBindings::deleted`](crate::engine::store::McpBindings::deleted)),
//! and a replica holding that session live ends it before its next request is admitted. So a
//! session evicted on one replica (its token's cap, counted over the stored bindings of the
//! whole fleet) is gone on all of them.

use parking_lot::Mutex;
use tokio::sync::broadcast;

/// What [`Deletions::since`] saw.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Deleted {
    /// The stored ids (SHA-256 hex of the session ids) deleted since the last look.
    Ids(Vec<String>),
    /// Some deletions were missed (the channel overflowed): every live session's binding
    /// must be looked up.
    Missed,
}

/// The receiving end of the store's announcements of deleted bindings; empty for a store
/// that is not shared.
#[derive(Debug, Default)]
pub(crate) struct Deletions(Mutex<Option<broadcast::Receiver<String>>>);

impl Deletions {
    /// Reading `receiver`.
    pub(crate) fn new(receiver: Option<broadcast::Receiver<String>>) -> Self {
        Deletions(Mutex::new(receiver))
    }

    /// Whether the store is shared (a fleet's).
    pub(crate) fn is_shared(&self) -> bool {
        self.0.lock().is_some()
    }

    /// The stored ids deleted since the last call.
    pub(crate) fn since(&self) -> Deleted {
        let mut guard = self.0.lock();
        let mut ids = Vec::new();
        let Some(receiver) = guard.as_mut() else {
            return Deleted::Ids(ids);
        };
        loop {
            match receiver.try_recv() {
                Ok(id) => ids.push(id),
                Err(broadcast::error::TryRecvError::Lagged(_)) => return Deleted::Missed,
                Err(_) => return Deleted::Ids(ids),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_was_announced_and_says_when_it_missed_some() {
        assert_eq!(Deletions::default().since(), Deleted::Ids(vec![]));
        assert!(!Deletions::default().is_shared());
        let (tx, rx) = broadcast::channel(2);
        let deletions = Deletions::new(Some(rx));
        assert!(deletions.is_shared());
        tx.send("a".to_owned()).expect("send");
        assert_eq!(deletions.since(), Deleted::Ids(vec!["a".to_owned()]));
        assert_eq!(deletions.since(), Deleted::Ids(vec![]));
        for id in ["b", "c", "d"] {
            tx.send(id.to_owned()).expect("send");
        }
        assert_eq!(deletions.since(), Deleted::Missed);
    }
}
