//! A page on another origin mints a session (`ServerOptions::cors_origins`): LLui's setup, an
//! app page on its own dev server calling the agent server; a page on an origin it does not
//! list cannot read the answers.

use agent_examples::counter::Counter;
use agent_tests::chromium::{free_port, wait_text, with_browser};
use agent_tests::TestServer;

/// Serves `html` at `/` on a free loopback port; answers its origin (`http://127.0.0.1:<port>`).
async fn serve_page(html: String) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let origin = format!("http://{}", listener.local_addr().expect("addr"));
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(move || {
            let html = html.clone();
            async move { axum::response::Html(html) }
        }),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    origin
}

/// A page that mints a session on `agent` with its cookie, observes it with the bearer, then
/// lists its sessions, and writes what it read (or the error) into `#out`.
fn minting_page(agent: &str) -> String {
    format!(
        r#"<!doctype html><html><body><p id="out">…</p><script>
const agent = "{agent}";
const out = document.getElementById("out");
(async () => {{
  try {{
    const minted = await fetch(agent + "/agent/mint", {{
      method: "POST", credentials: "include",
      headers: {{"content-type": "application/json"}}, body: "{{}}",
    }}).then(r => r.json());
    // A LAP call with the bearer (a preflighted request) activates the token...
    const observed = await fetch(agent + "/agent/lap/v1/observe", {{
      method: "POST",
      headers: {{"content-type": "application/json", "authorization": "Bearer " + minted.token}},
      body: "{{}}",
    }}).then(r => r.json());
    // ...so the identity cookie's session list shows it.
    const listed = await fetch(agent + "/agent/sessions", {{credentials: "include"}})
      .then(r => r.json());
    out.textContent = "minted " + minted.token.slice(0, 4) + ", observed " + observed.state.count
      + ", sessions " + listed.sessions.length;
  }} catch (e) {{
    out.textContent = "error: " + e;
  }}
}})();
</script></body></html>"#
    )
}

/// LLui's cross-origin setup: an app page on its own dev server (another port) calls mint and
/// the sessions list of the agent server, which lists the page's origin in `cors_origins`;
/// a page on an origin it does not list cannot read the answers.
#[tokio::test]
#[ignore = "needs chromium and chromedriver (.ci/test installs them)"]
async fn a_page_on_a_listed_origin_mints_across_origins() {
    // The pages come first (the agent server lists one of their origins), on a port picked
    // for the agent server now.
    let agent_port = free_port();
    let agent = format!("http://127.0.0.1:{agent_port}");
    let listed = serve_page(minting_page(&agent)).await;
    let unlisted = serve_page(minting_page(&agent)).await;
    let server = TestServer::builder(Counter)
        .anonymous()
        .options(|o| o.cors_origins = vec![listed.clone()])
        .cookie_identity_only()
        .build()
        .await;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", agent_port))
        .await
        .expect("bind the agent port");
    let app = server
        .router()
        .into_make_service_with_connect_info::<std::net::SocketAddr>();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });

    with_browser(|c| async move {
        c.goto(&listed).await.expect("open the listed page");
        let read = wait_text(&c, "#out", |s| {
            s.starts_with("minted") || s.starts_with("error")
        })
        .await;
        assert_eq!(read, "minted agt_, observed 0, sessions 1");
        c.goto(&unlisted).await.expect("open the unlisted page");
        let read = wait_text(&c, "#out", |s| {
            s.starts_with("minted") || s.starts_with("error")
        })
        .await;
        assert!(read.starts_with("error: TypeError"), "{read}");
    })
    .await;
}
