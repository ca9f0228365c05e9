//! `GET /agent/console` over plain HTTP (`docs/lap.md` §6.6, last paragraph): a self-contained HTML
//! page that loads nothing from elsewhere, issues the identity cookie in anonymous mode, and
//! answers 405 to other methods. The page itself is driven in a real browser by
//! `console_browser.rs`.

use agent_examples::counter::Counter;
use agent_tests::{start_app, TestServer};
use reqwest::Method;

async fn page(
    t: &TestServer<Counter>,
) -> (reqwest::StatusCode, reqwest::header::HeaderMap, String) {
    let resp = t
        .request(Method::GET, "/agent/console")
        .send()
        .await
        .expect("request");
    let status = resp.status();
    let headers = resp.headers().clone();
    (status, headers, resp.text().await.expect("body"))
}

/// The values of every `attr=` attribute in `html` (quoted or bare).
fn attribute_values<'a>(html: &'a str, attr: &str) -> Vec<&'a str> {
    let lower = html.to_ascii_lowercase();
    let needle = format!("{attr}=");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = lower[from..].find(&needle) {
        let start = from + pos + needle.len();
        let rest = &html[start..];
        let value = match rest.chars().next() {
            Some(q @ ('"' | '\'')) => rest[1..].split(q).next().unwrap_or(""),
            _ => rest
                .split(|c: char| c.is_whitespace() || c == '>')
                .next()
                .unwrap_or(""),
        };
        out.push(value);
        from = start;
    }
    out
}

#[tokio::test]
async fn console_is_html_and_issues_the_identity_cookie_in_anonymous_mode() {
    let t = TestServer::builder(Counter).anonymous().start().await;
    let (status, headers, body) = page(&t).await;
    assert_eq!(status, 200);
    let content_type = headers["content-type"].to_str().unwrap();
    assert!(
        content_type.starts_with("text/html"),
        "content-type {content_type}"
    );
    assert!(body
        .trim_start()
        .to_ascii_lowercase()
        .starts_with("<!doctype html>"));
    let cookie = headers
        .get("set-cookie")
        .expect("a Set-Cookie in anonymous mode")
        .to_str()
        .unwrap();
    assert!(cookie.starts_with("agent_identity=anon-"), "{cookie}");
    assert!(cookie.contains("HttpOnly"), "{cookie}");

    // The cookie is the caller's identity on the routes the page uses.
    let pair = cookie.split(';').next().unwrap();
    let sessions = t
        .send(
            t.request(Method::GET, "/agent/human/sessions")
                .header("cookie", pair),
        )
        .await;
    assert_eq!(sessions.status, 200);
    assert_eq!(sessions.body, serde_json::json!({"sessions": []}));

    // A caller who already has an identity gets no new cookie.
    let again = t
        .request(Method::GET, "/agent/console")
        .header("cookie", pair)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 200);
    assert!(again.headers().get("set-cookie").is_none());
}

#[tokio::test]
async fn console_issues_no_cookie_without_anonymous_mode() {
    let t = start_app(Counter).await;
    let (status, headers, _) = page(&t).await;
    assert_eq!(status, 200);
    assert!(headers.get("set-cookie").is_none());
}

#[tokio::test]
async fn console_is_self_contained_and_escapes_text() {
    let t = TestServer::builder(Counter).anonymous().start().await;
    let (_, _, body) = page(&t).await;
    for attr in ["src", "href", "action", "srcset"] {
        for value in attribute_values(&body, attr) {
            let v = value.trim().to_ascii_lowercase();
            assert!(
                !(v.starts_with("http:") || v.starts_with("https:") || v.starts_with("//")),
                "external {attr}={value:?}"
            );
        }
    }
    // `URL.createObjectURL` (the transcript's download, made in the page) loads nothing.
    let lower = body.to_ascii_lowercase().replace("objecturl(", "");
    for banned in ["@import", "url(", "<link", "<iframe", "<script src"] {
        assert!(!lower.contains(banned), "the page must not load {banned}");
    }
    // Untrusted text is only ever set as text.
    for sink in [
        "innerhtml",
        "outerhtml",
        "insertadjacenthtml",
        "document.write",
    ] {
        assert!(!lower.contains(sink), "the page uses {sink}");
    }
    // It talks to the routes of §4 and §6, nothing else.
    for route in [
        "/mint",
        "/revoke",
        "/human/sessions",
        "/events",
        "/confirms/",
        "/dispatch",
    ] {
        assert!(body.contains(route), "the page does not use {route}");
    }
    assert!(body.contains("EventSource"));
}

#[tokio::test]
async fn console_refuses_other_methods_with_405() {
    let t = TestServer::builder(Counter).anonymous().start().await;
    for method in [Method::POST, Method::PUT, Method::DELETE, Method::PATCH] {
        let a = t
            .send(
                t.request(method.clone(), "/agent/console")
                    .header("content-type", "application/json")
                    .body("{}"),
            )
            .await;
        assert_eq!(a.status, 405, "{method}");
        assert_eq!(a.body["error"]["code"], "method-not-allowed", "{method}");
        assert!(a.headers.get("set-cookie").is_none(), "{method}");
    }
}
