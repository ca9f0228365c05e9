//! The built-in OAuth 2.1 authorization server of `/agent/mcp` (feature `oauth`,
//! `docs/authorization.md`): the server is its own issuer.
//!
//! - `metadata`: protected resource metadata (RFC 9728) and authorization server metadata
//!   (RFC 8414), at every location clients probe;
//! - `register`: dynamic client registration (RFC 7591);
//! - `authorize`: the consent page and the person's answer (`consent`: its HTML);
//! - `token`: codes and refresh tokens exchanged for tokens;
//! - `revoke`: token revocation (RFC 7009);
//! - `reply`: OAuth's JSON answers and form bodies, shared by the endpoints.

mod authorize;
mod consent;
mod metadata;
mod register;
mod reply;
mod revoke;
mod token;

use axum::extract::Request;
use axum::routing::any;
use axum::Router;

use crate::app::App;
use crate::ops::ServerState;

/// The authorization endpoint.
pub(crate) const AUTHORIZE_PATH: &str = "/agent/oauth/authorize";
/// The token endpoint.
pub(crate) const TOKEN_PATH: &str = "/agent/oauth/token";
/// The registration endpoint.
pub(crate) const REGISTER_PATH: &str = "/agent/oauth/register";
/// The revocation endpoint.
pub(crate) const REVOKE_PATH: &str = "/agent/oauth/revoke";

/// The OAuth routes (none when OAuth is off).
pub(crate) fn oauth_routes<A: App>(server: &ServerState<A>) -> Router {
    if server.oauth().is_none() {
        return Router::new();
    }
    let mut router = Router::new();
    for path in metadata::RESOURCE_PATHS {
        let s = server.clone();
        router = router.route(
            path,
            any(move |req: Request| metadata::resource(s.clone(), req)),
        );
    }
    for path in metadata::SERVER_PATHS {
        let s = server.clone();
        router = router.route(
            path,
            any(move |req: Request| metadata::server(s.clone(), req)),
        );
    }
    let (s1, s2, s3, s4) = (
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
    );
    router
        .route(
            REGISTER_PATH,
            any(move |req: Request| register::register(s1.clone(), req)),
        )
        .route(
            AUTHORIZE_PATH,
            any(move |req: Request| authorize::authorize(s2.clone(), req)),
        )
        .route(
            TOKEN_PATH,
            any(move |req: Request| token::token(s3.clone(), req)),
        )
        .route(
            REVOKE_PATH,
            any(move |req: Request| revoke::revoke(s4.clone(), req)),
        )
}
