//! The relay to a paired app as a [`SessionBackend`] (`docs/pairing.md` §LAP → frames): each
//! operation is one of `super::paired`'s (or `super::paired_proposals`'), its answer relayed
//! as the app sent it (never canonical: the text is the app's).

use serde::Serialize;
use tea_agent_schema::protocol::{
    CancelRequest, ConfirmResultRequest, EmptyRequest, LogEntry, MessageRequest, NarrateRequest,
    QueryDomRequest, QueryStateRequest, RecentActionsRequest, StateRequest, WaitRequest,
    WithdrawRequest, WouldDispatchRequest,
};

#[cfg(feature = "mcp")]
use futures::future::BoxFuture;
#[cfg(feature = "mcp")]
use tea_agent_schema::protocol::{Action, ActionsResponse};

#[cfg(feature = "mcp")]
use super::backend::Change;
use super::backend::{Served, SessionBackend};
use super::context::{AnswerResult, Call};
use super::paired::{self, Relaying};
use super::paired_proposals;
use super::state::ServerState;
use super::ApiError;
#[cfg(feature = "mcp")]
use super::Operation;
use crate::app::App;
use crate::engine::paired::frames::Raw;
use crate::engine::session::keyed::KeyedDispatch;
use crate::security::TokenRecord;

/// The relay to the paired app of a token, over the server's hub.
pub(crate) struct PairedRelay<A: App> {
    server: ServerState<A>,
}

impl<A: App> PairedRelay<A> {
    /// The relay over `server`'s hub.
    pub(crate) fn new(server: ServerState<A>) -> Self {
        PairedRelay { server }
    }

    /// The relayed call of `call`.
    fn relaying<'a>(&'a self, call: &'a Call<'a>) -> Relaying<'a, A> {
        Relaying {
            server: &self.server,
            record: call.record,
            spec: call.spec,
            args: &call.args,
            // Only a `/message` sends an rpc whose work the app follows.
            follow: call
                .follow
                .clone()
                .filter(|_| call.spec.tool == crate::ops::Operation::Message.tool()),
        }
    }

    /// Runs `op` on the relayed call of `call` and serializes its answer (not canonical).
    fn served<'a, R, F>(
        &'a self,
        call: &'a Call<'a>,
        op: impl FnOnce(Relaying<'a, A>) -> F + Send + 'a,
    ) -> Served<'a>
    where
        R: Serialize + Send + Sync + 'static,
        F: std::future::Future<Output = AnswerResult<R>> + Send + 'a,
    {
        let relaying = self.relaying(call);
        Box::pin(async move { op(relaying).await?.serialize(call.spec.tool, false) })
    }
}

/// Forwards each operation to its relay function, which takes the relayed call by reference.
macro_rules! relay {
    ($self:ident, $call:ident, $request:ident, $f:path) => {
        $self.served($call, move |relaying| async move {
            $f(&relaying, $request).await
        })
    };
}

/// `/cancel`: relayed as the `rpc` `cancel_work` with the body as it came; the app decides
/// (`docs/pairing.md`). Its refusal of work the agent did not start is the 403 a hosted
/// session answers.
async fn cancel<A: App>(call: &Relaying<'_, A>, _: CancelRequest) -> AnswerResult<Raw> {
    paired::forward(call, call.args.clone())
        .await
        .map_err(|e| match e.is_relayed("forbidden") {
            true => ApiError::forbidden(e.into_detail().unwrap_or_default()),
            false => e,
        })
}

impl<A: App> SessionBackend for PairedRelay<A> {
    fn observe<'a>(&'a self, call: &'a Call<'a>, request: EmptyRequest) -> Served<'a> {
        relay!(self, call, request, paired::observe)
    }

    fn describe<'a>(&'a self, call: &'a Call<'a>, request: EmptyRequest) -> Served<'a> {
        relay!(self, call, request, paired::describe)
    }

    fn state<'a>(&'a self, call: &'a Call<'a>, request: StateRequest) -> Served<'a> {
        relay!(self, call, request, paired::state)
    }

    fn query_state<'a>(&'a self, call: &'a Call<'a>, request: QueryStateRequest) -> Served<'a> {
        relay!(self, call, request, paired::query_state)
    }

    fn recent_actions<'a>(
        &'a self,
        call: &'a Call<'a>,
        request: RecentActionsRequest,
    ) -> Served<'a> {
        relay!(self, call, request, paired::recent_actions)
    }

    fn would_dispatch<'a>(
        &'a self,
        call: &'a Call<'a>,
        request: WouldDispatchRequest,
    ) -> Served<'a> {
        relay!(self, call, request, paired::would_dispatch)
    }

    fn actions<'a>(&'a self, call: &'a Call<'a>, request: EmptyRequest) -> Served<'a> {
        relay!(self, call, request, paired::actions)
    }

    fn message<'a>(
        &'a self,
        call: &'a Call<'a>,
        request: MessageRequest,
        _: Option<KeyedDispatch>,
    ) -> Served<'a> {
        relay!(self, call, request, paired::message)
    }

    fn confirm_result<'a>(
        &'a self,
        call: &'a Call<'a>,
        request: ConfirmResultRequest,
    ) -> Served<'a> {
        relay!(self, call, request, paired::confirm_result)
    }

    fn wait<'a>(&'a self, call: &'a Call<'a>, request: WaitRequest) -> Served<'a> {
        relay!(self, call, request, paired::wait)
    }

    fn narrate<'a>(&'a self, call: &'a Call<'a>, request: NarrateRequest) -> Served<'a> {
        relay!(self, call, request, paired::narrate)
    }

    fn query_dom<'a>(&'a self, call: &'a Call<'a>, request: QueryDomRequest) -> Served<'a> {
        relay!(self, call, request, paired::query_dom)
    }

    fn describe_visible<'a>(&'a self, call: &'a Call<'a>, request: EmptyRequest) -> Served<'a> {
        relay!(self, call, request, paired::describe_visible)
    }

    fn context<'a>(&'a self, call: &'a Call<'a>, request: EmptyRequest) -> Served<'a> {
        relay!(self, call, request, paired::context)
    }

    fn pending<'a>(&'a self, call: &'a Call<'a>, request: EmptyRequest) -> Served<'a> {
        relay!(self, call, request, paired_proposals::pending)
    }

    fn withdraw<'a>(&'a self, call: &'a Call<'a>, request: WithdrawRequest) -> Served<'a> {
        relay!(self, call, request, paired_proposals::withdraw)
    }

    fn cancel<'a>(&'a self, call: &'a Call<'a>, request: CancelRequest) -> Served<'a> {
        relay!(self, call, request, cancel)
    }

    fn is_relay(&self) -> bool {
        true
    }

    fn append_log(&self, _: LogEntry) {}

    fn activated(&self, record: &TokenRecord) {
        paired::activated(&self.server, record);
    }

    #[cfg(feature = "mcp")]
    fn next_change<'a>(
        &'a self,
        record: &'a TokenRecord,
        timeout: std::time::Duration,
    ) -> BoxFuture<'a, Result<Change, ApiError>> {
        Box::pin(async move {
            let hub = &self.server.pairing().hub;
            match hub.wait_change(&record.tid, None, timeout).await {
                Ok(Some(_)) => Ok(Change::Changed),
                Ok(None) => Ok(Change::Quiet),
                Err(_) => Err(ApiError::paused()),
            }
        })
    }

    #[cfg(feature = "mcp")]
    fn available_actions<'a>(
        &'a self,
        record: &'a TokenRecord,
    ) -> BoxFuture<'a, Result<Vec<Action>, ApiError>> {
        Box::pin(async move {
            let call = self.watching(record, Operation::Actions);
            let answer = paired::actions(&call, EmptyRequest {}).await?;
            serde_json::from_str::<ActionsResponse>(answer.body.get())
                .map(|r| r.actions.actions())
                .map_err(|e| ApiError::internal(format!("the app's actions: {e}")))
        })
    }

    #[cfg(feature = "mcp")]
    fn description<'a>(
        &'a self,
        record: &'a TokenRecord,
    ) -> BoxFuture<'a, Result<serde_json::Value, ApiError>> {
        Box::pin(async move {
            let call = self.watching(record, Operation::Describe);
            let answer = paired::describe(&call, EmptyRequest {}).await?;
            serde_json::from_str(answer.body.get())
                .map_err(|e| ApiError::internal(format!("the app's description: {e}")))
        })
    }
}

#[cfg(feature = "mcp")]
impl<A: App> PairedRelay<A> {
    /// A relayed call of `op` with no arguments, for a watcher (not a call of the gate).
    fn watching<'a>(&'a self, record: &'a TokenRecord, op: Operation) -> Relaying<'a, A> {
        static NO_ARGS: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
        Relaying {
            server: &self.server,
            record,
            spec: op.spec(),
            args: NO_ARGS.get_or_init(|| serde_json::Value::Object(Default::default())),
            follow: None,
        }
    }
}
