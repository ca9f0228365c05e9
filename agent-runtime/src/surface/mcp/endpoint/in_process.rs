//! Operations run through the gate in-process for an MCP binding ([`InProcess`]): the bound
//! token is the credential (the raw bearer when known, else its id), the record the admission
//! layer verified is taken by the first operation, and the gate's answers reach the tool call's
//! trace.

use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use serde_json::Value;

use super::bound_token::BoundToken;
use super::McpState;
use crate::app::App;
use crate::engine::session::progress::DispatchWatch;
use crate::ops::traced::Traced;
use crate::ops::{self, ApiError, Operation};
use crate::security::TokenRecord;
use crate::surface::mcp::forward::Forwarder;

/// Runs operations through the gate in-process, with the bound token as the credential.
pub(super) struct InProcess<A: App> {
    server: McpState<A>,
    /// `Bearer agt_…`; `None` for a binding rebuilt without the raw token.
    authorization: Option<String>,
    /// The bound token's id: the trusted credential when the raw token is not known.
    tid: String,
    /// The token's record as the admission layer verified the bearer in this request: taken
    /// by the first operation instead of verifying the bearer again.
    verified: Mutex<Option<TokenRecord>>,
    /// The trace of the tool call it runs, if it runs one.
    traced: Option<Traced>,
    /// What the tool call follows of the effects its message starts.
    pub(super) follow: Option<Arc<DispatchWatch>>,
}

impl<A: App> InProcess<A> {
    /// Runs operations for `binding` on `server`; the first takes the token record `verified`
    /// (the admission layer verified the binding's bearer to it in this request), in the trace
    /// `traced` when it runs a tool call; `follow` watches the effects its message starts.
    pub(super) fn new(
        server: McpState<A>,
        binding: &BoundToken,
        verified: Option<TokenRecord>,
        traced: Option<Traced>,
        follow: Option<Arc<DispatchWatch>>,
    ) -> Self {
        InProcess {
            server,
            authorization: binding.token.as_ref().map(|t| format!("Bearer {t}")),
            tid: binding.tid.clone(),
            verified: Mutex::new(verified),
            traced,
            follow,
        }
    }

    /// The caller of the gate: the credential verified (or the record verified in this
    /// request) and its session found, without the rate limit.
    pub(super) async fn caller(&self) -> Result<ops::Caller, ApiError> {
        let verified = self
            .verified
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let found = match verified {
            Some(record) => ops::caller_of(&self.server, record).await,
            None => {
                let credential = match &self.authorization {
                    Some(authorization) => ops::Credential::McpBearer(Some(authorization)),
                    None => ops::Credential::Tid(&self.tid),
                };
                ops::find_caller(&self.server, credential).await
            }
        };
        if let Some(traced) = &self.traced {
            match &found {
                Ok(caller) => traced.caller(&caller.record),
                Err(e) => traced.answered(e.status()),
            }
        }
        found.map(|mut caller| {
            caller.follow = self.follow.clone();
            caller
        })
    }

    /// The gate answered `status` to the tool call this runs.
    pub(super) fn answered(&self, status: StatusCode) {
        if let Some(traced) = &self.traced {
            traced.answered(status);
        }
    }

    /// The operation's reply, as the gate answers it.
    pub(super) async fn reply(&self, op: Operation, body: Value) -> ops::Reply {
        match self.caller().await {
            Ok(caller) => self.call(caller, op, body).await,
            Err(e) => ops::Reply::error(e),
        }
    }

    /// `op` for `caller`, from the rate limit on.
    pub(super) async fn call(&self, caller: ops::Caller, op: Operation, body: Value) -> ops::Reply {
        let reply = match ops::take_rate_limit(&self.server, &caller).await {
            Ok(()) => ops::perform(&self.server, caller, op, body).await,
            Err(e) => ops::Reply::error(e),
        };
        self.answered(reply.status());
        reply
    }
}

impl<A: App> Forwarder for InProcess<A> {
    async fn post(&self, op: Operation, body: Value) -> ops::Outcome {
        self.reply(op, body).await.into_outcome()
    }
}
