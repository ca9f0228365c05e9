//! The identity cookie over real HTTP (`docs/lap.md` §3.1, `docs/security.md` §Human identity):
//! a cookie planted beside the real one (as a sibling subdomain can) never switches the caller's
//! identity, and over https the cookie is `__Host-` prefixed.

use agent_examples::counter::Counter;
use agent_tests::TestServer;
use reqwest::Method;

/// A cookieless mint: the `name=value` pair of the issued cookie and the new session's id.
async fn anonymous_mint(t: &TestServer<Counter>) -> (String, String) {
    let a = t
        .send(
            t.request(Method::POST, "/agent/mint")
                .header("content-type", "application/json")
                .body("{}"),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let set_cookie = a.headers["set-cookie"].to_str().unwrap();
    let pair = set_cookie.split(';').next().unwrap().to_string();
    (pair, a.body["sessionId"].as_str().unwrap().to_string())
}

/// `GET /agent/human/sessions` with this `Cookie` header: the status and the session ids.
async fn sessions_with(t: &TestServer<Counter>, cookie: &str) -> (u16, Vec<String>) {
    let a = t
        .send(
            t.request(Method::GET, "/agent/human/sessions")
                .header("cookie", cookie),
        )
        .await;
    let ids = a.body["sessions"]
        .as_array()
        .map(|all| {
            all.iter()
                .filter_map(|s| s["sessionId"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    (a.status, ids)
}

#[tokio::test]
async fn a_planted_cookie_beside_the_real_one_does_not_switch_identity() {
    let t = TestServer::builder(Counter).anonymous().start().await;
    let (victim, victims_session) = anonymous_mint(&t).await;
    let (attacker, attackers_session) = anonymous_mint(&t).await;
    assert_eq!(
        sessions_with(&t, &victim).await,
        (200, vec![victims_session.clone()])
    );

    // A forged cookie first (a browser sends a planted `Path=/agent` cookie before the real
    // `Path=/` one): the real one still decides.
    let forged = "agent_identity=anon-forged.AAAA";
    assert_eq!(
        sessions_with(&t, &format!("{forged}; {victim}")).await,
        (200, vec![victims_session.clone()])
    );

    // Another identity's valid cookie beside the real one, in either order: neither counts,
    // the caller is nobody (never the attacker).
    for cookie in [
        format!("{attacker}; {victim}"),
        format!("{victim}; {attacker}"),
    ] {
        let (status, ids) = sessions_with(&t, &cookie).await;
        assert_eq!(status, 401, "{cookie}");
        assert!(!ids.contains(&attackers_session), "{cookie}");
    }
}

#[tokio::test]
async fn over_https_the_cookie_is_host_prefixed_and_the_plain_name_is_not_read() {
    // `tls`: the app serves TLS itself, so the request origin is https.
    let t = TestServer::builder(Counter)
        .anonymous()
        .options(|o| o.tls = true)
        .start()
        .await;
    let a = t
        .send(
            t.request(Method::POST, "/agent/mint")
                .header("content-type", "application/json")
                .body("{}"),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let set_cookie = a.headers["set-cookie"].to_str().unwrap();
    assert!(
        set_cookie.starts_with("__Host-agent_identity="),
        "{set_cookie}"
    );
    assert!(
        set_cookie.ends_with("; Path=/; HttpOnly; SameSite=Lax; Max-Age=2592000; Secure"),
        "{set_cookie}"
    );
    assert!(
        !set_cookie.to_ascii_lowercase().contains("domain="),
        "{set_cookie}"
    );
    let pair = set_cookie.split(';').next().unwrap();
    let session = a.body["sessionId"].as_str().unwrap().to_string();
    assert_eq!(sessions_with(&t, pair).await, (200, vec![session]));
    // The same value under the plain name (which any subdomain can set) is not read over https.
    let plain = pair.strip_prefix("__Host-").unwrap();
    assert_eq!(sessions_with(&t, plain).await.0, 401);
}
