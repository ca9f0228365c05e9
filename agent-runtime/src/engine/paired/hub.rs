//! The live side of pairing: per token id, the socket currently paired (a newer one supersedes
//! it), the cached `hello`, the rpc waiters, the confirmation outcomes (kept 5 minutes), the
//! armed watches and the ring of log entries. Waiters are keyed by tid, not by socket, so they
//! carry over to a socket that supersedes or re-pairs.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

use super::frames::{ClientFrame, ConfirmDecision, Hello, ServerFrame};

/// Entries kept per tid for `/recent-actions`.
pub(crate) const LOG_RING: usize = 100;

/// Outbound frames queued per socket before the socket counts as stuck.
const OUTBOUND_QUEUE: usize = 256;

/// Confirmations the server waits on per tid (older ones are forgotten first).
const MAX_KNOWN_CONFIRMS: usize = 64;

/// What the writer of a socket is told.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// Send this frame.
    Frame(ServerFrame),
    /// Close the socket (superseded, revoked, refused version).
    Close,
}

/// Why an rpc failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RpcFail {
    /// No socket, or it was lost mid-call.
    Paused,
    /// No answer before the deadline.
    Timeout,
    /// The app runtime answered `rpc-error`.
    Error {
        /// Its code.
        code: String,
        /// Its detail.
        detail: Option<String>,
    },
}

/// A decided confirmation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Resolution {
    pub decision: ConfirmDecision,
    pub state_after: Option<Value>,
    at: u64,
}

struct Link {
    conn: Option<(u64, mpsc::Sender<Outgoing>)>,
    hello: Option<Arc<Hello>>,
    rpcs: HashMap<String, oneshot::Sender<Result<Value, RpcFail>>>,
    known_confirms: VecDeque<String>,
    outcomes: HashMap<String, Resolution>,
    watches: HashMap<String, (Option<String>, Option<Value>)>,
    log: VecDeque<Value>,
    /// Bumped on every outcome and state update.
    changed: watch::Sender<u64>,
    closed_at: Option<u64>,
}

impl Link {
    fn new() -> Self {
        Link {
            conn: None,
            hello: None,
            rpcs: HashMap::new(),
            known_confirms: VecDeque::new(),
            outcomes: HashMap::new(),
            watches: HashMap::new(),
            log: VecDeque::new(),
            changed: watch::channel(0).0,
            closed_at: None,
        }
    }

    fn send(&self, frame: ServerFrame) -> bool {
        match &self.conn {
            Some((_, tx)) => tx.try_send(Outgoing::Frame(frame)).is_ok(),
            None => false,
        }
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }
}

/// The paired sockets of a server.
pub(crate) struct Hub {
    links: Mutex<HashMap<String, Link>>,
    /// Held across a socket's registration or removal and the token status change that goes
    /// with it, so a close handled late never overwrites the status a newer socket set.
    pub lifecycle: tokio::sync::Mutex<()>,
    next_conn: AtomicU64,
    /// How long outcomes are kept, and links after their socket closed.
    outcome_ms: u64,
    /// How long the log ring outlives a closed socket.
    grace_ms: u64,
    /// The largest log entry kept, in bytes of JSON.
    entry_bytes: usize,
}

/// A registered socket: its id and the queue its writer drains.
pub(crate) struct Registered {
    pub id: u64,
    pub outgoing: mpsc::Receiver<Outgoing>,
    /// Whether an older socket was superseded.
    pub superseded: bool,
}

impl Hub {
    pub(crate) fn new(outcome_ms: u64, grace_ms: u64, entry_bytes: usize) -> Self {
        Hub {
            links: Mutex::new(HashMap::new()),
            lifecycle: tokio::sync::Mutex::new(()),
            next_conn: AtomicU64::new(1),
            outcome_ms,
            grace_ms,
            entry_bytes,
        }
    }

    fn links(&self) -> std::sync::MutexGuard<'_, HashMap<String, Link>> {
        self.links.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Drops outcomes older than the buffer window and links closed past the grace window.
    pub(crate) fn sweep(&self, now: u64) {
        let outcome_ms = self.outcome_ms;
        let keep_ms = self.grace_ms.max(outcome_ms);
        self.links().retain(|_, link| {
            link.outcomes
                .retain(|_, r| r.at.saturating_add(outcome_ms) > now);
            link.conn.is_some()
                || !link.rpcs.is_empty()
                || !link.watches.is_empty()
                || link
                    .closed_at
                    .is_none_or(|at| at.saturating_add(keep_ms) > now)
        });
    }

    /// Registers a socket for `tid`; an older socket is told to close, and armed watches are
    /// re-sent to the new one.
    pub(crate) fn register(&self, tid: &str) -> Registered {
        let id = self.next_conn.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(OUTBOUND_QUEUE);
        let mut links = self.links();
        let link = links.entry(tid.to_string()).or_insert_with(Link::new);
        let superseded = match link.conn.replace((id, tx)) {
            Some((_, old)) => {
                let _ = old.try_send(Outgoing::Close);
                true
            }
            None => false,
        };
        link.closed_at = None;
        let armed: Vec<_> = link
            .watches
            .iter()
            .filter(|(_, (_, v))| v.is_none())
            .map(|(id, (path, _))| (id.clone(), path.clone()))
            .collect();
        for (id, path) in armed {
            link.send(ServerFrame::Watch { id, path });
        }
        Registered {
            id,
            outgoing: rx,
            superseded,
        }
    }

    /// The socket `conn` of `tid` closed: answers whether it was the current one (then the
    /// pairing is gone and rpcs in flight fail with `paused`).
    pub(crate) fn unregister(&self, tid: &str, conn: u64, now: u64) -> bool {
        let mut links = self.links();
        let Some(link) = links.get_mut(tid) else {
            return false;
        };
        if link.conn.as_ref().map(|(id, _)| *id) != Some(conn) {
            return false;
        }
        link.conn = None;
        link.closed_at = Some(now);
        link.rpcs.clear();
        // Confirmation waiters answer at once: the human cannot decide on a closed app.
        link.bump();
        true
    }

    /// Tells the socket of `tid` (if any) to close, after `frame` if given.
    pub(crate) fn close(&self, tid: &str, frame: Option<ServerFrame>) {
        let links = self.links();
        if let Some((_, tx)) = links.get(tid).and_then(|l| l.conn.as_ref()) {
            if let Some(f) = frame {
                let _ = tx.try_send(Outgoing::Frame(f));
            }
            let _ = tx.try_send(Outgoing::Close);
        }
    }

    /// Whether `tid` has a live socket.
    pub(crate) fn is_paired(&self, tid: &str) -> bool {
        self.links().get(tid).is_some_and(|l| l.conn.is_some())
    }

    /// Pushes `frame` to the socket of `tid`; false when there is none.
    pub(crate) fn push(&self, tid: &str, frame: ServerFrame) -> bool {
        self.links().get(tid).is_some_and(|l| l.send(frame))
    }

    /// The cached `hello` of `tid`.
    pub(crate) fn hello(&self, tid: &str) -> Option<Arc<Hello>> {
        self.links().get(tid).and_then(|l| l.hello.clone())
    }

    /// Handles a frame from socket `conn` of `tid`; false when that socket is no longer the
    /// current one (its late frames are ignored).
    pub(crate) fn inbound(&self, tid: &str, conn: u64, frame: ClientFrame, now: u64) -> bool {
        let mut links = self.links();
        let Some(link) = links.get_mut(tid) else {
            return false;
        };
        if link.conn.as_ref().map(|(id, _)| *id) != Some(conn) {
            return false;
        }
        match frame {
            ClientFrame::Hello(hello) => link.hello = Some(Arc::new(*hello)),
            ClientFrame::RpcReply { id, result } => {
                if let Some(tx) = link.rpcs.remove(&id) {
                    let _ = tx.send(Ok(result));
                }
            }
            ClientFrame::RpcError { id, code, detail } => {
                if let Some(tx) = link.rpcs.remove(&id) {
                    let _ = tx.send(Err(RpcFail::Error { code, detail }));
                }
            }
            ClientFrame::ConfirmResolved {
                confirm_id,
                outcome,
                state_after,
            } => {
                if link.known_confirms.contains(&confirm_id) {
                    link.outcomes.insert(
                        confirm_id,
                        Resolution {
                            decision: outcome,
                            state_after,
                            at: now,
                        },
                    );
                    link.bump();
                }
            }
            ClientFrame::StateUpdate {
                id, state_after, ..
            } => {
                if let Some((_, slot @ None)) = link.watches.get_mut(&id) {
                    *slot = Some(state_after);
                    link.bump();
                }
            }
            ClientFrame::LogAppend { entry } => {
                if let Some(entry) = bound_entry(entry, self.entry_bytes) {
                    if link.log.len() >= LOG_RING {
                        link.log.pop_front();
                    }
                    link.log.push_back(entry);
                }
            }
        }
        true
    }

    /// Sends `rpc {id, tool, args}` to the socket of `tid` and waits up to `deadline` for its
    /// answer.
    pub(crate) async fn rpc(
        &self,
        tid: &str,
        tool: &str,
        args: Value,
        deadline: Duration,
    ) -> Result<Value, RpcFail> {
        let id = uuid::Uuid::new_v4().to_string();
        let rx = {
            let mut links = self.links();
            let link = links.get_mut(tid).ok_or(RpcFail::Paused)?;
            let (tx, rx) = oneshot::channel();
            link.rpcs.insert(id.clone(), tx);
            let frame = ServerFrame::Rpc {
                id: id.clone(),
                tool: tool.to_string(),
                args,
            };
            if !link.send(frame) {
                link.rpcs.remove(&id);
                return Err(RpcFail::Paused);
            }
            rx
        };
        match tokio::time::timeout(deadline, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(RpcFail::Paused),
            Err(_) => {
                if let Some(link) = self.links().get_mut(tid) {
                    link.rpcs.remove(&id);
                }
                Err(RpcFail::Timeout)
            }
        }
    }

    /// Notes that the server waits on confirmation `id` of `tid` (outcomes of unknown ids are
    /// not kept).
    pub(crate) fn expect_confirm(&self, tid: &str, id: &str) {
        if let Some(link) = self.links().get_mut(tid) {
            if !link.known_confirms.iter().any(|k| k == id) {
                if link.known_confirms.len() >= MAX_KNOWN_CONFIRMS {
                    if let Some(old) = link.known_confirms.pop_front() {
                        link.outcomes.remove(&old);
                    }
                }
                link.known_confirms.push_back(id.to_string());
            }
        }
    }

    /// Whether confirmation `id` of `tid` is one the server waits on.
    pub(crate) fn knows_confirm(&self, tid: &str, id: &str) -> bool {
        self.links()
            .get(tid)
            .is_some_and(|l| l.known_confirms.iter().any(|k| k == id))
    }

    /// Waits up to `timeout` for the outcome of confirmation `id` (kept once known); `None`
    /// at the deadline or as soon as no socket is paired.
    pub(crate) async fn wait_confirm(
        &self,
        tid: &str,
        id: &str,
        timeout: Duration,
    ) -> Option<Resolution> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let mut changed = {
                let links = self.links();
                let link = links.get(tid)?;
                if let Some(r) = link.outcomes.get(id) {
                    return Some(r.clone());
                }
                // No socket: nobody can decide any more.
                link.conn.as_ref()?;
                link.changed.subscribe()
            };
            if tokio::time::timeout_at(deadline, changed.changed())
                .await
                .is_err()
            {
                return None;
            }
        }
    }

    /// Arms a watch on `tid` (pushing `watch`), waits up to `timeout` for its `state-update`,
    /// then disarms it (pushing `unwatch`). `Err` when there is no socket.
    pub(crate) async fn wait_change(
        &self,
        tid: &str,
        path: Option<String>,
        timeout: Duration,
    ) -> Result<Option<Value>, RpcFail> {
        let id = uuid::Uuid::new_v4().to_string();
        let mut changed = {
            let mut links = self.links();
            let link = links.get_mut(tid).ok_or(RpcFail::Paused)?;
            link.watches.insert(id.clone(), (path.clone(), None));
            if !link.send(ServerFrame::Watch {
                id: id.clone(),
                path,
            }) {
                link.watches.remove(&id);
                return Err(RpcFail::Paused);
            }
            link.changed.subscribe()
        };
        let deadline = tokio::time::Instant::now() + timeout;
        let value = loop {
            let found = self
                .links()
                .get(tid)
                .and_then(|l| l.watches.get(&id))
                .and_then(|(_, v)| v.clone());
            if found.is_some() {
                break found;
            }
            if tokio::time::timeout_at(deadline, changed.changed())
                .await
                .is_err()
            {
                break None;
            }
        };
        if let Some(link) = self.links().get_mut(tid) {
            link.watches.remove(&id);
            link.send(ServerFrame::Unwatch { id });
        }
        Ok(value)
    }

    /// The log ring of `tid`, newest first, at most `n`, optionally of one `kind`.
    pub(crate) fn recent(&self, tid: &str, n: usize, kind: Option<&str>) -> Vec<Value> {
        let kinds: Option<HashSet<&str>> = kind.map(|k| k.split(',').map(str::trim).collect());
        self.links()
            .get(tid)
            .map(|l| {
                l.log
                    .iter()
                    .rev()
                    .filter(|e| match &kinds {
                        None => true,
                        Some(ks) => e
                            .get("kind")
                            .and_then(Value::as_str)
                            .is_some_and(|k| ks.contains(k)),
                    })
                    .take(n)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// An entry within `limit` bytes: as it is, without its `stateDiff`, or not at all.
fn bound_entry(mut entry: Value, limit: usize) -> Option<Value> {
    if !entry.is_object() {
        return None;
    }
    if crate::config::json_len(&entry) <= limit {
        return Some(entry);
    }
    if let Some(o) = entry.as_object_mut() {
        o.remove("stateDiff");
    }
    (crate::config::json_len(&entry) <= limit).then_some(entry)
}
