//! Session reads: state, slices, actions, context, visible content, regions, and the
//! long-poll for a change (`docs/semantics.md` §4, §8).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use serde_json::Value;
use std::sync::Arc;
use tea_agent_schema::protocol::{
    Action, ActionList, ContextResponse, DescribeVisibleResponse, DomElement, QueryDomResponse,
    QueryStateResponse, StateResponse, WaitResponse, WaitStatus,
};
use tea_agent_schema::{AgentContext, VariantKind as _};

use super::patches::Since;
use super::{Published, Session, SessionError};
use crate::algo::affordances::{Listed, Listing};
use crate::algo::state_path::{
    get_state_response, query_state, query_state_page, query_state_response, Page,
};
use crate::algo::tree::Node;
use crate::app::App;

/// How long a `/wait {sinceSeq}` ahead of this replica waits for it to catch up with the
/// store (`docs/semantics.md` §8.5).
const CATCH_UP_MS: u64 = 1_000;

impl<A: App> Session<A> {
    /// Runs an app hook on the typed state; a panic becomes [`SessionError::Internal`].
    fn hook<R>(&self, name: &str, f: impl FnOnce(&A, &A::State) -> R) -> Result<R, SessionError> {
        let app = &*self.core.app;
        self.with_state(|s| catch_unwind(AssertUnwindSafe(|| f(app, s))))
            .map_err(|p| {
                SessionError::Internal(format!("{name} hook panicked: {}", super::panic_text(&*p)))
            })
    }

    /// `list_actions` on the current state. Computed once per commit, by the first caller
    /// (the app's `bindings` and `affordances` hooks are functions of the state), kept in a
    /// compact form and rendered from the variants' templates at each read; the route gates
    /// come from the snapshot's results.
    pub fn list_actions(&self) -> Result<Vec<Action>, SessionError> {
        self.with_listed(|listed| self.core.catalog.render_actions(listed))
    }

    /// [`Self::list_actions`] as the JSON text answers embed: serialized once per distinct
    /// list, shared by every read until the list changes.
    pub fn action_list(&self) -> Result<ActionList, SessionError> {
        Ok(self.listing()?.text.clone())
    }

    /// Runs `f` on the compact `list_actions` of the current state (see [`Self::listing`]).
    pub(crate) fn with_listed<R>(&self, f: impl FnOnce(&[Listed]) -> R) -> Result<R, SessionError> {
        Ok(f(&self.listing()?.listed))
    }

    /// The listing of the current state, computed and kept by the snapshot's first reader
    /// (see [`Self::list_actions`]); its text is the previous listing's when the list did not
    /// change.
    fn listing(&self) -> Result<Arc<Listing>, SessionError> {
        let published = self.published();
        if let Some(listing) = published.actions.get() {
            return Ok(listing.clone());
        }
        let listed = self.compute_actions(&published)?;
        let mut last = self.core.last_listing.lock();
        let listing = Arc::new(self.core.catalog.listing(listed, last.as_deref()));
        // Kept only when no commit was published meanwhile (the hooks read the newest state).
        if self.core.published.borrow().seq == published.seq {
            let _ = published.actions.set(listing.clone());
            *last = Some(listing.clone());
        }
        Ok(listing)
    }

    fn compute_actions(&self, published: &super::Published) -> Result<Vec<Listed>, SessionError> {
        let (bindings, hook) = self.hook("affordances", |app, s| {
            let bindings = app.bindings(s).map(|kind| kind.wire_name());
            let hook = app.affordances(s).map(|msgs| {
                msgs.iter()
                    .map(|m| serde_json::to_value(m).unwrap_or(Value::Null))
                    .collect::<Vec<_>>()
            });
            (bindings, hook)
        })?;
        let catalog = &self.core.catalog;
        let gates = catalog.gates();
        Ok(catalog.pick_actions(&bindings, hook.as_deref(), &mut |id| {
            published.gates.verdict(gates, id, &published.state)
        }))
    }

    /// `get_state {path?}` → `{"state": V, "seq": N}` or `{"seq": N}`.
    pub fn get_state(&self, path: Option<&str>) -> StateResponse {
        let published = self.published();
        let mut body = if crate::algo::state_path::is_whole(path) {
            // The whole state: the snapshot's text, serialized once per commit.
            StateResponse {
                state: Some(published.json()),
                ..StateResponse::default()
            }
        } else {
            get_state_response(&published.state, path)
        };
        body.seq = Some(published.seq);
        body
    }

    /// `get_state {sinceSeq}` (`docs/semantics.md` §8.7): `{"stateDiff": ops, "seq": N}` when
    /// the session still holds every commit patch since `since`; otherwise the whole state
    /// flagged `"full": true`.
    pub fn get_state_since(&self, since: u64) -> StateResponse {
        let published = self.published();
        let newest = published.seq;
        if let Since::Patch(ops) = self.core.patches.lock().since(since, newest) {
            return StateResponse {
                state_diff: Some(ops),
                seq: Some(newest),
                ..StateResponse::default()
            };
        }
        StateResponse {
            state: Some(published.json()),
            seq: Some(newest),
            full: true,
            ..StateResponse::default()
        }
    }

    /// [`Session::get_state_since`], and on a fleet's store (PostgreSQL) a `since` older than
    /// this process's recent patches (the commits were made, or the session loaded, on
    /// another replica) is answered with the patch rebuilt from the store's commit log while
    /// it still holds those commits; else the whole state, as without a store.
    pub(crate) async fn get_state_since_anywhere(&self, since: u64) -> StateResponse {
        let body = self.get_state_since(since);
        if !body.full || !self.core.events.lock().by_commit() {
            return body;
        }
        match super::resume::view_patch_since(&self.core, since).await {
            Some((published, diff)) => StateResponse {
                state_diff: Some(diff),
                seq: Some(published.seq),
                ..StateResponse::default()
            },
            None => body,
        }
    }

    /// `query_state {path}` → `{"found":true,"value"}` or `{"found":false,"detail"}`.
    pub fn query_state(&self, path: &str) -> QueryStateResponse {
        query_state_response(&self.published().state, path)
    }

    /// `query_state {path, offset, limit}`: a page of the array, object or string at `path`
    /// (`docs/mcp.md` §Answers within a budget).
    pub(crate) fn query_state_page(&self, path: &str, page: Page) -> QueryStateResponse {
        query_state_page(&self.published().state, path, page)
    }

    /// The app's context hook output, or `None` without a hook.
    pub fn context(&self) -> Result<Option<AgentContext>, SessionError> {
        self.hook("context", |app, s| app.context(s))
    }

    /// `describe_context` for `tid`: the context (or the empty one) with the last-dispatch hint
    /// in front of the app's hints.
    pub fn describe_context(&self, tid: Option<&str>) -> Result<ContextResponse, SessionError> {
        let mut ctx = self.context()?.unwrap_or(AgentContext {
            summary: String::new(),
            hints: Vec::new(),
            cautions: Vec::new(),
        });
        if let Some(hint) = tid
            .and_then(|t| self.last_outcome(t))
            .and_then(|o| o.hint())
        {
            ctx.hints.insert(0, hint);
        }
        Ok(ContextResponse { context: ctx })
    }

    /// `describe_visible_content`.
    pub fn describe_visible(&self) -> Result<DescribeVisibleResponse, SessionError> {
        Ok(match self.hook("outline", |app, s| app.outline(s))? {
            Some(v) => DescribeVisibleResponse {
                url: v.url,
                outline: v
                    .outline
                    .iter()
                    .map(|node| serde_json::to_value(node).unwrap_or(Value::Null))
                    .collect(),
                source: "data-agent".into(),
            },
            None => DescribeVisibleResponse {
                url: None,
                outline: Vec::new(),
                source: "fallback".into(),
            },
        })
    }

    /// `query_dom {name, multiple?}`.
    pub fn query_dom(&self, name: &str, multiple: bool) -> Result<QueryDomResponse, SessionError> {
        let regions = self.hook("regions", |app, s| app.regions(s))?;
        let mut elements = Vec::new();
        for (i, r) in regions.into_iter().enumerate() {
            if r.name == name {
                elements.push(DomElement {
                    text: r.text,
                    attrs: r.attrs,
                    path: vec![i],
                });
                if !multiple {
                    break;
                }
            }
        }
        Ok(QueryDomResponse { elements })
    }

    /// `wait {path?, timeoutMs}`: waits for the value at `path` (a JSON Pointer, or the whole
    /// state) to change. `{"status":"changed","stateAfter","seq"}` or `{"status":"timeout",
    /// "stateAfter":null}`.
    pub async fn wait_for_change(
        &self,
        path: Option<&str>,
        timeout_ms: u64,
    ) -> Result<WaitResponse, SessionError> {
        self.wait_for_change_since(path, None, timeout_ms).await
    }

    /// `wait {path?, sinceSeq?, timeoutMs}` (`docs/semantics.md` §8.5, §8.7): with `since`,
    /// answers `changed` at once when the session is past that version and (with a path) the
    /// value there changed since, or the patches since then are no longer held; otherwise
    /// waits as [`Session::wait_for_change`] does.
    pub async fn wait_for_change_since(
        &self,
        path: Option<&str>,
        since: Option<u64>,
        timeout_ms: u64,
    ) -> Result<WaitResponse, SessionError> {
        self.wait_for_change_or_work(path, since, timeout_ms, false)
            .await
    }

    /// [`Self::wait_for_change_since`]; with `progress`, a change of the running work (an
    /// effect started, ended, was cancelled or reported progress) answers `progress` first
    /// (`docs/semantics.md` §5.6). Every answer carries the running work.
    pub(crate) async fn wait_for_change_or_work(
        &self,
        path: Option<&str>,
        since: Option<u64>,
        timeout_ms: u64,
        progress: bool,
    ) -> Result<WaitResponse, SessionError> {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout_ms);
        // Without a path, the whole trees are compared (packed elements by their text).
        let resolve = |state: &Arc<Node>| -> Result<Arc<Node>, Option<Value>> {
            match path {
                None => Ok(state.clone()),
                Some(p) => Err(query_state(state, p).ok()),
            }
        };
        if let Some(since) = since {
            if since > self.published().seq && self.core.events.lock().by_commit() {
                self.catch_up_to(since, deadline).await;
            }
        }
        // The baseline is the snapshot seen now: a commit published after it wakes the loop.
        let mut rx = self.core.published.subscribe();
        let base = rx.borrow_and_update().clone();
        if let Some(since) = since {
            if self.stale_since(&base, path, since, deadline).await {
                return Ok(WaitResponse {
                    status: WaitStatus::Changed,
                    state_after: base.state(),
                    seq: Some(base.seq),
                    work: self.running_work(),
                });
            }
        }
        let baseline = resolve(&base.state);
        let mut closed = self.core.closed.subscribe();
        let mut work = self.core.work.follow();
        work.borrow_and_update();
        loop {
            tokio::select! {
                _ = closed.wait_for(|c| *c) => return Err(SessionError::Closed),
                Ok(()) = work.changed(), if progress => {
                    return Ok(WaitResponse {
                        status: WaitStatus::Progress,
                        state_after: Value::Null,
                        seq: None,
                        work: self.running_work(),
                    });
                }
                r = rx.changed() => {
                    if r.is_err() {
                        return Err(SessionError::Closed);
                    }
                    let (state, seq) = {
                        let published = rx.borrow_and_update();
                        (published.state.clone(), published.seq)
                    };
                    if resolve(&state) != baseline {
                        return Ok(WaitResponse {
                            status: WaitStatus::Changed,
                            state_after: state.to_value(),
                            seq: Some(seq),
                            work: self.running_work(),
                        });
                    }
                }
                _ = tokio::time::sleep_until(deadline) => {
                    return Ok(WaitResponse {
                        status: WaitStatus::Timeout,
                        state_after: Value::Null,
                        seq: None,
                        work: self.running_work(),
                    });
                }
            }
        }
    }

    /// Whether a caller holding version `since` is behind `base` where it looks (`path`, or the
    /// whole state): `since` is not `base`'s version and a commit since then touched the path
    /// (the recent patches say so), or its patches are no longer held. On a fleet's store
    /// (PostgreSQL) a `since` older than the patches held here (the commits were made, or the
    /// session loaded, on another replica) is read from the store's commit log: the value at
    /// the path in the view at `since` against `base`'s (`docs/semantics.md` §8.5).
    /// A store that does not answer by `deadline` (the wait's): behind.
    async fn stale_since(
        &self,
        base: &Published,
        path: Option<&str>,
        since: u64,
        deadline: tokio::time::Instant,
    ) -> bool {
        if base.seq == since {
            return false;
        }
        let Some(p) = path.filter(|p| !p.is_empty()) else {
            return true;
        };
        let touched = self.core.patches.lock().touched(since, base.seq, p);
        if let Some(touched) = touched {
            return touched;
        }
        if since > base.seq || !self.core.events.lock().by_commit() {
            return true;
        }
        let then = super::resume::view_at(&self.core, since);
        match tokio::time::timeout_at(deadline, then).await {
            Ok(Some((_, then))) => query_state(&then, p).ok() != query_state(&base.state, p).ok(),
            Ok(None) | Err(_) => true,
        }
    }

    /// On a fleet's store, a `since` newer than the commit published here is another
    /// replica's commit this one has not caught up with yet: the session reads the store, and
    /// the call waits for that commit at most [`CATCH_UP_MS`] (and until `deadline`). A `since`
    /// that is no version of the session (the store has no such commit) is left to the caller,
    /// which then answers at once as without a store.
    async fn catch_up_to(&self, since: u64, deadline: tokio::time::Instant) {
        self.refresh_from_store();
        let mut rx = self.core.published.subscribe();
        let bound = deadline.min(tokio::time::Instant::now() + Duration::from_millis(CATCH_UP_MS));
        let _ = tokio::time::timeout_at(bound, rx.wait_for(|p| p.seq >= since)).await;
    }
}
