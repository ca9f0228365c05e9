//! A runnable example started the way `cargo run --example <name> --port 0` starts it, with a
//! human (cookie-carrying client, anonymous identity) and the agent token that human minted.

use agent_examples::serve::{parse_args, start, RunningExample};
use serde_json::{json, Value};
use tea_agent_runtime::app::App;

/// The running example, a human (a browser-like client keeping the identity cookie) and the
/// agent token that human minted.
pub struct ExampleWorld<A: App> {
    /// The example, served as `cargo run --example` serves it.
    pub example: RunningExample<A>,
    /// The human: a client keeping the identity cookie, like a browser.
    pub human: reqwest::Client,
    /// The agent token the human minted.
    pub token: String,
    /// The session it drives.
    pub session: String,
}

impl<A: App> ExampleWorld<A> {
    /// Starts `app` with `--port 0` and mints a token anonymously, as a newcomer would.
    pub async fn start(app: A) -> Self {
        Self::start_with(app, &["--port", "0", "--memory"]).await
    }

    /// [`Self::start`] with the example's command line `args`.
    pub async fn start_with(app: A, args: &[&str]) -> Self {
        let opts = parse_args(args.iter().map(|a| a.to_string()), 8787).expect("options");
        let example = start(app, &opts).await.expect("the example starts");
        let human = crate::browser();
        let minted: Value = human
            .post(format!("{}/agent/mint", example.base_url()))
            .json(&json!({}))
            .send()
            .await
            .expect("mint")
            .json()
            .await
            .expect("mint answer");
        ExampleWorld {
            token: minted["token"].as_str().expect("token").to_owned(),
            session: minted["sessionId"].as_str().expect("sessionId").to_owned(),
            example,
            human,
        }
    }

    /// An agent LAP call: `POST /agent/lap/v1<tail>` with the bearer token.
    pub async fn lap(&self, tail: &str, body: Value) -> (u16, Value) {
        let resp = reqwest::Client::new()
            .post(format!("{}/agent/lap/v1{tail}", self.example.base_url()))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await
            .expect("LAP call");
        (
            resp.status().as_u16(),
            resp.json().await.unwrap_or(Value::Null),
        )
    }

    /// `/message` with `waitFor: idle`; asserts 200.
    pub async fn send(&self, msg: Value) -> Value {
        let (status, body) = self
            .lap("/message", json!({"msg": msg, "waitFor": "idle"}))
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// The agent's view of the state.
    pub async fn state(&self) -> Value {
        self.lap("/state", json!({})).await.1["state"].clone()
    }

    /// `list_actions`.
    pub async fn actions(&self) -> Vec<Value> {
        let (status, body) = self.lap("/actions", json!({})).await;
        assert_eq!(status, 200, "{body}");
        body["actions"].as_array().expect("actions").clone()
    }

    /// `/describe`.
    pub async fn describe(&self) -> Value {
        let (status, body) = self.lap("/describe", json!({})).await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// A human call on `/agent/human/sessions/<session><tail>`.
    pub async fn human(&self, method: reqwest::Method, tail: &str, body: Option<Value>) -> Value {
        let url = format!(
            "{}/agent/human/sessions/{}{tail}",
            self.example.base_url(),
            self.session
        );
        let mut req = self.human.request(method, url);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("human call");
        assert_eq!(resp.status().as_u16(), 200);
        resp.json().await.expect("human answer")
    }

    /// Waits until the session has a pending confirmation and returns it.
    pub async fn pending(&self) -> Value {
        for _ in 0..200 {
            let detail = self.human(reqwest::Method::GET, "", None).await;
            if let Some(entry) = detail["pending"].as_array().and_then(|p| p.first()) {
                return entry.clone();
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("no pending confirmation appeared");
    }

    /// Waits for the next pending confirmation and decides it (`"approve"` or `"reject"`) as
    /// the human; returns the entry that was decided and the human route's answer.
    pub async fn decide_next(&self, decision: &str) -> (Value, Value) {
        let entry = self.pending().await;
        let id = entry["id"].as_str().expect("confirmation id");
        let answer = self
            .human(
                reqwest::Method::POST,
                &format!("/confirms/{id}"),
                Some(json!({ "decision": decision })),
            )
            .await;
        (entry, answer)
    }
}
