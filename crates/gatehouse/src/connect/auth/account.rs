//! The person's sign-ins as `gatehouse auth` shows and changes them: sign in to a server
//! now, what is kept for each server (never a token), and signing out.

use std::sync::Arc;

use serde::Serialize;

use super::{
    Parts, ServerAuth, SignInError, SignInLimits, SignedIn,
    revoke::{self, Revoked},
    store::{self, ClientSource, Store},
    vault::Vault,
};
use crate::{
    config::{OAuthConfig, ServerSpec, Transport},
    person::{Person, PersonTime},
    trace::Trace,
};

/// The URL and sign-in settings of a server the host signs in to, or why it is not one.
pub fn signable(spec: &ServerSpec) -> Result<(&str, &OAuthConfig), String> {
    match &spec.transport {
        Transport::Http {
            url,
            oauth: Some(oauth),
            ..
        } => Ok((url, oauth)),
        Transport::Http { oauth: None, .. } => Err(format!(
            "server {} sends its own Authorization header (or says \"oauth\": false): there is nothing to sign in to",
            spec.name
        )),
        Transport::Stdio { .. } => Err(format!(
            "server {} is a local program (stdio): only HTTP servers ask for a sign-in",
            spec.name
        )),
    }
}

/// Sign in to `spec` now, whatever is kept (the server is asked where to sign in).
pub async fn login(
    spec: &ServerSpec,
    person: Arc<dyn Person>,
    trace: &Trace,
    limits: SignInLimits,
) -> Result<SignedIn, SignInError> {
    let (url, config) = signable(spec).map_err(SignInError::Failed)?;
    let auth = ServerAuth::new(Parts {
        server: &spec.name,
        url,
        config,
        person,
        trace,
        limits,
        person_time: PersonTime::default(),
    })
    .await?;
    let challenge = first_challenge(url).await;
    auth.sign_in(challenge.as_deref()).await
}

/// How long the request that asks a server how it wants to be signed in to may take.
const CHALLENGE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The server's `WWW-Authenticate` challenge to a request with no token, as a connection
/// would get it: its metadata's address, its scopes, and its scheme (a server that takes
/// only DPoP-bound tokens says so there, and one sign-in then binds them). None when it
/// does not answer 401 with one; the sign-in then finds the metadata by its well-known name.
async fn first_challenge(url: &str) -> Option<String> {
    let answer = super::client::ping(url, "gatehouse-sign-in", CHALLENGE_TIMEOUT)
        .send()
        .await
        .ok()?;
    if answer.status() != reqwest::StatusCode::UNAUTHORIZED {
        return None;
    }
    answer
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)?
        .to_str()
        .ok()
        .map(str::to_owned)
}

/// One server's sign-in as `gatehouse auth status` shows it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Status {
    /// The server's name.
    pub server: String,
    /// Its URL.
    pub url: String,
    /// Whether tokens are kept.
    pub signed_in: bool,
    /// The authorization server's issuer.
    pub issuer: Option<String>,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// When the access token expires, in seconds since 1970.
    pub expires_at: Option<u64>,
    /// Whether a refresh token is kept (the sign-in then outlives the access token).
    pub refreshable: bool,
    /// How the client was obtained: configured, metadata_document, registered,
    /// client_credentials.
    pub client: Option<String>,
    /// Where the secrets are.
    pub kept_in: Option<String>,
    /// How the servers file says tokens are obtained (`authorization_code`,
    /// `client_credentials`, `jwt_bearer`, `enterprise_managed`).
    pub grant: &'static str,
}

fn store(limits: SignInLimits) -> Result<Store, String> {
    let dir = store::default_dir()
        .ok_or("no data folder to keep sign-ins in ($XDG_DATA_HOME and $HOME are unset)")?;
    Ok(Store::new(dir, Vault::new(limits.store)))
}

/// The sign-in of each server in `servers` the host may sign in to, in their order.
pub async fn status(servers: &[ServerSpec], limits: SignInLimits) -> Result<Vec<Status>, String> {
    let store = store(limits)?;
    let wanted: Vec<(String, String, &'static str)> = servers
        .iter()
        .filter_map(|s| {
            signable(s)
                .ok()
                .map(|(url, oauth)| (s.name.to_string(), url.to_owned(), oauth.grant.word()))
        })
        .collect();
    tokio::task::spawn_blocking(move || {
        let mut out = Vec::new();
        for (server, url, grant) in wanted {
            let kept = store.current(&url).map_err(|e| e.to_string())?;
            out.push(match kept {
                None => Status {
                    server,
                    url,
                    signed_in: false,
                    issuer: None,
                    scopes: Vec::new(),
                    expires_at: None,
                    refreshable: false,
                    client: None,
                    kept_in: None,
                    grant,
                },
                Some(s) => Status {
                    signed_in: s.tokens_at.is_some(),
                    kept_in: Some(store.secrets_place(&s)),
                    issuer: Some(s.issuer),
                    scopes: s.scopes,
                    expires_at: s.tokens_at.zip(s.expires_in).map(|(at, n)| at + n),
                    refreshable: s.refreshable,
                    client: Some(
                        match s.client_source {
                            ClientSource::Configured => "configured",
                            ClientSource::MetadataDocument => "metadata_document",
                            ClientSource::Registered => "registered",
                            ClientSource::ClientCredentials => "client_credentials",
                            ClientSource::JwtBearer => "jwt_bearer",
                            ClientSource::EnterpriseManaged => "enterprise_managed",
                        }
                        .into(),
                    ),
                    server,
                    url,
                    grant,
                },
            });
        }
        Ok(out)
    })
    .await
    .map_err(|e| format!("the store's task failed: {e}"))?
}

/// What signing out of one authorization server did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedOut {
    /// The authorization server.
    pub issuer: String,
    /// What became of the tokens there.
    pub revoked: Revoked,
}

/// Sign out of `spec`: its tokens revoked where the authorization server offers it, and
/// forgotten here either way. The registrations stay (a later sign-in reuses them).
pub async fn logout(spec: &ServerSpec, limits: SignInLimits) -> Result<Vec<SignedOut>, String> {
    let (url, config) = signable(spec)?;
    let store = store(limits)?;
    let (s, u) = (store.clone(), url.to_owned());
    let removed = tokio::task::spawn_blocking(move || s.remove(&u))
        .await
        .map_err(|e| format!("the store's task failed: {e}"))?
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for (sign_in, tokens) in removed {
        let revoked = match tokens {
            None => Revoked::NotOffered,
            Some(tokens) => {
                let secret = match sign_in.client_source {
                    ClientSource::Configured
                    | ClientSource::ClientCredentials
                    | ClientSource::JwtBearer
                    | ClientSource::EnterpriseManaged => config.client_secret.clone(),
                    ClientSource::Registered => {
                        let (s, i) = (store.clone(), sign_in.issuer.clone());
                        tokio::task::spawn_blocking(move || s.registration(&i))
                            .await
                            .ok()
                            .and_then(Result::ok)
                            .flatten()
                            .and_then(|(_, secret)| secret)
                    }
                    ClientSource::MetadataDocument => None,
                };
                revoke::revoke(&sign_in.metadata, &sign_in.client_id, secret, &tokens).await
            }
        };
        out.push(SignedOut {
            issuer: sign_in.issuer,
            revoked,
        });
    }
    Ok(out)
}
