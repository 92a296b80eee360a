//! One sign-in, from a challenge to tokens in the store: discovery (rmcp), the checks rmcp
//! leaves out (metadata that exists, the configured client's issuer), whether the tokens
//! are bound to a key (DPoP), and the grant: the person's in a browser ([`browser`]), or
//! one with no person ([`machine`], [`assertion`]). Also the way back after a restart: a
//! manager set up from the store, with no request to anyone.

use std::sync::Arc;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, OAuthClientConfig,
};

mod assertion;
mod browser;
mod dpop;
mod enterprise;
mod machine;
pub use assertion::{MAX_ASSERTION_BYTES, assertion_expiry, read_assertion_file};
use browser::with_person;
pub use machine::key_signs;
use machine::{client_credentials, client_credentials_config};

use super::{
    ServerAuth, SignInError, SignedIn,
    dpop::DpopKey,
    store::{self, ClientSource, SignIn, Store},
    token_http::DpopOAuthHttp,
};
use crate::{
    config::{Grant, OAuthConfig},
    text::{clip, visible_line},
};

/// Most characters of a peer's words kept in an error.
const MAX_REASON_CHARS: usize = 400;

fn failed(reason: impl Into<String>) -> SignInError {
    SignInError::Failed(reason.into())
}

/// An rmcp error in words (a peer's text made safe and short).
pub(super) fn explain(e: &AuthError) -> String {
    let words = match e {
        AuthError::ProtectedResourceMetadataInvalid { url, reason } => {
            format!("its protected-resource metadata at {url} is unusable: {reason}")
        }
        AuthError::AuthorizationServersUnavailable {
            authorization_servers,
            ..
        } => format!(
            "none of the authorization servers its metadata names ({}) publishes usable metadata",
            authorization_servers.join(", ")
        ),
        AuthError::AuthorizationServerMismatch {
            expected_issuer,
            received_issuer,
        } => format!(
            "the authorization server's answer names the issuer {received_issuer}, not {expected_issuer}: it is not used"
        ),
        AuthError::AuthorizationServerMissingIssuer { expected_issuer } => format!(
            "the authorization response has no iss, though {expected_issuer} says it sends one: it is not used"
        ),
        AuthError::DiscoveryRequestFailed { url, source } => {
            format!("cannot read {url}: {source}")
        }
        AuthError::PkceUnsupported => {
            "the authorization server does not support PKCE with S256: the sign-in is refused"
                .into()
        }
        AuthError::RegistrationFailed(why) => {
            format!("registering Gatehouse at the authorization server failed: {why}")
        }
        AuthError::TokenExchangeFailed(why) => {
            format!("the authorization server gave no usable tokens: {why}")
        }
        AuthError::ClientCredentialsError(why) => {
            format!("the client-credentials exchange failed: {why}")
        }
        AuthError::CredentialStoreError(why) => why.clone(),
        other => other.to_string(),
    };
    clip(&visible_line(&words), MAX_REASON_CHARS).into_owned()
}

/// A manager for the server at `url`, with the address policy the entry asks for; a DPoP
/// sign-in's sends its token requests with proofs of `dpop`.
async fn manager(
    url: &str,
    config: &OAuthConfig,
    dpop: Option<&Arc<DpopKey>>,
) -> Result<AuthorizationManager, String> {
    if let Some(key) = dpop {
        let http = DpopOAuthHttp::new(key.clone(), url, config.allow_private_addresses)?;
        return AuthorizationManager::new_with_oauth_http_client(url, Arc::new(http))
            .await
            .map_err(|e| explain(&e));
    }
    let made = if config.allow_private_addresses {
        AuthorizationManager::new_allowing_private_addresses(url).await
    } else {
        AuthorizationManager::new(url).await
    };
    made.map_err(|e| explain(&e))
}

/// Run blocking store work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, store::StoreError> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| format!("the store's task failed: {e}"))?
        .map_err(|e| e.to_string())
}

/// The manager a new connection starts with: the stored sign-in of `url` if there is one
/// the entry can still use (the same client, the same issuer), else an empty one that
/// sends requests unauthenticated until the server asks for a sign-in.
pub(super) async fn restore(
    store: &Store,
    url: &str,
    config: &OAuthConfig,
) -> Result<(AuthorizationManager, Option<Arc<DpopKey>>), String> {
    let (s, u) = (store.clone(), url.to_owned());
    let Some(kept) = blocking(move || s.current(&u)).await? else {
        return Ok((manager(url, config, None).await?, None));
    };
    // A sign-in bound to a key keeps using it: its refreshes carry proofs too.
    let dpop = match kept.dpop.is_some() && config.dpop != Some(false) {
        true => {
            let (s, u, i) = (store.clone(), url.to_owned(), kept.issuer.clone());
            match blocking(move || s.dpop_key(&u, &i)).await? {
                Some(text) => Some(Arc::new(DpopKey::from_kept(&text)?)),
                None => None,
            }
        }
        false => None,
    };
    let mut m = manager(url, config, dpop.as_ref()).await?;
    let other_client = config
        .client_id
        .as_ref()
        .is_some_and(|id| *id != kept.client_id)
        && kept.client_source != ClientSource::Registered;
    let other_issuer = config.issuer.as_ref().is_some_and(|i| *i != kept.issuer);
    if other_client || other_issuer {
        return Ok((manager(url, config, None).await?, None));
    }
    m.set_metadata(kept.metadata.clone());
    m.set_credential_store(store.slot(url, &kept.issuer));
    if matches!(
        kept.client_source,
        ClientSource::JwtBearer | ClientSource::EnterpriseManaged
    ) {
        assertion::configure(&mut m, &kept.client_id)?;
        return Ok((m, dpop));
    }
    if kept.client_source == ClientSource::ClientCredentials {
        if let Some(cc) = client_credentials_config(config, url, Vec::new()) {
            m.configure_client_credentials(&cc)
                .map_err(|e| explain(&e))?;
        }
        return Ok((m, dpop));
    }
    let secret = match kept.client_source {
        ClientSource::Configured => config.client_secret.clone(),
        ClientSource::Registered => {
            let (s, issuer) = (store.clone(), kept.issuer.clone());
            blocking(move || s.registration(&issuer))
                .await?
                .filter(|(r, _)| r.client_id == kept.client_id)
                .and_then(|(_, secret)| secret)
        }
        _ => None,
    };
    let mut client = OAuthClientConfig::new(kept.client_id.clone(), kept.redirect_uri.clone());
    if let Some(secret) = secret {
        client = client.with_client_secret(secret);
    }
    m.configure_client(client).map_err(|e| explain(&e))?;
    Ok((m, dpop))
}

/// The scopes the current sign-in was granted.
pub(super) async fn granted_scopes(auth: &ServerAuth) -> Vec<String> {
    let (s, u) = (auth.store.clone(), auth.url.clone());
    blocking(move || s.current(&u))
        .await
        .ok()
        .flatten()
        .map(|kept| kept.scopes)
        .unwrap_or_default()
}

/// Discovery, with the checks rmcp leaves out: metadata that was published (not endpoints
/// made up from the URL), an issuer, and a configured client kept to its own issuer.
async fn discover(
    auth: &ServerAuth,
    challenge: Option<&str>,
    dpop: Option<&Arc<DpopKey>>,
) -> Result<(AuthorizationManager, AuthorizationMetadata, String), SignInError> {
    let mut m = manager(&auth.url, &auth.config, dpop)
        .await
        .map_err(failed)?;
    let resolution = m
        .resolve_metadata_from_challenge(challenge)
        .await
        .map_err(|e| failed(explain(&e)))?;
    if !resolution.source.is_discovered() {
        return Err(failed(
            "it publishes no OAuth metadata (no protected-resource or authorization-server metadata), so there is nowhere to sign in",
        ));
    }
    let metadata = resolution.metadata;
    let issuer = metadata
        .issuer
        .clone()
        .ok_or_else(|| failed("its authorization server's metadata names no issuer"))?;
    if let (Some(id), Some(wanted)) = (&auth.config.client_id, &auth.config.issuer)
        && *wanted != issuer
    {
        return Err(failed(format!(
            "the servers file's client {} belongs to {}, but the server names the authorization server {}: its credentials are not sent there",
            visible_line(id),
            visible_line(wanted),
            visible_line(&issuer)
        )));
    }
    m.set_metadata(metadata.clone());
    Ok((m, metadata, issuer))
}

/// Sign in: discover, pick the client, have the person authorize (or use the client's
/// credentials), and exchange the code. Nothing is stored unless tokens come, and nothing
/// is begun when they would have nowhere to go.
pub(super) async fn authorize(
    auth: &ServerAuth,
    challenge: Option<&str>,
    scopes: Option<Vec<String>>,
) -> Result<(AuthorizationManager, SignedIn), SignInError> {
    if auth.config.grant.needs_person() && !auth.person.can_sign_in() {
        return Err(SignInError::NeedsSignIn {
            server: auth.server.clone(),
        });
    }
    let s = auth.store.clone();
    blocking(move || s.check_vault()).await.map_err(failed)?;
    let dpop = dpop::wanted(&auth.config, challenge)
        .then(DpopKey::generate)
        .transpose()
        .map_err(failed)?
        .map(Arc::new);
    let (mut m, metadata, issuer) = discover(auth, challenge, dpop.as_ref()).await?;
    let slot = auth.store.slot(&auth.url, &issuer);
    m.set_credential_store(slot.clone());
    if let Some(key) = &dpop {
        dpop::check_server(&metadata, &issuer)?;
        slot.bind_dpop(key.to_kept(), key.thumbprint().to_owned());
    }
    let start = Start {
        auth,
        metadata: &metadata,
        issuer,
        slot: &slot,
        scopes,
        dpop: dpop.as_ref(),
    };
    let outcome = if auth.config.grant.needs_person() {
        with_person(m, start).await
    } else {
        without_person(m, start).await
    };
    if outcome.is_ok() {
        auth.set_dpop(dpop);
    }
    outcome
}

/// Where a grant with no person starts: the server, its authorization server, where the
/// tokens go, and the scopes a step-up asks for (else the server's first choice).
pub(super) struct Start<'a> {
    auth: &'a ServerAuth,
    metadata: &'a AuthorizationMetadata,
    issuer: String,
    slot: &'a store::Slot,
    scopes: Option<Vec<String>>,
    /// The key the tokens are to be bound to (DPoP), if they are.
    dpop: Option<&'a Arc<DpopKey>>,
}

/// A grant with no person: the client's credentials, a workload's token, or the
/// company identity provider's grant.
async fn without_person(
    m: AuthorizationManager,
    start: Start<'_>,
) -> Result<(AuthorizationManager, SignedIn), SignInError> {
    match start.auth.config.grant {
        Grant::ClientCredentials => client_credentials(m, start).await,
        Grant::JwtBearer => assertion::jwt_bearer(m, start).await,
        Grant::EnterpriseManaged => enterprise::enterprise_managed(m, start).await,
        Grant::AuthorizationCode => Err(failed("the authorization-code grant needs a person")),
    }
}

/// The record a sign-in keeps with its tokens.
fn record(
    auth: &ServerAuth,
    metadata: &AuthorizationMetadata,
    issuer: &str,
    client_id: &str,
    source: ClientSource,
    redirect_uri: &str,
) -> SignIn {
    SignIn {
        resource: auth.url.clone(),
        issuer: issuer.to_owned(),
        server: auth.server.clone(),
        metadata: metadata.clone(),
        client_id: client_id.to_owned(),
        client_source: source,
        redirect_uri: redirect_uri.to_owned(),
        scopes: Vec::new(),
        tokens_at: None,
        expires_in: None,
        refreshable: false,
        in_keychain: false,
        dpop: None,
    }
}

/// What the sign-in gave, read back from the store.
async fn signed_in(
    m: AuthorizationManager,
    issuer: String,
) -> Result<(AuthorizationManager, SignedIn), SignInError> {
    let scopes = m.get_current_scopes().await;
    Ok((m, SignedIn { issuer, scopes }))
}
