//! The gateway under `--oauth-dpop required`: a 401 asks for DPoP, a bearer token is
//! refused, and the host, asked so, signs in with tokens bound to its key and calls
//! through the gateway with a fresh proof each time.

use serde_json::json;

use super::{GatewayWorld, MACHINE, challenge, list_with, machine_token};
use crate::oauth::store_document_in;

#[tokio::test(flavor = "multi_thread")]
async fn the_gateway_asks_for_dpop_and_the_host_calls_through_it_with_bound_tokens() {
    let w = GatewayWorld::with(
        &[("AS_CC_CLIENT", &format!("{}:{}", MACHINE.0, MACHINE.1))],
        &["--oauth-dpop", "required"],
    );
    let url = w.url().to_owned();
    let none = list_with(&url, None).await;
    assert_eq!(none.status, 401, "{}", none.text);
    let asked = challenge(&none);
    assert!(asked.starts_with("DPoP algs=\""), "{asked}");
    let bearer = machine_token(w.issuer(), &url, "mcp:read mcp:write").await;
    let refused = list_with(&url, Some(&bearer)).await;
    assert_eq!(refused.status, 401, "{}", refused.text);
    assert!(
        challenge(&refused).contains("takes only tokens bound to a key"),
        "{}",
        challenge(&refused)
    );
    // The host reads the challenge, binds its sign-in to a key, and its call goes through.
    let login = w.host.login();
    assert_eq!(login.status, 0, "{}\n{}", login.stdout, login.stderr);
    crate::oauth::assert_drafted(&w.ask_ticket("T-30002"), "T-30002");
    let doc = store_document_in(&w.host.data_dir());
    let bound = doc["sign_ins"]
        .as_object()
        .into_iter()
        .flatten()
        .any(|(_, s)| s["dpop"].is_string());
    assert!(
        bound,
        "the sign-in is bound to a key: {}",
        json!(doc["sign_ins"])
    );
}
