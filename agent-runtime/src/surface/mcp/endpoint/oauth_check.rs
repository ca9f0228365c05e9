//! `/agent/mcp` as an OAuth resource server (feature `oauth`, `docs/mcp.md` §Authorization):
//! a request without a credential is answered 401 with the challenge that tells the client
//! where the protected resource metadata is; an access token is verified on every request,
//! renews the bearer of the session it is bound to, and a `tools/call` it has no scope for
//! is answered 403 `insufficient_scope` with the scope to ask for (step-up).

use axum::body::Body;
use axum::http::{header, request::Parts, HeaderValue, Method, Response, StatusCode};
use axum::response::IntoResponse as _;
use serde::Deserialize;
use serde_json::json;

use super::request_kind::Kind;
use super::McpState;
use crate::app::App;
use crate::ops::Operation;
use crate::security::{request_client_address, scopes, AuditEntry, AuditEvent, AuthError, Scope};
use crate::surface::mcp::MCP_PATH;

use crate::security::oauth::RESOURCE_METADATA_PATH;

fn issuer<A: App>(server: &McpState<A>, parts: &Parts) -> String {
    server.oauth_issuer(parts)
}

/// `Bearer resource_metadata="…", scope="…"`, plus `error="…"` when given.
fn challenge<A: App>(server: &McpState<A>, parts: &Parts, error: Option<&str>) -> HeaderValue {
    let all = Scope::ALL.map(Scope::as_str).join(" ");
    let mut value = format!(
        "Bearer resource_metadata=\"{}{RESOURCE_METADATA_PATH}\", scope=\"{all}\"",
        issuer(server, parts)
    );
    if let Some(error) = error {
        value.push_str(&format!(", error=\"{error}\""));
    }
    // The issuer is an origin (checked, or the request's, whose `Host` was allowed).
    HeaderValue::try_from(value).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
}

/// 401 with the challenge (RFC 9728 §5.1, RFC 6750 §3).
fn unauthorized<A: App>(
    server: &McpState<A>,
    parts: &Parts,
    error: Option<&str>,
) -> Response<Body> {
    let detail = match error {
        Some(_) => {
            "the access token is unknown, expired or revoked: refresh it or ask for consent again"
        }
        None => "this server takes OAuth: follow the resource_metadata of WWW-Authenticate",
    };
    let body = json!({"error": {"code": "auth-failed", "detail": detail}}).to_string();
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::UNAUTHORIZED;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::WWW_AUTHENTICATE, challenge(server, parts, error));
    response
}

/// Adds the challenge to a 401 of the endpoint that has none.
pub(super) fn challenge_401<A: App>(
    server: &McpState<A>,
    parts: &Parts,
    response: &mut Response<Body>,
) {
    if server.oauth().is_none()
        || response.status() != StatusCode::UNAUTHORIZED
        || response.headers().contains_key(header::WWW_AUTHENTICATE)
    {
        return;
    }
    let error = parts
        .headers
        .contains_key(header::AUTHORIZATION)
        .then_some("invalid_token");
    let value = challenge(server, parts, error);
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, value);
}

/// The tool a `tools/call` names.
#[derive(Deserialize)]
struct NamedCall<'a> {
    #[serde(borrow)]
    params: Named<'a>,
}

#[derive(Deserialize)]
struct Named<'a> {
    #[serde(borrow)]
    name: std::borrow::Cow<'a, str>,
}

/// The scope a `tools/call` body needs: its operation's, `app:act` for an action tool;
/// `None` for the session tools and names that are no tool (answered as the tool error).
fn needed_scope(body: &[u8]) -> Option<Scope> {
    let call: NamedCall<'_> = serde_json::from_slice(body).ok()?;
    let name = call.params.name;
    match Operation::from_tool(&name) {
        Some(op) => Some(op.spec().scope),
        None if name.starts_with("do_") => Some(Scope::Act),
        None => None,
    }
}

/// The OAuth rules of a request, before the session rules: `Some` is the answer (401, 403),
/// `None` lets the request on.
pub(super) async fn check<A: App>(
    server: &McpState<A>,
    parts: &Parts,
    body: &[u8],
    kind: Kind,
    session: Option<&str>,
) -> Option<Response<Body>> {
    server.oauth()?;
    let authorization = parts
        .headers
        .get(header::AUTHORIZATION)
        .map(|a| a.to_str().unwrap_or_default());
    let Some(authorization) = authorization else {
        let bound_by_oauth = session
            .and_then(|id| server.mcp_sessions().bound_token(id))
            .is_some_and(|b| b.token.as_deref().is_some_and(is_access_token_text));
        let opens_unauthenticated = session.is_none()
            && parts.method == Method::POST
            && !matches!(kind, Kind::Discover)
            && !server.options().oauth.tokenless_sessions;
        return (bound_by_oauth || opens_unauthenticated)
            .then(|| unauthorized(server, parts, None));
    };
    if !crate::security::oauth::is_access_token(Some(authorization)) {
        // An `agt_` bearer: the session rules as before (its scopes, if any, at the gate).
        return None;
    }
    let address = request_client_address(parts, server.options().trust_proxy);
    if let Err(limited) = server.auth_blocked_by(|| address.clone()) {
        return Some(crate::ops::ApiError::from(limited).into_response());
    }
    let record = match crate::ops::verify_mcp_bearer(server, Some(authorization)).await {
        Ok(record) => record,
        Err(AuthError::StoreFailed) => {
            return Some(crate::ops::ApiError::from(AuthError::StoreFailed).into_response())
        }
        Err(e) => {
            let detail = json!({"endpoint": MCP_PATH, "code": e.code().as_str(), "oauth": true});
            let entry = AuditEntry::new(server.now(), AuditEvent::AuthFailed, detail);
            server.auth_failed(&address, MCP_PATH, Some(entry)).await;
            return Some(unauthorized(server, parts, Some("invalid_token")));
        }
    };
    if let Some(id) = session {
        let token = authorization.strip_prefix("Bearer ").unwrap_or_default();
        let sessions = server.mcp_sessions();
        if sessions.is_live(id) && !sessions.renew_bearer(id, &record.tid, token) {
            // Another grant's token, or a session bound otherwise.
            return Some(unauthorized(server, parts, Some("invalid_token")));
        }
    }
    if matches!(kind, Kind::ToolCall) {
        if let Some(needed) = needed_scope(body) {
            if !scopes::allows(record.scope.as_deref(), needed) {
                return Some(insufficient_scope(server, parts, needed, &record.tid).await);
            }
        }
    }
    None
}

fn is_access_token_text(token: &str) -> bool {
    crate::security::oauth::is_access_token(Some(&format!("Bearer {token}")))
}

/// 403 `insufficient_scope` naming the scope to ask for (MCP authorization §Scope challenge
/// handling), audited as a refusal.
async fn insufficient_scope<A: App>(
    server: &McpState<A>,
    parts: &Parts,
    needed: Scope,
    tid: &str,
) -> Response<Body> {
    let entry = AuditEntry::new(
        server.now(),
        AuditEvent::OauthRefused,
        json!({"endpoint": MCP_PATH, "error": "insufficient_scope", "scope": needed.as_str()}),
    )
    .with_tid(tid.to_owned());
    server.audit(entry).await;
    let value = format!(
        "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{}{RESOURCE_METADATA_PATH}\"",
        needed.as_str(),
        issuer(server, parts)
    );
    let body = json!({"error": {"code": "forbidden", "detail": format!(
        "insufficient_scope: this call needs the scope {}, which the grant does not hold", needed.as_str())}});
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = StatusCode::FORBIDDEN;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Ok(v) = HeaderValue::try_from(value) {
        headers.insert(header::WWW_AUTHENTICATE, v);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resource_is_this_endpoint() {
        assert_eq!(crate::security::oauth::RESOURCE_PATH, MCP_PATH);
    }

    #[test]
    fn the_scope_a_tool_call_needs() {
        let call = |name: &str| {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": name, "arguments": {}}});
            needed_scope(body.to_string().as_bytes())
        };
        assert_eq!(call("observe"), Some(Scope::Read));
        assert_eq!(call("get_state"), Some(Scope::Read));
        assert_eq!(call("send_message"), Some(Scope::Act));
        assert_eq!(call("cancel_work"), Some(Scope::Act));
        assert_eq!(call("do_add_todo"), Some(Scope::Act));
        assert_eq!(call("connect_session"), None);
        assert_eq!(needed_scope(b"not json"), None);
    }
}
