//! The grants that present an assertion instead of a person: a workload's token from its
//! platform (RFC 7523's JWT-bearer grant, workload identity federation), here, and
//! enterprise-managed authorization's ID-JAG ([`super::enterprise`]), with what they
//! share: an assertion read afresh, the scopes, the tokens kept. Neither retries or falls
//! back to another grant: a refusal is said, with the authorization server's reason, and
//! the next request asks again.

use std::{io::Read, path::Path, time::Duration};

use oauth2::{TokenResponse, url::form_urlencoded};
use rmcp::transport::auth::{
    AuthorizationManager, AuthorizationMetadata, CredentialStore, OAuthClientConfig,
    OAuthTokenResponse, StoredCredentials,
};
use serde::Deserialize;

use super::{ServerAuth, SignInError, SignedIn, Start, explain, failed, record};
use crate::connect::auth::dpop::DpopKey;
use crate::{
    config::{AssertionSource, OAuthConfig},
    connect::auth::store::{self, ClientSource, now_secs},
    text::{clip, visible_line},
};

/// The grant type of RFC 7523 (a JWT as the grant).
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// Largest token file read (a workload token or an ID token is a few KiB).
pub const MAX_ASSERTION_BYTES: u64 = 64 * 1024;
/// Largest token response read from an authorization server.
const MAX_TOKEN_RESPONSE_BYTES: usize = 256 * 1024;
/// Most characters of an authorization server's refusal kept.
const MAX_REFUSAL_CHARS: usize = 300;
/// The redirect URI of the client rmcp is given for these grants, which never redirect:
/// rmcp refreshes through a configured client, and one with no refresh token then says
/// "sign in again", which brings the host back here for a fresh assertion.
const NO_REDIRECT: &str = "http://127.0.0.1/";

/// Why an assertion cannot be read, in words that never hold its contents.
fn unreadable(what: &str, path: &Path, why: impl std::fmt::Display) -> SignInError {
    failed(format!(
        "the {what} in {} cannot be used: {why}",
        visible_line(&path.display().to_string())
    ))
}

/// Whether `text` has the shape of a compact JWS: three base64url parts, the first two
/// not empty.
fn is_compact_jwt(text: &str) -> bool {
    let parts: Vec<&str> = text.split('.').collect();
    parts.len() == 3
        && !parts[0].is_empty()
        && !parts[1].is_empty()
        && parts.iter().all(|p| {
            p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// The assertion in `path`, read now (the platform replaces the file before the token in
/// it expires), at most [`MAX_ASSERTION_BYTES`], trimmed, and shaped as a JWT.
pub fn read_assertion_file(what: &str, path: &Path) -> Result<String, SignInError> {
    let file = std::fs::File::open(path).map_err(|e| unreadable(what, path, e))?;
    let mut bytes = Vec::new();
    file.take(MAX_ASSERTION_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| unreadable(what, path, e))?;
    if bytes.len() as u64 > MAX_ASSERTION_BYTES {
        return Err(unreadable(
            what,
            path,
            format!("it is over {MAX_ASSERTION_BYTES} bytes"),
        ));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| unreadable(what, path, "it is not UTF-8 text"))?
        .trim()
        .to_owned();
    if text.is_empty() {
        return Err(unreadable(what, path, "it is empty"));
    }
    if !is_compact_jwt(&text) {
        return Err(unreadable(what, path, "it does not hold a JWT"));
    }
    Ok(text)
}

/// When the JWT `jwt` expires (its `exp`, seconds since 1970), read without checking its
/// signature: for `doctor`, which says a stale token file before a server refuses it.
pub fn assertion_expiry(jwt: &str) -> Option<u64> {
    use base64::Engine;
    let payload = jwt.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()?
        .get("exp")?
        .as_u64()
}

/// The assertion `source` gives, read now.
pub(super) async fn assertion(
    what: &'static str,
    source: &AssertionSource,
) -> Result<String, SignInError> {
    match source {
        AssertionSource::Value(value) if is_compact_jwt(value) => Ok(value.clone()),
        AssertionSource::Value(_) => Err(failed(format!(
            "the {what} from the environment is not a JWT"
        ))),
        AssertionSource::File(path) => {
            let path = path.clone();
            tokio::task::spawn_blocking(move || read_assertion_file(what, &path))
                .await
                .map_err(|e| failed(format!("reading the {what} stopped: {e}")))?
        }
    }
}

/// Refuse an authorization server that lists its grant types without the JWT-bearer
/// grant, before `what` is sent there.
pub(super) fn takes_jwt_bearer(
    metadata: &AuthorizationMetadata,
    issuer: &str,
    what: &str,
) -> Result<(), SignInError> {
    match metadata.additional_fields.get("grant_types_supported") {
        Some(serde_json::Value::Array(types)) if !types.iter().any(|t| t == JWT_BEARER) => {
            Err(failed(format!(
                "the authorization server {} does not accept JWT-bearer grants (grant_types_supported), so {what} cannot be used there",
                visible_line(issuer)
            )))
        }
        // RFC 8414: absent means authorization_code and implicit only, but servers that
        // support more often leave it out; the token endpoint says no if it must.
        _ => Ok(()),
    }
}

/// An authorization server's refusal (RFC 6749 §5.2), in words.
#[derive(Deserialize)]
struct Refusal {
    error: String,
    error_description: Option<String>,
}

/// The refusal in `body`, as the person reads it.
fn refusal_words(status: reqwest::StatusCode, body: &[u8]) -> String {
    match serde_json::from_slice::<Refusal>(body) {
        Ok(r) => {
            let words = match r.error_description {
                Some(d) => format!("{} ({d})", r.error),
                None => r.error,
            };
            clip(&visible_line(&words), MAX_REFUSAL_CHARS).into_owned()
        }
        Err(_) => format!("HTTP {status}"),
    }
}

/// Present `jwt` to the token endpoint as a JWT-bearer grant (RFC 7523 §2.1), as the
/// configured client, within `limit`; redirects are not followed.
async fn jwt_bearer_request(
    config: &OAuthConfig,
    metadata: &AuthorizationMetadata,
    jwt: &str,
    resource: &str,
    scopes: &[String],
    limit: Duration,
    dpop: Option<&DpopKey>,
) -> Result<OAuthTokenResponse, SignInError> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(limit)
        .build()
        .map_err(|e| failed(e.to_string()))?;
    let mut form = vec![
        ("grant_type", JWT_BEARER.to_owned()),
        ("assertion", jwt.to_owned()),
        ("resource", resource.to_owned()),
    ];
    if !scopes.is_empty() {
        form.push(("scope", scopes.join(" ")));
    }
    let client_id = config.client_id.clone().unwrap_or_default();
    let mut request = http
        .post(&metadata.token_endpoint)
        .header(reqwest::header::ACCEPT, "application/json");
    match &config.client_secret {
        // RFC 6749 §2.3.1: each part form-encoded before Basic.
        Some(secret) => {
            let encode = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect();
            let (id, secret): (String, String) = (encode(&client_id), encode(secret));
            request = request.basic_auth(id, Some(secret));
        }
        // A public client names itself; with no client configured, the workload's token
        // names it (RFC 7523 §3: client authentication is optional for this grant).
        None if !client_id.is_empty() => form.push(("client_id", client_id)),
        None => {}
    }
    let body = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
        .finish();
    let request = request.header(
        reqwest::header::CONTENT_TYPE,
        "application/x-www-form-urlencoded",
    );
    let response = send_token_request(request, body, &metadata.token_endpoint, limit, dpop).await?;
    let status = response.status();
    let body = bounded_body(response).await?;
    if !status.is_success() {
        return Err(failed(format!(
            "the authorization server refused the workload's token: {}",
            refusal_words(status, &body)
        )));
    }
    let tokens: OAuthTokenResponse = serde_json::from_slice(&body).map_err(|e| {
        failed(format!(
            "the authorization server's token answer is unusable: {e}"
        ))
    })?;
    if tokens.access_token().secret().trim().is_empty() {
        return Err(failed(
            "the authorization server's token answer has an empty access token",
        ));
    }
    Ok(tokens)
}

/// Send a token request (its body apart, so it can be sent again), with a fresh DPoP
/// proof when the sign-in has a key; a refusal for want of a nonce is answered once, with
/// its nonce (RFC 9449 §8).
async fn send_token_request(
    request: reqwest::RequestBuilder,
    body: String,
    endpoint: &str,
    limit: Duration,
    dpop: Option<&DpopKey>,
) -> Result<reqwest::Response, SignInError> {
    let mut asked_nonce = false;
    let response = loop {
        let mut attempt = request
            .try_clone()
            .ok_or_else(|| failed("the token request cannot be sent twice"))?
            .body(body.clone());
        if let Some(key) = dpop {
            attempt = attempt.header("DPoP", key.proof("POST", endpoint, None).map_err(failed)?);
        }
        let response = attempt.send().await.map_err(|e| {
            failed(format!(
                "the token request to {} failed: {}",
                visible_line(endpoint),
                if e.is_timeout() {
                    format!("no answer within {}", crate::text::seconds(limit))
                } else {
                    e.without_url().to_string()
                }
            ))
        })?;
        let nonce = response
            .headers()
            .get("DPoP-Nonce")
            .and_then(|v| v.to_str().ok());
        match (dpop, nonce) {
            (Some(key), Some(nonce))
                if !asked_nonce
                    && response.status() == reqwest::StatusCode::BAD_REQUEST
                    && key.set_nonce(endpoint, nonce) =>
            {
                asked_nonce = true;
            }
            _ => break response,
        }
    };
    Ok(response)
}

/// A response's body, at most [`MAX_TOKEN_RESPONSE_BYTES`].
async fn bounded_body(mut response: reqwest::Response) -> Result<Vec<u8>, SignInError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| failed(format!("reading the token answer failed: {e}")))?
    {
        if body.len() + chunk.len() > MAX_TOKEN_RESPONSE_BYTES {
            return Err(failed(format!(
                "the authorization server's token answer is over {MAX_TOKEN_RESPONSE_BYTES} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The scopes a sign-in asks for: the ones wanted (a step-up's, or the server's first
/// choice) and the entry's own.
pub(super) fn wanted_scopes(config: &OAuthConfig, mut wanted: Vec<String>) -> Vec<String> {
    for s in &config.scopes {
        if !wanted.contains(s) {
            wanted.push(s.clone());
        }
    }
    wanted
}

/// Give rmcp's manager a client for these grants (see [`NO_REDIRECT`]).
pub(super) fn configure(m: &mut AuthorizationManager, client_id: &str) -> Result<(), String> {
    m.configure_client(OAuthClientConfig::new(client_id, NO_REDIRECT))
        .map_err(|e| explain(&e))
}

/// The tokens of a grant with no refresh flow, kept in `slot` under `record`.
pub(super) async fn keep(
    slot: &store::Slot,
    kept: store::SignIn,
    tokens: OAuthTokenResponse,
    scopes: Vec<String>,
) -> Result<(), SignInError> {
    let client_id = kept.client_id.clone();
    slot.prepare(kept, None);
    slot.save(StoredCredentials::new(
        client_id,
        Some(tokens),
        scopes,
        Some(now_secs()),
    ))
    .await
    .map_err(|e| failed(explain(&e)))
}

/// The scopes granted: the answer's, else the ones asked for (RFC 6749 §5.1).
fn granted(tokens: &OAuthTokenResponse, asked: &[String]) -> Vec<String> {
    match tokens.scopes() {
        Some(s) => s.iter().map(|s| s.to_string()).collect(),
        None => asked.to_vec(),
    }
}

/// The resource a token is asked for: the entry's, else the server's URL.
pub(super) fn resource(auth: &ServerAuth) -> String {
    auth.config
        .resource
        .clone()
        .unwrap_or_else(|| auth.url.clone())
}

/// The JWT-bearer grant: the workload's token file, read now, presented as the grant.
pub(super) async fn jwt_bearer(
    mut m: AuthorizationManager,
    start: Start<'_>,
) -> Result<(AuthorizationManager, SignedIn), SignInError> {
    takes_jwt_bearer(start.metadata, &start.issuer, "the workload's token")?;
    let file = start
        .auth
        .config
        .token_file
        .clone()
        .ok_or_else(|| failed("the \"jwt_bearer\" grant needs the entry's \"tokenFile\""))?;
    let jwt = assertion("workload token", &AssertionSource::File(file)).await?;
    let initial = crate::connect::auth::scopes::without_person(&m).await;
    let asked = wanted_scopes(&start.auth.config, start.scopes.unwrap_or(initial));
    let tokens = jwt_bearer_request(
        &start.auth.config,
        start.metadata,
        &jwt,
        &resource(start.auth),
        &asked,
        start.auth.limits.timeout,
        start.dpop.map(|k| k.as_ref()),
    )
    .await?;
    let id = start.auth.config.client_id.clone().unwrap_or_default();
    configure(&mut m, &id).map_err(failed)?;
    let scopes = granted(&tokens, &asked);
    let kept = record(
        start.auth,
        start.metadata,
        &start.issuer,
        &id,
        ClientSource::JwtBearer,
        "",
    );
    keep(start.slot, kept, tokens, scopes.clone()).await?;
    let issuer = start.issuer;
    Ok((m, SignedIn { issuer, scopes }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_file_is_read_whole_within_its_bound_and_never_shown() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ3In0.c2ln\n").unwrap();
        assert_eq!(
            read_assertion_file("workload token", &path).unwrap(),
            "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ3In0.c2ln"
        );
        let cases: [(&[u8], &str); 4] = [
            (b"", "it is empty"),
            (b"not-a-jwt secret-words", "does not hold a JWT"),
            (b"\xff\xfe.a.b", "not UTF-8"),
            (b"a..b", "does not hold a JWT"),
        ];
        for (contents, why) in cases {
            std::fs::write(&path, contents).unwrap();
            let err = read_assertion_file("workload token", &path)
                .unwrap_err()
                .to_string();
            assert!(err.contains(why), "{err}");
            assert!(!err.contains("secret-words"), "{err}");
        }
        let big = format!("a.{}.b", "b".repeat(MAX_ASSERTION_BYTES as usize));
        std::fs::write(&path, big).unwrap();
        let err = read_assertion_file("workload token", &path).unwrap_err();
        assert!(err.to_string().contains("over 65536 bytes"), "{err}");
        let missing = read_assertion_file("workload token", &dir.path().join("gone"))
            .unwrap_err()
            .to_string();
        assert!(
            missing.contains("gone") && missing.contains("cannot be used"),
            "{missing}"
        );
    }

    #[test]
    fn an_assertion_s_expiry_is_read_from_its_claims() {
        // {"alg":"none"} . {"sub":"w","exp":1893456000}
        let jwt = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ3IiwiZXhwIjoxODkzNDU2MDAwfQ.c2ln";
        assert_eq!(assertion_expiry(jwt), Some(1_893_456_000));
        assert_eq!(
            assertion_expiry("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ3In0.c2ln"),
            None
        );
        assert_eq!(assertion_expiry("a.!!!.c"), None);
        assert_eq!(assertion_expiry("nodots"), None);
    }

    /// A token endpoint on 127.0.0.1 that answers every request with a token and passes
    /// on each form body it got. Its metadata.
    async fn token_endpoint() -> (
        AuthorizationMetadata,
        tokio::sync::mpsc::UnboundedReceiver<String>,
    ) {
        use axum::{Json, Router, routing::post};
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let app = Router::new().route(
            "/token",
            post(move |body: String| {
                let _ = tx.send(body);
                async { Json(serde_json::json!({"access_token": "at", "token_type": "Bearer"})) }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let metadata = serde_json::from_value(serde_json::json!({
            "authorization_endpoint": format!("{base}/authorize"),
            "token_endpoint": format!("{base}/token")}))
        .unwrap();
        (metadata, rx)
    }

    #[tokio::test]
    async fn a_workload_names_its_client_only_when_the_entry_gives_one() {
        let (metadata, mut bodies) = token_endpoint().await;
        let jwt = "eyJh.eyJz.c2ln";
        let limit = Duration::from_secs(10);
        let mut config = OAuthConfig::new();
        let send = |config: OAuthConfig| {
            let metadata = metadata.clone();
            async move {
                jwt_bearer_request(
                    &config,
                    &metadata,
                    jwt,
                    "https://mcp.example/mcp",
                    &[],
                    limit,
                    None,
                )
                .await
                .unwrap()
            }
        };
        send(config.clone()).await;
        let body = bodies.recv().await.unwrap();
        assert!(
            body.contains("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"),
            "{body}"
        );
        assert!(body.contains("assertion=eyJh.eyJz.c2ln"), "{body}");
        assert!(!body.contains("client_id"), "no empty client: {body}");
        config.client_id = Some("ci-runner".into());
        send(config).await;
        assert!(bodies.recv().await.unwrap().contains("client_id=ci-runner"));
    }

    #[test]
    fn a_refusal_is_said_with_its_reason_made_safe() {
        let body =
            br#"{"error":"invalid_grant","error_description":"JWT assertion is expired\u001b[2J"}"#;
        let words = refusal_words(reqwest::StatusCode::BAD_REQUEST, body);
        assert!(
            words.starts_with("invalid_grant (JWT assertion is expired"),
            "{words}"
        );
        assert!(!words.contains('\u{1b}'), "{words}");
        assert_eq!(
            refusal_words(reqwest::StatusCode::BAD_GATEWAY, b"<html>"),
            "HTTP 502 Bad Gateway"
        );
    }
}
