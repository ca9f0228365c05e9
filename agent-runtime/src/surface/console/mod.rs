//! `GET /agent/console`: the human console, a self-contained page served from the binary,
//! with `X-Frame-Options: DENY` and CSP `frame-ancestors 'none'` (it cannot be framed).

use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;

use crate::app::App;
use crate::ops::error::ApiError;
use crate::ops::ServerState;

/// The page: HTML, CSS and script inline; nothing loaded from elsewhere, no embedded data. Its
/// rendering helpers (`surface/render.js`) are the session view's too (`docs/mcp.md` §The
/// session view in the chat).
const CONSOLE_HTML: &str = concat!(
    include_str!("console.html"),
    "<script>\n",
    include_str!("../render.js"),
    "</script>\n",
    include_str!("console_script.html")
);

pub(crate) fn console_routes<A: App>(server: &ServerState<A>) -> Router {
    let server = server.clone();
    Router::new().route(
        "/agent/console",
        any(move |req: Request| console(server.clone(), req)),
    )
}

async fn console<A: App>(server: ServerState<A>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    if parts.method != Method::GET {
        return ApiError::method_not_allowed().into_response();
    }
    let known = server.identity().resolve(&parts).await.is_some();
    let mut response = (StatusCode::OK, CONSOLE_HTML).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    // No framing by another page (clickjacking the Approve button).
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("frame-ancestors 'none'"),
    );
    if !known {
        let https = server.origin().request_origin(&parts).is_https();
        if let Some(issued) = server.identity().issue_anonymous(https) {
            if let Ok(v) = HeaderValue::try_from(issued.set_cookie) {
                headers.insert(header::SET_COOKIE, v);
            }
        }
    }
    response
}
