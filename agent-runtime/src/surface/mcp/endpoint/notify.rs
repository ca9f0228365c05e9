//! What `/agent/mcp` tells a client without being asked (`docs/mcp.md` §Notifications): the
//! action tool list changed (it depends on the app's schema, not on the state: a paired app
//! that pairs again with another version, or goes away), a subscribed resource was updated.
//!
//! One watch per client: a legacy session's (its server stream, from the moment it is bound)
//! or a 2026-07-28 `subscriptions/listen` stream's. It waits on the bound session's commits and
//! compares; nothing queues: at most one notification is in flight, and a client that does not
//! take it within [`SEND_TIMEOUT`] is dropped (its watch ends; a listen stream is closed).

use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{Peer, SubscriptionSink};
use rmcp::RoleServer;

use super::actions::{list_key, ListKey};
use super::McpState;
use crate::app::App;
use crate::ops::watch::{Change, Watched};
use crate::surface::mcp::resources::{DESCRIBE_URI, STATE_URI};
use tea_agent_schema::protocol::ErrorCode;

/// How long one notification may take to reach the client.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);
/// One change wait; the watch then looks again (a token revoked meanwhile ends it).
const WAIT: Duration = Duration::from_secs(30);
/// After a failed look at the session (a paired app away, say), the next one.
const RETRY: Duration = Duration::from_secs(1);

/// Where notifications go.
pub(crate) enum Outlet {
    /// A legacy session's server stream.
    Session(Peer<RoleServer>),
    /// A 2026-07-28 `subscriptions/listen` stream.
    Listen(SubscriptionSink),
}

impl Outlet {
    /// Sends `notifications/tools/list_changed`; false when the client did not take it.
    async fn tools_changed(&self) -> bool {
        let sent = async {
            match self {
                Outlet::Session(peer) => peer.notify_tool_list_changed().await.is_ok(),
                Outlet::Listen(sink) => sink.notify_tool_list_changed().await.is_ok(),
            }
        };
        tokio::time::timeout(SEND_TIMEOUT, sent)
            .await
            .unwrap_or(false)
    }

    /// Sends `notifications/resources/updated`; false when the client did not take it.
    async fn resource_updated(&self, uri: &str) -> bool {
        let sent = async {
            match self {
                Outlet::Session(peer) => peer
                    .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                    .await
                    .is_ok(),
                Outlet::Listen(sink) => sink.notify_resource_updated(uri).await.is_ok(),
            }
        };
        tokio::time::timeout(SEND_TIMEOUT, sent)
            .await
            .unwrap_or(false)
    }
}

/// What a client asked to hear about.
#[derive(Debug, Default)]
pub(crate) struct Interest {
    /// The action tool list.
    pub tools: bool,
    /// The subscribed resource URIs (a legacy session's change with `resources/subscribe`).
    pub resources: Mutex<HashSet<String>>,
}

impl Interest {
    fn wants(&self, uri: &str) -> bool {
        self.resources.lock().contains(uri)
    }
}

/// Watches the session of the token `tid` for `outlet` until the client goes away or the token
/// no longer verifies. With `announce`, the tool list is announced first (a session just bound
/// learns about its actions at once).
pub(crate) async fn watch<A: App>(
    server: McpState<A>,
    tid: String,
    outlet: Outlet,
    interest: Arc<Interest>,
    announce: bool,
) {
    // `None`: the session cannot be read (paused): no action tools listed.
    let mut listed = match Watched::open(&server, &tid).await {
        Ok(watched) => list_key(&server, &watched).await.ok(),
        Err(_) => None,
    };
    if announce && interest.tools && !outlet.tools_changed().await {
        return;
    }
    let mut hash = None;
    loop {
        let watched = match Watched::open(&server, &tid).await {
            Ok(w) => w,
            Err(e) if matches!(e.code(), ErrorCode::AuthFailed | ErrorCode::Revoked) => return,
            Err(_) => {
                // Paused (a paired app away): its actions are gone from the list.
                if interest.tools
                    && listed.take().is_some_and(|key| key != ListKey::Off)
                    && !outlet.tools_changed().await
                {
                    return;
                }
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        // Back from a pause: its actions are listed again.
        if interest.tools
            && listed.is_none()
            && !relist(&server, &watched, &mut listed, &outlet).await
        {
            return;
        }
        let change = watched.next_change(WAIT).await;
        // A paired app that (re)paired has a description of its own.
        if interest.wants(DESCRIBE_URI) {
            let now = watched
                .describe()
                .await
                .ok()
                .and_then(|d| d.get("schemaHash").cloned());
            if hash.is_some() && now != hash && !outlet.resource_updated(DESCRIBE_URI).await {
                return;
            }
            hash = now;
        }
        match change {
            Ok(Change::Quiet) => {}
            Ok(Change::Changed) => {
                // A commit changes the list only when the app's schema changed with it (a
                // paired app paired again); a route gate moving does not.
                if interest.tools && !relist(&server, &watched, &mut listed, &outlet).await {
                    return;
                }
                if interest.wants(STATE_URI) && !outlet.resource_updated(STATE_URI).await {
                    return;
                }
            }
            Err(_) => tokio::time::sleep(RETRY).await,
        }
    }
}

/// Reads what `watched`'s action tool list stays the same with and tells the client when the
/// list changed from `listed` (a list of none to none is no change); false when the client did
/// not take the notification.
async fn relist<A: App>(
    server: &McpState<A>,
    watched: &Watched,
    listed: &mut Option<ListKey>,
    outlet: &Outlet,
) -> bool {
    let now = list_key(server, watched).await.ok();
    if now == *listed {
        return true;
    }
    let lists = |key: &Option<ListKey>| key.as_ref().is_some_and(|k| *k != ListKey::Off);
    let changed = lists(listed) || lists(&now);
    *listed = now;
    !changed || outlet.tools_changed().await
}

/// Aborts the watch task it holds when dropped (with the handler of its MCP session).
#[derive(Debug, Default)]
pub(crate) struct WatchSlot(Mutex<Option<tokio::task::AbortHandle>>);

impl WatchSlot {
    /// Runs `watch` in place of the one before.
    pub(crate) fn replace(&self, watch: impl std::future::Future<Output = ()> + Send + 'static) {
        let handle = tokio::spawn(watch).abort_handle();
        let old = self.0.lock().replace(handle);
        if let Some(old) = old {
            old.abort();
        }
    }

    /// Stops the watch.
    pub(crate) fn clear(&self) {
        if let Some(old) = self.0.lock().take() {
            old.abort();
        }
    }
}

impl Drop for WatchSlot {
    fn drop(&mut self) {
        self.clear();
    }
}
