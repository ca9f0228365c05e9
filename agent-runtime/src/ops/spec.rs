//! What the table declares of each operation, as plain data: its paths and names, how the
//! gate runs it, its schemas. The call context carries its operation's spec, so backends read
//! their own facts (label, tool, timeouts) from it.

use schemars::{Schema, SchemaGenerator};

/// How the gate runs an operation beyond the common steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Conduct {
    /// Touches the token on arrival (`/wait`, `/confirm-result`: the call may outlive the
    /// idle window).
    pub(crate) touch_on_arrival: bool,
    /// Runs on its own task to completion even when the caller goes away (`/message`).
    pub(crate) detached: bool,
    /// The default of the request's `timeoutMs` (clamped to `maxWaitMs`), for the operations
    /// that wait.
    pub(crate) default_timeout_ms: Option<u64>,
    /// May answer 409 `conflict` (`/message`: an `idempotencyKey` reused; `/withdraw`: a
    /// decided proposal), so the OpenAPI document declares it.
    pub(crate) conflicts: bool,
}

pub(crate) const PLAIN: Conduct = Conduct {
    touch_on_arrival: false,
    detached: false,
    default_timeout_ms: None,
    conflicts: false,
};

/// What an MCP host is told about a tool before calling it (`docs/mcp.md` §Tool annotations):
/// its title and the four hints, set for every tool. The 17 operations declare theirs in the
/// table, `connect_session` / `disconnect_session` beside it, and an action tool's follow from
/// its variant's annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "mcp"), allow(dead_code))] // read by MCP
pub(crate) struct ToolHints {
    /// The human-readable title.
    pub(crate) title: &'static str,
    /// Reads only: changes nothing in the app, the session or the human's view.
    pub(crate) read_only: bool,
    /// May make a change that cannot be taken back (meaningful when not read-only).
    pub(crate) destructive: bool,
    /// Calling it again with the same arguments has no further effect.
    pub(crate) idempotent: bool,
    /// May reach beyond the app (effects that act on the outside world).
    pub(crate) open_world: bool,
}

impl ToolHints {
    /// A read: read-only, not destructive, idempotent, closed world.
    pub(crate) const fn read(title: &'static str) -> ToolHints {
        ToolHints {
            title,
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: false,
        }
    }

    /// A call that changes something: not read-only, with its own three hints.
    pub(crate) const fn change(
        title: &'static str,
        destructive: bool,
        idempotent: bool,
        open_world: bool,
    ) -> ToolHints {
        ToolHints {
            title,
            read_only: false,
            destructive,
            idempotent,
            open_world,
        }
    }
}

/// The prefix of the `path` an operation's audit entries carry (`/lap/v1/describe`).
const AUDIT_PATH_PREFIX: &str = "/lap/v1";

/// One declared operation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OperationSpec {
    /// The LAP path tail (`/observe`).
    pub(crate) lap_path: &'static str,
    /// The MCP tool name (`observe`), also the `rpc` tool of a paired session.
    pub(crate) tool: &'static str,
    /// What the operation does, for the model (MCP description, OpenAPI description).
    pub(crate) description: &'static str,
    /// The label of its `read` log entry and of an `error` entry when it fails inside.
    pub(crate) label: &'static str,
    /// How the gate runs it.
    pub(crate) conduct: Conduct,
    /// Its MCP tool's title and hints.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))] // read by MCP
    pub(crate) hints: ToolHints,
    /// The scope a credential needs to run it (`docs/authorization.md` §Scopes): the reads
    /// need `app:read`, everything that changes something `app:act`.
    pub(crate) scope: crate::security::Scope,
    /// The schema of its request (`SchemaGenerator::subschema_for::<Request>`).
    pub(crate) request_schema: fn(&mut SchemaGenerator) -> Schema,
    /// The schema of its 200 answer.
    pub(crate) response_schema: fn(&mut SchemaGenerator) -> Schema,
}

impl OperationSpec {
    /// The `path` of its audit entries (`/lap/v1/describe`).
    pub(crate) fn audit_path(&self) -> String {
        format!("{AUDIT_PATH_PREFIX}{}", self.lap_path)
    }

    /// `timeoutMs` with this operation's default, clamped to `max_wait`.
    pub(crate) fn wait_ms(&self, requested: Option<u64>, max_wait: u64) -> u64 {
        requested
            .or(self.conduct.default_timeout_ms)
            .unwrap_or(0)
            .min(max_wait)
    }
}
