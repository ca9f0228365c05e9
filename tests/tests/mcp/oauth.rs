//! OAuth 2.1 on `/agent/mcp` (`docs/authorization.md`), over real HTTP: discovery, dynamic
//! registration, the consent page answered by the human (the test identity header), the
//! token endpoint, and `/agent/mcp` as the resource server (401 with the metadata URL, 403
//! `insufficient_scope`, a revoked grant 401). Each bad input is refused with its own error.

use agent_tests::USER_HEADER;
use serde_json::json;
use tea_agent_runtime::security::AuditEvent;

use super::oauth_flow::{
    pkce, query_of, sealed_of, send, server, server_with, tool_text, value, Http, REDIRECT,
};

#[tokio::test]
async fn discovery_names_the_resource_and_the_server() {
    let o = server().await;
    let prm = send(
        o.http
            .get(o.url("/.well-known/oauth-protected-resource/agent/mcp")),
    )
    .await;
    assert_eq!(prm.status, 200);
    let prm = prm.json();
    assert_eq!(prm["resource"], o.url("/agent/mcp"));
    assert_eq!(prm["authorization_servers"], json!([o.t.base]));
    assert_eq!(prm["bearer_methods_supported"], json!(["header"]));
    assert_eq!(prm["scopes_supported"], json!(["app:read", "app:act"]));
    let root = send(o.http.get(o.url("/.well-known/oauth-protected-resource"))).await;
    assert_eq!(root.json(), prm);
    for path in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-authorization-server/agent/mcp",
        "/.well-known/openid-configuration",
    ] {
        let a = send(o.http.get(o.url(path))).await;
        assert_eq!(a.status, 200, "{path}");
        let m = a.json();
        assert_eq!(m["issuer"], o.t.base.as_str());
        assert_eq!(m["code_challenge_methods_supported"], json!(["S256"]));
        assert_eq!(m["authorization_response_iss_parameter_supported"], true);
        assert_eq!(m["client_id_metadata_document_supported"], true);
        assert_eq!(m["response_types_supported"], json!(["code"]));
        assert_eq!(m["token_endpoint_auth_methods_supported"], json!(["none"]));
        assert_eq!(m["registration_endpoint"], o.url("/agent/oauth/register"));
        assert_eq!(m["revocation_endpoint"], o.url("/agent/oauth/revoke"));
    }
    // Without a credential `/agent/mcp` points at the metadata.
    let a = o.call(None, "observe", json!({})).await;
    assert_eq!(a.status, 401, "{}", a.text);
    let challenge = a.header("www-authenticate");
    assert!(
        challenge.contains(&format!(
            "resource_metadata=\"{}/.well-known/oauth-protected-resource/agent/mcp\"",
            o.t.base
        )),
        "{challenge}"
    );
    assert!(
        challenge.contains("scope=\"app:read app:act\""),
        "{challenge}"
    );
    // Nor is a token taken from the query string.
    let (_, access, _) = o.grant(true).await;
    let a = send(
        o.http
            .post(format!("{}?access_token={access}", o.url("/agent/mcp")))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "q", "version": "1"}}})
                .to_string(),
            ),
    )
    .await;
    assert_eq!(a.status, 401);
}

#[tokio::test]
async fn a_consented_grant_reads_and_dispatches_and_its_refresh_rotates() {
    let o = server().await;
    let (client, access, refresh) = o.grant(true).await;
    assert_eq!(o.events(AuditEvent::OauthConsent), 1);
    assert_eq!(o.events(AuditEvent::OauthGranted), 1);
    let observed = o.call(Some(&access), "observe", json!({})).await;
    assert_eq!(observed.status, 200, "{}", observed.text);
    let sent = o
        .call(
            Some(&access),
            "send_message",
            json!({"msg": {"type": "add", "title": "milk"}}),
        )
        .await;
    assert_eq!(sent.status, 200, "{}", sent.text);
    assert!(tool_text(&sent).contains("dispatched"), "{}", sent.text);
    // The grant is an agent of alice's new session, labelled with the client's name.
    let sessions =
        o.t.send(
            o.t.request(reqwest::Method::GET, "/agent/sessions")
                .header(USER_HEADER, "alice"),
        )
        .await;
    assert_eq!(
        sessions.body["sessions"][0]["label"], "Test agent",
        "{}",
        sessions.body
    );
    // A refresh rotates; the old refresh token presented again revokes the whole grant.
    let a = o
        .token(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", &client),
        ])
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    let new_access = a.json()["access_token"].as_str().unwrap().to_owned();
    assert_ne!(new_access, access);
    assert_eq!(
        o.call(Some(&new_access), "observe", json!({})).await.status,
        200
    );
    let reused = o
        .token(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", &client),
        ])
        .await;
    assert_eq!(reused.status, 400);
    assert_eq!(reused.json()["error"], "invalid_grant");
    let after = o.call(Some(&new_access), "observe", json!({})).await;
    assert_eq!(after.status, 401, "{}", after.text);
    assert!(after
        .header("www-authenticate")
        .contains("error=\"invalid_token\""));
    assert!(o.events(AuditEvent::OauthRevoked) >= 1);
    // Never on LAP: the token's audience is /agent/mcp.
    let lap =
        o.t.send(
            o.t.request(reqwest::Method::POST, "/agent/lap/v1/observe")
                .bearer_auth(&access)
                .json(&json!({})),
        )
        .await;
    assert_eq!(lap.status, 401);
}

#[tokio::test]
async fn a_read_only_grant_cannot_dispatch() {
    let o = server().await;
    let (_, access, _) = o.grant(false).await;
    assert_eq!(
        o.call(Some(&access), "get_state", json!({})).await.status,
        200
    );
    let sent = o
        .call(
            Some(&access),
            "send_message",
            json!({"msg": {"type": "add", "title": "x"}}),
        )
        .await;
    assert_eq!(sent.status, 403, "{}", sent.text);
    let challenge = sent.header("www-authenticate");
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(challenge.contains("scope=\"app:act\""), "{challenge}");
    assert!(o.events(AuditEvent::OauthRefused) >= 1);
}

#[tokio::test]
async fn revocation_ends_the_grant_and_the_token_answers_401() {
    let o = server().await;
    let (client, access, refresh) = o.grant(true).await;
    let a = send(o.http.post(o.url("/agent/oauth/revoke")).form(&[
        ("token", refresh.as_str()),
        ("token_type_hint", "refresh_token"),
        ("client_id", &client),
    ]))
    .await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(
        o.call(Some(&access), "observe", json!({})).await.status,
        401
    );
    let again = o
        .token(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", &client),
        ])
        .await;
    assert_eq!(again.json()["error"], "invalid_grant");
    // An unknown token is not an error (RFC 7009 §2.2).
    let unknown = send(
        o.http
            .post(o.url("/agent/oauth/revoke"))
            .form(&[("token", "ort_unknown"), ("client_id", client.as_str())]),
    )
    .await;
    assert_eq!(unknown.status, 200);
    // A grant's agent revoked by its owner (the console's path) answers 401 too.
    let (_, access2, _) = o.grant(true).await;
    // Used once: its record is an active agent of alice's session.
    assert_eq!(
        o.call(Some(&access2), "observe", json!({})).await.status,
        200
    );
    let sessions =
        o.t.send(
            o.t.request(reqwest::Method::GET, "/agent/sessions")
                .header(USER_HEADER, "alice"),
        )
        .await;
    let tids: Vec<String> = sessions.body["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["tid"].as_str().unwrap().to_owned())
        .collect();
    for tid in tids {
        let r =
            o.t.post_json("/agent/revoke", Some("alice"), None, &json!({"tid": tid}))
                .await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    assert_eq!(
        o.call(Some(&access2), "observe", json!({})).await.status,
        401
    );
}

#[tokio::test]
async fn every_bad_authorization_request_is_refused_with_its_error() {
    let o = &server().await;
    let client = o.register(&[REDIRECT]).await;
    let (_, challenge) = pkce();
    let base = |extra: &[(&'static str, &str)]| {
        let mut p: Vec<(&str, String)> = vec![
            ("response_type", "code".into()),
            ("client_id", client.clone()),
            ("redirect_uri", REDIRECT.into()),
            ("state", "s".into()),
            ("code_challenge", challenge.clone()),
            ("code_challenge_method", "S256".into()),
        ];
        for (k, v) in extra {
            p.retain(|(name, _)| name != k);
            if !v.is_empty() {
                p.push((k, (*v).to_owned()));
            }
        }
        p
    };
    let ask = |params: Vec<(&'static str, String)>| async move {
        let refs: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        o.authorize("alice", &refs).await
    };
    // Not redirected: an unknown client, a redirect URI not registered.
    let a = ask(base(&[("client_id", "nobody")])).await;
    assert_eq!(a.status, 400);
    assert!(a.header("location").is_empty());
    let a = ask(base(&[("redirect_uri", "http://localhost:4567/other")])).await;
    assert_eq!(a.status, 400);
    assert!(a.header("location").is_empty());
    let a = ask(base(&[("redirect_uri", "https://evil.example/callback")])).await;
    assert_eq!(a.status, 400);
    // A loopback redirect on another port is the same native client (RFC 8252).
    let a = ask(base(&[("redirect_uri", "http://localhost:9999/callback")])).await;
    assert_eq!(a.status, 200, "{}", a.text);
    // Redirected with the error, the state and the issuer.
    for (extra, error) in [
        (vec![("code_challenge", "")], "invalid_request"),
        (vec![("code_challenge_method", "plain")], "invalid_request"),
        (vec![("code_challenge_method", "")], "invalid_request"),
        (
            vec![("response_type", "token")],
            "unsupported_response_type",
        ),
        (vec![("scope", "app:admin")], "invalid_scope"),
        (
            vec![("resource", "https://other.example/mcp")],
            "invalid_target",
        ),
    ] {
        let a = ask(base(&extra)).await;
        assert_eq!(a.status, 303, "{extra:?}: {}", a.text);
        let q = query_of(&a.header("location"));
        assert_eq!(value(&q, "error"), error, "{extra:?}");
        assert_eq!(value(&q, "state"), "s");
        assert_eq!(value(&q, "iss"), o.t.base);
    }
    // Deny: access_denied.
    let page = ask(base(&[])).await;
    let denied = send(
        o.http
            .post(o.url("/agent/oauth/authorize"))
            .header(USER_HEADER, "alice")
            .form(&[
                ("request", sealed_of(&page.text)),
                ("decision", "deny".into()),
            ]),
    )
    .await;
    assert_eq!(denied.status, 303);
    assert_eq!(
        value(&query_of(&denied.header("location")), "error"),
        "access_denied"
    );
    // Another person's answer to alice's page decides nothing (CSRF), nor does a forged one.
    let stolen = send(
        o.http
            .post(o.url("/agent/oauth/authorize"))
            .header(USER_HEADER, "mallory")
            .form(&[
                ("request", sealed_of(&page.text)),
                ("decision", "approve".into()),
            ]),
    )
    .await;
    assert_eq!(stolen.status, 403);
    let forged = send(
        o.http
            .post(o.url("/agent/oauth/authorize"))
            .header(USER_HEADER, "alice")
            .form(&[("request", "v1.e30.AAAA"), ("decision", "approve")]),
    )
    .await;
    assert_eq!(forged.status, 400);
    assert!(o.events(AuditEvent::OauthRefused) >= 8);
}

#[tokio::test]
async fn every_bad_token_request_is_refused_with_its_error() {
    let o = &server().await;
    let client = o.register(&[REDIRECT]).await;
    let (verifier, challenge) = pkce();
    let code = value(&o.consent("alice", &client, &challenge, true).await, "code");
    let refused = |a: &Http, status: u16, error: &str| {
        assert_eq!(a.status, status, "{}", a.text);
        assert_eq!(a.json()["error"], error, "{}", a.text);
        assert_eq!(a.header("cache-control"), "no-store");
    };
    let code_form = |client: &str, code: &str, verifier: Option<&str>, redirect: &str| {
        let mut f = vec![
            ("grant_type".to_owned(), "authorization_code".to_owned()),
            ("code".to_owned(), code.to_owned()),
            ("redirect_uri".to_owned(), redirect.to_owned()),
            ("client_id".to_owned(), client.to_owned()),
        ];
        if let Some(v) = verifier {
            f.push(("code_verifier".to_owned(), v.to_owned()));
        }
        f
    };
    let post = |form: Vec<(String, String)>| async move {
        send(o.http.post(o.url("/agent/oauth/token")).form(&form)).await
    };
    refused(
        &post(code_form("nobody", &code, Some(&verifier), REDIRECT)).await,
        401,
        "invalid_client",
    );
    refused(
        &post(code_form(&client, &code, None, REDIRECT)).await,
        400,
        "invalid_request",
    );
    refused(
        &o.token(&[("grant_type", "password"), ("client_id", &client)])
            .await,
        400,
        "unsupported_grant_type",
    );
    refused(
        &o.token(&[("client_id", &client)]).await,
        400,
        "invalid_request",
    );
    // A wrong verifier spends the code: it cannot be tried again.
    let (wrong, _) = pkce();
    refused(
        &post(code_form(&client, &code, Some(&wrong), REDIRECT)).await,
        400,
        "invalid_grant",
    );
    refused(
        &post(code_form(&client, &code, Some(&verifier), REDIRECT)).await,
        400,
        "invalid_grant",
    );
    // A mismatched redirect.
    let (verifier, challenge) = pkce();
    let code = value(&o.consent("alice", &client, &challenge, true).await, "code");
    refused(
        &post(code_form(
            &client,
            &code,
            Some(&verifier),
            "http://localhost:4567/other",
        ))
        .await,
        400,
        "invalid_grant",
    );
    // A resource of another server.
    let (verifier, challenge) = pkce();
    let code = value(&o.consent("alice", &client, &challenge, true).await, "code");
    let mut form = code_form(&client, &code, Some(&verifier), REDIRECT);
    form.push(("resource".into(), "https://other.example/agent/mcp".into()));
    refused(&post(form).await, 400, "invalid_target");
    // Reused: the second exchange fails and revokes what the first granted.
    let (verifier, challenge) = pkce();
    let code = value(&o.consent("alice", &client, &challenge, true).await, "code");
    let first = o.exchange(&client, &code, &verifier).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let access = first.json()["access_token"].as_str().unwrap().to_owned();
    refused(
        &o.exchange(&client, &code, &verifier).await,
        400,
        "invalid_grant",
    );
    assert_eq!(
        o.call(Some(&access), "observe", json!({})).await.status,
        401
    );
    // Another client's code.
    let other = o.register(&[REDIRECT]).await;
    let (verifier, challenge) = pkce();
    let code = value(&o.consent("alice", &client, &challenge, true).await, "code");
    refused(
        &o.exchange(&other, &code, &verifier).await,
        400,
        "invalid_grant",
    );
    // Duplicated parameters.
    refused(
        &o.token(&[
            ("grant_type", "refresh_token"),
            ("grant_type", "refresh_token"),
        ])
        .await,
        400,
        "invalid_request",
    );
    // A JSON body is not a form.
    let a = send(
        o.http
            .post(o.url("/agent/oauth/token"))
            .json(&json!({"grant_type": "x"})),
    )
    .await;
    refused(&a, 400, "invalid_request");
}

#[tokio::test]
async fn an_expired_code_is_refused() {
    let o = server_with(|o| {
        o.oauth.code_ttl = std::time::Duration::from_millis(1);
    })
    .await;
    let client = o.register(&[REDIRECT]).await;
    let (verifier, challenge) = pkce();
    let code = value(&o.consent("alice", &client, &challenge, true).await, "code");
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let a = o.exchange(&client, &code, &verifier).await;
    assert_eq!(a.status, 400);
    assert_eq!(a.json()["error"], "invalid_grant");
    assert!(a.json()["error_description"]
        .as_str()
        .unwrap()
        .contains("expired"));
}

#[tokio::test]
async fn registrations_are_checked_and_bounded() {
    let o = server_with(|o| {
        o.oauth.max_registrations = 2;
    })
    .await;
    let bad = send(o.http.post(o.url("/agent/oauth/register")).json(&json!({
        "redirect_uris": ["http://evil.example/cb"]})))
    .await;
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json()["error"], "invalid_redirect_uri");
    let bad = send(o.http.post(o.url("/agent/oauth/register")).body("not json")).await;
    assert_eq!(bad.json()["error"], "invalid_client_metadata");
    let big = send(o.http.post(o.url("/agent/oauth/register")).json(&json!({
        "redirect_uris": [REDIRECT], "client_name": "x".repeat(20_000)})))
    .await;
    assert_eq!(big.status, 413);
    o.register(&[REDIRECT]).await;
    o.register(&[REDIRECT]).await;
    let full = send(o.http.post(o.url("/agent/oauth/register")).json(&json!({
        "redirect_uris": [REDIRECT]})))
    .await;
    assert_eq!(full.status, 503, "{}", full.text);
    assert_eq!(o.events(AuditEvent::OauthRegistered), 2);
}

/// The consent page and the endpoints share one rate per client address: past it the page
/// is a 429 page (HTML, `retry-after`) and the token endpoint a 429 JSON error, each audited.
#[tokio::test]
async fn the_consent_page_and_the_endpoints_share_the_rate_per_address() {
    let o = server_with(|o| {
        o.oauth.endpoint_rate = "3/minute".parse().unwrap();
    })
    .await;
    let client = o.register(&[REDIRECT]).await;
    let (_, challenge) = pkce();
    for _ in 0..2 {
        o.consent_page("alice", &client, &challenge).await;
    }
    let limited = o
        .authorize(
            "alice",
            &[("response_type", "code"), ("client_id", &client)],
        )
        .await;
    assert_eq!(limited.status, 429, "{}", limited.text);
    assert!(limited.header("content-type").starts_with("text/html"));
    assert!(
        limited.text.contains("Too many requests"),
        "{}",
        limited.text
    );
    assert!(limited.header("retry-after").parse::<u64>().unwrap() > 0);
    assert_eq!(limited.header("x-frame-options"), "DENY");
    let token = send(
        o.http
            .post(o.url("/agent/oauth/token"))
            .form(&[("grant_type", "authorization_code"), ("code", "x")]),
    )
    .await;
    assert_eq!(token.status, 429, "{}", token.text);
    assert_eq!(token.json()["error"], "temporarily_unavailable");
    assert_eq!(o.events(AuditEvent::RateLimited), 2);
}

#[tokio::test]
async fn agent_tokens_keep_working_beside_oauth() {
    let o = server().await;
    let minted = o.t.mint("alice", None).await;
    let a = o.call(Some(&minted.token), "observe", json!({})).await;
    assert_eq!(a.status, 200, "{}", a.text);
    let sent = o
        .call(
            Some(&minted.token),
            "send_message",
            json!({"msg": {"type": "add", "title": "a"}}),
        )
        .await;
    assert_eq!(sent.status, 200, "{}", sent.text);
}
