//! The bound on anonymous mints per client address (`docs/security.md` §Rate limits): a mint
//! by a caller without an identity (it gets a new `anon-…` one) or with an anonymous one takes
//! a token of its address's bucket (`ServerOptions::anonymous_mint_rate`). Anonymous
//! identities are free, so neither the per-identity mint bucket nor the per-owner session cap
//! bounds one visitor.

use axum::http::request::Parts;

use crate::app::App;
use crate::ops::error::ApiError;
use crate::ops::ServerState;
use crate::security::{is_anonymous, request_client_address, AuditEntry, Bucket, Refusal};

/// Takes one anonymous mint of the caller's address when `identity` is anonymous (or none);
/// 429 `rate-limited` with `retryAfterMs`, audited, past the bucket.
pub(super) async fn check<A: App>(
    server: &ServerState<A>,
    parts: &Parts,
    identity: Option<&str>,
    now: u64,
) -> Result<(), ApiError> {
    if identity.is_some_and(|uid| !is_anonymous(uid)) {
        return Ok(());
    }
    let address = request_client_address(parts, server.options().trust_proxy);
    if let Err(refused) = server.take_anonymous_mint(&address).await {
        let Refusal::Limited(limited) = refused else {
            return Err(refused.into());
        };
        crate::telemetry::rate_limited(Bucket::Mint.as_str());
        let mut entry = AuditEntry::rate_limited(now, identity, "/agent/mint");
        entry.detail["reason"] = "anonymous mints per address".into();
        server.audit(entry).await;
        return Err(ApiError::from(limited).with_detail(format!(
            "anonymous mints from one address are limited to {}",
            server.options().anonymous_mint_rate
        )));
    }
    Ok(())
}
