//! The action tools of a bound token (`docs/mcp.md` §Action tools): every action its app lets an
//! agent send, named by the catalog of its app (the hosted app's, built once, or a paired app's,
//! from its description). The list depends on the app's schema, never on the state.

use std::sync::Arc;

use rmcp::model::Tool;

use super::McpState;
use crate::app::App;
use crate::ops::watch::Watched;
use crate::ops::ApiError;
use crate::security::{scopes, Scope};
use crate::surface::mcp::action_tools::ActionCatalog;

/// What the list of the action tools stays the same with: a paired app's `schemaHash` (its
/// list changes when it pairs again with another version), the hosted app's for the process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListKey {
    /// Action tools off: none listed.
    Off,
    /// The hosted app's list, fixed for the process.
    Hosted,
    /// A paired app's list, fixed while its `schemaHash` is.
    Paired(Option<String>),
}

/// The action tools of a token and whether they can change while the token is bound.
pub(crate) struct SessionTools {
    /// The tools.
    pub tools: Vec<Tool>,
    /// The list changes only with the process (a hosted app, or action tools off); a paired
    /// app's changes when it pairs again with another version.
    pub fixed: bool,
    /// The scopes the token was granted (`None`: every scope): `tools/list` leaves out the
    /// tools it may not call (`docs/authorization.md` §Scopes).
    pub scope: Option<String>,
}

/// The catalog of `watched`'s app: `hosted` for a hosted session.
pub(super) async fn catalog(
    watched: &Watched,
    hosted: &Arc<ActionCatalog>,
) -> Result<Arc<ActionCatalog>, ApiError> {
    if watched.is_relayed() {
        let description = watched.describe().await?;
        Ok(Arc::new(ActionCatalog::from_description(&description)))
    } else {
        Ok(hosted.clone())
    }
}

/// What the action tool list of `watched` stays the same with.
pub(crate) async fn list_key<A: App>(
    server: &McpState<A>,
    watched: &Watched,
) -> Result<ListKey, ApiError> {
    if !server.options().mcp.action_tools {
        return Ok(ListKey::Off);
    }
    if !watched.is_relayed() {
        return Ok(ListKey::Hosted);
    }
    let description = watched.describe().await?;
    let hash = description.get("schemaHash").and_then(|h| h.as_str());
    Ok(ListKey::Paired(hash.map(str::to_owned)))
}

/// The action tools of the token `tid` (none when action tools are off, or when the token may
/// only read: every action tool acts).
pub(crate) async fn session_tools<A: App>(
    server: &McpState<A>,
    tid: &str,
    hosted: &Arc<ActionCatalog>,
) -> Result<SessionTools, ApiError> {
    let watched = Watched::open(server, tid).await?;
    let scope = watched.scope().map(str::to_owned);
    if !server.options().mcp.action_tools || !scopes::allows(scope.as_deref(), Scope::Act) {
        return Ok(SessionTools {
            tools: Vec::new(),
            fixed: true,
            scope,
        });
    }
    let catalog = catalog(&watched, hosted).await?;
    Ok(SessionTools {
        tools: catalog.tools().to_vec(),
        fixed: !watched.is_relayed(),
        scope,
    })
}
