//! A raw `/agent/ws` client for wire tests: frames are JSON the test writes itself.

use std::time::Duration;

use futures::{SinkExt as _, StreamExt as _};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// How long a test waits for a frame.
const FRAME_WAIT: Duration = Duration::from_secs(5);

/// One raw socket, as an app runtime (a browser tab) would hold it.
pub struct Tab {
    ws: WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>,
}

/// The `ws://` URL of `/agent/ws` on `base` (`http://…`) with `token`.
pub fn ws_url(base: &str, token: &str) -> String {
    format!("{}/agent/ws?token={token}", base.replacen("http", "ws", 1))
}

impl Tab {
    /// Opens `url` with optional extra headers, as a page on the server's own origin does
    /// (with its `Origin`, unless `headers` give one); `Err(status)` when the upgrade is
    /// refused.
    pub async fn open(url: &str, headers: &[(&str, &str)]) -> Result<Tab, u16> {
        if headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("origin"))
        {
            return Tab::open_native(url, headers).await;
        }
        let page = url.replacen("ws", "http", 1);
        let page = page.split("/agent/").next().unwrap_or_default();
        let mut with_origin = headers.to_vec();
        with_origin.push(("origin", page));
        Tab::open_native(url, &with_origin).await
    }

    /// Opens `url` with exactly `headers` (no `Origin` unless given: a native app or a plain
    /// HTTP client); `Err(status)` when the upgrade is refused.
    pub async fn open_native(url: &str, headers: &[(&str, &str)]) -> Result<Tab, u16> {
        let mut request = url.into_client_request().expect("request");
        for (k, v) in headers {
            request.headers_mut().insert(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        match tokio_tungstenite::connect_async(request).await {
            Ok((ws, _)) => Ok(Tab { ws }),
            Err(WsError::Http(response)) => Err(response.status().as_u16()),
            Err(e) => panic!("unexpected websocket error: {e}"),
        }
    }

    /// Opens the socket of `token` on `base` and says `hello` (checking the `hello-ack`).
    pub async fn pair(base: &str, token: &str) -> Tab {
        let mut tab = Tab::open(&ws_url(base, token), &[]).await.expect("upgrade");
        tab.hello(Some(2)).await;
        let ack = tab.next().await;
        assert_eq!(
            ack,
            json!({"t": "hello-ack", "lapVersion": 2, "minClientVersion": 2,
                   "extensions": ["progress"]})
        );
        tab
    }

    /// Sends a `hello` with `lapVersion`.
    pub async fn hello(&mut self, lap_version: Option<u32>) {
        let mut hello = json!({
            "t": "hello",
            "appName": "wire-app",
            "appVersion": "0.0.1",
            "msgSchema": {"discriminant": "type", "variants": {"inc": {}}},
            "stateSchema": {"type": "object"},
            "affordancesSample": [],
            "docs": null,
            "schemaHash": "0123456789abcdef0123456789abcdef",
        });
        if let Some(v) = lap_version {
            hello["lapVersion"] = json!(v);
        }
        self.send(hello).await;
    }

    /// Sends a frame.
    pub async fn send(&mut self, frame: Value) {
        self.ws
            .send(Message::Text(frame.to_string().into()))
            .await
            .expect("send");
    }

    /// Sends raw text.
    pub async fn send_text(&mut self, text: String) -> Result<(), WsError> {
        self.ws.send(Message::Text(text.into())).await
    }

    /// The next text frame, as JSON (panics on close or after 5 s).
    pub async fn next(&mut self) -> Value {
        loop {
            let message = tokio::time::timeout(FRAME_WAIT, self.ws.next())
                .await
                .expect("a frame within 5 s")
                .expect("socket open")
                .expect("frame");
            match message {
                Message::Text(t) => return serde_json::from_str(t.as_str()).expect("JSON frame"),
                Message::Close(c) => panic!("socket closed: {c:?}"),
                _ => continue,
            }
        }
    }

    /// The next frame, which must be an `rpc` of `tool`: answers `(id, args)`.
    pub async fn rpc(&mut self, tool: &str) -> (String, Value) {
        let frame = self.next().await;
        assert_eq!(frame["t"], "rpc", "{frame}");
        assert_eq!(frame["tool"], tool, "{frame}");
        (
            frame["id"].as_str().unwrap().to_string(),
            frame["args"].clone(),
        )
    }

    /// Answers rpc `id` with `result`.
    pub async fn reply(&mut self, id: &str, result: Value) {
        self.send(json!({"t": "rpc-reply", "id": id, "result": result}))
            .await;
    }

    /// Whether the server closes the socket within 5 s (text frames before it are skipped and
    /// returned).
    pub async fn closed(&mut self) -> (bool, Vec<Value>) {
        let mut seen = Vec::new();
        loop {
            match tokio::time::timeout(FRAME_WAIT, self.ws.next()).await {
                Err(_) => return (false, seen),
                Ok(None | Some(Err(_)) | Some(Ok(Message::Close(_)))) => return (true, seen),
                Ok(Some(Ok(Message::Text(t)))) => {
                    seen.push(serde_json::from_str(t.as_str()).unwrap_or(Value::Null))
                }
                Ok(Some(Ok(_))) => {}
            }
        }
    }

    /// The next text frame within `wait`, if any (skips pings; `None` on close too).
    pub async fn try_next(&mut self, wait: Duration) -> Option<Value> {
        loop {
            match tokio::time::timeout(wait, self.ws.next()).await {
                Ok(Some(Ok(Message::Text(t)))) => {
                    return Some(serde_json::from_str(t.as_str()).expect("JSON frame"))
                }
                Ok(Some(Ok(Message::Ping(_) | Message::Pong(_)))) => continue,
                _ => return None,
            }
        }
    }

    /// Reads until the socket ends (within `wait` per message): `Some(code)` of the server's
    /// close frame, `Some(0)` when it ended without one, `None` when it stayed open. Text
    /// frames before it are skipped.
    pub async fn close_code(&mut self, wait: Duration) -> Option<u16> {
        loop {
            match tokio::time::timeout(wait, self.ws.next()).await {
                Err(_) => return None,
                Ok(Some(Ok(Message::Close(frame)))) => {
                    return Some(frame.map_or(0, |f| u16::from(f.code)))
                }
                Ok(None | Some(Err(_))) => return Some(0),
                Ok(Some(Ok(_))) => {}
            }
        }
    }

    /// Sends two frames in one write (one flush), as an app may.
    pub async fn send_together(&mut self, a: Value, b: Value) {
        self.ws
            .feed(Message::Text(a.to_string().into()))
            .await
            .expect("feed");
        self.ws
            .feed(Message::Text(b.to_string().into()))
            .await
            .expect("feed");
        self.ws.flush().await.expect("flush");
    }

    /// Sends one raw websocket message (binary, invalid text, …).
    pub async fn send_message(&mut self, message: Message) -> Result<(), WsError> {
        self.ws.send(message).await
    }

    /// Writes raw bytes on the TCP stream under the socket (a hand-made frame header, …).
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        use tokio::io::AsyncWriteExt as _;
        match self.ws.get_mut() {
            MaybeTlsStream::Plain(tcp) => tcp.write_all(bytes).await.expect("raw write"),
            _ => panic!("raw writes need a plain TCP socket"),
        }
    }

    /// Closes the socket from this side.
    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
        // Drain until the server's close answer so the server has seen it.
        while let Ok(Some(Ok(_))) = tokio::time::timeout(FRAME_WAIT, self.ws.next()).await {}
    }
}
