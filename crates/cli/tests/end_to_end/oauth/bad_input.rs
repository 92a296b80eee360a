//! What an attacker or a broken authorization server sends during a sign-in: a forged
//! redirect, an error on the redirect, metadata without S256, a token response that is
//! not a bearer token. Each fails the sign-in naming the server and the cause, stores
//! nothing from the attempt, and leaves the other servers working.

use std::{path::Path, time::Duration};

use super::{
    World, assert_login_fails_keeping_nothing, assert_no_sign_in_begun, events, post_form,
};
use serde_json::json;

use crate::common::serve::{serve_http, tokens_file};

/// Wait for the host's sign-in address in the browser log.
fn sign_in_address(log: &Path) -> reqwest::Url {
    for _ in 0..300 {
        let first = std::fs::read_to_string(log)
            .ok()
            .and_then(|t| t.lines().next().map(str::to_owned));
        if let Some(line) = first {
            return reqwest::Url::parse(&line).expect("the sign-in address is a URL");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the host opened no sign-in address within 30 s");
}

fn param(url: &reqwest::Url, name: &str) -> String {
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| panic!("the sign-in address has no {name}"))
}

/// Redirects to the host's listener that the authorization server did not send: a wrong
/// `state`; the right state with another issuer's `iss`. Each fails the sign-in naming
/// the cause, no code is exchanged, and nothing is kept.
#[test]
fn refuses_a_forged_redirect_and_keeps_nothing() {
    let w = World::new(&[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    for (right_state, iss, cause) in [
        (false, w.issuer.url.clone(), "its state differs"),
        (true, "http://127.0.0.1:9".to_owned(), "its iss differs"),
    ] {
        let _ = std::fs::remove_file(w.browser_log());
        let ran = std::thread::scope(|s| {
            let login = s.spawn(|| {
                w.run(
                    &["auth", "login", "support", "--open"],
                    &[("OAUTH_BROWSER_ONLY_LOG", "1")],
                )
            });
            let address = sign_in_address(&w.browser_log());
            let mut forged = reqwest::Url::parse(&param(&address, "redirect_uri")).unwrap();
            let state = if right_state {
                param(&address, "state")
            } else {
                "forged-state".to_owned()
            };
            forged
                .query_pairs_mut()
                .append_pair("code", "forged-code")
                .append_pair("state", &state)
                .append_pair("iss", &iss);
            let _ = rt.block_on(reqwest::get(forged));
            login.join().expect("the login run is read")
        });
        assert_ne!(ran.status, 0, "{}", ran.stdout);
        assert!(
            ran.stderr.contains("server support") && ran.stderr.contains(cause),
            "{}",
            ran.stderr
        );
        assert!(
            events(&w.issuer, "token").is_empty(),
            "no code was exchanged"
        );
        assert!(w.kept_tokens().is_empty());
        assert_eq!(w.status()[0]["signed_in"], false);
    }
}

/// An authorization server that answers badly (as.mjs's `/__test/break`, AS_LOGIN=deny):
/// each `gatehouse auth login support` fails naming the server and the cause, stores
/// nothing at all, and the CMDB works after it; bad metadata stops it before the browser
/// opens or a client is registered.
#[tokio::test(flavor = "multi_thread")]
async fn a_bad_answer_from_the_authorization_server_fails_the_sign_in_and_stores_nothing() {
    for (broken, login, cause) in [
        ("metadata=missing", None, "publishes usable metadata"),
        ("metadata=malformed", None, "publishes usable metadata"),
        (
            "metadata=other-issuer",
            None,
            "names the issuer http://127.0.0.1:9",
        ),
        (
            "metadata=no-s256",
            None,
            "does not advertise PKCE with S256",
        ),
        (
            "",
            Some("deny"),
            "refused the sign-in: access_denied: the person said no",
        ),
        (
            "token_response=no-access-token",
            None,
            "gave no usable tokens",
        ),
        ("token_response=token-type", None, "not Bearer"),
    ] {
        let w = World::new(
            &login
                .map(|l| ("AS_LOGIN", l))
                .into_iter()
                .collect::<Vec<_>>(),
        );
        post_form(&w.issuer.url, &format!("/__test/break?{broken}"), &[], None).await;
        assert_login_fails_keeping_nothing(&w, &[], cause);
        if broken.starts_with("metadata") {
            assert_no_sign_in_begun(&w);
        }
    }
}

/// A server that answers 401 and publishes no OAuth metadata at all (the reference
/// server with its own bearer tokens): the sign-in is refused, naming the cause, rather
/// than sent to endpoints made up from the server's URL; nothing is stored.
#[test]
fn a_server_without_oauth_metadata_is_not_signed_in_to() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = tokens_file(dir.path());
    let support = serve_http("support", &tokens, &dir.path().join("tickets.db"));
    let w = World::around(super::authorization_server(&[]), support, "file", json!({}));
    assert_login_fails_keeping_nothing(&w, &[], "publishes no OAuth metadata");
    assert_no_sign_in_begun(&w);
}

/// The servers file's client belongs to one authorization server, and the server names
/// another: the sign-in is refused before the client id goes anywhere (the authorization
/// server's request log has none of it), and nothing is stored.
#[test]
fn a_configured_client_is_not_sent_to_another_authorization_server() {
    let issuer = super::authorization_server(&[("AS_LOG_REQUESTS", "1")]);
    let support = super::protected_support(&issuer.url, "127.0.0.1:0");
    let client = json!({"clientId": "client-of-another-issuer", "issuer": "http://127.0.0.1:9"});
    let w = World::around(issuer, support, "file", client);
    assert_login_fails_keeping_nothing(&w, &[], "its credentials are not sent there");
    assert_no_sign_in_begun(&w);
    let requests: Vec<String> = events(&w.issuer, "request")
        .iter()
        .map(|r| r.to_string())
        .collect();
    assert!(!requests.is_empty(), "the metadata was read");
    assert!(
        requests
            .iter()
            .all(|r| !r.contains("client-of-another-issuer")),
        "{requests:?}"
    );
}
