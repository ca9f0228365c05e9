//! OAuth on `/agent/mcp` with rmcp's own client (its `auth` feature, `docs/authorization.md`):
//! discovery from the 401's challenge, dynamic registration and PKCE by
//! `AuthorizationSession`, the consent page approved by the person over HTTP (the test
//! identity header), the code exchanged by rmcp, then an rmcp MCP session whose HTTP client is
//! rmcp's `AuthClient` (the token on every request) lists the tools and dispatches.

use rmcp::model::CallToolRequestParams;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{
    AuthClient, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
    StreamableHttpClientTransport,
};
use rmcp::ServiceExt as _;
use serde_json::json;

use agent_tests::USER_HEADER;

use super::oauth_flow::{send, server, value, REDIRECT};

#[tokio::test]
async fn rmcp_registers_gets_consent_and_calls_tools() {
    let o = server().await;
    let mcp = o.url("/agent/mcp");
    // The reactive path: the tokenless request's 401 names the metadata.
    let challenge = o
        .call(None, "observe", json!({}))
        .await
        .header("www-authenticate");
    assert!(challenge.contains("resource_metadata="), "{challenge}");
    let mut manager = AuthorizationManager::new(mcp.as_str())
        .await
        .expect("a manager");
    let resolution = manager
        .resolve_metadata_from_challenge(Some(&challenge))
        .await
        .expect("discovery");
    assert_eq!(
        resolution.metadata.token_endpoint,
        o.url("/agent/oauth/token")
    );
    manager.set_metadata(resolution.metadata);
    let request = AuthorizationRequest::new(REDIRECT)
        .with_client_name("rmcp agent")
        .with_scopes(["app:read", "app:act"]);
    let session = match AuthorizationSession::new(manager, request).await {
        Ok(session) => session,
        Err((_, e)) => panic!("registration: {e}"),
    };
    // The person opens the URL rmcp made (PKCE S256, state, resource) and approves.
    let url = session.get_authorization_url().to_owned();
    assert!(url.contains("code_challenge_method=S256"), "{url}");
    let page = send(o.http.get(&url).header(USER_HEADER, "alice")).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.text.contains("rmcp agent"), "{}", page.text);
    let redirect = o.approve("alice", &page, true).await;
    session
        .handle_callback_with_issuer(
            &value(&redirect, "code"),
            &value(&redirect, "state"),
            Some(&value(&redirect, "iss")),
        )
        .await
        .expect("the code exchanged");
    // An MCP session over rmcp's authorized HTTP client.
    let client = AuthClient::new(reqwest_rmcp::Client::default(), session.auth_manager);
    let transport = StreamableHttpClientTransport::with_client(
        client,
        StreamableHttpClientTransportConfig::with_uri(mcp.as_str()),
    );
    let peer = ().serve(transport).await.expect("initialize with the token");
    let tools = peer.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(
        names.contains(&"send_message") && names.contains(&"observe"),
        "{names:?}"
    );
    let args = json!({"msg": {"type": "add", "title": "from rmcp"}});
    let sent = peer
        .call_tool(
            CallToolRequestParams::new("send_message")
                .with_arguments(args.as_object().unwrap().clone()),
        )
        .await
        .expect("send_message");
    assert_ne!(sent.is_error, Some(true), "{sent:?}");
    let state = peer
        .call_tool(CallToolRequestParams::new("get_state"))
        .await
        .expect("get_state");
    let text = format!("{:?}", state.structured_content);
    assert!(text.contains("from rmcp"), "{text}");
    assert_eq!(
        o.events(tea_agent_runtime::security::AuditEvent::OauthGranted),
        1
    );
    peer.cancel().await.expect("closed");
}
