//! A machine signing in with no person: client credentials, the client proving itself with
//! a private-key JWT (RFC 7523) that oidc-provider checks against the public key
//! registered for it; the CMDB behind `--oauth-issuer` takes the token.

use serde_json::json;

use super::{World, authorization_server, events, protected_server};

/// A P-256 key made for this test, of no account anywhere (the conformance harness's kind).
const KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgkSK9DwfZAngZvOgx\nusyjepts8HCGM1sALTKurjNNTOGhRANCAAT8B2lYOVCDZK71ZVOQKquZM57erJ7g\npvqwqxbUI3wjr02TsKDf8AVXuxuOkqzJ2n+24XRvgzcyaUSPCWcYHNlV\n-----END PRIVATE KEY-----\n";

#[tokio::test(flavor = "multi_thread")]
async fn a_machine_signs_in_with_its_private_key_and_never_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("ci-bot.pem");
    std::fs::write(&key_file, KEY).unwrap();
    let client = format!("ci-bot:{}", key_file.display());
    let issuer = authorization_server(&[("AS_CC_JWT_CLIENT", &client)]);
    let cmdb = protected_server("cmdb", &issuer.url, "127.0.0.1:0", &[], &[]);
    let oauth = json!({"grant": "client_credentials", "clientId": "ci-bot",
        "privateKey": "${CI_MCP_KEY}", "signingAlgorithm": "ES256"});
    let w = World::named("machine", issuer, cmdb, "file", oauth);
    let tools = w.run(&["tools"], &[("CI_MCP_KEY", KEY)]);
    assert!(
        tools.stdout.contains("machine__"),
        "{}\n{}",
        tools.stdout,
        tools.stderr
    );
    let granted = events(&w.issuer, "token");
    assert_eq!(granted.len(), 1, "{granted:?}");
    assert_eq!(granted[0]["grant_type"], "client_credentials");
    assert_eq!(granted[0]["client_id"], "ci-bot");
    assert_eq!(w.browser_visits(), 0, "no person was asked");
    let status = w.run(&["auth", "status", "--json"], &[("CI_MCP_KEY", KEY)]);
    let machine = &status.json()[0];
    assert_eq!(machine["grant"], "client_credentials", "{machine}");
    assert_eq!(machine["signed_in"], true, "{machine}");
    // The key is nowhere the runs wrote, nor in the store.
    let body = "MIGHAgEAMBMGByqGSM49";
    for ran in [&tools, &status] {
        assert!(!ran.stdout.contains(body) && !ran.stderr.contains(body));
    }
    let stored = std::fs::read_to_string(w.credentials()).unwrap();
    assert!(
        !stored.contains(body),
        "the key is not kept: the variable holds it"
    );
}
