//! The metadata clients discover the server by: protected resource metadata (RFC 9728) for
//! `/agent/mcp`, and authorization server metadata (RFC 8414), each at every location a
//! client may probe (the path-suffixed and root forms, and OpenID's).

use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::reply::resource_url;
use super::{AUTHORIZE_PATH, REGISTER_PATH, REVOKE_PATH, TOKEN_PATH};
use crate::app::App;
use crate::ops::error::ApiError;
use crate::ops::ServerState;
use crate::security::oauth::RESOURCE_METADATA_PATH;
use crate::security::Scope;

/// Where the protected resource metadata is served: for `/agent/mcp`, and at the root.
pub(super) const RESOURCE_PATHS: [&str; 2] = [
    RESOURCE_METADATA_PATH,
    "/.well-known/oauth-protected-resource",
];

/// Where the authorization server metadata is served: RFC 8414's location, its path-suffixed
/// form for the resource's path, and OpenID Connect discovery's (which clients probe too).
pub(super) const SERVER_PATHS: [&str; 4] = [
    "/.well-known/oauth-authorization-server",
    "/.well-known/oauth-authorization-server/agent/mcp",
    "/.well-known/openid-configuration",
    "/.well-known/openid-configuration/agent/mcp",
];

fn scopes() -> Vec<&'static str> {
    Scope::ALL.iter().map(|s| s.as_str()).collect()
}

fn json_answer(body: serde_json::Value) -> Response {
    let mut response = (StatusCode::OK, body.to_string()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    // Public and the same for everyone; a minute of caching spares the probes.
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("max-age=60"),
    );
    response
}

/// RFC 9728 §3.2.
pub(super) async fn resource<A: App>(server: ServerState<A>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    if parts.method != Method::GET {
        return ApiError::method_not_allowed().into_response();
    }
    let issuer = server.oauth_issuer(&parts);
    json_answer(json!({
        "resource": resource_url(&server, &parts),
        "authorization_servers": [issuer],
        "scopes_supported": scopes(),
        "bearer_methods_supported": ["header"],
        "resource_name": server.host().describe().get("name").cloned().unwrap_or_default(),
    }))
}

/// RFC 8414 §2.
pub(super) async fn server<A: App>(server: ServerState<A>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    if parts.method != Method::GET {
        return ApiError::method_not_allowed().into_response();
    }
    let issuer = server.oauth_issuer(&parts);
    json_answer(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}{AUTHORIZE_PATH}"),
        "token_endpoint": format!("{issuer}{TOKEN_PATH}"),
        "registration_endpoint": format!("{issuer}{REGISTER_PATH}"),
        "revocation_endpoint": format!("{issuer}{REVOKE_PATH}"),
        "scopes_supported": scopes(),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "code_challenge_methods_supported": ["S256"],
        "client_id_metadata_document_supported": server
            .oauth()
            .is_some_and(|o| o.documents.is_some()),
        "authorization_response_iss_parameter_supported": true,
    }))
}
