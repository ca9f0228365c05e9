//! A session of this process as a [`SessionBackend`]: each operation one of
//! [`HostedSession`]'s methods (`super::hosted`), its typed answer serialized here, so its text
//! is serde_json's (canonical).

use serde::Serialize;
use tea_agent_schema::protocol::{
    CancelRequest, ConfirmResultRequest, EmptyRequest, LogEntry, MessageRequest, NarrateRequest,
    QueryDomRequest, QueryStateRequest, RecentActionsRequest, StateRequest, WaitRequest,
    WithdrawRequest, WouldDispatchRequest,
};

#[cfg(feature = "mcp")]
use futures::future::BoxFuture;
#[cfg(feature = "mcp")]
use tea_agent_schema::protocol::Action;

use super::backend::{Served, SessionBackend};
use super::context::{AnswerResult, Call};
use super::hosted::{Asking, HostedSession};
#[cfg(feature = "mcp")]
use super::ApiError;
use crate::app::App;
use crate::engine::session::keyed::KeyedDispatch;
#[cfg(feature = "mcp")]
use crate::engine::session::SessionError;
use crate::security::TokenRecord;

/// A hosted answer, serialized: its text is serde_json's of values made here (canonical).
fn served<'a, R: Serialize + Send + Sync + 'static>(
    call: &'a Call<'a>,
    answer: impl std::future::Future<Output = AnswerResult<R>> + Send + 'a,
) -> Served<'a> {
    Box::pin(async move { answer.await?.serialize(call.spec.tool, true) })
}

impl<A: App> SessionBackend for HostedSession<A> {
    fn observe<'a>(&'a self, call: &'a Call<'a>, _: EmptyRequest) -> Served<'a> {
        served(call, self.observe(Asking::of(call)))
    }

    fn describe<'a>(&'a self, call: &'a Call<'a>, _: EmptyRequest) -> Served<'a> {
        served(call, self.describe(Asking::of(call)))
    }

    fn state<'a>(&'a self, call: &'a Call<'a>, request: StateRequest) -> Served<'a> {
        served(call, async move {
            Ok(self.state_anywhere(Asking::of(call), request).await)
        })
    }

    fn query_state<'a>(&'a self, call: &'a Call<'a>, request: QueryStateRequest) -> Served<'a> {
        served(call, async move {
            Ok(self.query_state(Asking::of(call), request))
        })
    }

    fn recent_actions<'a>(
        &'a self,
        call: &'a Call<'a>,
        request: RecentActionsRequest,
    ) -> Served<'a> {
        served(call, self.recent_actions(Asking::of(call), request))
    }

    fn would_dispatch<'a>(
        &'a self,
        call: &'a Call<'a>,
        request: WouldDispatchRequest,
    ) -> Served<'a> {
        served(call, async move {
            self.would_dispatch(Asking::of(call), request)
        })
    }

    fn actions<'a>(&'a self, call: &'a Call<'a>, _: EmptyRequest) -> Served<'a> {
        served(call, async move { self.actions(Asking::of(call)) })
    }

    fn message<'a>(
        &'a self,
        call: &'a Call<'a>,
        request: MessageRequest,
        key: Option<KeyedDispatch>,
    ) -> Served<'a> {
        served(call, self.message(call, request, key))
    }

    fn confirm_result<'a>(
        &'a self,
        call: &'a Call<'a>,
        request: ConfirmResultRequest,
    ) -> Served<'a> {
        served(call, self.confirm_result(call, request))
    }

    fn wait<'a>(&'a self, call: &'a Call<'a>, request: WaitRequest) -> Served<'a> {
        served(call, self.wait(call, request))
    }

    fn narrate<'a>(&'a self, call: &'a Call<'a>, request: NarrateRequest) -> Served<'a> {
        served(call, self.narrate(call, request))
    }

    fn query_dom<'a>(&'a self, call: &'a Call<'a>, request: QueryDomRequest) -> Served<'a> {
        served(
            call,
            async move { self.query_dom(Asking::of(call), request) },
        )
    }

    fn describe_visible<'a>(&'a self, call: &'a Call<'a>, _: EmptyRequest) -> Served<'a> {
        served(call, async move { self.describe_visible(Asking::of(call)) })
    }

    fn context<'a>(&'a self, call: &'a Call<'a>, _: EmptyRequest) -> Served<'a> {
        served(call, async move { self.context(Asking::of(call)) })
    }

    fn pending<'a>(&'a self, call: &'a Call<'a>, _: EmptyRequest) -> Served<'a> {
        served(call, self.pending(call))
    }

    fn withdraw<'a>(&'a self, call: &'a Call<'a>, request: WithdrawRequest) -> Served<'a> {
        served(call, self.withdraw(call, request))
    }

    fn cancel<'a>(&'a self, call: &'a Call<'a>, request: CancelRequest) -> Served<'a> {
        served(call, super::cancel::hosted(&self.session, call, request))
    }

    fn is_relay(&self) -> bool {
        false
    }

    fn append_log(&self, entry: LogEntry) {
        self.session.append_log(entry);
    }

    fn records_transcript(&self) -> bool {
        self.session.records_transcript()
    }

    fn record_call(&self, call: crate::engine::session::CallRecord) {
        self.session.record_call(call);
    }

    fn activated(&self, _: &TokenRecord) {}

    #[cfg(feature = "mcp")]
    fn next_change<'a>(
        &'a self,
        _: &'a TokenRecord,
        timeout: std::time::Duration,
    ) -> BoxFuture<'a, Result<super::backend::Change, ApiError>> {
        use super::backend::Change;
        Box::pin(async move {
            let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
            match self.session.wait_for_change(None, ms).await {
                Ok(w) if w.state_after.is_null() => Ok(Change::Quiet),
                Ok(_) => Ok(Change::Changed),
                Err(_) => Err(ApiError::paused()),
            }
        })
    }

    #[cfg(feature = "mcp")]
    fn available_actions<'a>(
        &'a self,
        _: &'a TokenRecord,
    ) -> BoxFuture<'a, Result<Vec<Action>, ApiError>> {
        let actions = self.session.list_actions().map_err(|e| match e {
            SessionError::Closed => ApiError::paused(),
            other => ApiError::internal(other.to_string()),
        });
        Box::pin(std::future::ready(actions))
    }

    #[cfg(feature = "mcp")]
    fn description<'a>(
        &'a self,
        _: &'a TokenRecord,
    ) -> BoxFuture<'a, Result<serde_json::Value, ApiError>> {
        Box::pin(std::future::ready(Ok(self.host.describe().clone())))
    }
}
