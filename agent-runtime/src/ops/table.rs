//! The operation table: every LAP operation declared once, with its LAP path, its MCP tool
//! name and the description the model reads, its request and response types, and its handler.
//! The LAP router, the MCP tool lists and input schemas and the OpenAPI document are all
//! generated from [`OPERATIONS`]; [`run`] calls an operation's handler with its typed request.

use agent_schema::protocol::{
    ActionsResponse, ConfirmResultRequest, ConfirmResultResponse, ContextResponse,
    DescribeVisibleResponse, Description, EmptyRequest, MessageRequest, NarrateRequest,
    NarrateResponse, ObserveResponse, QueryDomRequest, QueryDomResponse, QueryStateRequest,
    QueryStateResponse, RecentActionsRequest, RecentActionsResponse, SendResult, StateRequest,
    StateResponse, WaitRequest, WaitResponse, WouldDispatchRequest, WouldDispatchResult,
};
use schemars::{Schema, SchemaGenerator};
use serde_json::Value;

#[cfg(feature = "pairing")]
use super::gate::OpRequest;
use super::gate::{serve, Admission};
use super::handlers;
use super::reply::Reply;
use crate::app::App;
use crate::ops::error::ApiError;
use crate::ops::ServerState;

/// How the gate runs an operation beyond the common steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Conduct {
    /// Touches the token on arrival (`/wait`, `/confirm-result`: the call may outlive the
    /// idle window).
    pub touch_on_arrival: bool,
    /// Runs on its own task to completion even when the caller goes away (`/message`).
    pub detached: bool,
}

const PLAIN: Conduct = Conduct {
    touch_on_arrival: false,
    detached: false,
};

/// One declared operation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OperationSpec {
    /// Which operation.
    pub op: Operation,
    /// The LAP path tail (`/observe`).
    pub lap_path: &'static str,
    /// The MCP tool name (`observe`).
    pub tool: &'static str,
    /// What the operation does, for the model (MCP description, OpenAPI description).
    pub description: &'static str,
    /// The label of its `read` log entry and of an `error` entry when it fails inside.
    pub label: &'static str,
    /// How the gate runs it.
    pub conduct: Conduct,
    /// The schema of its request (`SchemaGenerator::subschema_for::<Request>`).
    pub request_schema: fn(&mut SchemaGenerator) -> Schema,
    /// The schema of its 200 answer.
    pub response_schema: fn(&mut SchemaGenerator) -> Schema,
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
            request: $req:ty,
            response: $resp:ty,
            handler: $handler:path,
            description: $description:expr $(,)?
        }
    )*) => {
        /// One LAP operation.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Operation {
            $($(#[$doc])* $op,)*
        }

        /// Every operation, in MCP listing order.
        pub(crate) const OPERATIONS: &[OperationSpec] = &[$(
            OperationSpec {
                op: Operation::$op,
                lap_path: $path,
                tool: $tool,
                description: $description,
                label: $label,
                conduct: $conduct,
                request_schema: SchemaGenerator::subschema_for::<$req>,
                response_schema: SchemaGenerator::subschema_for::<$resp>,
            },
        )*];

        /// Reads the typed request of `op` from `body` (400 with the spec's detail when it
        /// does not read) and runs it through the gate.
        pub(crate) async fn run<A: App>(
            server: &ServerState<A>,
            admission: Admission<A>,
            op: Operation,
            body: Value,
        ) -> Reply {
            let caller = match admission {
                Admission::Hosted(caller) => caller,
                #[cfg(feature = "pairing")]
                Admission::Paired(record) => {
                    // The same request checks as a hosted session, then the forward (a
                    // `/message` detached and keyed like a hosted one).
                    let keyed = match op {$(
                        Operation::$op => serde_json::from_value::<$req>(body.clone()).map(|r| {
                            r.idempotency().map(|(key, msg)| (key.to_owned(), msg.clone()))
                        }),
                    )*};
                    return match keyed {
                        Ok(keyed) if op.spec().conduct.detached => {
                            let (s, r) = (server.clone(), record.clone());
                            let work = async move {
                                crate::ops::paired::serve(&s, r, op, body).await
                            };
                            super::detached::run_keyed(server, &record, keyed, work).await
                        }
                        Ok(_) => crate::ops::paired::serve(server, record, op, body).await,
                        Err(e) => Reply::from_error(&ApiError::invalid(e.to_string())),
                    };
                }
            };
            match op {$(
                Operation::$op => match serde_json::from_value::<$req>(body) {
                    Ok(request) => {
                        serve(server, caller, op, request, |call, request| {
                            Box::pin(async move {
                                $handler(call, request).await?.serialize(stringify!($op))
                            })
                        })
                        .await
                    }
                    Err(e) => Reply::from_error(&ApiError::invalid(e.to_string())),
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
        request: EmptyRequest,
        response: ObserveResponse,
        handler: handlers::observe,
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
        request: EmptyRequest,
        response: Description,
        handler: handlers::describe,
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
        request: StateRequest,
        response: StateResponse,
        handler: handlers::state,
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
        request: QueryStateRequest,
        response: QueryStateResponse,
        handler: handlers::query_state,
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
        request: RecentActionsRequest,
        response: RecentActionsResponse,
        handler: handlers::recent_actions,
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
        request: WouldDispatchRequest,
        response: WouldDispatchResult,
        handler: handlers::would_dispatch,
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
        request: EmptyRequest,
        response: ActionsResponse,
        handler: handlers::actions,
        description: "The actions available right now, each with its variant, intent and a \
            payloadHint to copy into send_message. observe includes the same list.",
    }
    /// `/message`: dispatch one message.
    Message {
        lap_path: "/message",
        tool: "send_message",
        label: "Send message",
        conduct: Conduct { touch_on_arrival: false, detached: true },
        request: MessageRequest,
        response: SendResult,
        handler: handlers::message,
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
        conduct: Conduct { touch_on_arrival: true, detached: false },
        request: ConfirmResultRequest,
        response: ConfirmResultResponse,
        handler: handlers::confirm_result,
        description: "Poll a message that is waiting for the user's approval (the confirmId \
            of a \"pending-confirmation\" answer). Answers \"confirmed\" with the new state, \
            \"rejected\" with a reason, or \"still-pending\".",
    }
    /// `/wait`: long poll for a change.
    Wait {
        lap_path: "/wait",
        tool: "wait_for_change",
        label: "wait_for_change",
        conduct: Conduct { touch_on_arrival: true, detached: false },
        request: WaitRequest,
        response: WaitResponse,
        handler: handlers::wait,
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
        request: NarrateRequest,
        response: NarrateResponse,
        handler: handlers::narrate,
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
        request: QueryDomRequest,
        response: QueryDomResponse,
        handler: handlers::query_dom,
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
        request: EmptyRequest,
        response: DescribeVisibleResponse,
        handler: handlers::describe_visible,
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
        request: EmptyRequest,
        response: ContextResponse,
        handler: handlers::context,
        description: "The app's narrative for the current state: what the user is doing and \
            hints about sensible next steps. observe includes it.",
    }
}

impl Operation {
    /// This operation's declaration.
    pub(crate) fn spec(self) -> &'static OperationSpec {
        OPERATIONS
            .iter()
            .find(|s| s.op == self)
            .expect("every operation is declared")
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
    fn paths_and_tools_are_unique() {
        let mut paths: Vec<&str> = OPERATIONS.iter().map(|s| s.lap_path).collect();
        let mut tools: Vec<&str> = OPERATIONS.iter().map(|s| s.tool).collect();
        paths.sort_unstable();
        paths.dedup();
        tools.sort_unstable();
        tools.dedup();
        assert_eq!(paths.len(), 14);
        assert_eq!(tools.len(), 14);
        for spec in OPERATIONS {
            assert_eq!(spec.op.spec().tool, spec.tool);
        }
    }
}
