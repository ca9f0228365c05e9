//! `/agent/oauth/authorize`: the person consents (OAuth 2.1 §4.1.1, RFC 9207).
//!
//! GET checks the request and shows the consent page to the person identified as in the
//! console (the identity cookie; in anonymous mode a newcomer is given one). The request is
//! sealed into the page (HMAC under a key derived from the identity key, bound to the person
//! and expiring): it is the page's CSRF token and carries the request to the POST, so a page
//! shown keeps nothing on the server. POST takes Approve or Deny and redirects to the client
//! with `code`, `state` and `iss`, or `error=access_denied`. A request whose client or
//! redirect URI is not trusted is answered with a page, never redirected.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, request::Parts, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::consent::{consent_page, error_page, Consent};
use super::reply::{check_rate, read_form, resource_url, with_retry_after, Refused};
use super::AUTHORIZE_PATH;
use crate::app::App;
use crate::ops::error::ApiError;
use crate::ops::ServerState;
use crate::security::oauth::{pkce, redirect, resolve_client, ClientRefused, CodeRecord};
use crate::security::{request_client_address, scopes, AuditEntry, AuditEvent, Scope, Sealer};

/// How long a consent page may be answered (ms).
const CONSENT_TTL_MS: u64 = 10 * 60 * 1000;

/// The sessions a consent page offers at most (the newest).
const SESSIONS_SHOWN: usize = 20;

/// What the person's browser sends (RFC 6749 §4.1.1, RFC 7636 §4.3, RFC 8707 §2).
#[derive(Debug, Default, Deserialize)]
struct AuthorizeQuery {
    response_type: Option<String>,
    client_id: Option<String>,
    redirect_uri: Option<String>,
    state: Option<String>,
    code_challenge: Option<String>,
    code_challenge_method: Option<String>,
    scope: Option<String>,
    resource: Option<String>,
}

/// The request, checked, sealed into the consent page.
#[derive(Debug, Serialize, Deserialize)]
struct Pending {
    uid: String,
    client_id: String,
    redirect_uri: String,
    state: Option<String>,
    challenge: String,
    scope: String,
    resource: String,
    expires_at: u64,
}

/// The consent page's form.
#[derive(Debug, Deserialize)]
struct Answer {
    request: String,
    decision: String,
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    act: Option<String>,
}

fn sealer<A: App>(server: &ServerState<A>) -> Sealer {
    Sealer::new(server.identity().key(), "agent-runtime/oauth/consent", "v1")
}

pub(super) async fn authorize<A: App>(server: ServerState<A>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    // The page and the answer count against the endpoints' rate per address, like the token
    // endpoint: each may fetch a client's metadata document or write a code.
    match check_rate(&server, &parts, AUTHORIZE_PATH).await {
        Ok(()) => {}
        Err(Refused::Limited(secs)) => {
            let detail = format!("Too many requests from this address; retry in {secs} s.");
            return with_retry_after(
                html(StatusCode::TOO_MANY_REQUESTS, error_page(&detail)),
                secs,
            );
        }
        Err(off) => return off.json(),
    }
    match parts.method {
        Method::GET => show(&server, &parts).await,
        Method::POST => answer(&server, &parts, body).await,
        _ => ApiError::method_not_allowed().into_response(),
    }
}

/// An HTML page that cannot be framed or cached.
fn html(status: StatusCode, text: String) -> Response {
    let mut response = (status, text).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
        ),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // `same-origin`, not `no-referrer`: a browser sends `Origin: null` with a form posted
    // from a `no-referrer` page, and the approval's origin check would refuse the person's
    // own click. Cross-origin navigations (the redirect to the client) still carry no
    // `Referer`, so the page's query never leaves the site.
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    response
}

/// A refusal shown as a page, audited.
async fn refused_page<A: App>(
    server: &ServerState<A>,
    status: StatusCode,
    error: &str,
    detail: &str,
) -> Response {
    let entry = AuditEntry::new(
        server.now(),
        AuditEvent::OauthRefused,
        json!({"endpoint": AUTHORIZE_PATH, "error": error, "description": detail}),
    );
    server.audit(entry).await;
    html(status, error_page(detail))
}

/// A refusal of the client itself shown as a page (never redirected: its redirect URIs are
/// not trusted), audited with the client and the reason.
async fn refused_client<A: App>(
    server: &ServerState<A>,
    client_id: &str,
    refused: ClientRefused,
) -> Response {
    let (status, error, reason, detail) = match refused {
        ClientRefused::Unknown => (
            StatusCode::BAD_REQUEST,
            "invalid_client",
            "unknown",
            "the client is unknown (its registration may have expired): connect again from \
             the agent"
                .to_owned(),
        ),
        ClientRefused::Document(e) => {
            let status = if e.is_busy() {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::BAD_REQUEST
            };
            (status, e.code(), e.reason(), e.description())
        }
        ClientRefused::Store(e) => return store_failed_page(server, &e).await,
    };
    let client_id: String = client_id.chars().take(300).collect();
    let entry = AuditEntry::new(
        server.now(),
        AuditEvent::OauthRefused,
        json!({"endpoint": AUTHORIZE_PATH, "error": error, "description": detail,
            "clientId": client_id, "reason": reason}),
    );
    server.audit(entry).await;
    html(status, error_page(&detail))
}

/// 500 `server_error` as a page: the store failed (its text logged only).
async fn store_failed_page<A: App>(
    server: &ServerState<A>,
    e: &crate::security::StoreError,
) -> Response {
    tracing::error!(target: "tea_agent_runtime::store", "oauth: {e}");
    let detail = "the server's store failed: try again";
    refused_page(
        server,
        StatusCode::INTERNAL_SERVER_ERROR,
        "server_error",
        detail,
    )
    .await
}

/// A redirect to the client with `params`, `state` and `iss` (RFC 9207).
fn redirect_to(
    redirect_uri: &str,
    params: &[(&str, &str)],
    state: Option<&str>,
    iss: &str,
) -> Response {
    let Ok(mut url) = url::Url::parse(redirect_uri) else {
        return html(
            StatusCode::BAD_REQUEST,
            error_page("the redirect URI is not a URL"),
        );
    };
    {
        let mut query = url.query_pairs_mut();
        for (name, value) in params {
            query.append_pair(name, value);
        }
        if let Some(state) = state {
            query.append_pair("state", state);
        }
        query.append_pair("iss", iss);
    }
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(location) = HeaderValue::try_from(url.as_str()) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// An error sent back to the client (its redirect URI is trusted), audited.
async fn redirect_error<A: App>(
    server: &ServerState<A>,
    redirect_uri: &str,
    state: Option<&str>,
    iss: &str,
    error: &str,
    description: &str,
) -> Response {
    let entry = AuditEntry::new(
        server.now(),
        AuditEvent::OauthRefused,
        json!({"endpoint": AUTHORIZE_PATH, "error": error, "description": description}),
    );
    server.audit(entry).await;
    redirect_to(
        redirect_uri,
        &[("error", error), ("error_description", description)],
        state,
        iss,
    )
}

fn read_query(parts: &Parts) -> Result<AuthorizeQuery, String> {
    let query = parts.uri.query().unwrap_or_default();
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(query).map_err(|e| format!("the query does not read: {e}"))?;
    let mut seen = std::collections::HashSet::new();
    for (name, _) in &pairs {
        if !seen.insert(name.as_str()) {
            return Err(format!("the parameter {name:?} is given more than once"));
        }
    }
    serde_urlencoded::from_str(query).map_err(|e| format!("the query does not read: {e}"))
}

async fn show<A: App>(server: &ServerState<A>, parts: &Parts) -> Response {
    let Some(oauth) = server.oauth() else {
        return ApiError::method_not_allowed().into_response();
    };
    let now = server.now();
    let query = match read_query(parts) {
        Ok(q) => q,
        Err(detail) => {
            return refused_page(server, StatusCode::BAD_REQUEST, "invalid_request", &detail).await
        }
    };
    let Some(client_id) = query.client_id.as_deref() else {
        return refused_page(
            server,
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "client_id is missing",
        )
        .await;
    };
    let address = request_client_address(parts, server.options().trust_proxy);
    let client = match resolve_client(oauth, client_id, now, Some(&address)).await {
        Ok(client) => client,
        Err(refused) => return refused_client(server, client_id, refused).await,
    };
    let redirect_uri = match query.redirect_uri.as_deref() {
        Some(uri) if redirect::matches(&client.redirect_uris, uri) => uri.to_owned(),
        Some(_) if client.document_host.is_some() => {
            let detail = "the redirect URI is not listed in the client's metadata document";
            let entry = AuditEntry::new(
                now,
                AuditEvent::OauthRefused,
                json!({"endpoint": AUTHORIZE_PATH, "error": "invalid_request",
                    "description": detail, "clientId": client.client_id,
                    "reason": "redirect-not-listed"}),
            );
            server.audit(entry).await;
            return html(StatusCode::BAD_REQUEST, error_page(detail));
        }
        Some(_) => {
            let detail = "the redirect URI is not one the client registered";
            return refused_page(server, StatusCode::BAD_REQUEST, "invalid_request", detail).await;
        }
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        None => {
            let detail = "redirect_uri is missing and the client registered more than one";
            return refused_page(server, StatusCode::BAD_REQUEST, "invalid_request", detail).await;
        }
    };
    let iss = server.oauth_issuer(parts);
    let state = query.state.as_deref();
    let fail = |error: &'static str, description: String| {
        let (redirect_uri, iss) = (redirect_uri.clone(), iss.clone());
        async move { redirect_error(server, &redirect_uri, state, &iss, error, &description).await }
    };
    if query.response_type.as_deref() != Some("code") {
        return fail(
            "unsupported_response_type",
            "response_type must be code".into(),
        )
        .await;
    }
    let Some(challenge) = query.code_challenge.clone() else {
        return fail(
            "invalid_request",
            "code_challenge is missing: PKCE (S256) is required".into(),
        )
        .await;
    };
    if query.code_challenge_method.as_deref() != Some(pkce::S256) {
        return fail(
            "invalid_request",
            "code_challenge_method must be S256 (plain is not accepted)".into(),
        )
        .await;
    }
    if !pkce::valid_challenge(&challenge) {
        return fail(
            "invalid_request",
            "code_challenge is not an S256 challenge".into(),
        )
        .await;
    }
    let scopes = match scopes::parse_list(query.scope.as_deref().unwrap_or_default()) {
        Ok(Some(scopes)) => scopes,
        Ok(None) => Scope::ALL.to_vec(),
        Err(word) => return fail("invalid_scope", format!("unknown scope {word:?}")).await,
    };
    let resource = resource_url(server, parts);
    if query.resource.as_deref().is_some_and(|r| r != resource) {
        return fail(
            "invalid_target",
            format!("this server is the resource {resource}"),
        )
        .await;
    }
    let (uid, set_cookie) = match server.identity().resolve(parts).await {
        Some(uid) => (uid, None),
        None => {
            let https = server.origin().request_origin(parts).is_https();
            match server.identity().issue_anonymous(https) {
                Some(issued) => (issued.uid, Some(issued.set_cookie)),
                None => {
                    let detail =
                        "sign in to the app in this browser first, then open the link again";
                    return refused_page(server, StatusCode::UNAUTHORIZED, "access_denied", detail)
                        .await;
                }
            }
        }
    };
    let sessions: Vec<(String, String)> = if set_cookie.is_some() {
        Vec::new()
    } else {
        let mut own = server.host().load_sessions_of(&uid).await;
        own.reverse();
        own.iter()
            .take(SESSIONS_SHOWN)
            .map(|s| (s.id().to_owned(), started(s.created_at(), now)))
            .collect()
    };
    let pending = Pending {
        uid,
        client_id: client.client_id.clone(),
        redirect_uri: redirect_uri.clone(),
        state: query.state.clone(),
        challenge,
        scope: scopes::to_text(&scopes),
        resource,
        expires_at: now.saturating_add(CONSENT_TTL_MS),
    };
    let sealed = match serde_json::to_vec(&pending) {
        Ok(bytes) => sealer(server).seal(&bytes),
        Err(e) => return ApiError::internal(e.to_string()).into_response(),
    };
    let app = server
        .host()
        .describe()
        .get("name")
        .and_then(|n| n.as_str())
        .unwrap_or("the app")
        .to_owned();
    let page = consent_page(&Consent {
        app: &app,
        client_name: &client.client_name,
        redirect_host: &redirect::host_of(&redirect_uri),
        document_host: client.document_host.as_deref(),
        sessions: &sessions,
        scopes: &scopes,
        sealed: &sealed,
        action: AUTHORIZE_PATH,
    });
    let mut response = html(StatusCode::OK, page);
    if let Some(cookie) = set_cookie.and_then(|c| HeaderValue::try_from(c).ok()) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

/// When a session started, as the page says it ("5 min ago").
fn started(at: u64, now: u64) -> String {
    let minutes = now.saturating_sub(at) / 60_000;
    match minutes {
        0 => "just now".to_owned(),
        m if m < 120 => format!("{m} min ago"),
        m if m < 48 * 60 => format!("{} h ago", m / 60),
        m => format!("{} days ago", m / (24 * 60)),
    }
}

async fn answer<A: App>(server: &ServerState<A>, parts: &Parts, body: Body) -> Response {
    let Some(oauth) = server.oauth() else {
        return ApiError::method_not_allowed().into_response();
    };
    if server.origin().check(parts).is_err() {
        let detail = "the answer came from another site's page";
        return refused_page(server, StatusCode::FORBIDDEN, "access_denied", detail).await;
    }
    let form: Answer = match read_form(parts, body).await {
        Ok(form) => form,
        Err(e) => return refused_page(server, e.status, e.error, &e.description).await,
    };
    let now = server.now();
    let pending: Option<Pending> = sealer(server)
        .open(&form.request)
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    let Some(pending) = pending.filter(|p| p.expires_at > now) else {
        let detail = "this consent page expired or was not made here: connect again from the agent";
        return refused_page(server, StatusCode::BAD_REQUEST, "invalid_request", detail).await;
    };
    // The sealed request is bound to the person it was shown to: another identity's page
    // (a CSRF) decides nothing.
    if server.identity().resolve(parts).await.as_deref() != Some(pending.uid.as_str()) {
        let detail = "this consent page was shown to someone else: open the link again";
        return refused_page(server, StatusCode::FORBIDDEN, "access_denied", detail).await;
    }
    let iss = server.oauth_issuer(parts);
    let state = pending.state.as_deref();
    let address = request_client_address(parts, server.options().trust_proxy);
    let client = match resolve_client(oauth, &pending.client_id, now, Some(&address)).await {
        Ok(client) => client,
        Err(refused) => return refused_client(server, &pending.client_id, refused).await,
    };
    // A document fetched again since the page was shown may no longer list the redirect URI.
    if !redirect::matches(&client.redirect_uris, &pending.redirect_uri) {
        let detail = "the client no longer lists this redirect URI: connect again from the agent";
        return refused_page(server, StatusCode::BAD_REQUEST, "invalid_request", detail).await;
    }
    let approved = form.decision == "approve";
    let consent = |session: Option<&str>, scope: &str| {
        AuditEntry::new(
            now,
            AuditEvent::OauthConsent,
            json!({"clientId": client.client_id, "sessionId": session, "scope": scope,
                "approved": approved}),
        )
        .with_uid(Some(pending.uid.clone()))
    };
    if !approved {
        server.audit(consent(None, &pending.scope)).await;
        return redirect_to(
            &pending.redirect_uri,
            &[
                ("error", "access_denied"),
                ("error_description", "the person denied the request"),
            ],
            state,
            &iss,
        );
    }
    let mut scope = pending.scope.clone();
    if form.act.is_none() {
        scope = Scope::Read.as_str().to_owned();
    }
    let session_id = match form.session.as_deref().unwrap_or("new") {
        "new" => {
            let created = server
                .host()
                .create_session_within_caps(Some(pending.uid.clone()), server.live_agents())
                .await;
            match created {
                Ok(session) => {
                    session.stored().await;
                    session.id().to_owned()
                }
                Err(e) => {
                    let description = format!("no new session could be started: {e}");
                    let redirect = &pending.redirect_uri;
                    return redirect_error(
                        server,
                        redirect,
                        state,
                        &iss,
                        "temporarily_unavailable",
                        &description,
                    )
                    .await;
                }
            }
        }
        id => match server.host().try_load_session(id).await {
            Ok(Some(s)) if s.owner() == Some(pending.uid.as_str()) => s.id().to_owned(),
            _ => {
                let detail = "unknown session or not yours";
                return refused_page(server, StatusCode::FORBIDDEN, "access_denied", detail).await;
            }
        },
    };
    let code = CodeRecord {
        client_id: pending.client_id.clone(),
        redirect_uri: pending.redirect_uri.clone(),
        challenge: pending.challenge.clone(),
        scope: scope.clone(),
        uid: pending.uid.clone(),
        session_id: session_id.clone(),
        resource: pending.resource.clone(),
        expires_at: now.saturating_add(oauth.grants.limits().code_ttl_ms),
    };
    let secret = match oauth.grants.add_code(code, now).await {
        Ok(Ok(secret)) => secret,
        Err(e) => return store_failed_page(server, &e).await,
        Ok(Err(full)) => {
            let description = format!(
                "{} consents wait to be exchanged, the most kept: try again shortly",
                full.0
            );
            let redirect = &pending.redirect_uri;
            return redirect_error(
                server,
                redirect,
                state,
                &iss,
                "temporarily_unavailable",
                &description,
            )
            .await;
        }
    };
    server.audit(consent(Some(&session_id), &scope)).await;
    redirect_to(
        &pending.redirect_uri,
        &[("code", secret.expose())],
        state,
        &iss,
    )
}
