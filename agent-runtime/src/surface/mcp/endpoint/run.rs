//! Running a `tools/call` of `/agent/mcp` for a binding (`docs/mcp.md` §How a tool runs,
//! §Action tools): the one code path behind both rmcp's handler and the admission layer's fast
//! path (`fast_call`), so a tool answers the same whichever of them took the request.
//!
//! A tool runs its operation in-process through the operation gate with the bound token as the
//! credential ([`InProcess`]); a `do_<action>` tool sends its message as `send_message` would.
//! `connect_session` and `disconnect_session` change the MCP session and stay the handler's.

use std::sync::Arc;

use axum::http::StatusCode;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult};
use rmcp::ErrorData;
use serde_json::{Map, Value};
use tracing::Instrument as _;

use super::actions::catalog;
use super::bound_token::BoundToken;
use super::client_confirm::{self, InClient};
use super::in_process::InProcess;
use super::McpState;
use crate::app::App;
use crate::engine::session::progress::DispatchWatch;
use crate::ops::budget::{bound, Asked};
use crate::ops::traced::{Traced, Via};
use crate::ops::watch::Watched;
use crate::ops::{self, Operation};
use crate::security::TokenRecord;
use crate::surface::mcp::action_tools::ActionCatalog;
use crate::surface::mcp::calls::{ResolvedCall, ToolCatalog};
use crate::surface::mcp::format::{
    failure, forwarded_failure, success, success_with_text, NOT_CONNECTED_SERVER,
};
use crate::surface::mcp::forward::{failed, forward_tool, passes_on, DescriptionCache};
use crate::surface::mcp::tools::ToolAction;

/// What a sessionless client without a bearer is told, by `connect_session` and every tool.
pub(super) const STATELESS_NEEDS_BEARER: &str = "On MCP 2026-07-28 there is no session to \
    connect: send the agent token (agt_…) on every request as the header `Authorization: \
    Bearer agt_…`. With Claude Code: claude mcp add --transport http <app> <url of /agent/mcp> \
    --header \"Authorization: Bearer agt_…\"";

/// The protocol generation a call came in on: it decides what an unbound call is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Generation {
    /// 2025-03-26 through 2025-11-25: an MCP session, bound by `connect_session` or a bearer at
    /// `initialize`.
    Session,
    /// 2026-07-28: no session, the bearer on each request.
    Stateless,
}

impl Generation {
    /// Its name in traces (`mcp_generation`): `session` or `stateless`.
    fn label(self) -> &'static str {
        match self {
            Generation::Session => "session",
            Generation::Stateless => "stateless",
        }
    }
}

/// What the client of a tool call asks beside its arguments.
pub(super) struct ClientAsks<'a> {
    /// Whether a message to confirm may ask the client's user (`client_confirm`).
    pub(super) in_client: &'a InClient,
    /// What the client follows of the effects its message starts (progress, cancellation).
    pub(super) follow: Option<Arc<DispatchWatch>>,
}

/// A `tools/call` resolved against the endpoint's tools.
pub(super) enum ToolCall {
    /// `connect_session` / `disconnect_session` with checked arguments: they change the MCP
    /// session, so the handler runs them.
    Session(ToolAction, Map<String, Value>),
    /// Anything that only needs the binding.
    Bound(BoundCall),
}

/// A call that runs for a binding, whoever took the request.
pub(super) enum BoundCall {
    /// One of tools 2–18 with checked arguments.
    Run(Operation, Map<String, Value>),
    /// Not one of the 19 tools: a `do_<action>` tool, resolved in the binding's catalog (an
    /// unknown name is an `invalid_params` error there).
    Action(CallToolRequestParams),
    /// Arguments refused by the tool's schema: answered as a tool error, nothing runs.
    Refused(CallToolResult),
}

/// What a bound call answers.
pub(super) enum ToolAnswer {
    /// A tool result (boxed: it is far larger than a text).
    Result(Box<CallToolResponse>),
    /// A success that passes the operation's answer on unchanged: its response is the
    /// result's `structuredContent` and its JSON text the one text block. Kept typed, so the
    /// fast path writes the text as it is when it is canonical ([`ops::Success::is_canonical`]).
    Passed(ops::Success),
}

impl ToolAnswer {
    /// A passed answer known by its text, not known to be canonical.
    #[cfg(test)]
    pub(super) fn passed(text: String) -> Self {
        ToolAnswer::Passed(ops::Success::from_text(text))
    }

    /// The result as rmcp takes it (the response as `structuredContent`, its text as the
    /// text block).
    pub(super) fn into_response(self) -> CallToolResponse {
        match self {
            ToolAnswer::Result(result) => *result,
            ToolAnswer::Passed(success) => {
                let (body, text) = success.into_parts();
                success_with_text(body, text).into()
            }
        }
    }
}

/// The tools of `/agent/mcp` and what runs them, built once for the endpoint.
pub(crate) struct ToolRunner<A: App> {
    server: McpState<A>,
    /// The 19 tools and their schemas.
    tools: Arc<ToolCatalog>,
    /// The hosted app's variants as action tools.
    hosted: Arc<ActionCatalog>,
}

impl<A: App> ToolRunner<A> {
    pub(crate) fn new(
        server: McpState<A>,
        tools: Arc<ToolCatalog>,
        hosted: Arc<ActionCatalog>,
    ) -> Self {
        ToolRunner {
            server,
            tools,
            hosted,
        }
    }

    /// The 19 tools.
    pub(super) fn tools(&self) -> &Arc<ToolCatalog> {
        &self.tools
    }

    /// The hosted app's action tools.
    pub(super) fn hosted(&self) -> &Arc<ActionCatalog> {
        &self.hosted
    }

    /// Whether `call` may ask its client to confirm (`McpOptions::confirm_in_client`: a
    /// `send_message` or `do_<action>` call), which only rmcp's handler can: the fast path
    /// steps aside for it.
    pub(super) fn may_ask_client(&self, call: &BoundCall) -> bool {
        self.server.options().mcp.confirm_in_client
            && matches!(
                call,
                BoundCall::Run(Operation::Message, _) | BoundCall::Action(_)
            )
    }

    /// Resolves a call: an unknown name among the 19 tools goes to the action tools; bad
    /// arguments are a refusal. Runs nothing.
    pub(super) fn resolve(&self, request: CallToolRequestParams) -> Result<ToolCall, ErrorData> {
        if !self.tools.declares(&request.name) {
            return Ok(ToolCall::Bound(BoundCall::Action(request)));
        }
        Ok(match self.tools.resolve(request)? {
            ResolvedCall::Refused(refusal) => ToolCall::Bound(BoundCall::Refused(refusal)),
            ResolvedCall::Run(spec, args) => match spec.action {
                ToolAction::Run(op) => ToolCall::Bound(BoundCall::Run(op, args)),
                action => ToolCall::Session(action, args),
            },
        })
    }

    /// Runs `call` for `binding` (`None`: unbound, told how to bind on `generation`), with the
    /// description cache of the session (a fresh one on 2026-07-28). `verified` is the
    /// binding's token record when the admission layer verified its bearer in this request
    /// (2026-07-28): the gate then takes it instead of verifying the bearer again. `asks` says
    /// whether a message to confirm may ask the client's user (`client_confirm`) and what the
    /// client follows of the work its message starts. An `Err` is the JSON-RPC error of an
    /// unknown tool, answered before anything ran.
    pub(super) async fn run(
        &self,
        call: BoundCall,
        binding: Option<BoundToken>,
        verified: Option<TokenRecord>,
        generation: Generation,
        cache: &DescriptionCache,
        asks: ClientAsks<'_>,
    ) -> Result<ToolAnswer, ErrorData> {
        let ClientAsks { in_client, follow } = asks;
        match call {
            BoundCall::Refused(refusal) => Ok(ToolAnswer::Result(Box::new(refusal.into()))),
            BoundCall::Action(request) => {
                let traced = Traced::start(
                    Operation::Message,
                    Via::mcp(generation.label()),
                    self.server.request_metrics(),
                );
                let span = traced.span().clone();
                self.call_action(request, binding, verified, in_client, traced, follow)
                    .instrument(span)
                    .await
            }
            BoundCall::Run(op, args) => {
                let traced = Traced::start(
                    op,
                    Via::mcp(generation.label()),
                    self.server.request_metrics(),
                );
                let span = traced.span().clone();
                let call = Bound {
                    binding,
                    verified,
                    traced,
                    follow,
                };
                let run = self.run_op(op, args, call, generation, cache, in_client);
                Ok(run.instrument(span).await)
            }
        }
    }

    /// Runs operation `op` with `args` for `call`'s binding, as [`Self::run`].
    async fn run_op(
        &self,
        op: Operation,
        args: Map<String, Value>,
        call: Bound,
        generation: Generation,
        cache: &DescriptionCache,
        in_client: &InClient,
    ) -> ToolAnswer {
        let Bound {
            binding,
            verified,
            traced,
            follow,
        } = call;
        match binding {
            None => {
                // No credential: nothing reached the gate.
                traced.answered(StatusCode::UNAUTHORIZED);
                ToolAnswer::Result(Box::new(
                    failure(match generation {
                        Generation::Session => NOT_CONNECTED_SERVER,
                        Generation::Stateless => STATELESS_NEEDS_BEARER,
                    })
                    .into(),
                ))
            }
            Some(binding) if op == Operation::Message && in_client.asks() => {
                let forwarder = self.in_process(&binding, verified, Some(traced), follow);
                let caller = match forwarder.caller().await {
                    Ok(caller) => caller,
                    Err(e) => return ToolAnswer::Result(Box::new(failed(op, &e).into())),
                };
                let body = Value::Object(args);
                match self.send(&forwarder, caller, body, in_client).await {
                    Sent::Answered(answer) => answer,
                    Sent::Outcome(Ok(success)) => ToolAnswer::Passed(success),
                    Sent::Outcome(Err(e)) => ToolAnswer::Result(Box::new(failed(op, &e).into())),
                }
            }
            Some(binding) => {
                let forwarder = self.in_process(&binding, verified, Some(traced), follow);
                let asked = Asked::of(op, &args);
                let answer = self.forward(&forwarder, op, args, cache).await;
                self.within_budget(&asked, answer)
            }
        }
    }

    /// Runs `op` through `forwarder`: [`forward_tool`], but an answer it would pass on
    /// unchanged is not parsed.
    async fn forward(
        &self,
        forwarder: &InProcess<A>,
        op: Operation,
        args: Map<String, Value>,
        cache: &DescriptionCache,
    ) -> ToolAnswer {
        if !passes_on(op) {
            return ToolAnswer::Result(Box::new(
                forward_tool(forwarder, cache, op, args).await.into(),
            ));
        }
        passed_on(op, forwarder.reply(op, Value::Object(args)).await)
    }

    /// Runs operations with `binding`'s token as the credential.
    pub(super) fn forwarder(&self, binding: &BoundToken) -> InProcess<A> {
        self.in_process(binding, None, None, None)
    }

    /// [`Self::forwarder`], whose first operation takes the token record `verified` (the
    /// admission layer verified the binding's bearer to it in this request), in the trace of
    /// `traced` when it runs a tool call; `follow` watches the effects its message starts.
    fn in_process(
        &self,
        binding: &BoundToken,
        verified: Option<TokenRecord>,
        traced: Option<Traced>,
        follow: Option<Arc<DispatchWatch>>,
    ) -> InProcess<A> {
        InProcess::new(self.server.clone(), binding, verified, traced, follow)
    }

    /// `do_<action>`: sends the action's message as `send_message` would. The token's
    /// session is found once, for the catalog the name is resolved in and for the call
    /// (whose rate limit is taken once the name resolved).
    async fn call_action(
        &self,
        request: CallToolRequestParams,
        binding: Option<BoundToken>,
        verified: Option<TokenRecord>,
        in_client: &InClient,
        traced: Traced,
        follow: Option<Arc<DispatchWatch>>,
    ) -> Result<ToolAnswer, ErrorData> {
        let unknown = || {
            // No such tool: no operation ran.
            traced.discard();
            ErrorData::invalid_params(format!("unknown tool: {}", request.name), None)
        };
        let Some(binding) = binding else {
            return Err(unknown());
        };
        if !self.server.options().mcp.action_tools {
            return Err(unknown());
        }
        let forwarder = self.in_process(&binding, verified, Some(traced.clone()), follow);
        let found = match forwarder.caller().await {
            Ok(caller) => {
                let watched = Watched::of(caller);
                catalog(&watched, &self.hosted)
                    .await
                    .map(|catalog| (watched, catalog))
            }
            Err(e) => Err(e),
        };
        let (watched, catalog) = match found {
            Ok(found) => found,
            // As `send_message` would have failed (paused, revoked …).
            Err(e) => {
                let op = Operation::Message;
                let text = forwarded_failure(&request.name, op.lap_path(), &e);
                return Ok(ToolAnswer::Result(Box::new(failure(text).into())));
            }
        };
        let Some(entry) = catalog.find(&request.name) else {
            return Err(unknown());
        };
        let mut body = entry.message_request(request.arguments.unwrap_or_default());
        if !body.is_object() {
            return Err(unknown());
        }
        // A call that shows progress lasts as long as the work it starts, within the
        // longest wait (`docs/mcp.md` §Progress and cancellation).
        if forwarder
            .follow
            .as_ref()
            .is_some_and(|f| f.shows_progress())
        {
            body["waitFor"] = Value::from("drained");
            body["timeoutMs"] = Value::from(self.server.options().max_wait_ms());
        }
        let op = Operation::Message;
        let reader = watched.clone();
        let mut caller = watched.into_caller();
        caller.follow = forwarder.follow.clone();
        let sent = self.send(&forwarder, caller, body, in_client).await;
        let answer = match sent {
            Sent::Answered(answer) => return Ok(answer),
            Sent::Outcome(Ok(success)) => success,
            Sent::Outcome(Err(e)) => {
                return Ok(ToolAnswer::Result(Box::new(failed(op, &e).into())))
            }
        };
        // The state does not offer the action now: nothing was dispatched; the agent is
        // told why and what it may call instead, as a tool error.
        if let Some(detail) = unavailable(&answer) {
            let available = reader.actions().await.unwrap_or_default();
            let refusal = catalog.unavailable(entry, detail.as_deref(), &available);
            return Ok(ToolAnswer::Result(Box::new(refusal.into())));
        }
        let asked = Asked::of(op, &Map::new());
        Ok(self.within_budget(&asked, ToolAnswer::Passed(answer)))
    }

    /// The budget of an answer's text (`McpOptions::result_budget_chars`).
    pub(super) fn budget(&self) -> usize {
        self.server.options().mcp.result_budget_chars
    }

    /// A resource's JSON `text` (the answer of `op`), or its bounded view's when over the
    /// budget.
    pub(super) fn resource_within_budget(&self, op: Operation, success: ops::Success) -> String {
        let budget = self.budget();
        if success.text().len() <= budget {
            return success.into_text();
        }
        let (body, _) = success.into_parts();
        bound(&Asked::of(op, &Map::new()), body, budget).to_string()
    }

    /// `answer`, or its bounded view when its text is over the budget (`docs/mcp.md`
    /// §Answers within a budget). An answer within it is passed on untouched; a tool error
    /// is never over it.
    pub(super) fn within_budget(&self, asked: &Asked, answer: ToolAnswer) -> ToolAnswer {
        let budget = self.budget();
        match answer {
            ToolAnswer::Passed(passed) if passed.text().len() > budget => {
                let (body, _) = passed.into_parts();
                ToolAnswer::Result(Box::new(success(bound(asked, body, budget)).into()))
            }
            ToolAnswer::Result(response) => {
                let mut result = match *response {
                    CallToolResponse::Complete(result) => result,
                    other => return ToolAnswer::Result(Box::new(other)),
                };
                let over = result
                    .content
                    .first()
                    .and_then(|c| c.as_text())
                    .is_some_and(|t| t.text.len() > budget);
                if over && result.is_error != Some(true) {
                    if let Some(body) = result.structured_content.take() {
                        result = success(bound(asked, body, budget));
                    }
                }
                ToolAnswer::Result(Box::new(result.into()))
            }
            answer => answer,
        }
    }

    /// `send_message` of `body` for `caller`. When its client may be asked to confirm
    /// (`client_confirm`), a 2026-07-28 retry answers its `requestState` without sending
    /// anything, and a message that is proposed is proposed at once and its client asked.
    async fn send(
        &self,
        forwarder: &InProcess<A>,
        caller: ops::Caller,
        body: Value,
        in_client: &InClient,
    ) -> Sent {
        let op = Operation::Message;
        if let Some(retry) = in_client.retry() {
            if let Err(e) = ops::take_rate_limit(&self.server, &caller).await {
                forwarder.answered(e.status());
                return Sent::Outcome(Err(e));
            }
            let (_, wait) = client_confirm::at_once(&self.server, body);
            let answer = client_confirm::answer_retry(&self.server, &caller.record, retry, wait);
            return Sent::Answered(ToolAnswer::Result(Box::new(answer.await)));
        }
        if !client_confirm::proposes(in_client, &caller, &self.hosted, &body) {
            return Sent::Outcome(forwarder.call(caller, op, body).await.into_outcome());
        }
        let record = caller.record.clone();
        let (body, wait) = client_confirm::at_once(&self.server, body);
        let success = match forwarder.call(caller, op, body).await.into_outcome() {
            Ok(success) => success,
            Err(e) => return Sent::Outcome(Err(e)),
        };
        let Some(confirm_id) = client_confirm::proposed(&success) else {
            return Sent::Outcome(Ok(success));
        };
        let asked = client_confirm::ask(
            &self.server,
            &self.hosted,
            &record,
            &confirm_id,
            wait,
            in_client,
        );
        Sent::Answered(ToolAnswer::Result(Box::new(asked.await)))
    }
}

/// What [`ToolRunner::send`] did.
enum Sent {
    /// The call's answer, finished (the client was asked, or a retry answered).
    Answered(ToolAnswer),
    /// The message's answer as the gate gave it.
    Outcome(ops::Outcome),
}

/// `Some(detail)` when `answer` is `send_message`'s `{"status":"rejected","reason":
/// "unavailable"}` (`docs/semantics.md` §5.1 step 3). Only an answer that names the reason is
/// read.
fn unavailable(answer: &ops::Success) -> Option<Option<String>> {
    if !answer.text().contains("\"unavailable\"") {
        return None;
    }
    let value: Value = serde_json::from_str(answer.text()).ok()?;
    let refused = value.get("status").and_then(Value::as_str) == Some("rejected")
        && value.get("reason").and_then(Value::as_str) == Some("unavailable");
    refused.then(|| {
        value
            .get("detail")
            .and_then(Value::as_str)
            .map(str::to_owned)
    })
}

/// The answer of `op` (one [`passes_on`]) of `reply`: passed on unchanged on success, else
/// its tool error.
fn passed_on(op: Operation, reply: ops::Reply) -> ToolAnswer {
    match reply.into_outcome() {
        Ok(success) => ToolAnswer::Passed(success),
        Err(e) => ToolAnswer::Result(Box::new(failed(op, &e).into())),
    }
}

/// A tool call's binding, the record the admission layer verified, and its trace.
struct Bound {
    binding: Option<BoundToken>,
    verified: Option<TokenRecord>,
    traced: Traced,
    follow: Option<Arc<DispatchWatch>>,
}
