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

/// The catalog and the available actions of one session, read together.
pub(crate) struct SessionActions {
    /// Every variant of the session's app as a tool.
    pub catalog: Arc<ActionCatalog>,
    /// The tools of the actions available now.
    pub tools: Vec<Tool>,
}

impl SessionActions {
    /// The tool names, to tell when the list changed.
    pub(crate) fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.name.to_string()).collect()
    }
}

/// The catalog of `watched`'s app: `hosted` for a hosted session.
pub(crate) async fn catalog<A: App>(
    watched: &Watched<A>,
    hosted: &Arc<ActionCatalog>,
) -> Result<Arc<ActionCatalog>, ApiError> {
    if watched.is_paired() {
        let description = watched.describe().await?;
        Ok(Arc::new(ActionCatalog::from_description(&description)))
    } else {
        Ok(hosted.clone())
    }
}

/// The action tools of the token `tid` now (none when action tools are off).
pub(crate) async fn session_actions<A: App>(
    server: &McpState<A>,
    tid: &str,
    hosted: &Arc<ActionCatalog>,
) -> Result<SessionActions, ApiError> {
    if !server.options().mcp.action_tools {
        return Ok(SessionActions {
            catalog: Arc::new(ActionCatalog::default()),
            tools: Vec::new(),
        });
    }
    let watched = Watched::open(server, tid).await?;
    let catalog = catalog(&watched, hosted).await?;
    let available = watched.actions().await?;
    let tools = catalog.tools(&available);
    Ok(SessionActions { catalog, tools })
}
