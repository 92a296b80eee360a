//! The protected resource moves to another authorization server (its metadata names
//! another issuer): the host registers anew there, never sends it the old issuer's client
//! id or tokens, and keeps both sign-ins apart, keyed by issuer and resource.

use serde_json::Value;

use super::{World, authorization_server, events, sign_in};

/// Sign in at A; the support server, at the same URL, now names B. A run without a
/// terminal says to sign in again (the CMDB works); the sign-in registers at B, and B's
/// request log has none of A's tokens or its client id. The store keeps A's sign-in and
/// B's under their own keys, the registrations per issuer, and calls go through B's.
#[test]
fn a_new_authorization_server_gets_its_own_registration_and_none_of_the_old_tokens() {
    let orgs = ("AS_ORGS", "usr-sam=larkfield");
    let mut w = World::new(&[orgs]);
    let (_, registered_at_a) = sign_in(&w);
    let client_at_a = registered_at_a["client_id"].as_str().unwrap().to_owned();
    let b = authorization_server(&[orgs, ("AS_LOG_REQUESTS", "1")]);
    w.move_support_to(&b);

    let ran = w.run(&["tools"], &[]);
    assert!(ran.stdout.contains("cmdb__"), "{}", ran.stdout);
    assert!(!ran.stdout.contains("support__"), "{}", ran.stdout);
    assert!(
        ran.stderr.contains("gatehouse auth login support"),
        "{}",
        ran.stderr
    );
    let tokens_of_a = w.kept_tokens_of(&w.issuer.url);
    assert!(!tokens_of_a.is_empty(), "A's sign-in is kept");

    let login = w.login();
    assert_eq!(login.status, 0, "{}\n{}", login.stdout, login.stderr);
    let registered_at_b = events(&b, "register");
    assert_eq!(registered_at_b.len(), 1, "{registered_at_b:?}");
    let client_at_b = registered_at_b[0]["client_id"].as_str().unwrap();
    assert_ne!(client_at_b, client_at_a);
    assert_eq!(events(&w.issuer, "register").len(), 1, "none more at A");
    for e in events(&b, "authorize").iter().chain(&events(&b, "token")) {
        assert_eq!(e["client_id"], client_at_b, "{e}");
    }
    assert!(events(&b, "token_error").is_empty(), "{:?}", b.lines());

    let requests: Vec<String> = events(&b, "request").iter().map(Value::to_string).collect();
    assert!(requests.len() > 3, "B logged its requests: {requests:?}");
    for secret in tokens_of_a.iter().chain([&client_at_a]) {
        assert!(
            requests.iter().all(|r| !r.contains(secret.as_str())),
            "A's client id or a token of A's reached B"
        );
    }

    assert_keyed_by_issuer_and_resource(&w, &b, &client_at_a, client_at_b);
    assert_eq!(w.status()[0]["issuer"], b.url.as_str());
    super::assert_calls_as_sam(&w);
}

/// The store: one registration per issuer, one sign-in per resource and issuer.
fn assert_keyed_by_issuer_and_resource(w: &World, b: &super::Process, at_a: &str, at_b: &str) {
    let doc = w.store_document();
    assert_eq!(doc["clients"][&w.issuer.url]["client_id"], at_a);
    assert_eq!(doc["clients"][&b.url]["client_id"], at_b);
    let url = &w.support.url;
    let mut keys: Vec<String> = doc["sign_ins"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    keys.sort();
    let mut expected = vec![
        format!("{url} {}", w.issuer.url),
        format!("{url} {}", b.url),
    ];
    expected.sort();
    assert_eq!(keys, expected);
    for (issuer, client) in [(&w.issuer.url, at_a), (&b.url, at_b)] {
        let sign_in = &doc["sign_ins"][format!("{url} {issuer}")];
        assert_eq!(sign_in["issuer"], issuer.as_str());
        assert_eq!(sign_in["client_id"], client);
        assert_eq!(sign_in["resource"], url.as_str());
    }
}
