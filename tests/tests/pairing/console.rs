//! The owner's human routes for a paired session: the session list shows it beside hosted
//! ones, its view is read from the app (an `observe` rpc) while the app is connected, acting
//! inside the app is refused (409), and closing it revokes the token (the app gets `revoked`).

use agent_tests::paired::{mint, mint_as, server};
use agent_tests::tab::Tab;
use agent_tests::USER_HEADER;
use serde_json::{json, Value};

fn entry<'a>(list: &'a Value, id: &str) -> &'a Value {
    list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sessionId"] == id)
        .unwrap_or_else(|| panic!("{id} is not listed in {list}"))
}

#[tokio::test]
async fn paired_sessions_in_the_owners_list_view_and_close() {
    let t = server().await;
    let hosted = mint_as(&t, "alice", false).await;
    assert_eq!(hosted.status, 200, "{}", hosted.body);
    let m = mint(&t).await;

    // Listed before the app connects, and only to its owner.
    let list = t.get("/agent/human/sessions", Some("alice")).await;
    assert_eq!(list.status, 200);
    let hosted_id = hosted.body["sessionId"].as_str().unwrap();
    assert_eq!(entry(&list.body, hosted_id)["kind"], "hosted");
    let paired = entry(&list.body, &m.session_id);
    assert_eq!(paired["kind"], "paired");
    assert_eq!(paired["connected"], false);
    assert_eq!(paired["agents"][0]["tid"], m.tid.as_str());
    assert_eq!(paired["agents"][0]["status"], "awaiting-ws");
    let bob = t.get("/agent/human/sessions", Some("bob")).await;
    assert_eq!(bob.body["sessions"], json!([]));
    let path = format!("/agent/human/sessions/{}", m.session_id);
    assert_eq!(t.get(&path, Some("bob")).await.status, 403);

    // Away: no state. Connected: the app's state and actions, and its log ring.
    let away = t.get(&path, Some("alice")).await;
    assert_eq!(away.status, 200, "{}", away.body);
    assert_eq!(
        (&away.body["connected"], &away.body["state"]),
        (&json!(false), &Value::Null)
    );
    let mut tab = Tab::pair(&t.base, &m.token).await;
    let entry_frame = json!({"id": "e1", "at": 1, "kind": "dispatched", "variant": "inc"});
    tab.send(json!({"t": "log-append", "entry": entry_frame}))
        .await;
    let view = {
        let base = t.base.clone();
        let path = path.clone();
        let http = reqwest::Client::new();
        tokio::spawn(async move {
            http.get(format!("{base}{path}"))
                .header(USER_HEADER, "alice")
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        })
    };
    let (id, _) = tab.rpc("observe").await;
    let actions = json!([{"variant": "inc", "intent": "add one"}]);
    tab.reply(&id, json!({"state": {"count": 7}, "actions": actions}))
        .await;
    let view = view.await.unwrap();
    assert_eq!(view["kind"], "paired");
    assert_eq!(view["connected"], true);
    assert_eq!(view["state"], json!({"count": 7}));
    assert_eq!(view["actions"], actions);
    assert_eq!(view["pending"], json!([]));
    assert_eq!(view["log"], json!([entry_frame]));
    let list = t.get("/agent/human/sessions", Some("alice")).await;
    assert_eq!(entry(&list.body, &m.session_id)["connected"], true);

    // The app dispatches and decides itself.
    for tail in ["dispatch", "confirms/c1"] {
        let a = t
            .post_json(
                &format!("{path}/{tail}"),
                Some("alice"),
                None,
                &json!({"msg": {"type": "inc"}, "decision": "approve"}),
            )
            .await;
        assert_eq!(a.status, 409, "{tail}: {}", a.body);
        assert_eq!(a.body["error"]["code"], "conflict");
    }

    // Bob cannot close it; Alice can: the app is told, the token is dead, the list forgets it.
    let close = format!("{path}/close");
    let a = t.post_json(&close, Some("bob"), None, &json!({})).await;
    assert_eq!(a.status, 403);
    let a = t.post_json(&close, Some("alice"), None, &json!({})).await;
    assert_eq!(
        (a.status, a.body),
        (200, json!({"closed": true, "sessionId": m.session_id}))
    );
    let (closed, frames) = tab.closed().await;
    assert!(closed);
    assert_eq!(frames, vec![json!({"t": "revoked"})]);
    let agent = t.lap(&m.token, "/state", &json!({})).await;
    assert_eq!(agent.status, 403);
    let list = t.get("/agent/human/sessions", Some("alice")).await;
    assert_eq!(list.body["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(t.get(&path, Some("alice")).await.status, 403);
}
