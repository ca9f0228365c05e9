//! The operation table: every LAP operation declared once, with its LAP path, its MCP tool
//! name and the description the model reads, its request and response types, and the
//! [`SessionBackend`](super::backend::SessionBackend) method that answers it (a hosted session's or a paired app's relay, the
//! same name for both). The LAP router, the MCP tool lists and input schemas and the OpenAPI
//! document are all generated from [`OPERATIONS`]; [`perform`] reads an operation's typed
//! request and runs it through the gate on the caller's backend.

use futures::future::BoxFuture;
use schemars::SchemaGenerator;
use serde_json::Value;
use tea_agent_schema::protocol::{
    ActionsResponse, CancelRequest, CancelResponse, ConfirmResultRequest, ConfirmResultResponse,
    ContextResponse, DescribeVisibleResponse, Description, EmptyRequest, MessageRequest,
    NarrateRequest, NarrateResponse, ObserveResponse, PendingResponse, QueryDomRequest,
    QueryDomResponse, QueryStateRequest, QueryStateResponse, RecentActionsRequest,
    RecentActionsResponse, SendResult, StateRequest, StateResponse, WaitRequest, WaitResponse,
    WithdrawRequest, WithdrawResponse, WouldDispatchRequest, WouldDispatchResult,
};

use super::backend::Caller;
use super::error::ApiError;
use super::gate::{serve, Handler};
use super::reply::Reply;
use super::spec::{Conduct, OperationSpec, ToolHints, PLAIN};
use super::state::ServerState;
use super::transcript::Recording;
use crate::app::App;
use crate::engine::session::keyed::KeyedDispatch;
use crate::security::Scope;

/// A request that is not keyed.
fn not_keyed<R>(_: &R) -> Option<(String, Value)> {
    None
}

/// A `/message` request's `(idempotencyKey, msg)`, when it carries a key (`docs/lap.md` §5.7).
fn message_key(request: &MessageRequest) -> Option<(String, Value)> {
    let key = request.idempotency_key.as_deref()?;
    Some((key.to_owned(), request.dispatch.msg.0.clone()))
}

/// The call of an operation's backend method: a keyed operation's method takes the key its
/// dispatch hands to the commit (`super::keyed`), the others take none.
macro_rules! handle {
    (not_keyed, $method:ident, $backend:expr, $call:expr, $request:expr, $key:expr) => {{
        let _: Option<KeyedDispatch> = $key;
        $backend.$method($call, $request)
    }};
    ($keyed:ident, $method:ident, $backend:expr, $call:expr, $request:expr, $key:expr) => {
        $backend.$method($call, $request, $key)
    };
}

/// Declares the operations: the enum, the table and the typed dispatch, from one list.
macro_rules! operations {
    ($(
        $(#[$doc:meta])*
        $op:ident {
            lap_path: $path:literal,
            tool: $tool:literal,
            label: $label:literal,
            conduct: $conduct:expr,
            hints: $hints:expr,
            scope: $scope:expr,
            request: $req:ty,
            keyed: $keyed:ident,
            response: $resp:ty,
            handler: $method:ident,
            description: $description:expr $(,)?
        }
    )*) => {
        /// One LAP operation.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Operation {
            $($(#[$doc])* $op,)*
        }

        impl Operation {
            /// Every operation, in MCP listing order.
            pub(crate) const ALL: &'static [Operation] = &[$(Operation::$op,)*];
        }

        /// Every operation's spec, in the order of [`Operation::ALL`].
        pub(crate) const OPERATIONS: &[OperationSpec] = &[$(
            OperationSpec {
                lap_path: $path,
                tool: $tool,
                description: $description,
                label: $label,
                conduct: $conduct,
                hints: $hints,
                scope: $scope,
                request_schema: SchemaGenerator::subschema_for::<$req>,
                response_schema: SchemaGenerator::subschema_for::<$resp>,
            },
        )*];

        /// Reads the typed request of `op` from `body` (400 with the spec's detail when it
        /// does not read) and runs it through the gate, on the caller's backend.
        pub(crate) async fn perform<A: App>(
            server: &ServerState<A>,
            mut caller: Caller,
            op: Operation,
            body: Value,
        ) -> Reply {
            let recording = Recording::start(&mut caller, op.tool(), &body, server.now());
            let reply = run_operation(server, caller, op, body).await;
            if let Some(recording) = recording {
                recording.finish(&reply);
            }
            reply
        }

        /// [`perform`] without its recording: the typed request read here, then the
        /// operation's own future, boxed. Unboxed, every call's future would be as large as
        /// the largest operation's (7 KB) and copied whole each time it moves.
        fn run_operation<A: App>(
            server: &ServerState<A>,
            caller: Caller,
            op: Operation,
            body: Value,
        ) -> BoxFuture<'_, Reply> {
            // A paired session relays the body as it came as the `rpc` arguments.
            let args = match &body {
                _ if !caller.backend.is_relay() => Value::Null,
                Value::Object(_) => body.clone(),
                _ => Value::Object(Default::default()),
            };
            match op {$(
                Operation::$op => match <$req>::from_body(body) {
                    Ok(request) => {
                        let keyed = $keyed(&request);
                        let handler: Handler<$req> = |backend, call, request, key| {
                            handle!($keyed, $method, backend, call, request, key)
                        };
                        Box::pin(serve(server, caller, op.spec(), request, args, keyed, handler))
                    }
                    Err(e) => {
                        let refused = Reply::error(ApiError::invalid(e));
                        Box::pin(std::future::ready(refused))
                    }
                },
            )*}
        }

        /// Reads the typed request of `op` from `body` (400 when it does not read) and runs
        /// the operation's method on `backend` directly, without the gate: the side of the
        /// replica holding a paired socket, for a call that another replica of the fleet
        /// admitted (`super::fleet::holder`). No key: a paired app commits on its side.
        #[cfg(feature = "fleet")]
        pub(crate) fn run_direct<'a>(
            backend: &'a dyn super::backend::SessionBackend,
            call: &'a super::context::Call<'a>,
            op: Operation,
            body: Value,
        ) -> super::backend::Served<'a> {
            match op {$(
                Operation::$op => match serde_json::from_value::<$req>(body) {
                    Ok(request) => {
                        let handler: Handler<$req> = |backend, call, request, key| {
                            handle!($keyed, $method, backend, call, request, key)
                        };
                        handler(backend, call, request, None)
                    }
                    Err(e) => Box::pin(std::future::ready(Err(ApiError::invalid(e.to_string())))),
                },
            )*}
        }
    };
}

operations! {
    /// `/observe`: state, actions, description and context in one answer.
    Observe {
        lap_path: "/observe",
        tool: "observe",
        label: "observe",
        conduct: PLAIN,
        hints: ToolHints::read("Observe the app"),
        scope: Scope::Read,
        request: EmptyRequest,
        keyed: not_keyed,
        response: ObserveResponse,
        handler: observe,
        description: "Read everything you need to act, in one call: the current state, the \
            actions available right now (with payload hints), the app description (message \
            schemas, docs, schemaHash) and the per-state context. This is the default read: call \
            it first after connecting and whenever you are unsure what the app shows. The fast \
            path is observe, then send_message with one of the listed actions.",
    }
    /// `/describe`: the describe document.
    Describe {
        lap_path: "/describe",
        tool: "describe_app",
        label: "describe_app",
        conduct: PLAIN,
        hints: ToolHints::read("Describe the app"),
        scope: Scope::Read,
        request: EmptyRequest,
        keyed: not_keyed,
        response: Description,
        handler: describe,
        description: "The app's name, version, message schemas and annotations, docs \
            (purpose, cautions, examples) and schemaHash. Answered from the cache after the \
            first call while the schema is unchanged; observe already includes all of it but \
            the annotations (each action carries its own), so call this only for those or to \
            re-read the schemas.",
    }
    /// `/state`: the state or a slice of it.
    State {
        lap_path: "/state",
        tool: "get_state",
        label: "Read app state",
        conduct: PLAIN,
        hints: ToolHints::read("Read the state"),
        scope: Scope::Read,
        request: StateRequest,
        keyed: not_keyed,
        response: StateResponse,
        handler: state,
        description: "The current app state, or one slice of it when `path` (a JSON Pointer \
            such as \"/items/0\") is given. Use it to re-check a value after acting; observe \
            gives the state together with the actions.",
    }
    /// `/query-state`: a strict JSON Pointer lookup.
    QueryState {
        lap_path: "/query-state",
        tool: "query_state",
        label: "Read state slice",
        conduct: PLAIN,
        hints: ToolHints::read("Look up a state slice"),
        scope: Scope::Read,
        request: QueryStateRequest,
        keyed: not_keyed,
        response: QueryStateResponse,
        handler: query_state,
        description: "Look up one slice of the state by a strict RFC 6901 JSON Pointer (`~0` \
            for `~`, `~1` for `/`). Answers {found, value}, or {found:false, detail} when the \
            path does not exist.",
    }
    /// `/recent-actions`: the activity log, newest first.
    RecentActions {
        lap_path: "/recent-actions",
        tool: "describe_recent_actions",
        label: "describe_recent_actions",
        conduct: PLAIN,
        hints: ToolHints::read("Read recent activity"),
        scope: Scope::Read,
        request: RecentActionsRequest,
        keyed: not_keyed,
        response: RecentActionsResponse,
        handler: recent_actions,
        description: "The activity log, newest first (10 entries by default): what you and \
            the runtime did recently, including dispatches, rejections, confirmations and \
            errors. Use it to recover context after a failure.",
    }
    /// `/would-dispatch`: a dry run.
    WouldDispatch {
        lap_path: "/would-dispatch",
        tool: "would_dispatch",
        label: "would_dispatch",
        conduct: PLAIN,
        hints: ToolHints::read("Dry-run a message"),
        scope: Scope::Read,
        request: WouldDispatchRequest,
        keyed: not_keyed,
        response: WouldDispatchResult,
        handler: would_dispatch,
        description: "Dry run of a message: validates it and predicts {stateDiff, effects} \
            without applying anything or running effects. Use it before a consequential \
            send_message when you are unsure of the outcome.",
    }
    /// `/actions`: the actions available now.
    Actions {
        lap_path: "/actions",
        tool: "list_actions",
        label: "List available actions",
        conduct: PLAIN,
        hints: ToolHints::read("List available actions"),
        scope: Scope::Read,
        request: EmptyRequest,
        keyed: not_keyed,
        response: ActionsResponse,
        handler: actions,
        description: "The actions available right now, each with its variant, intent and a \
            payloadHint to copy into send_message. observe includes the same list.",
    }
    /// `/message`: dispatch one message.
    Message {
        lap_path: "/message",
        tool: "send_message",
        label: "Send message",
        conduct: Conduct {
            detached: true,
            default_timeout_ms: Some(5000),
            conflicts: true,
            ..PLAIN
        },
        hints: ToolHints::change("Send a message", true, false, true),
        scope: Scope::Act,
        request: MessageRequest,
        keyed: message_key,
        response: SendResult,
        handler: message,
        description: "Act on the app: dispatch one message, wait for it to settle and get back \
            what changed (a JSON Patch stateDiff). Answers status \"dispatched\"; \"rejected\" \
            with a reason (invalid payload, human-only, blocked by a gate: read it, fix the \
            message or ask the user) which is an answer, not an error; \"confirmed\" or \
            \"rejected\"/\"user-cancelled\" when the message needed the user's approval; or \
            \"pending-confirmation\" with a confirmId when the user has not decided yet (then \
            poll get_confirm_result). Use narrate to tell the user what you are doing during \
            multi-step work.",
    }
    /// `/confirm-result`: poll a proposal.
    ConfirmResult {
        lap_path: "/confirm-result",
        tool: "get_confirm_result",
        label: "get_confirm_result",
        conduct: Conduct { touch_on_arrival: true, default_timeout_ms: Some(5000), ..PLAIN },
        hints: ToolHints::read("Poll a confirmation"),
        scope: Scope::Read,
        request: ConfirmResultRequest,
        keyed: not_keyed,
        response: ConfirmResultResponse,
        handler: confirm_result,
        description: "Poll a message that is waiting for the user's approval (the confirmId \
            of a \"pending-confirmation\" answer). Answers \"confirmed\" with the new state, \
            \"rejected\" with a reason, or \"still-pending\".",
    }
    /// `/wait`: long poll for a change.
    Wait {
        lap_path: "/wait",
        tool: "wait_for_change",
        label: "wait_for_change",
        conduct: Conduct { touch_on_arrival: true, default_timeout_ms: Some(10_000), ..PLAIN },
        hints: ToolHints::read("Wait for a change"),
        scope: Scope::Read,
        request: WaitRequest,
        keyed: not_keyed,
        response: WaitResponse,
        handler: wait,
        description: "Long poll until the state changes (optionally only below `path`) or \
            the timeout passes; answers \"changed\" or \"timeout\" with stateAfter. Use it to \
            wait for the user or for background work instead of polling get_state.",
    }
    /// `/narrate`: a line in the human's activity log.
    Narrate {
        lap_path: "/narrate",
        tool: "narrate",
        label: "Agent narrated",
        conduct: PLAIN,
        hints: ToolHints::change("Narrate to the user", false, false, false),
        scope: Scope::Act,
        request: NarrateRequest,
        keyed: not_keyed,
        response: NarrateResponse,
        handler: narrate,
        description: "Write a short line of prose into the app's activity feed so the user \
            sees what you are doing and why. Use it at the start of multi-step work and at \
            decision points.",
    }
    /// `/query-dom`: a named region of what the app shows.
    QueryDom {
        lap_path: "/query-dom",
        tool: "query_dom",
        label: "Query DOM",
        conduct: PLAIN,
        hints: ToolHints::read("Read a screen region"),
        scope: Scope::Read,
        request: QueryDomRequest,
        keyed: not_keyed,
        response: QueryDomResponse,
        handler: query_dom,
        description: "Read a named region of what the app shows (its text and attributes), \
            e.g. a counter or a status line. Use describe_visible_content to learn what is on \
            screen.",
    }
    /// `/describe-visible`: an outline of the screen.
    DescribeVisible {
        lap_path: "/describe-visible",
        tool: "describe_visible_content",
        label: "Read visible content",
        conduct: PLAIN,
        hints: ToolHints::read("Describe the screen"),
        scope: Scope::Read,
        request: EmptyRequest,
        keyed: not_keyed,
        response: DescribeVisibleResponse,
        handler: describe_visible,
        description: "An outline of what the app currently shows the user (headings, text, \
            buttons with the action they trigger). Use it to talk about the screen the user \
            sees.",
    }
    /// `/context`: the app's narrative for the current state.
    Context {
        lap_path: "/context",
        tool: "describe_context",
        label: "Read current context",
        conduct: PLAIN,
        hints: ToolHints::read("Read the context"),
        scope: Scope::Read,
        request: EmptyRequest,
        keyed: not_keyed,
        response: ContextResponse,
        handler: context,
        description: "The app's narrative for the current state: what the user is doing and \
            hints about sensible next steps. observe includes it.",
    }
    /// `/pending`: the caller's own proposals the human has not decided yet.
    Pending {
        lap_path: "/pending",
        tool: "list_pending",
        label: "list_pending",
        conduct: PLAIN,
        hints: ToolHints::read("List your pending proposals"),
        scope: Scope::Read,
        request: EmptyRequest,
        keyed: not_keyed,
        response: PendingResponse,
        handler: pending,
        description: "Your own proposals that are still waiting for the user's approval \
            (messages that answered \"pending-confirmation\"), oldest first, each with its \
            confirmId, variant, msg, reason and proposedAt. Use it to find a confirmId you \
            lost, then get_confirm_result or withdraw_proposal.",
    }
    /// `/withdraw`: take back one of the caller's own undecided proposals.
    Withdraw {
        lap_path: "/withdraw",
        tool: "withdraw_proposal",
        label: "withdraw_proposal",
        conduct: Conduct { conflicts: true, ..PLAIN },
        hints: ToolHints::change("Withdraw a proposal", false, true, false),
        scope: Scope::Act,
        request: WithdrawRequest,
        keyed: not_keyed,
        response: WithdrawResponse,
        handler: withdraw,
        description: "Withdraw one of your own proposals the user has not decided yet (its \
            confirmId): the approval request disappears from the user's screen and \
            get_confirm_result then answers \"withdrawn\". Use it when the proposal is no \
            longer what you want; a decided proposal cannot be withdrawn.",
    }
    /// `/cancel`: stop running effects the caller's own messages started.
    Cancel {
        lap_path: "/cancel",
        tool: "cancel_work",
        label: "cancel_work",
        conduct: PLAIN,
        hints: ToolHints::change("Cancel running work", true, true, false),
        scope: Scope::Act,
        request: CancelRequest,
        keyed: not_keyed,
        response: CancelResponse,
        handler: cancel,
        description: "Stop long-running work your own messages started (an import, a fetch): \
            name it by the seq of your send_message answer, by its idempotencyKey, by the id \
            of an entry of observe's `work`, or all: true for all of it. The work is asked to \
            stop and its send_message drain reports it under `cancelled`. Answers \
            \"cancelled\" with the ids, or \"not-running\" when it already finished; work \
            started by someone else is refused.",
    }
}

impl Operation {
    /// This operation's declaration.
    pub(crate) fn spec(self) -> &'static OperationSpec {
        // The table lists the operations in the enum's order (checked by a test).
        &OPERATIONS[self as usize]
    }

    /// The operation whose MCP tool (and paired `rpc` tool) is `tool`.
    pub fn from_tool(tool: &str) -> Option<Operation> {
        let i = OPERATIONS.iter().position(|s| s.tool == tool)?;
        Some(Operation::ALL[i])
    }

    /// The LAP path tail (`/state`, …).
    pub fn lap_path(self) -> &'static str {
        self.spec().lap_path
    }

    /// The MCP tool name.
    pub fn tool(self) -> &'static str {
        self.spec().tool
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_need_the_read_scope_and_changes_the_act_scope() {
        for spec in OPERATIONS {
            let expected = if spec.hints.read_only {
                Scope::Read
            } else {
                Scope::Act
            };
            assert_eq!(spec.scope, expected, "{}", spec.tool);
        }
        assert_eq!(Operation::Message.spec().scope, Scope::Act);
        assert_eq!(Operation::Observe.spec().scope, Scope::Read);
        assert_eq!(Operation::Cancel.spec().scope, Scope::Act);
        assert_eq!(Operation::Pending.spec().scope, Scope::Read);
    }

    #[test]
    fn paths_and_tools_are_unique() {
        let mut paths: Vec<&str> = OPERATIONS.iter().map(|s| s.lap_path).collect();
        let mut tools: Vec<&str> = OPERATIONS.iter().map(|s| s.tool).collect();
        paths.sort_unstable();
        paths.dedup();
        tools.sort_unstable();
        tools.dedup();
        assert_eq!(paths.len(), 17);
        assert_eq!(tools.len(), 17);
        for (i, op) in Operation::ALL.iter().enumerate() {
            assert_eq!(*op as usize, i, "the table follows the enum's order");
            assert_eq!(Operation::from_tool(op.tool()), Some(*op));
        }
    }
}
