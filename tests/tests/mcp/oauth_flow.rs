//! The OAuth flow driven over HTTP, shared by the OAuth tests (`oauth`, `oauth_cimd`,
//! `oauth_rmcp`): a server with OAuth on, the person's consent (the test identity header), the
//! token endpoint, `/agent/mcp` calls with a bearer.

use agent_examples::todo::TodoApp;
use agent_tests::mcp::stateless_tool_call;
pub(crate) use agent_tests::oauth::pkce;
use agent_tests::{TestServer, USER_HEADER};
use reqwest::redirect::Policy;
use serde_json::{json, Value};
use std::sync::Arc;
use tea_agent_runtime::security::{AuditEvent, MemoryAuditSink};
use tea_agent_runtime::ServerOptions;

pub(crate) const REDIRECT: &str = "http://localhost:4567/callback";

pub(crate) struct OAuthTest {
    pub(crate) t: TestServer<TodoApp>,
    /// A client that does not follow redirects.
    pub(crate) http: reqwest::Client,
    pub(crate) audit: Arc<MemoryAuditSink>,
}

pub(crate) async fn server() -> OAuthTest {
    server_with(|_| {}).await
}

/// A todo server with OAuth on and `change` made to its options.
pub(crate) async fn server_with(change: impl FnOnce(&mut ServerOptions)) -> OAuthTest {
    let audit = Arc::new(MemoryAuditSink::new());
    let t = TestServer::builder(TodoApp::default())
        .rate_limit("100000/minute")
        .audit(audit.clone())
        .options(|o| {
            o.oauth.enabled = true;
            change(o);
        })
        .start()
        .await;
    OAuthTest::serving(t, audit)
}

impl OAuthTest {
    /// A test of the OAuth server `t` (built with OAuth on, auditing to `audit`).
    pub(crate) fn serving(t: TestServer<TodoApp>, audit: Arc<MemoryAuditSink>) -> Self {
        let http = reqwest::Client::builder()
            .redirect(Policy::none())
            .build()
            .unwrap();
        OAuthTest { t, http, audit }
    }
}

/// An answer: status, headers, body text.
pub(crate) struct Http {
    pub(crate) status: u16,
    pub(crate) headers: reqwest::header::HeaderMap,
    pub(crate) text: String,
}

impl Http {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }
    pub(crate) fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    }
}

pub(crate) async fn send(req: reqwest::RequestBuilder) -> Http {
    let resp = req.send().await.expect("request");
    Http {
        status: resp.status().as_u16(),
        headers: resp.headers().clone(),
        text: resp.text().await.unwrap_or_default(),
    }
}

impl OAuthTest {
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.t.base)
    }

    pub(crate) async fn register(&self, redirect_uris: &[&str]) -> String {
        let a = send(
            self.http
                .post(self.url("/agent/oauth/register"))
                .json(&json!({
                    "client_name": "Test agent", "redirect_uris": redirect_uris,
                    "token_endpoint_auth_method": "none",
                })),
        )
        .await;
        assert_eq!(a.status, 201, "{}", a.text);
        a.json()["client_id"].as_str().unwrap().to_owned()
    }

    /// GET the consent page as `user` with `params`.
    pub(crate) async fn authorize(&self, user: &str, params: &[(&str, &str)]) -> Http {
        send(
            self.http
                .get(self.url("/agent/oauth/authorize"))
                .query(params)
                .header(USER_HEADER, user),
        )
        .await
    }

    /// The consent page for `client` asked by `user` (redirect [`REDIRECT`], every scope),
    /// checked to be one that cannot be framed.
    pub(crate) async fn consent_page(&self, user: &str, client: &str, challenge: &str) -> Http {
        let page = self
            .authorize(
                user,
                &[
                    ("response_type", "code"),
                    ("client_id", client),
                    ("redirect_uri", REDIRECT),
                    ("state", "st-1"),
                    ("code_challenge", challenge),
                    ("code_challenge_method", "S256"),
                    ("scope", "app:read app:act"),
                    ("resource", &self.url("/agent/mcp")),
                ],
            )
            .await;
        assert_eq!(page.status, 200, "{}", page.text);
        assert_eq!(page.header("x-frame-options"), "DENY");
        assert!(page
            .header("content-security-policy")
            .contains("frame-ancestors 'none'"));
        page
    }

    /// `page` approved by `user` for a new session (read-only unless `act`): the redirect's
    /// query.
    pub(crate) async fn approve(
        &self,
        user: &str,
        page: &Http,
        act: bool,
    ) -> Vec<(String, String)> {
        let mut form = vec![
            ("request", sealed_of(&page.text)),
            ("decision", "approve".to_owned()),
            ("session", "new".to_owned()),
        ];
        if act {
            form.push(("act", "1".to_owned()));
        }
        let answer = send(
            self.http
                .post(self.url("/agent/oauth/authorize"))
                .header(USER_HEADER, user)
                .form(&form),
        )
        .await;
        assert_eq!(answer.status, 303, "{}", answer.text);
        query_of(&answer.header("location"))
    }

    /// The consent page of the registered "Test agent" approved by `user`: the redirect's
    /// query.
    pub(crate) async fn consent(
        &self,
        user: &str,
        client: &str,
        challenge: &str,
        act: bool,
    ) -> Vec<(String, String)> {
        let page = self.consent_page(user, client, challenge).await;
        assert!(page.text.contains("Test agent") && page.text.contains("localhost"));
        self.approve(user, &page, act).await
    }

    pub(crate) async fn token(&self, form: &[(&str, &str)]) -> Http {
        send(self.http.post(self.url("/agent/oauth/token")).form(form)).await
    }

    /// A code exchanged: the token answer.
    pub(crate) async fn exchange(&self, client: &str, code: &str, verifier: &str) -> Http {
        self.token(&[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", verifier),
            ("client_id", client),
            ("resource", &self.url("/agent/mcp")),
        ])
        .await
    }

    /// Registered, consented, exchanged: `(client, access, refresh)`.
    pub(crate) async fn grant(&self, act: bool) -> (String, String, String) {
        let client = self.register(&[REDIRECT]).await;
        let (verifier, challenge) = pkce();
        let redirect = self.consent("alice", &client, &challenge, act).await;
        let code = value(&redirect, "code");
        let a = self.exchange(&client, &code, &verifier).await;
        assert_eq!(a.status, 200, "{}", a.text);
        assert_eq!(a.header("cache-control"), "no-store");
        let body = a.json();
        (
            client,
            body["access_token"].as_str().unwrap().to_owned(),
            body["refresh_token"].as_str().unwrap().to_owned(),
        )
    }

    /// A 2026-07-28 `tools/call` with `bearer`.
    pub(crate) async fn call(&self, bearer: Option<&str>, tool: &str, arguments: Value) -> Http {
        send(stateless_tool_call(
            &self.http,
            &self.t.base,
            bearer,
            "oauth",
            tool,
            arguments,
        ))
        .await
    }

    pub(crate) fn events(&self, event: AuditEvent) -> usize {
        self.audit
            .entries()
            .iter()
            .filter(|e| e.event == event)
            .count()
    }
}

pub(crate) fn sealed_of(page: &str) -> String {
    let marker = "name=\"request\" value=\"";
    let start = page.find(marker).expect("the sealed request") + marker.len();
    page[start..].split('"').next().unwrap().to_owned()
}

pub(crate) fn query_of(location: &str) -> Vec<(String, String)> {
    let url = reqwest::Url::parse(location).expect("a redirect URL");
    url.query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

pub(crate) fn value(query: &[(String, String)], name: &str) -> String {
    query
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("no {name} in {query:?}"))
}

pub(crate) fn tool_text(a: &Http) -> String {
    let body: Value = serde_json::from_str(&a.text).unwrap_or_else(|_| {
        a.text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .next_back()
            .unwrap_or(Value::Null)
    });
    body["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}
