//! Tokens bound to a key (DPoP, RFC 9449) against the real authorization server: the
//! support server with `--oauth-dpop required`, the host binding its tokens because the
//! server's challenge asks, and a stolen token worthless without the key.

use gatehouse::connect::auth::dpop::DpopKey;
use serde_json::{Value, json};

use super::{World, authorization_server, protected_support_with};

/// An MCP `ping` to `url` with `authorization` and, if given, a `DPoP` proof: the HTTP
/// status and the `WWW-Authenticate` challenge.
async fn ping_with(url: &str, authorization: &str, proof: Option<&str>) -> (u16, String) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("authorization", authorization)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
    if let Some(proof) = proof {
        request = request.header("dpop", proof);
    }
    let answer = request.send().await.expect("the support server answers");
    (answer.status().as_u16(), super::challenge_of(&answer))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_requires_dpop_gets_bound_tokens_and_a_stolen_one_is_worthless() {
    let issuer = authorization_server(&[("AS_ORGS", "usr-sam=larkfield")]);
    let support = protected_support_with(&issuer.url, "127.0.0.1:0", &["--oauth-dpop", "required"]);
    let w = World::around(issuer, support, "file", json!({}));
    // One sign-in: the server's challenge asks for DPoP, so the tokens are bound at once.
    let login = w.login();
    assert_eq!(login.status, 0, "{}\n{}", login.stdout, login.stderr);
    assert_eq!(w.browser_visits(), 1, "one sign-in, not a bearer one first");
    let doc = w.store_document();
    let sign_in: &Value = doc["sign_ins"]
        .as_object()
        .and_then(|m| m.values().next())
        .expect("a sign-in kept");
    let thumbprint = sign_in["dpop"].as_str().expect("bound to a key").to_owned();
    let key_kept = doc["secrets"]
        .as_object()
        .unwrap()
        .keys()
        .any(|name| name.starts_with("dpop "));
    assert!(key_kept, "the key is kept beside the tokens: {doc}");
    // The host's calls go through with proofs: Sam's ticket is drafted.
    super::assert_drafted(&w.ask_ticket("T-30002"), "T-30002");
    // The token, stolen from the store: as a bearer token it is refused, and so it is
    // with a proof of the thief's own key; the challenge asks for DPoP.
    let stolen = w.kept_tokens().into_iter().next().expect("an access token");
    let (status, challenge) = ping_with(&w.support.url, &format!("Bearer {stolen}"), None).await;
    assert_eq!(status, 401);
    assert!(
        challenge.starts_with("DPoP ") && challenge.contains("bound to a key"),
        "{challenge}"
    );
    let thief = DpopKey::generate().unwrap();
    assert_ne!(thief.thumbprint(), thumbprint);
    let proof = thief.proof("POST", &w.support.url, Some(&stolen)).unwrap();
    let (status, challenge) =
        ping_with(&w.support.url, &format!("DPoP {stolen}"), Some(&proof)).await;
    assert_eq!(status, 401);
    assert!(
        challenge.contains("error=\"invalid_dpop_proof\"") && challenge.contains("another key"),
        "{challenge}"
    );
}
