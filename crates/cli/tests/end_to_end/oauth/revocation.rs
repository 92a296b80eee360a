//! A revoked token refused within the bound: the support server asks the authorization
//! server about each token (token introspection, RFC 7662, `--oauth-introspection-client`)
//! and trusts an answer for at most `--oauth-revocation-bound`; the tokens are opaque, as
//! an authorization server that can revoke them issues them.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{World, authorization_server, protected_support_in, revoke};

/// The bound the server is started with, in seconds.
const BOUND_SECS: u64 = 1;
/// How long the test waits for the refusal at most: the bound, and room for a busy machine.
const WAIT: Duration = Duration::from_secs(BOUND_SECS + 20);

/// An MCP `ping` to `url` as `token` (a bare one: past the door, the server answers 400
/// for want of the protocol's headers): the HTTP status and the challenge.
async fn ping_as(url: &str, token: &str) -> (u16, String) {
    let answer = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .send()
        .await
        .expect("the support server answers");
    (answer.status().as_u16(), super::challenge_of(&answer))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_revoked_at_the_authorization_server_is_refused_within_the_bound() {
    let issuer = authorization_server(&[
        ("AS_ORGS", "usr-sam=larkfield"),
        ("AS_RS_CLIENT", "support-rs:rs-secret"),
        ("AS_AT_FORMAT", "opaque"),
    ]);
    let bound = BOUND_SECS.to_string();
    let support = protected_support_in(
        &issuer.url,
        "127.0.0.1:0",
        &[
            "--oauth-introspection-client",
            "support-rs",
            "--oauth-revocation-bound",
            &bound,
        ],
        &[("GATEHOUSE_OAUTH_INTROSPECTION_SECRET", "rs-secret")],
    );
    let w = World::around(issuer, support, "file", json!({}));
    let login = w.login();
    assert_eq!(login.status, 0, "{}\n{}", login.stdout, login.stderr);
    // The opaque token works: the server learns who it is from the authorization server.
    super::assert_drafted(&w.ask_ticket("T-30002"), "T-30002");
    let token = w.kept_tokens().into_iter().next().expect("an access token");
    assert_eq!(token.split('.').count(), 1, "an opaque token");
    assert_ne!(ping_as(&w.support.url, &token).await.0, 401, "taken");
    let client_id = super::kept_client_id(&w.store_document());
    revoke(&w.issuer.url, &token, &client_id).await;
    let revoked = Instant::now();
    let challenge = loop {
        let (status, challenge) = ping_as(&w.support.url, &token).await;
        if status == 401 {
            break challenge;
        }
        assert!(
            revoked.elapsed() < WAIT,
            "still taken {WAIT:?} after its revocation"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        challenge.contains("no longer active at its authorization server"),
        "{challenge}"
    );
    // A token the authorization server never issued is refused too.
    let (status, _) = ping_as(&w.support.url, "made-up-opaque-token").await;
    assert_eq!(status, 401);
}
