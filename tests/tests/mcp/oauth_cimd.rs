//! Client ID Metadata Documents (`docs/authorization.md`): a client whose `client_id` is the
//! HTTPS URL of its metadata document, served here with a throwaway certificate the server
//! under test trusts (a test option), goes through consent and the token endpoint without
//! registering; each bad document is refused with its own error, shown as a page (never
//! redirected) and audited; a document on a loopback address is refused without the test
//! option, before anything is fetched.

use std::time::Duration;

use agent_tests::USER_HEADER;
use serde_json::{json, Value};
use tea_agent_runtime::security::AuditEvent;

use super::document_server::{document, DocumentServer, Reply};
use super::oauth_flow::{pkce, server_with, tool_text, value, OAuthTest, REDIRECT};

/// A document server and a todo server trusting its certificate (and, unless `strict`, its
/// loopback address: the test option).
async fn servers(strict: bool) -> (DocumentServer, OAuthTest) {
    let docs = DocumentServer::start().await;
    let root = docs.root_pem.clone();
    let o = server_with(move |o| {
        o.oauth.test_document_roots = vec![root];
        o.oauth.test_loopback_documents = !strict;
    })
    .await;
    (docs, o)
}

/// The consent page asked for `client` with [`REDIRECT`], as alice.
async fn ask(o: &OAuthTest, client: &str) -> super::oauth_flow::Http {
    let (_, challenge) = pkce();
    o.authorize(
        "alice",
        &[
            ("response_type", "code"),
            ("client_id", client),
            ("redirect_uri", REDIRECT),
            ("state", "s"),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
        ],
    )
    .await
}

/// The `oauth-refused` entries' details.
fn refusals(o: &OAuthTest) -> Vec<Value> {
    o.audit
        .entries()
        .iter()
        .filter(|e| e.event == AuditEvent::OauthRefused)
        .map(|e| e.detail.clone())
        .collect()
}

/// The consent page for `client` is refused as a page (not redirected) with `reason` in the
/// audit; the description names the failure.
async fn refused(o: &OAuthTest, client: &str, reason: &str, says: &str) {
    let before = refusals(o).len();
    let a = ask(o, client).await;
    assert!(a.status == 400 || a.status == 503, "{reason}: {}", a.text);
    assert!(a.header("location").is_empty(), "{reason}: redirected");
    assert!(a.text.contains(says), "{reason}: {}", a.text);
    let audited = refusals(o);
    assert_eq!(audited.len(), before + 1, "{reason}: {audited:?}");
    let entry = audited.last().unwrap();
    assert_eq!(entry["reason"], reason, "{entry}");
    assert_eq!(entry["clientId"], client, "{entry}");
}

#[tokio::test]
async fn a_client_known_by_its_document_is_granted_without_registering() {
    let (docs, o) = servers(false).await;
    let client = docs.url("/oauth/client.json");
    docs.serve(
        "/oauth/client.json",
        Reply::json(&document(&client, "Doc agent", REDIRECT)),
    );
    let meta =
        super::oauth_flow::send(o.http.get(o.url("/.well-known/oauth-authorization-server"))).await;
    assert_eq!(meta.json()["client_id_metadata_document_supported"], true);
    let (verifier, challenge) = pkce();
    let page = o.consent_page("alice", &client, &challenge).await;
    // The document's name, where the answer goes, and who publishes the document.
    assert!(
        page.text.contains("<strong>Doc agent</strong>"),
        "{}",
        page.text
    );
    assert!(
        page.text.contains("described by <code>localhost</code>"),
        "{}",
        page.text
    );
    let code = value(&o.approve("alice", &page, true).await, "code");
    let a = o.exchange(&client, &code, &verifier).await;
    assert_eq!(a.status, 200, "{}", a.text);
    let access = a.json()["access_token"].as_str().unwrap().to_owned();
    let refresh = a.json()["refresh_token"].as_str().unwrap().to_owned();
    let sent = o
        .call(
            Some(&access),
            "send_message",
            json!({"msg": {"type": "add", "title": "from a document"}}),
        )
        .await;
    assert_eq!(sent.status, 200, "{}", sent.text);
    assert!(tool_text(&sent).contains("dispatched"), "{}", sent.text);
    let refreshed = o
        .token(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", &client),
        ])
        .await;
    assert_eq!(refreshed.status, 200, "{}", refreshed.text);
    // The grant is labelled with the document's name; the document was fetched once (kept
    // for its max-age), for the page, the answer, the exchange and the refresh.
    let sessions =
        o.t.send(
            o.t.request(reqwest::Method::GET, "/agent/sessions")
                .header(USER_HEADER, "alice"),
        )
        .await;
    assert_eq!(sessions.body["sessions"][0]["label"], "Doc agent");
    assert_eq!(docs.fetches("/oauth/client.json"), 1);
    assert!(refusals(&o).is_empty(), "{:?}", refusals(&o));
}

#[tokio::test]
async fn each_bad_document_is_refused_with_its_own_error() {
    let (docs, o) = servers(false).await;
    let url = |path: &str| docs.url(path);
    let good = |path: &str| document(&docs.url(path), "Bad agent", REDIRECT);
    docs.serve(
        "/big",
        Reply::raw(200, "application/json", vec![b' '; 6 * 1024]).chunked(),
    );
    docs.serve(
        "/big-announced",
        Reply::raw(200, "application/json", vec![b' '; 6 * 1024]),
    );
    docs.serve("/html", Reply::raw(200, "text/html", "<html>hello</html>"));
    docs.serve("/mismatch", Reply::json(&good("/elsewhere")));
    docs.serve(
        "/other-redirect",
        Reply::json(&document(
            &url("/other-redirect"),
            "Bad agent",
            "https://elsewhere.example/cb",
        )),
    );
    docs.serve("/moved", Reply::redirect(&url("/html")));
    let mut secret = good("/secret");
    secret["token_endpoint_auth_method"] = json!("client_secret_basic");
    docs.serve("/secret", Reply::json(&secret));
    refused(&o, &url("/big"), "too-big", "over 5120 bytes").await;
    refused(&o, &url("/big-announced"), "too-big", "over 5120 bytes").await;
    refused(&o, &url("/html"), "not-json", "not a JSON object").await;
    refused(
        &o,
        &url("/mismatch"),
        "client-id-mismatch",
        "not the document",
    )
    .await;
    refused(&o, &url("/missing"), "fetch-failed", "404").await;
    refused(
        &o,
        &url("/moved"),
        "fetch-failed",
        "redirects are not followed",
    )
    .await;
    refused(
        &o,
        &url("/secret"),
        "invalid-metadata",
        "client_secret_basic",
    )
    .await;
    refused(&o, &url("/a/../secret"), "invalid-url", "normal form").await;
    // The redirect URI asked for is not in the (good) document.
    refused(
        &o,
        &url("/other-redirect"),
        "redirect-not-listed",
        "not listed in the client&#39;s metadata document",
    )
    .await;
    // The token endpoint refuses the same clients, 401 invalid_client.
    let (verifier, _) = pkce();
    let a = o.exchange(&url("/html"), "oac_x", &verifier).await;
    assert_eq!(a.status, 401, "{}", a.text);
    assert_eq!(a.json()["error"], "invalid_client");
    assert!(a.json()["error_description"]
        .as_str()
        .unwrap()
        .contains("not a JSON object"));
}

#[tokio::test]
async fn a_document_that_does_not_arrive_in_time_is_refused() {
    let (docs, o) = servers(false).await;
    let client = docs.url("/slow.json");
    docs.serve(
        "/slow.json",
        Reply::json(&document(&client, "Slow agent", REDIRECT)).after(Duration::from_secs(8)),
    );
    let started = std::time::Instant::now();
    refused(&o, &client, "too-slow", "did not arrive within 5 s").await;
    assert!(
        started.elapsed() < Duration::from_secs(7),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_document_on_a_loopback_address_is_refused_without_the_test_option() {
    let (docs, o) = servers(true).await;
    let client = docs.url("/client.json");
    docs.serve(
        "/client.json",
        Reply::json(&document(&client, "Local agent", REDIRECT)),
    );
    refused(
        &o,
        &client,
        "private-address",
        "private or loopback address",
    )
    .await;
    let literal = client.replace("localhost", "127.0.0.1");
    refused(&o, &literal, "private-address", "127.0.0.1").await;
    // Nothing was fetched: the addresses were refused before any connect.
    assert_eq!(docs.fetches("/client.json"), 0);
    // Nor is http taken without the option.
    let http = client.replace("https://", "http://");
    let a = ask(&o, &http).await;
    assert_eq!(a.status, 400);
    assert!(a.header("location").is_empty());
}
