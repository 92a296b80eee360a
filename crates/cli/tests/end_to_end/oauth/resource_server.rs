//! The reference support server as an OAuth protected resource: it takes only access
//! tokens the authorization server issued for it.

use serde_json::json;

use super::{World, token_request};

/// An MCP initialize sent to the support server with `token`: its HTTP status, its
/// `WWW-Authenticate` and its body.
async fn initialize_with(url: &str, token: &str) -> (u16, String, String) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "oauth-test", "version": "1"}}});
    let answer = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .expect("the support server answers");
    let status = answer.status().as_u16();
    let challenge = super::challenge_of(&answer);
    (status, challenge, answer.text().await.unwrap_or_default())
}

/// The support server takes only tokens for itself: a client-credentials token the
/// authorization server issued for another resource is refused (401 `invalid_token`), one
/// for it accepted (then the caller's membership decides), a made-up one refused.
#[tokio::test(flavor = "multi_thread")]
async fn the_server_refuses_a_token_for_another_resource() {
    let w = World::new(&[
        ("AS_CC_CLIENT", "machine:machine-secret"),
        ("AS_RESOURCE_PATTERN", "^http://127\\.0\\.0\\.1:[0-9]+/mcp$"),
    ]);
    let token_for = |resource: String| {
        let issuer = w.issuer.url.clone();
        async move {
            let pairs = [
                ("grant_type", "client_credentials"),
                ("scope", "mcp:read"),
                ("resource", resource.as_str()),
            ];
            let (_, answer) =
                token_request(&issuer, &pairs, Some(("machine", "machine-secret"))).await;
            answer["access_token"]
                .as_str()
                .unwrap_or_else(|| panic!("no access token: {answer}"))
                .to_owned()
        }
    };
    let other = token_for("http://127.0.0.1:1/mcp".to_owned()).await;
    let own = token_for(w.support.url.clone()).await;
    let (status, challenge, _) = initialize_with(&w.support.url, &other).await;
    assert_eq!(status, 401);
    assert!(
        challenge.contains("error=\"invalid_token\"") && challenge.contains("another resource"),
        "{challenge}"
    );
    // Its own token is accepted; the machine client is no member of any organization.
    let (status, _, body) = initialize_with(&w.support.url, &own).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("no access to this organization"), "{body}");
    let (status, challenge, _) = initialize_with(&w.support.url, "not-a-token").await;
    assert_eq!(status, 401);
    assert!(challenge.contains("not a JWT"), "{challenge}");
}
