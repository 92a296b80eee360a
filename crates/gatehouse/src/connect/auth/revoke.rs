//! Signing out: a sign-in's tokens revoked at the authorization server (RFC 7009), where
//! it offers a revocation endpoint, with the `oauth2` crate (rmcp has no revocation); the
//! store forgets them either way ([`super::store::Store::remove`]).

use std::time::Duration;

use oauth2::{
    AuthType, ClientId, ClientSecret, RevocationUrl, StandardRevocableToken, TokenResponse,
    basic::BasicClient,
};
use rmcp::transport::auth::{AuthorizationMetadata, OAuthTokenResponse};
use serde_json::Value;

use crate::text::{clip, visible_line};

/// How long a revocation request may take.
pub const REVOKE_TIMEOUT: Duration = Duration::from_secs(10);

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

/// Send one request of the `oauth2` crate with reqwest (redirects not followed). The
/// client is taken by value (a cheap handle): a future borrowing it would not be `Send`
/// for every lifetime, which the command's thread pool needs.
async fn send(
    http: reqwest::Client,
    request: oauth2::HttpRequest,
) -> Result<oauth2::HttpResponse, reqwest::Error> {
    let (parts, body) = request.into_parts();
    let mut outgoing = http.request(parts.method, parts.uri.to_string());
    for (name, value) in &parts.headers {
        outgoing = outgoing.header(name, value);
    }
    let response = outgoing.body(body).send().await?;
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.bytes().await?;
    let mut answer = oauth2::http::Response::new(bytes.to_vec());
    *answer.status_mut() = status;
    *answer.headers_mut() = headers;
    Ok(answer)
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
    let Ok(url) = RevocationUrl::new(endpoint.to_owned()) else {
        return Revoked::Failed(format!(
            "its revocation endpoint {:?} is not a URL",
            clip(endpoint, 200)
        ));
    };
    let mut client = BasicClient::new(ClientId::new(client_id.to_owned())).set_revocation_url(url);
    if let Some(secret) = client_secret {
        client = client.set_client_secret(ClientSecret::new(secret));
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
        if listed("client_secret_post") && !listed("client_secret_basic") {
            client = client.set_auth_type(AuthType::RequestBody);
        }
    }
    let token = match tokens.refresh_token() {
        Some(rt) => StandardRevocableToken::RefreshToken(rt.clone()),
        None => StandardRevocableToken::AccessToken(tokens.access_token().clone()),
    };
    let Ok(http) = reqwest::Client::builder()
        .timeout(REVOKE_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
    else {
        return Revoked::Failed("cannot build an HTTP client".into());
    };
    let request = match client.revoke_token(token) {
        Ok(r) => r,
        Err(e) => return Revoked::Failed(e.to_string()),
    };
    match request
        .request_async(&|r: oauth2::HttpRequest| send(http.clone(), r))
        .await
    {
        Ok(()) => Revoked::Done,
        Err(e) => Revoked::Failed(clip(&visible_line(&e.to_string()), 300).into_owned()),
    }
}
