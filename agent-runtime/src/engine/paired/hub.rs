//! The live side of pairing: per token id, the socket currently paired (a newer one supersedes
//! it), the cached `hello`, the rpc waiters, the confirmation outcomes, the armed watches and
//! the ring of log entries (`link`). Waiters are keyed by tid, not by socket, so they carry
//! over to a socket that supersedes. Nothing outlives the call that made it: an rpc or a
//! `/wait` removes its entry when it ends for any reason (`docs/pairing.md` §Bounds).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tokio::sync::{oneshot, Notify};

use super::frames::{ClientFrame, Hello, Raw, ServerFrame};
use super::link::{Limits, Link, Proposal as Proposed, Resolution, RpcFail, WithdrawRefusal};
use super::outbound::{close_code, outbound, OutboundRx};
use crate::engine::session::progress::DispatchWatch;

/// The paired sockets of a server.
pub(crate) struct Hub {
    links: Mutex<HashMap<String, Link>>,
    /// Held across a socket's registration or removal and the token status change that goes
    /// with it, so a close handled late never overwrites the status a newer socket set.
    pub lifecycle: tokio::sync::Mutex<()>,
    next_conn: AtomicU64,
    limits: Limits,
}

/// A registered socket: its id and the queue its writer drains.
pub(crate) struct Registered {
    pub id: u64,
    pub outgoing: OutboundRx,
    /// Whether an older socket was superseded.
    pub superseded: bool,
}

/// Removes an rpc waiter or a watch when its call ends, whatever ends it.
struct Cleanup<'a> {
    hub: &'a Hub,
    tid: &'a str,
    id: String,
    watch: bool,
    /// The caller's cancellation of the rpc, when it follows the rpc's work.
    cancel: Option<Arc<CallerCancel>>,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let mut links = self.hub.links();
        let Some(link) = links.get_mut(self.tid) else {
            return;
        };
        if self.watch {
            link.drop_watch(&self.id);
            let _ = link.send(&ServerFrame::Unwatch {
                id: std::mem::take(&mut self.id),
            });
        } else {
            let unanswered = link.rpcs.remove(&self.id).is_some();
            link.follows.remove(&self.id);
            // The caller gave up (its wait is dropped right after it asked): the app hears it.
            if unanswered && self.cancel.as_ref().is_some_and(|c| c.take()) {
                send_rpc_cancel(link, &self.id);
            }
        }
    }
}

/// A caller's cancellation of an rpc whose work it follows (MCP `notifications/cancelled`):
/// asked once, told to the app once.
#[derive(Default)]
struct CallerCancel {
    asked: AtomicBool,
    told: AtomicBool,
    notify: Notify,
}

impl CallerCancel {
    fn ask(&self) {
        self.asked.store(true, Ordering::SeqCst);
        self.notify.notify_one();
    }

    /// True once, when it was asked and the app was not told yet.
    fn take(&self) -> bool {
        self.asked.load(Ordering::SeqCst) && !self.told.swap(true, Ordering::SeqCst)
    }
}

/// Tells the app of `link` that the caller of rpc `id` gave up, when it takes `rpc-cancel`
/// (LLui's client is never sent it).
fn send_rpc_cancel(link: &super::link::Link, id: &str) {
    if link.hello.as_ref().is_some_and(|h| h.takes("rpc-cancel")) {
        let _ = link.send(&ServerFrame::RpcCancel { id: id.to_owned() });
    }
}

/// The keys of an rpc answer that say a proposal is pending.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Proposal {
    status: Option<String>,
    confirm_id: Option<String>,
}

impl Hub {
    pub(crate) fn new(limits: Limits) -> Self {
        Hub {
            links: Mutex::new(HashMap::new()),
            lifecycle: tokio::sync::Mutex::new(()),
            next_conn: AtomicU64::new(1),
            limits,
        }
    }

    fn links(&self) -> std::sync::MutexGuard<'_, HashMap<String, Link>> {
        self.links.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Drops outcomes older than the buffer window, and links whose socket and calls are gone
    /// once closed past the keep window (`max(grace, outcome)`).
    pub(crate) fn sweep(&self, now: u64) {
        let outcome_ms = self.limits.outcome_ms;
        let keep_ms = self.limits.grace_ms.max(outcome_ms);
        self.links().retain(|_, link| {
            link.expire_outcomes(now.saturating_sub(outcome_ms));
            link.conn.is_some()
                || !link.rpcs.is_empty()
                || !link.watches.is_empty()
                || link
                    .closed_at
                    .is_none_or(|at| at.saturating_add(keep_ms) > now)
        });
    }

    /// Registers a socket for `tid`; an older socket is closed (even if its writer is blocked),
    /// and armed watches are sent to the new one.
    pub(crate) fn register(&self, tid: &str) -> Registered {
        let id = self.next_conn.fetch_add(1, Ordering::Relaxed);
        let (out, rx) = outbound(self.limits.outbound_bytes);
        let mut links = self.links();
        let link = links.entry(tid.to_string()).or_insert_with(Link::new);
        let superseded = match link.conn.replace((id, out)) {
            Some((_, old)) => {
                old.close(close_code::NORMAL);
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
            let _ = link.send(&ServerFrame::Watch { id, path });
        }
        Registered {
            id,
            outgoing: rx,
            superseded,
        }
    }

    /// The socket `conn` of `tid` closed: answers whether it was the current one (then the
    /// pairing is gone: rpcs in flight fail with `paused`, watches are disarmed, confirmation
    /// waiters answer at once).
    pub(crate) fn unregister(&self, tid: &str, conn: u64, now: u64) -> bool {
        let current = {
            let mut links = self.links();
            match links.get_mut(tid) {
                Some(link) if link.is_current(conn) => {
                    link.disconnect(now);
                    true
                }
                _ => false,
            }
        };
        self.sweep(now);
        current
    }

    /// The current socket of `tid`, if any, is no longer the session's (a newer socket on
    /// another replica of the fleet took it): it is told to close with `code` and dropped at
    /// once, so no call is relayed to it any more; its calls in flight fail with `paused` and
    /// its own close then finds it is not the current socket (it writes no status).
    #[cfg(feature = "fleet")]
    pub(crate) fn drop_current(&self, tid: &str, code: u16, now: u64) -> bool {
        let mut links = self.links();
        let Some(link) = links.get_mut(tid) else {
            return false;
        };
        match link.conn.take() {
            Some((_, out)) => {
                out.close(code);
                link.disconnect(now);
                true
            }
            None => false,
        }
    }

    /// Tells the socket of `conn` (if still current) to close with `code`.
    pub(crate) fn close_conn(&self, tid: &str, conn: u64, code: u16) {
        let links = self.links();
        if let Some((_, out)) = links
            .get(tid)
            .and_then(|l| l.conn.as_ref())
            .filter(|(id, _)| *id == conn)
        {
            out.close(code);
        }
    }

    /// Queues a ping on socket `conn` (if still current).
    pub(crate) fn ping_conn(&self, tid: &str, conn: u64) {
        let links = self.links();
        if let Some((_, out)) = links
            .get(tid)
            .and_then(|l| l.conn.as_ref())
            .filter(|(id, _)| *id == conn)
        {
            let _ = out.ping();
        }
    }

    /// `tid` was revoked: its socket gets `revoked` and is closed, and everything kept for it
    /// is freed at once.
    pub(crate) fn revoke(&self, tid: &str) {
        let removed = self.links().remove(tid);
        if let Some((_, out)) = removed.as_ref().and_then(|l| l.conn.as_ref()) {
            let _ = out.push(&ServerFrame::Revoked {});
            out.close(close_code::NORMAL);
        }
    }

    /// Whether `tid` has a live socket.
    pub(crate) fn has_socket(&self, tid: &str) -> bool {
        self.links().get(tid).is_some_and(|l| l.conn.is_some())
    }

    /// Pushes `frame` to the socket of `tid`; `Err` when there is none or it is not reading.
    pub(crate) fn push(&self, tid: &str, frame: ServerFrame) -> Result<(), RpcFail> {
        match self.links().get(tid) {
            Some(l) => l.send(&frame).map_err(RpcFail::from),
            None => Err(RpcFail::Paused),
        }
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
        if !link.is_current(conn) {
            return false;
        }
        let limits = &self.limits;
        match frame {
            ClientFrame::Hello(hello) => link.hello = Some(Arc::new(*hello)),
            ClientFrame::RpcReply { id, result } => {
                if let Some(tx) = link.rpcs.remove(&id) {
                    // A proposal's id is known before its answer is relayed, so an outcome
                    // sent right after the answer is kept.
                    if let Ok(p) = serde_json::from_str::<Proposal>(result.get()) {
                        if let (Some("pending-confirmation"), Some(confirm)) =
                            (p.status.as_deref(), p.confirm_id.as_deref())
                        {
                            link.expect_confirm(confirm);
                        }
                    }
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
            } => link.resolve(
                confirm_id,
                Resolution {
                    decision: outcome,
                    state_after,
                    at: now,
                    withdrawn: false,
                },
                limits,
            ),
            ClientFrame::StateUpdate { id, state_after } => {
                link.fill_watch(&id, state_after, limits)
            }
            ClientFrame::LogAppend { entry } => link.append_log(entry, limits),
            // Coalesced in the caller's watch: the latest report, never a queue.
            ClientFrame::Progress { id, progress } => {
                if let Some(follow) = link.follows.get(&id) {
                    follow.report(progress);
                }
            }
        }
        true
    }

    /// Sends `rpc {id, tool, args}` to the socket of `tid` and waits up to `deadline` for its
    /// answer. The waiter is removed when this call ends, however it ends.
    ///
    /// With `follow` (a `send_message` whose caller follows its work): the app's `progress`
    /// frames for the rpc go to `follow`, and the caller's cancellation of it is told to the
    /// app as `rpc-cancel` (`docs/pairing.md` §Frames).
    pub(crate) async fn rpc(
        &self,
        tid: &str,
        tool: &str,
        args: Value,
        deadline: Duration,
        follow: Option<&Arc<DispatchWatch>>,
    ) -> Result<Raw, RpcFail> {
        let id = uuid::Uuid::new_v4().to_string();
        let rx = {
            let mut links = self.links();
            let link = links.get_mut(tid).ok_or(RpcFail::Paused)?;
            let frame = ServerFrame::Rpc {
                id: id.clone(),
                tool: tool.to_string(),
                args,
            };
            link.send(&frame)?;
            let (tx, rx) = oneshot::channel();
            link.rpcs.insert(id.clone(), tx);
            if let Some(follow) = follow {
                link.follows.insert(id.clone(), follow.clone());
            }
            rx
        };
        let cancel = follow.map(|follow| {
            let cancel = Arc::new(CallerCancel::default());
            let asked = cancel.clone();
            follow.arm(Box::new(move || asked.ask()));
            cancel
        });
        let _cleanup = Cleanup {
            hub: self,
            tid,
            id: id.clone(),
            watch: false,
            cancel: cancel.clone(),
        };
        let answered = async {
            let mut rx = rx;
            loop {
                tokio::select! {
                    answer = &mut rx => return answer,
                    () = async {
                        match &cancel {
                            Some(c) => c.notify.notified().await,
                            None => std::future::pending().await,
                        }
                    } => {
                        if cancel.as_ref().is_some_and(|c| c.take()) {
                            if let Some(link) = self.links().get(tid) {
                                send_rpc_cancel(link, &id);
                            }
                        }
                    }
                }
            }
        };
        match tokio::time::timeout(deadline, answered).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(RpcFail::Paused),
            Err(_) => Err(RpcFail::Timeout),
        }
    }

    /// Notes that the server waits on proposal `id` of `tid` (outcomes of unknown ids are not
    /// kept), with what the agent proposed (`/pending`).
    pub(crate) fn expect_proposal(&self, tid: &str, id: &str, proposal: Proposed) {
        if let Some(link) = self.links().get_mut(tid) {
            link.expect_proposal(id, proposal);
        }
    }

    /// The undecided proposals of `tid` the relay saw, oldest first.
    pub(crate) fn pending(&self, tid: &str) -> Vec<(String, Proposed)> {
        self.links().get(tid).map(Link::pending).unwrap_or_default()
    }

    /// Withdraws proposal `id` of `tid` and tells the app to void it (`confirm-expire`).
    pub(crate) fn withdraw(&self, tid: &str, id: &str, now: u64) -> Result<(), WithdrawRefusal> {
        self.links()
            .get_mut(tid)
            .ok_or(WithdrawRefusal::Unknown)?
            .withdraw(id, now)?;
        let _ = self.push(
            tid,
            ServerFrame::ConfirmExpire {
                confirm_id: id.to_string(),
            },
        );
        Ok(())
    }

    /// Whether confirmation `id` of `tid` is one the server waits on.
    pub(crate) fn knows_confirm(&self, tid: &str, id: &str) -> bool {
        self.links()
            .get(tid)
            .is_some_and(|l| l.known_confirms.iter().any(|k| k == id))
    }

    /// The outcome of confirmation `id` of `tid`, when known and decided.
    #[cfg(feature = "fleet")]
    pub(crate) fn outcome(&self, tid: &str, id: &str) -> Option<Resolution> {
        self.links().get(tid)?.outcome(id).cloned()
    }

    /// Takes confirmation `id` of `tid` as one the server waits on, relayed by another replica
    /// of a fleet (`docs/pairing.md` §A fleet of replicas), with its decision when the fleet
    /// recorded one. Nothing without a link (no socket was ever paired here).
    #[cfg(feature = "fleet")]
    pub(crate) fn adopt_confirm(&self, tid: &str, id: &str, decided: Option<Resolution>) {
        let mut links = self.links();
        let Some(link) = links.get_mut(tid) else {
            return;
        };
        link.expect_confirm(id);
        if let Some(r) = decided {
            if link.outcome(id).is_none() {
                link.resolve(id.to_owned(), r, &self.limits);
            }
        }
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
                if let Some(r) = link.outcome(id) {
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
    /// then disarms it (pushing `unwatch`), also when the call is dropped. `Err` when there is
    /// no socket, or it closes meanwhile.
    pub(crate) async fn wait_change(
        &self,
        tid: &str,
        path: Option<String>,
        timeout: Duration,
    ) -> Result<Option<Raw>, RpcFail> {
        let id = uuid::Uuid::new_v4().to_string();
        let mut changed = {
            let mut links = self.links();
            let link = links.get_mut(tid).ok_or(RpcFail::Paused)?;
            link.send(&ServerFrame::Watch {
                id: id.clone(),
                path: path.clone(),
            })?;
            link.watches.insert(id.clone(), (path, None));
            link.changed.subscribe()
        };
        let cleanup = Cleanup {
            hub: self,
            tid,
            id,
            watch: true,
            cancel: None,
        };
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let taken = match self.links().get_mut(tid) {
                Some(link) => link.take_watch(&cleanup.id),
                None => Err(()),
            };
            match taken {
                Err(()) => return Err(RpcFail::Paused),
                Ok(Some(state)) => return Ok(Some(state)),
                Ok(None) => {}
            }
            if tokio::time::timeout_at(deadline, changed.changed())
                .await
                .is_err()
            {
                return Ok(None);
            }
        }
    }

    /// The log ring of `tid`, newest first, at most `n`, optionally of one `kind` (or a
    /// comma-separated list).
    pub(crate) fn recent(&self, tid: &str, n: usize, kind: Option<&str>) -> Vec<Raw> {
        let kinds: Option<Vec<&str>> = kind.map(|k| k.split(',').map(str::trim).collect());
        self.links()
            .get(tid)
            .map(|l| l.recent(n, kinds.as_deref()))
            .unwrap_or_default()
    }
}

#[cfg(test)]
#[path = "hub_tests.rs"]
mod tests;
