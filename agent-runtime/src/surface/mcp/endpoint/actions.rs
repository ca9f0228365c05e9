//! The action tools of a bound token (`docs/mcp.md` §Action tools): its session's available
//! actions, named by the catalog of its app (the hosted app's, built once, or a paired app's,
//! from its description).

use std::sync::Arc;

use rmcp::model::Tool;

use super::McpState;
use crate::app::App;
use crate::ops::watch::Watched;
use crate::ops::ApiError;
use crate::surface::mcp::action_tools::ActionCatalog;

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

/// The action tools of `watched` now (none when action tools are off).
pub(crate) async fn available_tools<A: App>(
    server: &McpState<A>,
    watched: &Watched,
    hosted: &Arc<ActionCatalog>,
) -> Result<Vec<Tool>, ApiError> {
    if !server.options().mcp.action_tools {
        return Ok(Vec::new());
    }
    let catalog = catalog(watched, hosted).await?;
    Ok(catalog.tools(&watched.actions().await?))
}

/// The names of [`available_tools`], without building the tools.
pub(crate) async fn available_names<A: App>(
    server: &McpState<A>,
    watched: &Watched,
    hosted: &Arc<ActionCatalog>,
) -> Result<Vec<String>, ApiError> {
    if !server.options().mcp.action_tools {
        return Ok(Vec::new());
    }
    let catalog = catalog(watched, hosted).await?;
    Ok(catalog.names(&watched.actions().await?))
}

/// The action tools of the token `tid` now (none when action tools are off).
pub(crate) async fn session_tools<A: App>(
    server: &McpState<A>,
    tid: &str,
    hosted: &Arc<ActionCatalog>,
) -> Result<Vec<Tool>, ApiError> {
    if !server.options().mcp.action_tools {
        return Ok(Vec::new());
    }
    let watched = Watched::open(server, tid).await?;
    available_tools(server, &watched, hosted).await
}

/// The names of `tools`, to tell when the list changed.
pub(crate) fn names(tools: &[Tool]) -> Vec<String> {
    tools.iter().map(|t| t.name.to_string()).collect()
}
