//! A server that can never mint says so (issue: the README's embedding code answered a bare
//! 401): without anonymous identities and without an identity resolver, `/agent/mint` answers
//! 401 with a detail that names the options; the local-development preset mints.

use agent_examples::counter::Counter;
use reqwest::Method;
use tea_agent_runtime::AgentServer;

async fn mint(t: &agent_tests::TestServer<Counter>) -> agent_tests::Answer {
    t.send(
        t.request(Method::POST, "/agent/mint")
            .header("content-type", "application/json")
            .body("{}"),
    )
    .await
}

#[tokio::test]
async fn a_server_without_identities_answers_mint_with_what_to_change() {
    let server = AgentServer::builder(Counter).build().await.unwrap();
    let t = agent_tests::serve(server).await;
    let a = mint(&t).await;
    assert_eq!(a.status, 401, "{}", a.body);
    assert_eq!(a.body["error"]["code"], "auth-required", "{}", a.body);
    let detail = a.body["error"]["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("ServerOptions::allow_anonymous"),
        "{detail}"
    );
    assert!(detail.contains("local_development()"), "{detail}");
}

#[tokio::test]
async fn the_local_development_preset_mints_and_knows_its_console() {
    let server = AgentServer::builder(Counter)
        .local_development()
        .build()
        .await
        .unwrap();
    assert_eq!(
        server.console_url("0.0.0.0:8787".parse().unwrap()),
        "http://127.0.0.1:8787/agent/console"
    );
    assert_eq!(
        server.console_url("[::]:9000".parse().unwrap()),
        "http://[::1]:9000/agent/console"
    );
    let t = agent_tests::serve(server).await;
    let a = mint(&t).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(a.body["token"].as_str().unwrap().starts_with("agt_"));
}
