//! A headless Chromium driven over WebDriver (fantoccini), against a chromedriver started on a
//! free port and stopped when the scenario ends: the browser tests' harness. Needs Debian's
//! `chromium` and `chromium-driver` (`.ci/test` installs them).

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use futures::FutureExt;
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;

pub use crate::ports::free_port;

/// How long a wait lasts before it fails.
pub const WAIT: Duration = Duration::from_secs(20);

/// A chromedriver child process, killed when dropped (also when the test panics).
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| p.is_file())
}

fn chromedriver_path() -> PathBuf {
    on_path(&["chromedriver"])
        .or_else(|| {
            let p = Path::new("/usr/bin/chromedriver");
            p.is_file().then(|| p.to_path_buf())
        })
        .expect("chromedriver not found on PATH (Debian: apt-get install chromium chromium-driver)")
}

async fn start_driver() -> Driver {
    let port = free_port();
    let child = Command::new(chromedriver_path())
        .arg(format!("--port={port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn chromedriver");
    let driver = Driver {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let http = reqwest::Client::new();
    let deadline = Instant::now() + WAIT;
    loop {
        let ready = http
            .get(format!("{}/status", driver.url))
            .send()
            .await
            .map(|r| r.status().is_success())
            .unwrap_or(false);
        if ready {
            return driver;
        }
        assert!(
            Instant::now() < deadline,
            "chromedriver did not start on port {port}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn open_browser(driver: &Driver) -> Client {
    let mut options = json!({
        "args": [
            "--headless=new",
            "--no-sandbox",
            "--disable-dev-shm-usage",
            "--disable-gpu",
            "--window-size=1280,1000",
        ],
    });
    if let Some(binary) = on_path(&["chromium", "chromium-browser", "google-chrome"]) {
        options["binary"] = json!(binary.to_string_lossy());
    }
    let mut caps = serde_json::Map::new();
    caps.insert("browserName".into(), json!("chrome"));
    caps.insert("goog:chromeOptions".into(), options);
    // chromedriver listens on loopback over plain HTTP: no TLS stack needed.
    ClientBuilder::new(HttpConnector::new())
        .capabilities(caps)
        .connect(&driver.url)
        .await
        .expect("a WebDriver session")
}

/// Runs `scenario` against a fresh browser, and closes the browser and the driver whatever
/// happens.
pub async fn with_browser<F, Fut>(scenario: F)
where
    F: FnOnce(Client) -> Fut,
    Fut: Future<Output = ()>,
{
    let driver = start_driver().await;
    let client = open_browser(&driver).await;
    let outcome = AssertUnwindSafe(scenario(client.clone()))
        .catch_unwind()
        .await;
    let _ = client.close().await;
    drop(driver);
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// Polls `probe` every 100 ms until it yields a value (or panics after [`WAIT`]).
pub async fn wait_for<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The visible text of the first element matching `css`, if there is one.
pub async fn text(c: &Client, css: &str) -> Option<String> {
    c.find(Locator::Css(css)).await.ok()?.text().await.ok()
}

/// Clicks the first element matching `css` once it is there and clickable.
pub async fn click(c: &Client, css: &str) {
    wait_for(&format!("{css} to be clickable"), || async {
        c.find(Locator::Css(css)).await.ok()?.click().await.ok()
    })
    .await
}

/// Waits until the text of `css` satisfies `ok` and returns it.
pub async fn wait_text(c: &Client, css: &str, ok: impl Fn(&str) -> bool) -> String {
    wait_for(&format!("the text of {css}"), || async {
        text(c, css).await.filter(|t| ok(t))
    })
    .await
}

/// A page at `http://127.0.0.1:<free port>/callback` for an OAuth client's redirect URI, so the
/// browser lands somewhere after the consent; answers its URL.
pub async fn landing_page() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the landing page");
    let port = listener.local_addr().expect("its address").port();
    let app = axum::Router::new().route(
        "/callback",
        axum::routing::get(|| async { "back in the client" }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://127.0.0.1:{port}/callback")
}

/// The person approves the consent page at `authorization_url` as it comes (a new session
/// preselected, the scopes asked for ticked): one click on Approve. Answers the URL the
/// browser lands on, which starts with `redirect`.
pub async fn approve_consent(c: &Client, authorization_url: &str, redirect: &str) -> String {
    c.goto(authorization_url).await.expect("the consent page");
    click(c, "button[name=decision][value=approve]").await;
    wait_for("the redirect back to the client", || async {
        let url = c.current_url().await.ok()?;
        let url = url.as_str().to_owned();
        url.starts_with(redirect).then_some(url)
    })
    .await
}
