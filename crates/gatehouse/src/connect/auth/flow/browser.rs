//! The authorization-code grant, the one with a person: the client to sign in as (the
//! servers file's, a kept registration, a Client ID Metadata Document, a new
//! registration), S256 required, the authorization request shown to the person, the
//! redirect awaited and read, and the code exchanged for tokens (rmcp).

use rmcp::transport::auth::{
    AuthorizationManager, AuthorizationMetadata, AuthorizationRequest, AuthorizationSession,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{
    ServerAuth, SignInError, SignedIn, Start, blocking, explain, failed, record, signed_in,
};
use crate::{
    connect::auth::{
        redirect::{self, Callback, Listener},
        store::{ClientSource, Registration, now_secs},
    },
    person::{SignInAnswer, SignInRequest},
    text::visible_line,
    trace::Who,
};

/// The authorization-code grant: the client to sign in as, the person's part in a
/// browser, the redirect, and the code exchanged for tokens.
pub(super) async fn with_person(
    mut m: AuthorizationManager,
    start: Start<'_>,
) -> Result<(AuthorizationManager, SignedIn), SignInError> {
    let Start {
        auth,
        metadata,
        issuer,
        slot,
        scopes,
        ..
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
        None => crate::connect::auth::scopes::initial(&m, &auth.config.scopes).await,
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
            crate::connect::auth::scope_words(&scopes)
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
