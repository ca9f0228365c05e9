//! The session view in a host (`docs/mcp.md` §The session view in the chat): a test page plays
//! the host with the official host side of MCP Apps (`@modelcontextprotocol/ext-apps`'
//! `AppBridge` and `PostMessageTransport`, pinned, from npm, bundled by `.ci/mcp-ext-apps`: its
//! path in `MCP_EXT_APPS_BUNDLE`). The host lists the todo example's tools with the extension
//! declared, calls `observe`, reads the `ui://` resource its `_meta.ui.resourceUri` names and
//! renders it in a sandboxed iframe through a sandbox proxy on another origin, forwarding the
//! view's `tools/call` to `/agent/mcp`. The view shows the todos (a title of markup as text),
//! an agent's new todo with its patch, a proposal whose Approve opens the console (the human
//! approves there, the view shows the result), and running work whose Cancel opens the
//! console too. A screenshot of the view is kept under the target dir.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_examples::todo::TodoApp;
use agent_tests::chromium::{click, wait_for, wait_text, with_browser};
use agent_tests::process::lap;
use agent_tests::TestServer;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use fantoccini::{Client, Locator};
use serde_json::{json, Value};
use tea_agent_runtime::store::Stores;

/// The host page: the official `AppBridge`, the view in a sandbox proxy (`SANDBOX` is replaced
/// by its URL), every MCP request through `/mcp` (the test forwards it to `/agent/mcp`).
const HOST_PAGE: &str = r#"<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>test host</title>
<style>body{margin:0;font:13px sans-serif} iframe{border:1px solid #ccc;width:720px;height:900px}</style></head>
<body><div id="host-status">starting</div>
<script type="module">
import { AppBridge, PostMessageTransport } from '/app-bridge.js';
window.opened = [];
let next = 1;
async function mcp(method, params) {
  const r = await fetch('/mcp', { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: next++, method, params }) });
  const answer = await r.json();
  if (answer.error) throw new Error(answer.error.message);
  return answer.result;
}
try {
  const { tools } = await mcp('tools/list', {});
  const observe = tools.find(t => t.name === 'observe');
  const uri = observe._meta.ui.resourceUri;
  const result = await mcp('tools/call', { name: 'observe', arguments: {} });
  const read = await mcp('resources/read', { uri });
  const content = read.contents[0];
  if (content.mimeType !== 'text/html;profile=mcp-app') throw new Error('mime ' + content.mimeType);
  const iframe = document.createElement('iframe');
  iframe.setAttribute('sandbox', 'allow-scripts allow-same-origin');
  iframe.src = 'SANDBOX';
  document.body.appendChild(iframe);
  const bridge = new AppBridge(null, { name: 'test-host', version: '1' },
    { openLinks: {}, serverTools: {}, serverResources: {} },
    { hostContext: { theme: 'light', displayMode: 'inline', platform: 'web' } });
  bridge.oncalltool = (params) => mcp('tools/call', params);
  bridge.onreadresource = (params) => mcp('resources/read', params);
  bridge.onopenlink = async ({ url }) => { window.opened.push(url); return {}; };
  bridge.onsandboxready = () => bridge.sendSandboxResourceReady({ html: content.text, csp: content._meta?.ui?.csp });
  bridge.oninitialized = () => {
    bridge.sendToolInput({ arguments: {} });
    bridge.sendToolResult(result);
    document.getElementById('host-status').textContent = 'initialized';
  };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  document.getElementById('host-status').textContent = 'connected';
} catch (e) {
  document.getElementById('host-status').textContent = 'host failed: ' + e.message;
}
</script></body></html>"#;

/// The sandbox proxy, on another origin than the host: loads the view's HTML in an inner iframe
/// without `allow-same-origin`, under the restrictive CSP of an empty `ui.csp`, and relays every
/// message but its own `ui/notifications/sandbox-*` ones.
const SANDBOX_PAGE: &str = r#"<!DOCTYPE html>
<html><head><meta charset="utf-8"><style>body{margin:0} iframe{border:0;width:100%;height:880px}</style></head>
<body><script>
const CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; " +
  "media-src data:; connect-src 'none'; frame-src 'none'; object-src 'none'; base-uri 'none'";
let inner = null;
window.addEventListener('message', (ev) => {
  const m = ev.data;
  if (ev.source === window.parent) {
    if (m && m.method === 'ui/notifications/sandbox-resource-ready') {
      inner = document.createElement('iframe');
      inner.setAttribute('sandbox', 'allow-scripts');
      inner.id = 'view';
      const csp = '<meta http-equiv="Content-Security-Policy" content="' + CSP + '">';
      inner.srcdoc = m.params.html.replace('<head>', '<head>' + csp);
      document.body.appendChild(inner);
      return;
    }
    if (inner && !(m && typeof m.method === 'string' && m.method.startsWith('ui/notifications/sandbox-'))) {
      inner.contentWindow.postMessage(m, '*');
    }
  } else if (inner && ev.source === inner.contentWindow) {
    window.parent.postMessage(m, '*');
  }
});
window.parent.postMessage({ jsonrpc: '2.0', method: 'ui/notifications/sandbox-proxy-ready', params: {} }, '*');
</script></body></html>"#;

/// The bundle of the host side of the extension, made by `.ci/mcp-ext-apps`.
fn bridge_bundle() -> String {
    let path = std::env::var("MCP_EXT_APPS_BUNDLE").expect(
        "MCP_EXT_APPS_BUNDLE: the bundle of @modelcontextprotocol/ext-apps' AppBridge \
         (run `export MCP_EXT_APPS_BUNDLE=$(.ci/mcp-ext-apps)`)",
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A server of `app` on 127.0.0.1 and a free port; answers its base URL.
async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://127.0.0.1:{port}")
}

/// One JSON-RPC request of the host page sent to `mcp` as a 2026-07-28 client that declared
/// the extension, with the agent's bearer: the answer's JSON-RPC message.
async fn forward(http: &reqwest::Client, mcp: &str, bearer: &str, mut request: Value) -> Value {
    let method = request["method"].as_str().unwrap_or_default().to_owned();
    let name = match method.as_str() {
        "tools/call" => request["params"]["name"].as_str().map(str::to_owned),
        "resources/read" => request["params"]["uri"].as_str().map(str::to_owned),
        _ => None,
    };
    request["params"]["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test-host", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}
        },
    });
    let mut req = http
        .post(mcp)
        .bearer_auth(bearer)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", &method);
    if let Some(name) = name {
        req = req.header("mcp-name", name);
    }
    let failed = |message: String| json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32000, "message": message}});
    let (status, text) = match req.body(request.to_string()).send().await {
        Ok(resp) => (
            resp.status().as_u16(),
            resp.text().await.unwrap_or_default(),
        ),
        Err(e) => return failed(e.to_string()),
    };
    // A refused bearer is an HTTP answer, not a JSON-RPC one: the host tells the view.
    if !(200..300).contains(&status) {
        return failed(format!("HTTP {status}: {text}"));
    }
    serde_json::from_str(&text).unwrap_or_else(|_| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .rfind(|m| m.get("result").is_some() || m.get("error").is_some())
            .unwrap_or_else(|| failed(text.clone()))
    })
}

/// The host (page, bundle, `/mcp`) and the sandbox proxy, on two origins; answers the host
/// page's URL.
async fn host(mcp: String, bearer: String) -> String {
    let sandbox = serve(axum::Router::new().route(
        "/sandbox.html",
        get(|| async { ([(header::CONTENT_TYPE, "text/html")], SANDBOX_PAGE) }),
    ))
    .await;
    let page = HOST_PAGE.replace("SANDBOX", &format!("{sandbox}/sandbox.html"));
    let bundle = bridge_bundle();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("client");
    let state = Arc::new((http, mcp, bearer));
    let base = serve(
        axum::Router::new()
            .route(
                "/host.html",
                get(move || async move { ([(header::CONTENT_TYPE, "text/html")], page) }),
            )
            .route(
                "/app-bridge.js",
                get(move || async move {
                    ([(header::CONTENT_TYPE, "text/javascript")], bundle).into_response()
                }),
            )
            .route(
                "/mcp",
                post(move |axum::Json(request): axum::Json<Value>| {
                    let state = state.clone();
                    async move { axum::Json(forward(&state.0, &state.1, &state.2, request).await) }
                }),
            ),
    )
    .await;
    format!("{base}/host.html")
}

/// Back to the top of the current tab (switching to a window leaves every frame).
async fn top(c: &Client) {
    let window = c.window().await.expect("the current window");
    c.switch_to_window(window).await.expect("its top");
}

/// Enters the view's frame (the sandbox proxy's inner iframe) from the top of the page.
async fn enter_view(c: &Client) {
    top(c).await;
    let proxy = wait_for("the sandbox proxy", || async {
        c.find(Locator::Css("iframe")).await.ok()
    })
    .await;
    proxy.enter_frame().await.expect("the sandbox proxy");
    let view = wait_for("the view's iframe", || async {
        c.find(Locator::Css("#view")).await.ok()
    })
    .await;
    view.enter_frame().await.expect("the view");
}

/// Like `wait_text`, for what the view shows at its next quiet wait (15 s) after its calls
/// took their turn in its share of the rate limit: 40 s at most.
async fn wait_longer(c: &Client, css: &str, ok: impl Fn(&str) -> bool) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(40);
    loop {
        if let Some(text) = agent_tests::chromium::text(c, css).await {
            if ok(&text) {
                return text;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for the text of {css}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The URLs the view asked the host to open (`ui/open-link`).
async fn opened(c: &Client) -> Vec<String> {
    top(c).await;
    let urls = c
        .execute("return window.opened || []", vec![])
        .await
        .expect("window.opened");
    serde_json::from_value(urls).expect("strings")
}

/// Where the screenshot goes: the target dir.
fn artifact(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary");
    // <target>/debug/deps/<binary>
    let target = exe
        .ancestors()
        .nth(3)
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    target.join(name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium, chromedriver and the ext-apps bundle (.ci/test makes them)"]
async fn the_view_in_a_host_shows_the_session_and_sends_decisions_to_the_console() {
    // A store keeps the undo records the human's Undo needs.
    let stores = Stores::open("memory").await.expect("stores");
    // The agent's calls and the view's share the token's bucket; the view takes a third of it
    // (100 calls a minute here), so it follows the import's progress closely enough for the
    // human to cancel it while it runs.
    let t = TestServer::builder(TodoApp::default())
        .anonymous()
        .stores(&stores)
        .rate_limit("300/minute")
        .start()
        .await;
    let base = t.base.clone();
    with_browser(|c| async move {
        let (token, session_id) = super::open_and_mint(&c, &t).await;
        let console_window = c.window().await.expect("the console's window");
        // A title of markup, before the view is shown.
        let markup = "<img src=x onerror=document.title='pwned'>";
        let (status, answer) = lap(
            &base,
            &token,
            "/message",
            json!({"msg": {"type": "add", "title": markup}}),
        )
        .await;
        assert_eq!(status, 200, "{answer}");

        // The host, in a window of its own.
        let host_url = host(format!("{base}/agent/mcp"), token.clone()).await;
        let host_window = c.new_window(true).await.expect("a tab").handle;
        c.switch_to_window(host_window.clone())
            .await
            .expect("the host's tab");
        c.goto(&host_url).await.expect("the host page");
        wait_text(&c, "#host-status", |s| s == "initialized").await;

        enter_view(&c).await;
        wait_text(&c, "[data-testid=app-name]", |s| s == "todo").await;
        let state = wait_text(&c, "[data-testid=state]", |s| s.contains("connect Claude")).await;
        assert!(state.contains(markup), "the title as text: {state}");
        assert!(!state.contains("sk-demo-secret"), "redacted: {state}");
        assert!(c.find(Locator::Css("img")).await.is_err(), "no element from the title");
        assert_ne!(c.title().await.unwrap_or_default(), "pwned");

        // The agent adds a todo: the view shows it and the commit's patch, who made it.
        let (status, answer) = lap(
            &base,
            &token,
            "/message",
            json!({"msg": {"type": "add", "title": "buy milk"}}),
        )
        .await;
        assert_eq!(status, 200, "{answer}");
        wait_text(&c, "[data-testid=state]", |s| s.contains("buy milk")).await;
        let commit = wait_text(&c, "[data-testid=commits] .card", |s| {
            s.contains("buy milk")
        })
        .await;
        assert!(commit.contains("add") && commit.contains("/todos/"), "{commit}");
        assert!(commit.contains("agent "), "who: {commit}");

        // A proposal: the view shows it; its Approve opens the console at it.
        let todo = answer["stateDiff"][0]["value"]["id"].clone();
        assert!(todo.is_string(), "the new todo's id in {answer}");
        let (status, proposed) = lap(
            &base,
            &token,
            "/message",
            json!({"msg": {"type": "delete", "id": todo}, "reason": "the user bought it", "timeoutMs": 10}),
        )
        .await;
        assert_eq!(status, 200, "{proposed}");
        let confirm_id = proposed["confirmId"].as_str().expect("confirmId").to_owned();
        let card = format!("[data-testid=pending] [data-confirm-id=\"{confirm_id}\"]");
        // Made outside the chat (over LAP), it changes no state: the view sees it at its next
        // quiet wait, within 15 s (a proposal the host's model makes shows at once, in the view
        // of that call).
        let shown = wait_longer(&c, &card, |s| s.contains("the user bought it")).await;
        assert!(shown.contains("delete"), "{shown}");
        wait_text(&c, "[data-testid=pending-count]", |s| s == "1").await;
        click(&c, &format!("{card} [data-action=approve]")).await;
        let decision = format!("{base}/agent/console#{session_id}/confirm/{confirm_id}");
        let urls = wait_for("the view to open the console", || async {
            let urls = opened(&c).await;
            (!urls.is_empty()).then_some(urls)
        })
        .await;
        assert_eq!(urls, vec![decision.clone()]);

        // The human approves in the console, where their cookie decides.
        c.switch_to_window(console_window.clone())
            .await
            .expect("the console's tab");
        c.goto(&decision).await.expect("the decision URL");
        let focused = format!("[data-testid=confirm][data-confirm-id=\"{confirm_id}\"].focused");
        click(&c, &format!("{focused} [data-testid=confirm-approve]")).await;
        wait_text(&c, "[data-testid=pending-count]", |s| s == "0").await;

        // The view shows the result.
        c.switch_to_window(host_window.clone())
            .await
            .expect("the host's tab");
        enter_view(&c).await;
        wait_text(&c, "[data-testid=pending-count]", |s| s == "0").await;
        wait_text(&c, "[data-testid=commits]", |s| s.contains("approved by the human")).await;
        wait_for("the deleted todo to leave the view", || async {
            let state = c.find(Locator::Css("[data-testid=state]")).await.ok()?.text().await.ok()?;
            (!state.contains("buy milk")).then_some(())
        })
        .await;

        // The agent toggles a todo: the view offers the human's Undo, which opens the console at
        // that commit; the human undoes it there and the view shows the undo.
        let (status, toggled) = lap(
            &base,
            &token,
            "/message",
            json!({"msg": {"type": "toggle", "id": "t1"}}),
        )
        .await;
        assert_eq!(status, 200, "{toggled}");
        let seq = toggled["seq"].as_u64().expect("the toggle's commit");
        let card = format!("[data-testid=commits] [data-seq=\"{seq}\"]");
        wait_text(&c, &card, |s| s.contains("/todos/0/done")).await;
        click(&c, &format!("{card} [data-action=undo]")).await;
        let undo_url = format!("{base}/agent/console#{session_id}/commit/{seq}");
        let urls = wait_for("the view to open the console at the commit", || async {
            let urls = opened(&c).await;
            (urls.len() == 2).then_some(urls)
        })
        .await;
        assert_eq!(urls[1], undo_url);
        c.switch_to_window(console_window.clone())
            .await
            .expect("the console's tab");
        c.goto(&undo_url).await.expect("the commit URL");
        click(&c, &format!("#log [data-seq=\"{seq}\"].focused [data-testid=log-undo]")).await;
        c.switch_to_window(host_window.clone())
            .await
            .expect("the host's tab");
        enter_view(&c).await;
        wait_text(&c, "[data-testid=commits]", |s| s.contains("undone by the human")).await;
        wait_text(&c, &card, |s| s.contains("undone")).await;
        assert!(c.find(Locator::Css(&format!("{card} [data-action=undo]"))).await.is_err());

        // Running work: a progress bar, and Cancel opens the console at it.
        let (status, answer) = lap(
            &base,
            &token,
            "/message",
            json!({"msg": {"type": "import", "count": 1000}, "waitFor": "idle"}),
        )
        .await;
        assert_eq!(status, 200, "{answer}");
        let work = wait_text(&c, "[data-testid=work] [data-work-id]", |s| s.contains("import")).await;
        assert!(work.contains("started by agent"), "{work}");
        let work_id = c
            .execute(
                "return document.querySelector('[data-testid=work] [data-work-id]').getAttribute('data-work-id')",
                vec![],
            )
            .await
            .expect("the work's id");
        let work_id = work_id.as_str().expect("an id").to_owned();
        let png = c.screenshot().await.expect("a screenshot");
        let path = artifact("mcp-app-session-view.png");
        std::fs::write(&path, png).expect("the screenshot is kept");
        println!("screenshot: {}", path.display());
        click(&c, "[data-testid=work] [data-action=cancel]").await;
        let urls = wait_for("the view to open the console at the work", || async {
            let urls = opened(&c).await;
            (urls.len() == 3).then_some(urls)
        })
        .await;
        let cancel_url = format!("{base}/agent/console#{session_id}/work/{work_id}");
        assert_eq!(urls[2], cancel_url);
        c.switch_to_window(console_window.clone()).await.expect("the console's tab");
        c.goto(&cancel_url).await.expect("the work URL");
        click(&c, &format!("[data-work-id=\"{work_id}\"].focused [data-testid=work-cancel]")).await;
        c.switch_to_window(host_window.clone()).await.expect("the host's tab");
        enter_view(&c).await;
        wait_text(&c, "[data-testid=work-count]", |s| s == "0").await;
        wait_text(&c, "[data-testid=commits]", |s| s.contains("cancelled")).await;

        // The human revokes the agent's tokens, then changes the state: the view, woken, says
        // the token is gone and stops.
        c.switch_to_window(console_window.clone()).await.expect("the console's tab");
        let revoked = c
            .execute(
                "const [sid, done] = arguments; \
                 return fetch('/agent/human/sessions/' + sid).then(r => r.json()).then(d => \
                   Promise.all(d.agents.map(a => fetch('/agent/revoke', {method: 'POST', \
                     headers: {'content-type': 'application/json'}, body: JSON.stringify({tid: a.tid})}))) \
                 ).then(() => fetch('/agent/human/sessions/' + sid + '/dispatch', {method: 'POST', \
                   headers: {'content-type': 'application/json'}, \
                   body: JSON.stringify({msg: {type: 'add', title: 'after the revocation'}})})) \
                 .then(r => r.status)",
                vec![json!(session_id), json!(null)],
            )
            .await
            .expect("revoke and dispatch");
        assert_eq!(revoked, json!(200));
        c.switch_to_window(host_window.clone()).await.expect("the host's tab");
        enter_view(&c).await;
        let said = wait_text(&c, "[data-testid=status]", |s| s.contains("no longer valid")).await;
        assert!(said.contains("revoked"), "{said}");
        let state = c.find(Locator::Css("[data-testid=state]")).await.unwrap().text().await.unwrap();
        assert!(!state.contains("after the revocation"), "{state}");
    })
    .await;
}
