//! A state that fails to serialize is an error reported like a panicking `update` — in the
//! answer's `drain.errors` and as an `error` log entry — and agents keep the last state that
//! did serialize; never a silent `null`.

use agent_tests::start_app;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::json;
use tea_agent_runtime::AgentMsg;

#[derive(Clone, Serialize, Deserialize, JsonSchema)]
struct Fragile {
    count: i64,
    /// Serializing fails while this is true.
    #[serde(serialize_with = "refuse_when_broken")]
    broken: bool,
}

fn refuse_when_broken<S: Serializer>(broken: &bool, s: S) -> Result<S::Ok, S::Error> {
    if *broken {
        Err(serde::ser::Error::custom("the broken flag is set"))
    } else {
        s.serialize_bool(false)
    }
}

#[derive(Clone, Serialize, Deserialize, JsonSchema, AgentMsg)]
#[serde(tag = "type", rename_all = "camelCase")]
enum FragileMsg {
    /// @intent("add one")
    Inc,
    /// @intent("break serialization")
    Break,
    /// @intent("mend serialization")
    Mend,
}

struct FragileApp;

agent_tests::test_app! {
    FragileApp {
        name: "fragile",
        version: "1",
        state: Fragile = Fragile {
            count: 0,
            broken: false,
        },
        msg: FragileMsg,
    }
    update(state, msg) => match msg {
        FragileMsg::Inc => state.count += 1,
        FragileMsg::Break => {
            state.broken = true;
            state.count += 10;
        }
        FragileMsg::Mend => state.broken = false,
    };
}

#[tokio::test]
async fn a_state_that_does_not_serialize_is_an_error_not_null() {
    let t = start_app(FragileApp).await;
    let m = t.mint("alice", None).await;
    let send = |ty: &'static str| {
        let body = json!({"msg": {"type": ty}, "waitFor": "idle"});
        let (t, token) = (&t, m.token.clone());
        async move { t.lap(&token, "/message", &body).await }
    };
    assert_eq!(send("inc").await.body["status"], "dispatched");

    let broke = send("break").await;
    assert_eq!(broke.status, 200);
    assert_eq!(broke.body["status"], "dispatched");
    let errors = broke.body["drain"]["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["kind"], "error");
    assert_eq!(
        errors[0]["message"],
        "state failed to serialize: the broken flag is set"
    );
    // Agents keep the last state that serialized: no diff, no null.
    assert_eq!(broke.body["stateDiff"], json!([]));
    let state = t.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(state.body["state"], json!({"count": 1, "broken": false}));
    // The log says so.
    let log = t
        .lap(&m.token, "/recent-actions", &json!({"kind": "error"}))
        .await;
    let entry = &log.body["entries"][0];
    assert_eq!(entry["intent"], "State failed to serialize");
    assert_eq!(
        entry["detail"],
        "state failed to serialize: the broken flag is set"
    );

    // Mended, the state serializes again, with everything committed meanwhile.
    let mended = send("mend").await;
    assert_eq!(mended.body["drain"]["errors"], json!([]));
    let state = t.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(state.body["state"], json!({"count": 11, "broken": false}));

    // A dry run over a state that would not serialize says so instead of predicting null.
    let predicted = t
        .lap(
            &m.token,
            "/would-dispatch",
            &json!({"msg": {"type": "break"}}),
        )
        .await;
    assert_eq!(predicted.body["status"], "reducer-threw");
    assert_eq!(
        predicted.body["message"],
        "state failed to serialize: the broken flag is set"
    );
}
