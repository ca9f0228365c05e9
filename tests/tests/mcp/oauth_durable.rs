//! OAuth on the durable stores (`docs/authorization.md` §Where the records live), over real
//! HTTP: a grant made on a server on a SQLite file still works after that server is stopped
//! and a new one started on the same file; two replicas on one real PostgreSQL share every
//! grant, see a revoke made on the other at once, and of two refreshes of one token racing
//! on both, never both win; a store that fails answers `server_error`, never a token. The todo
//! example's own process, killed with SIGKILL, refreshes a grant it made once started again.

use std::sync::Arc;

use agent_examples::todo::TodoApp;
use agent_tests::postgres::PgServer;
use agent_tests::temp::TempDir;
use agent_tests::{TestServer, USER_HEADER};
use serde_json::json;
use tea_agent_runtime::security::{AuditEvent, MemoryAuditSink};
use tea_agent_runtime::store::Stores;

use agent_tests::mcp::stateless_tool_call;
use agent_tests::todo_server;

use super::oauth_flow::{
    pkce, query_of, sealed_of, send, tool_text, value, Http, OAuthTest, REDIRECT,
};

/// A server with OAuth on, its records in `stores`, and the task serving it.
async fn start(stores: &Stores) -> (OAuthTest, tokio::task::JoinHandle<()>) {
    let audit = Arc::new(MemoryAuditSink::new());
    let (t, task) = TestServer::builder(TodoApp::default())
        .stores(stores)
        .rate_limit("100000/minute")
        .audit(audit.clone())
        .options(|o| o.oauth.enabled = true)
        .start_stoppable()
        .await;
    (OAuthTest::serving(t, audit), task)
}

async fn refresh(o: &OAuthTest, client: &str, token: &str) -> Http {
    o.token(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", token),
        ("client_id", client),
    ])
    .await
}

fn tokens_of(a: &Http) -> (String, String) {
    assert_eq!(a.status, 200, "{}", a.text);
    let body = a.json();
    (
        body["access_token"].as_str().unwrap().to_owned(),
        body["refresh_token"].as_str().unwrap().to_owned(),
    )
}

async fn observe(o: &OAuthTest, access: &str) -> u16 {
    o.call(Some(access), "observe", json!({})).await.status
}

#[tokio::test]
async fn a_grant_survives_a_restart_on_sqlite() {
    let dir = TempDir::new("oauth-restart");
    let spec = dir.file("agent.db");
    let stores = Stores::open(&spec).await.expect("open SQLite");
    let (o, task) = start(&stores).await;
    let (client, access, refresh_token) = o.grant(true).await;
    assert_eq!(observe(&o, &access).await, 200);
    // Stopped: the task serving it ends, the server and its store are dropped and closed.
    task.abort();
    let _ = task.await;
    drop(o);
    stores.sessions.close().await;
    drop(stores);

    let stores = Stores::open(&spec).await.expect("reopen SQLite");
    let (o, _task) = start(&stores).await;
    // The registration is still known: its consent page opens.
    let (_, challenge) = pkce();
    let page = o
        .authorize(
            "alice",
            &[
                ("response_type", "code"),
                ("client_id", &client),
                ("redirect_uri", REDIRECT),
                ("code_challenge", &challenge),
                ("code_challenge_method", "S256"),
            ],
        )
        .await;
    assert_eq!(page.status, 200, "{}", page.text);
    // The access token handed out before the restart works until its expiry.
    assert_eq!(observe(&o, &access).await, 200);
    // The refresh token rotates.
    let (new_access, new_refresh) = tokens_of(&refresh(&o, &client, &refresh_token).await);
    assert_ne!(new_access, access);
    assert_ne!(new_refresh, refresh_token);
    assert_eq!(observe(&o, &new_access).await, 200);
    // The retired one is still remembered: presented again, it revokes the grant.
    let reused = refresh(&o, &client, &refresh_token).await;
    assert_eq!(reused.status, 400, "{}", reused.text);
    assert_eq!(reused.json()["error"], "invalid_grant");
    assert_eq!(observe(&o, &new_access).await, 401);
    assert_eq!(observe(&o, &access).await, 401);
}

#[tokio::test]
async fn a_failing_store_answers_server_error_never_a_token() {
    let dir = TempDir::new("oauth-fail");
    let stores = Stores::open(&dir.file("agent.db"))
        .await
        .expect("open SQLite");
    let (o, _task) = start(&stores).await;
    let (client, _, refresh_token) = o.grant(true).await;
    let client2 = o.register(&[REDIRECT]).await;
    let (verifier, challenge) = pkce();
    let code = value(
        &o.consent("alice", &client2, &challenge, true).await,
        "code",
    );
    // The database goes away under the running server.
    stores.sessions.close().await;
    for answer in [
        refresh(&o, &client, &refresh_token).await,
        o.exchange(&client2, &code, &verifier).await,
    ] {
        assert_eq!(answer.status, 500, "{}", answer.text);
        assert_eq!(answer.json()["error"], "server_error", "{}", answer.text);
        assert!(answer.json().get("access_token").is_none());
        assert_eq!(answer.header("cache-control"), "no-store");
    }
}

#[tokio::test]
async fn replicas_on_postgres_share_grants_and_see_revokes_at_once() {
    let pg = PgServer::start();
    let (sa, sb) = (
        Stores::open(&pg.url()).await.expect("replica A"),
        Stores::open(&pg.url()).await.expect("replica B"),
    );
    let (a, _ta) = start(&sa).await;
    let (b, _tb) = start(&sb).await;
    // Granted on A, used on B.
    let (client, access, refresh_token) = a.grant(true).await;
    assert_eq!(observe(&b, &access).await, 200);
    // Refreshed on B, used on A.
    let (access2, refresh2) = tokens_of(&refresh(&b, &client, &refresh_token).await);
    assert_eq!(observe(&a, &access2).await, 200);
    // Revoked on A (RFC 7009): B refuses its tokens on the next request.
    let revoked = send(
        a.http
            .post(a.url("/agent/oauth/revoke"))
            .form(&[("token", refresh2.as_str()), ("client_id", client.as_str())]),
    )
    .await;
    assert_eq!(revoked.status, 200, "{}", revoked.text);
    assert_eq!(observe(&b, &access2).await, 401);
    assert_eq!(observe(&b, &access).await, 401);
    assert_eq!(
        refresh(&b, &client, &refresh2).await.json()["error"],
        "invalid_grant"
    );

    // Two refreshes of one token, racing on A and B.
    let (client, access, refresh_token) = a.grant(true).await;
    let (on_a, on_b) = tokio::join!(
        refresh(&a, &client, &refresh_token),
        refresh(&b, &client, &refresh_token)
    );
    let answers = [on_a, on_b];
    let winners: Vec<&Http> = answers.iter().filter(|h| h.status == 200).collect();
    assert!(winners.len() <= 1, "two replicas both rotated one token");
    assert!(answers
        .iter()
        .any(|h| h.status == 400 && h.json()["error"] == "invalid_grant"));
    // The loser presented a token that was no longer current: the grant is revoked as a reuse,
    // every token of it refused on both replicas.
    for h in winners {
        let (won_access, won_refresh) = tokens_of(h);
        assert_eq!(observe(&a, &won_access).await, 401);
        assert_eq!(observe(&b, &won_access).await, 401);
        assert_eq!(
            refresh(&a, &client, &won_refresh).await.json()["error"],
            "invalid_grant"
        );
    }
    assert_eq!(observe(&a, &access).await, 401);
    assert_eq!(observe(&b, &access).await, 401);
    let reused = a
        .audit
        .entries()
        .into_iter()
        .chain(b.audit.entries())
        .any(|e| e.event == AuditEvent::OauthRevoked && e.detail["reason"] == "refresh-reused");
    assert!(reused, "the race is audited as a reuse");

    // A grant whose agent the person revoked in the console (on B) refreshes no more (on A).
    let (client, access, refresh_token) = a.grant(true).await;
    assert_eq!(observe(&a, &access).await, 200);
    let sessions =
        b.t.send(
            b.t.request(reqwest::Method::GET, "/agent/sessions")
                .header(USER_HEADER, "alice"),
        )
        .await;
    for session in sessions.body["sessions"].as_array().expect("sessions") {
        let tid = session["tid"].as_str().expect("tid");
        let r =
            b.t.post_json("/agent/revoke", Some("alice"), None, &json!({"tid": tid}))
                .await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    assert_eq!(observe(&a, &access).await, 401);
    let refused = refresh(&a, &client, &refresh_token).await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    assert_eq!(refused.json()["error"], "invalid_grant");
}

/// The todo example as its own process (`cargo run --example todo`'s command line) on a SQLite
/// file, killed with SIGKILL mid-grant and started again on the same port and file: the grant
/// made before is refreshed, and the new access token calls a tool that acts.
#[tokio::test]
async fn a_refresh_works_after_the_process_is_killed() {
    let dir = TempDir::new("oauth-sigkill");
    let db = dir.file("todo.db");
    let first = todo_server!().args(["--db", &db]).start();
    let base = first.base.clone();
    let url = |path: &str| format!("{base}{path}");
    let person = reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    // The person's identity cookie, as the console hands it out.
    assert_eq!(send(person.get(url("/agent/console"))).await.status, 200);
    let registered = send(person.post(url("/agent/oauth/register")).json(&json!({
        "client_name": "Restarted agent", "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "none",
    })))
    .await;
    assert_eq!(registered.status, 201, "{}", registered.text);
    let client = registered.json()["client_id"].as_str().unwrap().to_owned();
    let (verifier, challenge) = pkce();
    let resource = url("/agent/mcp");
    let page = send(person.get(url("/agent/oauth/authorize")).query(&[
        ("response_type", "code"),
        ("client_id", &client),
        ("redirect_uri", REDIRECT),
        ("state", "st"),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
        ("scope", "app:read app:act"),
        ("resource", &resource),
    ]))
    .await;
    assert_eq!(page.status, 200, "{}", page.text);
    let approved = send(person.post(url("/agent/oauth/authorize")).form(&[
        ("request", sealed_of(&page.text).as_str()),
        ("decision", "approve"),
        ("session", "new"),
        ("act", "1"),
    ]))
    .await;
    assert_eq!(approved.status, 303, "{}", approved.text);
    let code = value(&query_of(&approved.header("location")), "code");
    // No kept connections: the first process's die with it.
    let agent = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let token = |form: Vec<(&'static str, String)>| {
        let req = agent.post(url("/agent/oauth/token")).form(&form);
        async move { send(req).await }
    };
    let (access, refresh_token) = tokens_of(
        &token(vec![
            ("grant_type", "authorization_code".into()),
            ("code", code),
            ("redirect_uri", REDIRECT.into()),
            ("code_verifier", verifier),
            ("client_id", client.clone()),
            ("resource", resource.clone()),
        ])
        .await,
    );
    let call = |bearer: String, tool: &'static str, args: serde_json::Value| {
        let req = stateless_tool_call(&agent, &base, Some(&bearer), "restarted", tool, args);
        async move { send(req).await }
    };
    let added = call(
        access.clone(),
        "send_message",
        json!({"msg": {"type": "add", "title": "before the crash"}}),
    )
    .await;
    assert_eq!(added.status, 200, "{}", added.text);
    assert_ne!(added.json()["result"]["isError"], true, "{}", added.text);

    let second = first.restart();
    assert_eq!(second.base, base);
    let (new_access, _) = tokens_of(
        &token(vec![
            ("grant_type", "refresh_token".into()),
            ("refresh_token", refresh_token),
            ("client_id", client),
        ])
        .await,
    );
    assert_ne!(new_access, access);
    let state = call(new_access.clone(), "get_state", json!({})).await;
    assert_eq!(state.status, 200, "{}", state.text);
    assert!(
        tool_text(&state).contains("before the crash"),
        "{}",
        state.text
    );
    let added = call(
        new_access,
        "send_message",
        json!({"msg": {"type": "add", "title": "after the restart"}}),
    )
    .await;
    assert_eq!(added.status, 200, "{}", added.text);
    assert_ne!(added.json()["result"]["isError"], true, "{}", added.text);
    assert!(
        tool_text(&added).contains("after the restart"),
        "{}",
        added.text
    );
}
