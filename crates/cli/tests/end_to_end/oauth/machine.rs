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

/// A JWT from `iss` about `sub` for `aud`, signed by [`KEY`], expiring `lifetime` seconds
/// from now (negative: in the past).
fn signed(iss: &str, sub: &str, aud: &str, lifetime: i64) -> String {
    let key = jsonwebtoken::EncodingKey::from_ec_pem(KEY.as_bytes()).unwrap();
    let now = jsonwebtoken::get_current_timestamp() as i64;
    let claims = json!({"iss": iss, "sub": sub, "aud": aud, "iat": now, "exp": now + lifetime});
    let header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    jsonwebtoken::encode(&header, &claims, &key).unwrap()
}

/// A workload's token as its platform (signing with [`KEY`]) mounts it, for `audience`.
fn workload_token(audience: &str, lifetime: i64) -> String {
    let runner = "system:serviceaccount:ci:runner";
    signed("https://platform.example", runner, audience, lifetime)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workload_signs_in_with_the_token_its_platform_mounts_read_afresh() {
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("platform.pem");
    std::fs::write(&key_file, KEY).unwrap();
    let client = format!("ci-runner:{}", key_file.display());
    let issuer = authorization_server(&[("AS_WIF_CLIENT", &client)]);
    let cmdb = protected_server("cmdb", &issuer.url, "127.0.0.1:0", &[], &[]);
    let token_file = dir.path().join("token");
    // First an expired token: the authorization server refuses it, and says why.
    std::fs::write(&token_file, workload_token(&issuer.url, -600)).unwrap();
    let oauth = json!({"grant": "jwt_bearer", "clientId": "ci-runner", "tokenFile": token_file});
    let w = World::named("workload", issuer, cmdb, "file", oauth);
    let refused = w.run(&["tools"], &[]);
    assert!(
        refused
            .stderr
            .contains("refused the workload's token: invalid_grant"),
        "{}",
        refused.stderr
    );
    assert!(!refused.stdout.contains("workload__"), "{}", refused.stdout);
    // The platform replaces the file; the next run reads it afresh and signs in.
    std::fs::write(&token_file, workload_token(&w.issuer.url, 600)).unwrap();
    let tools = w.run(&["tools"], &[]);
    assert!(
        tools.stdout.contains("workload__"),
        "{}\n{}",
        tools.stdout,
        tools.stderr
    );
    let granted = events(&w.issuer, "token");
    assert_eq!(granted.len(), 1, "{granted:?}");
    assert_eq!(
        granted[0]["grant_type"],
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    let status = w.run(&["auth", "status", "--json"], &[]);
    assert_eq!(status.json()[0]["grant"], "jwt_bearer");
    let assertion = std::fs::read_to_string(&token_file).unwrap();
    for ran in [&refused, &tools, &status] {
        assert!(!ran.stdout.contains(&assertion) && !ran.stderr.contains(&assertion));
    }
    let stored = std::fs::read_to_string(w.credentials()).unwrap();
    assert!(
        !stored.contains(&assertion),
        "the workload's token is not kept"
    );
}

/// The person's ID token from the company's identity provider at `idp`, for its client
/// `client`, signed by [`KEY`] (the identity provider's).
fn id_token(idp: &str, client: &str) -> String {
    signed(idp, "usr-sam", client, 600)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_signs_in_through_the_companys_identity_provider_with_no_consent_screen() {
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("idp.pem");
    std::fs::write(&key_file, KEY).unwrap();
    let idp = authorization_server(&[(
        "AS_IDP_CLIENT",
        &format!("gatehouse-idp:{}", key_file.display()),
    )]);
    // The server's authorization server trusts the identity provider's key for ID-JAGs.
    let issuer = authorization_server(&[(
        "AS_WIF_CLIENT",
        &format!("gatehouse:{}", key_file.display()),
    )]);
    let cmdb = protected_server("cmdb", &issuer.url, "127.0.0.1:0", &[], &[]);
    let id_token_file = dir.path().join("id_token");
    std::fs::write(&id_token_file, id_token(&idp.url, "gatehouse-idp")).unwrap();
    let oauth = json!({"grant": "enterprise_managed", "clientId": "gatehouse",
        "idp": {"issuer": idp.url, "tokenEndpoint": format!("{}/token", idp.url),
                "clientId": "gatehouse-idp", "idTokenFile": id_token_file}});
    let w = World::named("company", issuer, cmdb, "file", oauth);
    let tools = w.run(&["tools"], &[]);
    assert!(
        tools.stdout.contains("company__"),
        "{}\n{}",
        tools.stdout,
        tools.stderr
    );
    let exchanged = events(&idp, "token");
    assert_eq!(exchanged.len(), 1, "{exchanged:?}");
    assert_eq!(
        exchanged[0]["grant_type"],
        "urn:ietf:params:oauth:grant-type:token-exchange"
    );
    let granted = events(&w.issuer, "token");
    assert_eq!(granted.len(), 1, "{granted:?}");
    assert_eq!(
        granted[0]["grant_type"],
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    assert_eq!(w.browser_visits(), 0, "no consent screen");
    let status = w.run(&["auth", "status", "--json"], &[]);
    assert_eq!(status.json()[0]["grant"], "enterprise_managed");
    let id = std::fs::read_to_string(&id_token_file).unwrap();
    for ran in [&tools, &status] {
        assert!(!ran.stdout.contains(&id) && !ran.stderr.contains(&id));
    }
    assert!(
        !std::fs::read_to_string(w.credentials())
            .unwrap()
            .contains(&id)
    );
}
