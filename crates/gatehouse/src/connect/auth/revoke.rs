//! Signing out: a sign-in's tokens revoked at the authorization server (RFC 7009), where
//! it offers a revocation endpoint; the store forgets them either way
//! ([`super::store::Store::remove`]).
//!
//! Written here, a form POST: rmcp has no revocation, and the `oauth2` crate's refuses
//! any endpoint that is not https, while the sign-in itself accepted the authorization
//! server's metadata (loopback http with `allowPrivateAddresses`), so its tokens could
//! not be revoked where they came from.

use std::time::Duration;

use oauth2::TokenResponse;
use rmcp::transport::auth::{AuthorizationMetadata, OAuthTokenResponse};
use serde_json::Value;

use crate::text::{clip, visible_line};

/// How long a revocation request may take.
pub const REVOKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Most bytes of an error answer read back (for its words).
pub const MAX_REVOKE_ANSWER_BYTES: usize = 4096;

/// What became of the tokens at the authorization server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revoked {
    /// Revoked.
    Done,
    /// The authorization server offers no revocation; the tokens lapse by themselves.
    NotOffered,
    /// The revocation failed, in words (the tokens are forgotten here all the same).
    Failed(String),
}

/// Whether the client authenticates in the body (`client_secret_post`) rather than with
/// Basic: only when the server lists the one and not the other.
fn secret_in_body(metadata: &AuthorizationMetadata) -> bool {
    let methods = metadata
        .additional_fields
        .get("revocation_endpoint_auth_methods_supported")
        .or_else(|| {
            metadata
                .additional_fields
                .get("token_endpoint_auth_methods_supported")
        })
        .and_then(Value::as_array);
    let listed = |m: &str| methods.is_some_and(|a| a.iter().any(|v| v.as_str() == Some(m)));
    listed("client_secret_post") && !listed("client_secret_basic")
}

/// The request's body, and the secret for Basic authentication when it goes there. (The
/// serializer is not `Send`: it is done with before anything is awaited.)
fn form(
    client_id: &str,
    client_secret: Option<String>,
    metadata: &AuthorizationMetadata,
    token: &str,
    hint: &str,
) -> (String, Option<String>) {
    let mut form = form_urlencoded::Serializer::new(String::new());
    form.append_pair("token", token)
        .append_pair("token_type_hint", hint);
    let basic = match client_secret {
        Some(secret) if !secret_in_body(metadata) => Some(secret),
        Some(secret) => {
            form.append_pair("client_id", client_id)
                .append_pair("client_secret", &secret);
            None
        }
        None => {
            form.append_pair("client_id", client_id);
            None
        }
    };
    (form.finish(), basic)
}

/// Revoke `tokens` (the refresh token if there is one, which ends the grant; else the
/// access token) for the client `client_id`.
pub async fn revoke(
    metadata: &AuthorizationMetadata,
    client_id: &str,
    client_secret: Option<String>,
    tokens: &OAuthTokenResponse,
) -> Revoked {
    let Some(endpoint) = metadata
        .additional_fields
        .get("revocation_endpoint")
        .and_then(Value::as_str)
    else {
        return Revoked::NotOffered;
    };
    let Ok(url) = reqwest::Url::parse(endpoint) else {
        return Revoked::Failed(format!(
            "its revocation endpoint {:?} is not a URL",
            clip(&visible_line(endpoint), 200)
        ));
    };
    if !matches!(url.scheme(), "https" | "http") {
        return Revoked::Failed("its revocation endpoint is not an http(s) URL".into());
    }
    let (token, hint) = match tokens.refresh_token() {
        Some(rt) => (rt.secret().as_str(), "refresh_token"),
        None => (tokens.access_token().secret().as_str(), "access_token"),
    };
    let (body, basic) = form(client_id, client_secret, metadata, token, hint);
    let Ok(http) = reqwest::Client::builder()
        .timeout(REVOKE_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
    else {
        return Revoked::Failed("cannot build an HTTP client".into());
    };
    let mut request = http
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body);
    if let Some(secret) = basic {
        // RFC 6749 2.3.1: the id and secret form-encoded, then Basic.
        let enc = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        request = request.basic_auth(enc(client_id), Some(enc(&secret)));
    }
    match request.send().await {
        Ok(answer) if answer.status().is_success() => Revoked::Done,
        Ok(mut answer) => {
            let status = answer.status();
            let mut body = Vec::new();
            while let Ok(Some(chunk)) = answer.chunk().await {
                body.extend_from_slice(&chunk);
                if body.len() >= MAX_REVOKE_ANSWER_BYTES {
                    break;
                }
            }
            let words = visible_line(&String::from_utf8_lossy(&body)).into_owned();
            Revoked::Failed(format!("it answered {status}: {}", clip(&words, 300)))
        }
        Err(e) => Revoked::Failed(clip(&visible_line(&e.to_string()), 300).into_owned()),
    }
}
