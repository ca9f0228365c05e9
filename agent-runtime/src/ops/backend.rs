//! What answers the operations of one token's session, whatever kind it is: [`SessionBackend`],
//! implemented by a session hosted in this process (`super::hosted::HostedSession`) and by the
//! relay to a paired app (`super::paired_backend::PairedRelay`). The table names each
//! operation's method once (`super::table`); the gate holds the backend as an
//! `Arc<dyn SessionBackend>`, so a [`Caller`] carries no app type.

use std::sync::Arc;

use futures::future::BoxFuture;
use tea_agent_schema::protocol::{
    CancelRequest, ConfirmResultRequest, EmptyRequest, LogEntry, MessageRequest, NarrateRequest,
    QueryDomRequest, QueryStateRequest, RecentActionsRequest, StateRequest, WaitRequest,
    WithdrawRequest, WouldDispatchRequest,
};

use super::context::{Call, ProposalSlot, Serialized};
use super::error::ApiError;
use crate::engine::session::keyed::KeyedDispatch;
use crate::engine::session::progress::DispatchWatch;
use crate::engine::session::CallRecord;
use crate::security::TokenRecord;

/// A caller the gate admitted: its token record and what answers for the token's session.
pub(crate) struct Caller {
    /// The token record, as verified.
    pub(crate) record: TokenRecord,
    /// The session's backend: a hosted session or the relay to a paired app.
    pub(crate) backend: Arc<dyn SessionBackend>,
    /// What the surface follows of the effects the call's `/message` starts, if it does.
    pub(crate) follow: Option<Arc<DispatchWatch>>,
    /// Where the call's dispatch writes its proposal, when the call is recorded
    /// (`super::transcript`).
    pub(crate) proposed: Option<ProposalSlot>,
}

/// An operation's answer, serialized, as a backend's method returns it.
pub(crate) type Served<'a> = BoxFuture<'a, Result<Serialized, ApiError>>;

/// What a change wait saw (`super::watch`).
#[cfg(feature = "mcp")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// The state changed.
    Changed,
    /// Nothing changed within the wait.
    Quiet,
}

/// One token's session as the operations see it: one method per operation of the table
/// (`docs/lap.md` §5.3), each taking the call and the typed request, plus what the gate and
/// the watchers need of it. The answers are serialized by the backend, which knows whether its
/// text is canonical (made here) or relayed as a paired app sent it.
pub(crate) trait SessionBackend: Send + Sync {
    /// `/observe`.
    fn observe<'a>(&'a self, call: &'a Call<'a>, request: EmptyRequest) -> Served<'a>;
    /// `/describe`.
    fn describe<'a>(&'a self, call: &'a Call<'a>, request: EmptyRequest) -> Served<'a>;
    /// `/state`.
    fn state<'a>(&'a self, call: &'a Call<'a>, request: StateRequest) -> Served<'a>;
    /// `/query-state`.
    fn query_state<'a>(&'a self, call: &'a Call<'a>, request: QueryStateRequest) -> Served<'a>;
    /// `/recent-actions`.
    fn recent_actions<'a>(
        &'a self,
        call: &'a Call<'a>,
        request: RecentActionsRequest,
    ) -> Served<'a>;
    /// `/would-dispatch`.
    fn would_dispatch<'a>(
        &'a self,
        call: &'a Call<'a>,
        request: WouldDispatchRequest,
    ) -> Served<'a>;
    /// `/actions`.
    fn actions<'a>(&'a self, call: &'a Call<'a>, request: EmptyRequest) -> Served<'a>;
    /// `/message`; `key` is the `idempotencyKey` claimed in a durable store, for the commit of
    /// a hosted session's dispatch to record (`super::keyed`). A paired app commits on its
    /// side: no commit here records a key (`docs/lap.md` §5.7).
    fn message<'a>(
        &'a self,
        call: &'a Call<'a>,
        request: MessageRequest,
        key: Option<KeyedDispatch>,
    ) -> Served<'a>;
    /// `/confirm-result`.
    fn confirm_result<'a>(
        &'a self,
        call: &'a Call<'a>,
        request: ConfirmResultRequest,
    ) -> Served<'a>;
    /// `/wait`.
    fn wait<'a>(&'a self, call: &'a Call<'a>, request: WaitRequest) -> Served<'a>;
    /// `/narrate`.
    fn narrate<'a>(&'a self, call: &'a Call<'a>, request: NarrateRequest) -> Served<'a>;
    /// `/query-dom`.
    fn query_dom<'a>(&'a self, call: &'a Call<'a>, request: QueryDomRequest) -> Served<'a>;
    /// `/describe-visible`.
    fn describe_visible<'a>(&'a self, call: &'a Call<'a>, request: EmptyRequest) -> Served<'a>;
    /// `/context`.
    fn context<'a>(&'a self, call: &'a Call<'a>, request: EmptyRequest) -> Served<'a>;
    /// `/pending`.
    fn pending<'a>(&'a self, call: &'a Call<'a>, request: EmptyRequest) -> Served<'a>;
    /// `/withdraw`.
    fn withdraw<'a>(&'a self, call: &'a Call<'a>, request: WithdrawRequest) -> Served<'a>;
    /// `/cancel`.
    fn cancel<'a>(&'a self, call: &'a Call<'a>, request: CancelRequest) -> Served<'a>;

    /// Whether the operations are relayed to an app that runs elsewhere (a paired session),
    /// which then reads the request body as it came ([`Call::args`]).
    fn is_relay(&self) -> bool;

    /// Whether the session keeps a transcript of its agents' calls (a hosted session's, when
    /// `HostConfig::transcripts` is on; a paired app's runs elsewhere).
    fn records_transcript(&self) -> bool {
        false
    }

    /// Records a call in the session's transcript (`super::transcript`).
    fn record_call(&self, _call: CallRecord) {}

    /// Appends `entry` to the session's activity log when this process keeps it (a hosted
    /// session's); a paired app keeps its own log.
    fn append_log(&self, entry: LogEntry);

    /// The first success of `record` activated the token: a paired app is told (`active`).
    fn activated(&self, record: &TokenRecord);

    /// Waits up to `timeout` for the session's next state change (`super::watch`).
    #[cfg(feature = "mcp")]
    fn next_change<'a>(
        &'a self,
        record: &'a TokenRecord,
        timeout: std::time::Duration,
    ) -> BoxFuture<'a, Result<Change, ApiError>>;

    /// The actions available now, as `/actions` answers them (`super::watch`).
    #[cfg(feature = "mcp")]
    fn available_actions<'a>(
        &'a self,
        record: &'a TokenRecord,
    ) -> BoxFuture<'a, Result<Vec<tea_agent_schema::protocol::Action>, ApiError>>;

    /// The app description, as `/describe` answers it (`super::watch`).
    #[cfg(feature = "mcp")]
    fn description<'a>(
        &'a self,
        record: &'a TokenRecord,
    ) -> BoxFuture<'a, Result<serde_json::Value, ApiError>>;
}
