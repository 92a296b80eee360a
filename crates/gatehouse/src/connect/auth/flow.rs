//! One sign-in, from a challenge to tokens in the store: discovery (rmcp), the checks rmcp
//! leaves out (metadata that exists, S256 advertised, the configured client's issuer), the
//! client to sign in as, the authorization request and the person's part, the redirect,
//! and the code exchanged for tokens (rmcp). Also the way back after a restart: a manager
//! set up from the store, with no request to anyone.

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest,
    AuthorizationSession, OAuthClientConfig,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

mod assertion;
mod machine;
pub use assertion::{MAX_ASSERTION_BYTES, assertion_expiry, read_assertion_file};
pub use machine::key_signs;
use machine::{client_credentials, client_credentials_config};

use super::{
    ServerAuth, SignInError, SignedIn,
    redirect::{self, Callback, Listener},
    store::{self, ClientSource, Registration, SignIn, Store, now_secs},
};
use crate::{
    config::{Grant, OAuthConfig},
    person::{SignInAnswer, SignInRequest},
    text::{clip, visible_line},
    trace::Who,
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

/// A manager for the server at `url`, with the address policy the entry asks for.
async fn manager(url: &str, config: &OAuthConfig) -> Result<AuthorizationManager, String> {
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
) -> Result<AuthorizationManager, String> {
    let mut m = manager(url, config).await?;
    let (s, u) = (store.clone(), url.to_owned());
    let Some(kept) = blocking(move || s.current(&u)).await? else {
        return Ok(m);
    };
    let other_client = config
        .client_id
        .as_ref()
        .is_some_and(|id| *id != kept.client_id)
        && kept.client_source != ClientSource::Registered;
    let other_issuer = config.issuer.as_ref().is_some_and(|i| *i != kept.issuer);
    if other_client || other_issuer {
        return Ok(m);
    }
    m.set_metadata(kept.metadata.clone());
    m.set_credential_store(store.slot(url, &kept.issuer));
    if matches!(
        kept.client_source,
        ClientSource::JwtBearer | ClientSource::EnterpriseManaged
    ) {
        assertion::configure(&mut m, &kept.client_id)?;
        return Ok(m);
    }
    if kept.client_source == ClientSource::ClientCredentials {
        if let Some(cc) = client_credentials_config(config, url, Vec::new()) {
            m.configure_client_credentials(&cc)
                .map_err(|e| explain(&e))?;
        }
        return Ok(m);
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
    Ok(m)
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
) -> Result<(AuthorizationManager, AuthorizationMetadata, String), SignInError> {
    let mut m = manager(&auth.url, &auth.config).await.map_err(failed)?;
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
    let (mut m, metadata, issuer) = discover(auth, challenge).await?;
    let slot = auth.store.slot(&auth.url, &issuer);
    m.set_credential_store(slot.clone());
    let start = Start {
        auth,
        metadata: &metadata,
        issuer,
        slot: &slot,
        scopes,
    };
    if auth.config.grant.needs_person() {
        with_person(m, start).await
    } else {
        without_person(m, start).await
    }
}

/// The authorization-code grant: the client to sign in as, the person's part in a
/// browser, the redirect, and the code exchanged for tokens.
async fn with_person(
    mut m: AuthorizationManager,
    start: Start<'_>,
) -> Result<(AuthorizationManager, SignedIn), SignInError> {
    let Start {
        auth,
        metadata,
        issuer,
        slot,
        scopes,
    } = start;
    require_s256(metadata, &issuer)?;
    let _busy = auth.person_time.busy();
    let finished = CancellationToken::new();
    let kept_port = previous_port(auth, &issuer).await;
    let listener = Listener::start(
        auth.config.redirect_port.or(kept_port),
        auth.config.redirect_port.is_some(),
        finished.clone(),
    )
    .await
    .map_err(failed)?;
    let redirect_uri = listener.redirect_uri.clone();
    let client = identity(auth, &mut m, metadata, &issuer, &redirect_uri).await?;
    let wanted = match scopes {
        Some(s) => s,
        None => super::scopes::initial(&m, &auth.config.scopes).await,
    };
    let mut request = AuthorizationRequest::new(&redirect_uri)
        .with_initial_scope_selection()
        .with_client_name(&auth.config.client_name)
        .with_preregistered_client(&client.id);
    if !wanted.is_empty() {
        request = request.with_scopes(wanted);
    }
    if let Some(secret) = &client.secret {
        request = request.with_client_secret(secret);
    }
    let session = AuthorizationSession::new(m, request)
        .await
        .map_err(|(_, e)| failed(explain(&e)))?;
    let url = session.get_authorization_url().to_owned();
    let state =
        redirect::state_of(&url).ok_or_else(|| failed("the authorization URL has no state"))?;
    slot.prepare(
        record(
            auth,
            metadata,
            &issuer,
            &client.id,
            client.source,
            &redirect_uri,
        ),
        client.registration.clone(),
    );
    let came_back = wait_for_redirect(auth, &url, &issuer, listener, finished).await?;
    let code = code_of(&came_back, &state, &issuer, metadata)?;
    auth.trace.secrets().add(&code.0);
    if let Err(e) = session
        .handle_callback_with_issuer(&code.0, &state, code.1.as_deref())
        .await
    {
        let words = explain(&e);
        if words.contains("invalid_client") && client.source == ClientSource::Registered {
            // The authorization server no longer knows the client it registered: forget it,
            // so the next sign-in registers again.
            let (s, i) = (auth.store.clone(), issuer.clone());
            let _ = blocking(move || s.forget_registration(&i)).await;
        }
        return Err(failed(words));
    }
    signed_in(session.auth_manager, issuer).await
}

/// Where a grant with no person starts: the server, its authorization server, where the
/// tokens go, and the scopes a step-up asks for (else the server's first choice).
pub(super) struct Start<'a> {
    auth: &'a ServerAuth,
    metadata: &'a AuthorizationMetadata,
    issuer: String,
    slot: &'a store::Slot,
    scopes: Option<Vec<String>>,
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
        Grant::EnterpriseManaged => assertion::enterprise_managed(m, start).await,
        Grant::AuthorizationCode => Err(failed("the authorization-code grant needs a person")),
    }
}

/// The code and `iss` of the address the browser came back to, checked against this
/// sign-in's `state` and the issuer (its `iss` required where the metadata promises one).
fn code_of(
    came_back: &str,
    state: &str,
    issuer: &str,
    metadata: &AuthorizationMetadata,
) -> Result<(String, Option<String>), SignInError> {
    let iss_required = metadata
        .additional_fields
        .get("authorization_response_iss_parameter_supported")
        == Some(&Value::Bool(true));
    match redirect::read(came_back, state, issuer, iss_required) {
        Err(e) => Err(failed(e.to_string())),
        Ok(Callback::Refused(words)) => Err(failed(format!(
            "the authorization server refused the sign-in: {words}"
        ))),
        Ok(Callback::Code { code, iss, .. }) => Ok((code, iss)),
    }
}

/// PKCE is a MUST: an authorization server that does not say it supports S256 is refused
/// (rmcp would go on without it).
fn require_s256(metadata: &AuthorizationMetadata, issuer: &str) -> Result<(), SignInError> {
    let s256 = metadata
        .code_challenge_methods_supported
        .iter()
        .flatten()
        .any(|m| m == "S256");
    if s256 {
        return Ok(());
    }
    Err(failed(format!(
        "the authorization server {} does not advertise PKCE with S256 (code_challenge_methods_supported), without which the MCP spec forbids signing in",
        visible_line(issuer)
    )))
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

/// The client a sign-in uses.
struct Client {
    id: String,
    secret: Option<String>,
    source: ClientSource,
    /// A registration made now, stored with the tokens.
    registration: Option<(Registration, Option<String>)>,
}

/// The port of the redirect URI used last time at `issuer`: an authorization server that
/// matches redirect URIs exactly then accepts it again.
async fn previous_port(auth: &ServerAuth, issuer: &str) -> Option<u16> {
    let (s, i) = (auth.store.clone(), issuer.to_owned());
    let kept = blocking(move || s.registration(&i)).await.ok().flatten()?;
    reqwest::Url::parse(&kept.0.redirect_uri).ok()?.port()
}

/// The client to sign in as, in the spec's order: the servers file's, the one registered
/// at this issuer before, a Client ID Metadata Document, a new registration.
async fn identity(
    auth: &ServerAuth,
    m: &mut AuthorizationManager,
    metadata: &AuthorizationMetadata,
    issuer: &str,
    redirect_uri: &str,
) -> Result<Client, SignInError> {
    let config = &auth.config;
    if let Some(id) = &config.client_id {
        return Ok(Client {
            id: id.clone(),
            secret: config.client_secret.clone(),
            source: ClientSource::Configured,
            registration: None,
        });
    }
    let (s, i) = (auth.store.clone(), issuer.to_owned());
    if let Some((kept, secret)) = blocking(move || s.registration(&i)).await.map_err(failed)? {
        return Ok(Client {
            id: kept.client_id,
            secret,
            source: ClientSource::Registered,
            registration: None,
        });
    }
    let cimd = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        == Some(&Value::Bool(true));
    if let (Some(url), true) = (&config.client_metadata_url, cimd) {
        return Ok(Client {
            id: url.clone(),
            secret: None,
            source: ClientSource::MetadataDocument,
            registration: None,
        });
    }
    if metadata.registration_endpoint.is_none() {
        return Err(failed(format!(
            "{} gives Gatehouse no way to get a client id (no registration endpoint{}): register a client there and put its \"clientId\" in the server's \"oauth\" entry",
            visible_line(issuer),
            if cimd {
                ", and no clientMetadataUrl is configured"
            } else {
                ", no client ID metadata documents"
            }
        )));
    }
    // No scope in the registration: an authorization server may hold the client to it,
    // and a step-up would then be refused.
    let made = m
        .register_client(&config.client_name, redirect_uri, &[])
        .await
        .map_err(|e| failed(explain(&e)))?;
    auth.trace.add(
        Who::Host,
        format!("registered Gatehouse at {issuer} for {}", auth.server),
        json!({"server": auth.server, "issuer": issuer}),
    );
    Ok(Client {
        id: made.client_id.clone(),
        secret: made.client_secret.clone(),
        source: ClientSource::Registered,
        registration: Some((
            Registration {
                client_id: made.client_id,
                redirect_uri: redirect_uri.to_owned(),
                registered_at: now_secs(),
                has_secret: made.client_secret.is_some(),
                in_keychain: false,
            },
            made.client_secret,
        )),
    })
}

/// Show the person the address and wait: for the browser to come back to the listener,
/// for the address they paste, or for the time limit.
async fn wait_for_redirect(
    auth: &ServerAuth,
    url: &str,
    issuer: &str,
    mut listener: Listener,
    finished: CancellationToken,
) -> Result<String, SignInError> {
    let scopes: Vec<String> = reqwest::Url::parse(url)
        .ok()
        .and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == "scope")
                .map(|(_, v)| v.split_whitespace().map(str::to_owned).collect())
        })
        .unwrap_or_default();
    auth.trace.add(
        Who::Host,
        format!(
            "{} needs a sign-in at {issuer} ({})",
            auth.server,
            super::scope_words(&scopes)
        ),
        json!({"server": auth.server, "issuer": issuer, "scopes": scopes}),
    );
    let request = SignInRequest {
        server: auth.server.clone(),
        issuer: issuer.to_owned(),
        scopes,
        url: url.to_owned(),
        finished: finished.clone(),
    };
    let limit = auth.limits.timeout;
    let timer = {
        let finished = finished.clone();
        tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            finished.cancel();
        })
    };
    let answer = tokio::select! {
        answer = auth.person.sign_in(&request) => answer,
        arrived = &mut listener.arrived => {
            timer.abort();
            finished.cancel();
            return arrived.map_err(|_| failed("the listener for the browser's redirect stopped"));
        }
    };
    timer.abort();
    match answer {
        SignInAnswer::Pasted(url) => Ok(url),
        SignInAnswer::Declined => Err(SignInError::Declined),
        SignInAnswer::Finished => listener
            .arrived
            .try_recv()
            .map_err(|_| SignInError::TimedOut {
                seconds: limit.as_secs(),
            }),
    }
}
