//! CORS (`ServerOptions::cors_origins`, `docs/security.md`): a page on a listed origin gets its
//! preflights answered and may read mint, the sessions list, LAP and the refusals (credentials
//! allowed for the identity cookie); any other origin gets no CORS header and its cookie POSTs
//! stay refused; a server without CORS origins sends none. The browser half is in
//! `console_browser.rs`.

use agent_examples::counter::Counter;
use agent_tests::TestServer;
use reqwest::header::{HeaderMap, ORIGIN};
use reqwest::Method;
use serde_json::{json, Value};
use tea_agent_runtime::security::ConfigError;

const PAGE: &str = "http://localhost:5173";
const OTHER: &str = "http://evil.example";

async fn server(cors_origins: &[&str]) -> TestServer<Counter> {
    let cors_origins = cors_origins.iter().map(|s| s.to_string()).collect();
    TestServer::builder(Counter)
        .anonymous()
        .rate_limit("3/minute")
        .options(|o| o.cors_origins = cors_origins)
        .cookie_identity_only()
        .start()
        .await
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .map(|v| v.to_str().expect("ascii").to_string())
}

async fn preflight(t: &TestServer<Counter>, path: &str, origin: &str) -> HeaderMap {
    let resp = t
        .http
        .request(Method::OPTIONS, format!("{}{path}", t.base))
        .header(ORIGIN, origin)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "content-type, authorization",
        )
        .send()
        .await
        .expect("preflight");
    assert!(resp.status().is_success(), "{}", resp.status());
    resp.headers().clone()
}

async fn post(
    t: &TestServer<Counter>,
    path: &str,
    origin: &str,
    token: Option<&str>,
) -> (u16, HeaderMap, Value) {
    let mut request = t
        .http
        .post(format!("{}{path}", t.base))
        .header(ORIGIN, origin)
        .json(&json!({}));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let resp = request.send().await.expect("post");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.json().await.unwrap_or(Value::Null);
    (status, headers, body)
}

#[tokio::test]
async fn a_listed_origin_may_call_and_read_every_answer() {
    let t = server(&[PAGE]).await;
    let pre = preflight(&t, "/agent/mint", PAGE).await;
    assert_eq!(
        header(&pre, "access-control-allow-origin").as_deref(),
        Some(PAGE)
    );
    assert_eq!(
        header(&pre, "access-control-allow-credentials").as_deref(),
        Some("true")
    );
    let methods = header(&pre, "access-control-allow-methods").unwrap_or_default();
    assert!(methods.contains("POST"), "{methods}");
    let allowed = header(&pre, "access-control-allow-headers").unwrap_or_default();
    assert!(allowed.contains("authorization") && allowed.contains("content-type"));

    // Mint from the page: the origin passes the cookie-POST check and the answer is readable.
    let (status, headers, body) = post(&t, "/agent/mint", PAGE, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        header(&headers, "access-control-allow-origin").as_deref(),
        Some(PAGE)
    );
    let token = body["token"].as_str().expect("a token").to_string();
    assert!(token.starts_with("agt_"));
    let exposed = header(&headers, "access-control-expose-headers").unwrap_or_default();
    assert!(exposed.contains("retry-after"), "{exposed}");

    // LAP from the page, and a refusal it can read (429 with retry-after exposed).
    let (status, headers, _) = post(&t, "/agent/lap/v1/state", PAGE, Some(&token)).await;
    assert_eq!(status, 200);
    assert_eq!(
        header(&headers, "access-control-allow-origin").as_deref(),
        Some(PAGE)
    );
    let mut last = 200;
    for _ in 0..4 {
        let (status, headers, body) = post(&t, "/agent/lap/v1/state", PAGE, Some(&token)).await;
        last = status;
        if status == 429 {
            assert_eq!(body["error"]["code"], "rate-limited");
            assert!(header(&headers, "retry-after").is_some());
            assert_eq!(
                header(&headers, "access-control-allow-origin").as_deref(),
                Some(PAGE)
            );
            break;
        }
    }
    assert_eq!(last, 429, "the 3/minute limit answers 429");
}

#[tokio::test]
async fn other_origins_get_no_cors_headers_and_stay_refused() {
    let t = server(&[PAGE]).await;
    let pre = t
        .http
        .request(Method::OPTIONS, format!("{}/agent/mint", t.base))
        .header(ORIGIN, OTHER)
        .header("access-control-request-method", "POST")
        .send()
        .await
        .expect("preflight");
    assert!(pre.headers().get("access-control-allow-origin").is_none());
    let (status, headers, body) = post(&t, "/agent/mint", OTHER, None).await;
    assert_eq!(status, 403, "{body}");
    assert!(headers.get("access-control-allow-origin").is_none());

    // Without CORS origins the server sends no CORS header at all.
    let plain = server(&[]).await;
    let (status, headers, _) = post(&plain, "/agent/mint", PAGE, None).await;
    assert_eq!(status, 403, "a cross-origin cookie POST is refused");
    assert!(headers.get("access-control-allow-origin").is_none());
}

#[tokio::test]
async fn a_malformed_cors_origin_is_a_configuration_error() {
    for bad in [
        "localhost:5173",
        "http://localhost:5173/",
        "http://app/path",
    ] {
        let built = TestServer::builder(Counter)
            .options(|o| o.cors_origins = vec![bad.to_string()])
            .cookie_identity_only()
            .try_build()
            .await;
        assert_eq!(
            built.err(),
            Some(ConfigError::InvalidCorsOrigin(bad.to_string())),
            "{bad}"
        );
    }
}
