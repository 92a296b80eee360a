//! The gateway sees a revocation within its bound, as a reference server does: it asks the
//! authorization server about each (opaque) token and trusts an answer for at most
//! `--oauth-revocation-bound`.

use std::time::{Duration, Instant};

use super::{GatewayWorld, INTROSPECTION_CLIENT, challenge, list_with};
use crate::oauth::{store_document_in, tokens_kept};

/// How long the test waits for the refusal at most: the 1 s bound, and room for a busy
/// machine.
const WAIT: Duration = Duration::from_secs(21);

#[tokio::test(flavor = "multi_thread")]
async fn a_token_revoked_at_the_authorization_server_is_refused_by_the_gateway_within_the_bound() {
    let client = format!("{}:{}", INTROSPECTION_CLIENT.0, INTROSPECTION_CLIENT.1);
    let w = GatewayWorld::with(
        &[("AS_RS_CLIENT", &client), ("AS_AT_FORMAT", "opaque")],
        &[
            "--oauth-introspection-client",
            INTROSPECTION_CLIENT.0,
            "--oauth-revocation-bound",
            "1",
        ],
    );
    let url = w.url().to_owned();
    let login = w.host.login();
    assert_eq!(login.status, 0, "{}\n{}", login.stdout, login.stderr);
    let data = w.host.data_dir();
    let token = tokens_kept(&store_document_in(&data), "", &["access_token"])
        .into_iter()
        .next()
        .expect("an access token");
    let listed = list_with(&url, Some(&token)).await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let client_id = crate::oauth::kept_client_id(&store_document_in(&data));
    crate::oauth::revoke(w.issuer(), &token, &client_id).await;
    let revoked = Instant::now();
    let refused = loop {
        let answer = list_with(&url, Some(&token)).await;
        if answer.status == 401 {
            break answer;
        }
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert!(
            revoked.elapsed() < WAIT,
            "still taken {WAIT:?} after its revocation"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        challenge(&refused).contains("no longer active at its authorization server"),
        "{}",
        challenge(&refused)
    );
}
