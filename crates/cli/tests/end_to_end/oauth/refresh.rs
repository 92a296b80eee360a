//! A refresh that fails. Refused (`invalid_grant`): the sign-in is dropped and the person
//! told to sign in again. The authorization server down (a 503, a connection cut off, a
//! connection refused): what is stored is kept byte for byte, the error names the server
//! and the cause, and once the server is back the next run works without a new sign-in.
//! Either way the other servers keep working.

use std::time::Duration;

use serde_json::json;

use super::{
    ACCESS_TOKEN_TTL, Ran, World, events, fail_tokens, grant_types, revoke, short_lived, sign_in,
};

/// `gatehouse tools` after the access token expired: the CMDB's tools are listed whatever
/// became of the support server's sign-in.
fn tools_after_expiry(w: &World) -> Ran {
    std::thread::sleep(Duration::from_secs(ACCESS_TOKEN_TTL + 1));
    let ran = w.run(&["tools"], &[]);
    assert!(
        ran.stdout.contains("cmdb__"),
        "{}\n{}",
        ran.stdout,
        ran.stderr
    );
    ran
}

/// The support server's tools are listed: it is signed in.
fn assert_support_works(ran: &Ran) {
    assert!(
        ran.stdout.contains("support__get_ticket"),
        "{}\n{}",
        ran.stdout,
        ran.stderr
    );
}

/// The refresh token revoked at the authorization server: the next refresh is answered
/// `invalid_grant`, the tokens are dropped (the registration stays), the run says to run
/// `gatehouse auth login support`, and that sign-in reuses the registration.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_refresh_token_drops_the_sign_in_and_asks_for_a_new_one() {
    let w = short_lived();
    let (_, registered) = sign_in(&w);
    let client_id = registered["client_id"].as_str().unwrap();
    let refresh_token = w.kept_tokens().pop().expect("a refresh token is kept");
    revoke(&w.issuer.url, &refresh_token, client_id).await;

    let ran = tools_after_expiry(&w);
    assert!(!ran.stdout.contains("support__"), "{}", ran.stdout);
    assert!(
        ran.stderr.contains("server support")
            && ran.stderr.contains("gatehouse auth login support"),
        "{}",
        ran.stderr
    );
    let refused: Vec<_> = events(&w.issuer, "token_error")
        .into_iter()
        .filter(|e| e["grant_type"] == "refresh_token")
        .collect();
    assert!(
        refused.iter().all(|e| e["error"] == "invalid_grant") && !refused.is_empty(),
        "{:?}",
        w.issuer.lines()
    );
    assert!(w.kept_tokens().is_empty(), "the refused tokens are dropped");
    let status = w.status();
    assert_eq!(status[0]["signed_in"], false);
    assert_eq!(
        w.store_document()["clients"][&w.issuer.url]["client_id"],
        client_id
    );

    let again = w.login();
    assert_eq!(again.status, 0, "{}", again.stderr);
    assert_eq!(
        events(&w.issuer, "register").len(),
        1,
        "no new registration"
    );
    assert_support_works(&w.run(&["tools"], &[]));
}

/// The token endpoint answers 503, then cuts the connection off: each run keeps the store
/// byte for byte, says the sign-in could not be refreshed and is kept, and lists the
/// CMDB. With the authorization server back, a run refreshes without the browser. Then
/// the authorization server is gone (connection refused): the same.
#[tokio::test(flavor = "multi_thread")]
async fn an_authorization_server_that_is_down_keeps_what_is_stored() {
    let mut w = short_lived();
    sign_in(&w);
    for how in ["503", "drop"] {
        fail_tokens(&w.issuer.url, 100, how).await;
        let before = w.store_bytes().expect("a store");
        let ran = tools_after_expiry(&w);
        assert_kept(&w, &ran, &before);
        assert!(
            events(&w.issuer, "token_failed_on_purpose")
                .iter()
                .any(|e| e["how"] == how),
            "the refresh reached the failing token endpoint ({how})"
        );
        fail_tokens(&w.issuer.url, 0, how).await;
    }
    assert_support_works(&w.run(&["tools"], &[]));
    assert!(grant_types(&w.issuer).contains(&json!("refresh_token")));
    assert_eq!(w.browser_visits(), 1, "no new sign-in");
    assert_eq!(events(&w.issuer, "register").len(), 1);

    w.issuer.stop();
    let before = w.store_bytes().expect("a store");
    let ran = tools_after_expiry(&w);
    assert_kept(&w, &ran, &before);
}

/// The run said the support server's sign-in could not be refreshed and is kept, and the
/// store is as it was.
fn assert_kept(w: &World, ran: &Ran, before: &[u8]) {
    assert!(!ran.stdout.contains("support__"), "{}", ran.stdout);
    assert!(
        ran.stderr.contains("server support")
            && ran.stderr.contains("could not be refreshed")
            && ran.stderr.contains("it is kept"),
        "{}",
        ran.stderr
    );
    assert!(
        !ran.stderr.contains("auth login"),
        "no new sign-in asked for: {}",
        ran.stderr
    );
    assert_eq!(
        w.store_bytes().as_deref(),
        Some(before),
        "the store is unchanged"
    );
}
