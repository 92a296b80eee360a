use jsonwebtoken::{EncodingKey, Header, jwk::JwkSet};
use rmcp::transport::auth::WWWAuthenticateParams;
use serde_json::json;

use super::*;

const ISSUER: &str = "http://127.0.0.1:9000";
const RESOURCE: &str = "http://127.0.0.1:8080/mcp";
/// A P-256 key made for these tests only (`openssl ecparam -genkey -name prime256v1`),
/// PKCS#8 DER in base64; its public half is [`jwks`]'s key `k1`.
const TEST_KEY: &str = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgaYZYl1MaAiCWmDfmNaql0GkjMyqmnWqt/zeG+RrakCKhRANCAASZGgl8rThk3gJC7zMzRPikxqud7SWImxSpJ3MtXPDQ46bojZGxhn2E9mqvOTzJzfFrf7+AF+hegu9rVxcwlcND";
/// Another test key, which the issuer never published.
const OTHER_KEY: &str = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg1kn2pNBJfvu+M1ADBwFptYY76+2kGHbg6gx6l+BZLKShRANCAATST0lblvOxjUNGncKPc64urf0W+v/P092Mujz6M43ODg4Dk7mbpHNCqxJbacjsCjQkVklx+Rox6PQZ4hVpiGKj";

fn der(b64: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap()
}

fn jwks() -> JwkSet {
    serde_json::from_value(json!({"keys": [{
        "kty": "EC", "crv": "P-256", "kid": "k1", "use": "sig", "alg": "ES256",
        "x": "mRoJfK04ZN4CQu8zM0T4pMarne0liJsUqSdzLVzw0OM",
        "y": "puiNkbGGfYT2aq85PMnN8Wt_v4AX6F6C72tXFzCVw0M"
    }]}))
    .unwrap()
}

/// Who belongs where, as a server would keep it: usr-omar in one organization, usr-sam in
/// two.
#[derive(Debug)]
struct TwoOrganizations;

impl Members for TwoOrganizations {
    fn is_member(&self, caller: &Caller) -> bool {
        matches!(
            (caller.user.as_str(), caller.tenant.as_str()),
            ("usr-omar", "larkfield") | ("usr-sam", "larkfield" | "bramble")
        )
    }

    fn sole_organization(&self, user: &str) -> Option<&str> {
        (user == "usr-omar").then_some("larkfield")
    }
}

fn server() -> ResourceServer {
    ResourceServer::for_tests(
        ISSUER,
        RESOURCE,
        keys::Keys::fixed(jwks()),
        &TwoOrganizations,
    )
}

fn now() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

fn claims() -> Value {
    json!({"iss": ISSUER, "aud": RESOURCE, "sub": "usr-sam", "org": "larkfield",
           "exp": now() + 300, "iat": now(), "scope": "mcp:read", "client_id": "gh-test"})
}

fn sign_with(key: &str, kid: Option<&str>, typ: &str, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.typ = Some(typ.into());
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_ec_der(&der(key))).unwrap()
}

fn token(claims: &Value) -> String {
    sign_with(TEST_KEY, Some("k1"), "at+jwt", claims)
}

async fn refused(token: &str) -> Refusal {
    server().check(token).await.unwrap_err()
}

#[tokio::test]
async fn a_good_token_grants_its_subject_organization_and_scopes() {
    let grant = server().check(&token(&claims())).await.unwrap();
    assert_eq!(grant.caller, Caller::new("usr-sam", "larkfield", "gh-test"));
    assert_eq!(grant.scopes, vec!["mcp:read"]);
    assert_eq!(grant.missing(&[READ_SCOPE, WRITE_SCOPE]), vec![WRITE_SCOPE]);
    // The audience may be a list that holds this resource; typ may be the media type.
    let mut c = claims();
    c["aud"] = json!(["https://other.example/mcp", RESOURCE]);
    let t = sign_with(TEST_KEY, Some("k1"), "application/at+jwt", &c);
    assert!(server().check(&t).await.is_ok());
    // Without a kid, the issuer's only key.
    assert!(
        server()
            .check(&sign_with(TEST_KEY, None, "at+jwt", &claims()))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn tokens_for_elsewhere_from_elsewhere_or_out_of_time_are_refused() {
    let with = |key: &str, value: Value| {
        let mut c = claims();
        c[key] = value;
        token(&c)
    };
    let wrong = [
        ("aud", json!("http://127.0.0.1:8081/mcp"), Refusal::Audience),
        ("aud", json!(format!("{RESOURCE}/")), Refusal::Audience),
        ("iss", json!("http://127.0.0.1:9001"), Refusal::Issuer),
        ("iss", json!(format!("{ISSUER}/")), Refusal::Issuer),
        ("exp", json!(now() - 120), Refusal::Expired),
        ("nbf", json!(now() + 600), Refusal::NotYetValid),
    ];
    for (key, value, why) in wrong {
        let said = format!("{key}: {value}");
        assert_eq!(refused(&with(key, value)).await, why, "{said}");
    }
    // Within the leeway a just-expired token still passes (clocks differ).
    assert!(server().check(&with("exp", json!(now() - 5))).await.is_ok());
    for claim in ["sub", "aud", "iss", "exp"] {
        let mut c = claims();
        c.as_object_mut().unwrap().remove(claim);
        assert_eq!(refused(&token(&c)).await, Refusal::Claims, "{claim}");
    }
    for sub in ["usr\u{1b}[2J".to_owned(), "x".repeat(MAX_CLAIM_CHARS + 1)] {
        let said = sub.chars().take(20).collect::<String>();
        assert_eq!(
            refused(&with("sub", json!(sub))).await,
            Refusal::Claims,
            "{said:?}"
        );
    }
}

#[tokio::test]
async fn forged_or_foreign_tokens_are_refused() {
    // An ID token (typ JWT) is not an access token.
    assert_eq!(
        refused(&sign_with(TEST_KEY, Some("k1"), "JWT", &claims())).await,
        Refusal::NotAnAccessToken
    );
    // Signed by a key the issuer never published, under its key's id or another.
    assert_eq!(
        refused(&sign_with(OTHER_KEY, Some("k1"), "at+jwt", &claims())).await,
        Refusal::Signature
    );
    assert_eq!(
        refused(&sign_with(OTHER_KEY, Some("k9"), "at+jwt", &claims())).await,
        Refusal::UnknownKey
    );
    // A shared-secret signature, and no signature at all.
    let mut header = Header::new(Algorithm::HS256);
    header.typ = Some("at+jwt".into());
    let hs = jsonwebtoken::encode(
        &header,
        &claims(),
        &EncodingKey::from_secret(b"k1").unwrap(),
    )
    .unwrap();
    assert_eq!(refused(&hs).await, Refusal::Algorithm);
    let payload = token(&claims()).split('.').nth(1).unwrap().to_owned();
    let none = format!("eyJhbGciOiJub25lIiwidHlwIjoiYXQrand0In0.{payload}.");
    assert_eq!(refused(&none).await, Refusal::Malformed);
    assert_eq!(refused("not-a-jwt").await, Refusal::Malformed);
    assert_eq!(
        refused(&"a.b.c".repeat(MAX_TOKEN_BYTES)).await,
        Refusal::Malformed
    );
    // A tampered payload under a good signature.
    let good = token(&claims());
    let parts: Vec<&str> = good.split('.').collect();
    let mut evil = claims();
    evil["org"] = json!("bramble");
    let evil_payload = token(&evil).split('.').nth(1).unwrap().to_owned();
    let tampered = format!("{}.{evil_payload}.{}", parts[0], parts[2]);
    assert_eq!(refused(&tampered).await, Refusal::Signature);
}

/// An ID token for the page's client (`gw-page`) with `nonce`.
fn id_claims(nonce: &str) -> Value {
    json!({"iss": ISSUER, "aud": "gw-page", "sub": "usr-sam", "nonce": nonce,
           "exp": now() + 300, "iat": now()})
}

#[tokio::test]
async fn an_id_token_is_its_clients_with_the_sign_ins_nonce() {
    let rs = server();
    let id = |c: &Value| sign_with(TEST_KEY, Some("k1"), "JWT", c);
    let check = |t: String| {
        let rs = &rs;
        async move { rs.check_id_token(&t, "gw-page", "n-1").await }
    };
    assert_eq!(check(id(&id_claims("n-1"))).await.unwrap(), "usr-sam");
    assert_eq!(check(id(&id_claims("n-2"))).await, Err(Refusal::Nonce));
    let mut c = id_claims("n-1");
    c.as_object_mut().unwrap().remove("nonce");
    assert_eq!(check(id(&c)).await, Err(Refusal::Nonce));
    // Another client's, another issuer's, expired, or signed by a key never published.
    for (claim, value, refusal) in [
        ("aud", json!("another-client"), Refusal::Audience),
        ("iss", json!("http://127.0.0.1:9001"), Refusal::Issuer),
        ("exp", json!(now() - 3600), Refusal::Expired),
    ] {
        let mut c = id_claims("n-1");
        c[claim] = value;
        assert_eq!(check(id(&c)).await, Err(refusal), "{claim}");
    }
    let foreign = sign_with(OTHER_KEY, Some("k1"), "JWT", &id_claims("n-1"));
    assert_eq!(check(foreign).await, Err(Refusal::Signature));
    // An access token for the resource is no ID token for the client.
    assert_eq!(check(token(&claims())).await, Err(Refusal::Audience));
}

#[tokio::test]
async fn without_an_organization_claim_the_users_only_organization_is_used() {
    let mut c = claims();
    c.as_object_mut().unwrap().remove("org");
    c["sub"] = json!("usr-omar");
    let grant = server().check(&token(&c)).await.unwrap();
    assert_eq!(grant.caller.tenant, "larkfield");
    // usr-sam belongs to two: no organization, which every membership check refuses.
    c["sub"] = json!("usr-sam");
    let grant = server().check(&token(&c)).await.unwrap();
    assert_eq!(grant.caller.tenant, "");
    c.as_object_mut().unwrap().remove("client_id");
    let grant = server().check(&token(&c)).await.unwrap();
    assert_eq!(grant.caller.client, DEFAULT_OAUTH_CLIENT);
    assert!(grant.scopes.len() == 1);
}

#[test]
fn challenges_read_back_as_clients_read_them() {
    let rs = server();
    let base = reqwest::Url::parse(RESOURCE).unwrap();
    let first = rs.challenge(None, &[READ_SCOPE]);
    let p = WWWAuthenticateParams::parse(&first, &base);
    assert_eq!(p.scope.as_deref(), Some("mcp:read"));
    assert!(p.error.is_none());
    assert_eq!(
        p.resource_metadata_url.unwrap().as_str(),
        "http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp"
    );
    let step_up = rs.challenge(
        Some(("insufficient_scope", "opening a ticket needs \"mcp:write\"")),
        &[READ_SCOPE, WRITE_SCOPE],
    );
    let p = WWWAuthenticateParams::parse(&step_up, &base);
    assert!(p.is_insufficient_scope());
    assert_eq!(p.scope.as_deref(), Some("mcp:read mcp:write"));
    assert!(!step_up.contains("\\"));
    let expired = rs.challenge(
        Some(("invalid_token", Refusal::Expired.description())),
        &[READ_SCOPE],
    );
    assert!(WWWAuthenticateParams::parse(&expired, &base).is_invalid_token());
}

#[test]
fn scopes_follow_the_method_and_the_tools_hint() {
    let required = |m, ro| Writes::UnlessReadOnly.required(m, ro);
    assert_eq!(required(Some("tools/list"), None), &[READ_SCOPE]);
    assert_eq!(required(Some("tools/call"), Some(true)), &[READ_SCOPE]);
    assert_eq!(
        required(Some("tools/call"), Some(false)),
        &[READ_SCOPE, WRITE_SCOPE]
    );
    assert_eq!(
        required(Some("tools/call"), None),
        &[READ_SCOPE, WRITE_SCOPE]
    );
    assert_eq!(required(None, None), &[READ_SCOPE]);
    assert_eq!(Writes::UnlessReadOnly.basic(), &[READ_SCOPE]);
    let doc = server().metadata_document();
    assert_eq!(doc["resource"], RESOURCE);
    assert_eq!(doc["authorization_servers"], json!([ISSUER]));
    assert_eq!(doc["scopes_supported"], json!([READ_SCOPE]));
}

#[test]
fn where_every_call_writes_a_read_only_hint_grants_nothing() {
    let required = |m, ro| Writes::EveryCall.required(m, ro);
    for hint in [Some(true), Some(false), None] {
        assert_eq!(
            required(Some("tools/call"), hint),
            &[READ_SCOPE, WRITE_SCOPE]
        );
    }
    assert_eq!(required(Some("tools/list"), None), &[READ_SCOPE]);
    assert_eq!(Writes::EveryCall.basic(), &[READ_SCOPE, WRITE_SCOPE]);
}

#[test]
fn metadata_is_looked_for_where_the_spec_says() {
    let url = |s: &str| keys::metadata_urls(&reqwest::Url::parse(s).unwrap());
    assert_eq!(
        url("https://as.example"),
        vec![
            "https://as.example/.well-known/oauth-authorization-server",
            "https://as.example/.well-known/openid-configuration"
        ]
    );
    assert_eq!(
        url("https://as.example/tenant1"),
        vec![
            "https://as.example/.well-known/oauth-authorization-server/tenant1",
            "https://as.example/.well-known/openid-configuration/tenant1",
            "https://as.example/tenant1/.well-known/openid-configuration"
        ]
    );
}

/// A proof of [`OTHER_KEY`] (the client's DPoP key) for `method` on `htu`, with `token`.
fn proof(method: &str, htu: &str, token: &str, iat: u64, jti: &str) -> String {
    let key = EncodingKey::from_ec_der(&der(OTHER_KEY));
    let mut header = Header::new(Algorithm::ES256);
    header.typ = Some("dpop+jwt".into());
    header.jwk = Some(jsonwebtoken::jwk::Jwk::from_encoding_key(&key, Algorithm::ES256).unwrap());
    let claims = json!({"htm": method, "htu": htu, "iat": iat, "jti": jti,
        "ath": dpop::hash(token)});
    jsonwebtoken::encode(&header, &claims, &key).unwrap()
}

/// The thumbprint of [`OTHER_KEY`].
fn client_jkt() -> String {
    let key = EncodingKey::from_ec_der(&der(OTHER_KEY));
    jsonwebtoken::jwk::Jwk::from_encoding_key(&key, Algorithm::ES256)
        .unwrap()
        .thumbprint(jsonwebtoken::jwk::ThumbprintHash::SHA256)
        .unwrap()
}

/// A token bound to [`OTHER_KEY`].
fn bound_token() -> String {
    let mut c = claims();
    c["cnf"] = json!({"jkt": client_jkt()});
    token(&c)
}

fn dpop<'a>(token: &'a str, proof: Option<&'a str>) -> Presented<'a> {
    Presented {
        scheme: Scheme::Dpop,
        token,
        proof,
        method: "POST",
    }
}

#[tokio::test]
async fn a_bound_token_is_taken_only_with_a_fresh_proof_of_its_key_and_only_once() {
    let rs = server();
    let t = bound_token();
    let good = proof("POST", &format!("{RESOURCE}?q=1"), &t, now(), "j-1");
    // htu with a query is refused; without one the proof holds, once.
    assert_eq!(
        rs.check_presented(dpop(&t, Some(&good))).await.unwrap_err(),
        Refusal::Proof(dpop::ProofRefusal::Target)
    );
    let good = proof("POST", RESOURCE, &t, now(), "j-1");
    let grant = rs.check_presented(dpop(&t, Some(&good))).await.unwrap();
    assert_eq!(grant.caller.user, "usr-sam");
    assert_eq!(
        rs.check_presented(dpop(&t, Some(&good))).await.unwrap_err(),
        Refusal::Proof(dpop::ProofRefusal::Replayed)
    );
    use dpop::ProofRefusal as P;
    let other = token(&claims());
    let window = dpop::PROOF_WINDOW.as_secs();
    for (p, why) in [
        (proof("GET", RESOURCE, &t, now(), "j-2"), P::Target),
        (
            proof("POST", "http://127.0.0.1:8080/other", &t, now(), "j-3"),
            P::Target,
        ),
        (
            proof("POST", RESOURCE, &t, now() - window - 5, "j-4"),
            P::Stale,
        ),
        (
            proof("POST", RESOURCE, &t, now() + window + 5, "j-5"),
            P::Stale,
        ),
        (proof("POST", RESOURCE, &other, now(), "j-6"), P::Token),
        ("not.a.proof".to_owned(), P::Malformed),
    ] {
        assert_eq!(
            rs.check_presented(dpop(&t, Some(&p))).await.unwrap_err(),
            Refusal::Proof(why),
            "{why:?}"
        );
    }
    // The stolen token, presented as a bearer token or without a proof, is worthless.
    assert_eq!(rs.check(&t).await.unwrap_err(), Refusal::Proof(P::Missing));
    assert_eq!(
        rs.check_presented(dpop(&t, None)).await.unwrap_err(),
        Refusal::Proof(P::Missing)
    );
    // A proof by another key than the token's: the thief's own key.
    let mut c = claims();
    c["cnf"] = json!({"jkt": "someone-elses-thumbprint"});
    let theirs = token(&c);
    let p = proof("POST", RESOURCE, &theirs, now(), "j-7");
    assert_eq!(
        rs.check_presented(dpop(&theirs, Some(&p)))
            .await
            .unwrap_err(),
        Refusal::Proof(P::Key)
    );
    // An unbound token is no DPoP token.
    let p = proof("POST", RESOURCE, &other, now(), "j-8");
    assert_eq!(
        rs.check_presented(dpop(&other, Some(&p)))
            .await
            .unwrap_err(),
        Refusal::NotBound
    );
}

#[tokio::test]
async fn a_proof_whose_header_holds_the_private_key_is_refused() {
    use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
    let rs = server();
    let t = bound_token();
    let key = EncodingKey::from_ec_der(&der(OTHER_KEY));
    let jwk = serde_json::to_value(
        jsonwebtoken::jwk::Jwk::from_encoding_key(&key, Algorithm::ES256).unwrap(),
    )
    .unwrap();
    // A proof signed by hand, its header's key as given.
    let signed = |jwk: &Value, jti: &str| {
        let header = json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": jwk});
        let claims = json!({"htm": "POST", "htu": RESOURCE, "iat": now(), "jti": jti,
            "ath": dpop::hash(&t)});
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = jsonwebtoken::crypto::sign(input.as_bytes(), &key, Algorithm::ES256);
        format!("{input}.{}", signature.unwrap())
    };
    // The private scalar, as a careless client would leave it in: any value will do.
    let mut careless = jwk.clone();
    careless["d"] = json!("1aPuqkQvbGQ4vK3Bz9lzXJ_4_ZJwZbpvv0z8Ko4fM8w");
    let p = signed(&careless, "priv-1");
    assert_eq!(
        rs.check_presented(dpop(&t, Some(&p))).await.unwrap_err(),
        Refusal::Proof(dpop::ProofRefusal::Malformed)
    );
    // The same proof without the private part holds: the refusal is for that alone.
    let p = signed(&jwk, "priv-2");
    assert!(rs.check_presented(dpop(&t, Some(&p))).await.is_ok());
}

#[tokio::test]
async fn required_dpop_refuses_bearer_tokens_and_says_so_in_its_challenge_and_metadata() {
    let rs = server().requiring_dpop();
    let bearer = token(&claims());
    let presented = Presented {
        scheme: Scheme::Bearer,
        token: &bearer,
        proof: None,
        method: "POST",
    };
    assert_eq!(
        rs.check_presented(presented).await.unwrap_err(),
        Refusal::BearerRefused
    );
    // A token the server's own page received is no MCP request's: the policy is not its.
    assert!(rs.check(&bearer).await.is_ok());
    let t = bound_token();
    let p = proof("POST", RESOURCE, &t, now(), "r-1");
    assert!(rs.check_presented(dpop(&t, Some(&p))).await.is_ok());
    let challenge = rs.challenge(None, rs.basic_scopes());
    assert!(challenge.starts_with("DPoP algs=\"RS256"), "{challenge}");
    assert!(challenge.contains("ES256") && challenge.contains("resource_metadata="));
    assert_eq!(
        rs.metadata_document()["dpop_bound_access_tokens_required"],
        true
    );
    let allowed = server();
    assert!(allowed.challenge(None, &[]).starts_with("Bearer "));
    assert!(
        allowed
            .challenge_as(Scheme::Dpop, Some(("invalid_dpop_proof", "x")), &[])
            .starts_with("DPoP algs=")
    );
    assert_eq!(
        allowed.metadata_document()["dpop_signing_alg_values_supported"][6],
        "ES256"
    );
    assert_eq!(
        Refusal::Proof(dpop::ProofRefusal::Replayed).error_code(),
        "invalid_dpop_proof"
    );
    assert_eq!(
        Refusal::Proof(dpop::ProofRefusal::Missing).error_code(),
        "invalid_token"
    );
}

#[test]
fn the_memory_of_proofs_is_bounded_and_forgets_what_left_its_window() {
    let proofs = dpop::Proofs::default();
    let now = 1_000_000;
    for i in 0..dpop::MAX_REMEMBERED_PROOFS {
        proofs
            .remember_for_tests(&format!("j{i}"), now + 10, now)
            .unwrap();
    }
    assert_eq!(
        proofs.remember_for_tests("one-more", now + 10, now),
        Err(dpop::ProofRefusal::Busy)
    );
    // Once the first ones' time is past, room is made.
    assert_eq!(
        proofs.remember_for_tests("later", now + 100, now + 20),
        Ok(())
    );
    assert_eq!(
        proofs.remember_for_tests("later", now + 100, now + 21),
        Err(dpop::ProofRefusal::Replayed)
    );
}
