//! Signing in to an HTTP server that answers 401, as the MCP authorization spec says
//! (2025-11-25 and 2026-07-28), and keeping the sign-in working across runs.
//!
//! rmcp's `auth` feature does the protocol: protected-resource metadata (RFC 9728) from
//! the challenge or the well-known paths, its `resource` checked against the server's URL;
//! authorization-server metadata (RFC 8414 and OpenID discovery, path insertion) with its
//! `issuer` checked; dynamic registration (RFC 7591); PKCE S256, `state` and `resource`
//! (RFC 8707) on the authorization, token and refresh requests; the `iss` of the
//! authorization response (RFC 9207); scope selection; `offline_access`; the token
//! endpoint's authentication as advertised; client credentials; the bearer token on every
//! request, refreshed ahead of expiry and once after a 401.
//!
//! Written here, because rmcp does not do it (each in its module):
//! - when to sign in and how often: a 401 signs in once per request, a 403
//!   `insufficient_scope` steps up at most [`MAX_STEP_UPS`] times and stops when the
//!   scopes asked for are granted already, and the request is sent again ([`client`]);
//!   the scopes asked for, first and on a step-up ([`scopes`]);
//! - refusing an authorization server that does not advertise S256, or a server with no
//!   metadata at all (rmcp only warns, or makes up endpoints) ([`flow`]);
//! - which client to sign in as: the servers file's, a kept registration, a Client ID
//!   Metadata Document, or a new registration kept per issuer ([`flow`]);
//! - the listener on 127.0.0.1, the pasted redirect, and the error, `state` and `iss` of
//!   the redirect read before anything acts on it ([`redirect`]);
//! - the store: per issuer and server URL, atomic, locked across processes, secrets in
//!   the keychain when one runs ([`store`], [`vault`]); a refusal of the refresh token
//!   (`invalid_grant`) drops the tokens (so the person signs in again), a network error
//!   or a 5xx keeps them;
//! - signing out, with the tokens revoked (RFC 7009) through the `oauth2` crate ([`revoke`]).
//!
//! Tokens, codes and secrets are never shown, logged or recorded: they live in the store
//! and in rmcp's manager, whose debug output hides them, and a code is added to the run's
//! secrets the moment it arrives.

pub mod account;
mod client;
pub mod dpop;
mod flow;
pub mod redirect;
pub mod revoke;
mod scopes;
pub mod store;
mod token_http;
pub mod vault;

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use rmcp::transport::auth::{AuthClient, WWWAuthenticateParams};
use serde_json::json;

pub use client::HostHttp;
pub use flow::{MAX_ASSERTION_BYTES, assertion_expiry, key_signs, read_assertion_file};
pub use store::{SignIn, Store};

use crate::{
    config::{CredentialStore, OAuthConfig, Settings},
    person::{Person, PersonTime},
    trace::{Trace, Who},
};

/// Most step-up sign-ins (a 403 `insufficient_scope` each) for one request.
pub const MAX_STEP_UPS: usize = 2;
/// After a failed sign-in, how long further 401s of the same server give the same failure
/// rather than asking the person again (a client retrying its start at once).
pub const FAILED_SIGN_IN_QUIET: Duration = Duration::from_secs(10);

/// What sign-ins may take and where they are kept, from the settings.
#[derive(Debug, Clone, Copy)]
pub struct SignInLimits {
    /// How long the person has to finish one.
    pub timeout: Duration,
    /// Where the secrets go.
    pub store: CredentialStore,
}

impl SignInLimits {
    /// The limits the settings give.
    pub fn from_settings(settings: &Settings) -> Self {
        SignInLimits {
            timeout: settings.sign_in_timeout,
            store: settings.credential_store,
        }
    }
}

impl Default for SignInLimits {
    fn default() -> Self {
        SignInLimits::from_settings(&Settings::default())
    }
}

/// Why a server could not be signed in to. The words name the cause; the server is named
/// by whoever reports it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignInError {
    /// The server needs a sign-in and nobody can sign in here (no terminal).
    #[error(
        "it needs a sign-in, and none can be done here (no terminal): run `gatehouse auth login {server}`"
    )]
    NeedsSignIn {
        /// The server's name.
        server: String,
    },
    /// The person cancelled it.
    #[error("the sign-in was cancelled")]
    Declined,
    /// The person did not finish in time.
    #[error("the sign-in did not finish within {seconds} s")]
    TimedOut {
        /// The limit.
        seconds: u64,
    },
    /// Anything else, in words.
    #[error("{0}")]
    Failed(String),
}

/// What a sign-in gave, for the person (never a token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedIn {
    /// The authorization server's issuer.
    pub issuer: String,
    /// The scopes granted.
    pub scopes: Vec<String>,
}

/// One server's sign-in: its settings, its store, rmcp's client with its manager, and the
/// person who signs in.
pub struct ServerAuth {
    server: String,
    url: String,
    config: OAuthConfig,
    store: Store,
    person: Arc<dyn Person>,
    trace: Trace,
    limits: SignInLimits,
    person_time: PersonTime,
    client: AuthClient<reqwest::Client>,
    /// One sign-in at a time for this server.
    signing: tokio::sync::Mutex<()>,
    /// Completed sign-ins so far: a request that failed before the latest one just retries.
    generation: AtomicU64,
    /// The last failure, its generation and when (see [`FAILED_SIGN_IN_QUIET`]).
    failed: Mutex<Option<(u64, Instant, SignInError)>>,
    /// The key the current sign-in's tokens are bound to (DPoP), if they are.
    dpop: Mutex<Option<Arc<dpop::DpopKey>>>,
}

/// The parts of a new [`ServerAuth`].
pub struct Parts<'a> {
    /// The server's name.
    pub server: &'a str,
    /// Its URL.
    pub url: &'a str,
    /// How to sign in to it.
    pub config: &'a OAuthConfig,
    /// Who signs in.
    pub person: Arc<dyn Person>,
    /// The run's trace.
    pub trace: &'a Trace,
    /// The limits and the store's place.
    pub limits: SignInLimits,
    /// The person's time, left out of the connection's limits.
    pub person_time: PersonTime,
}

impl ServerAuth {
    /// Set up the sign-in of one server, with what the store kept from an earlier run.
    pub async fn new(parts: Parts<'_>) -> Result<Arc<Self>, SignInError> {
        let dir = store::default_dir().ok_or_else(|| {
            SignInError::Failed(
                "no data folder to keep sign-ins in ($XDG_DATA_HOME and $HOME are unset)".into(),
            )
        })?;
        let store = Store::new(dir, vault::Vault::new(parts.limits.store));
        let (manager, dpop) = flow::restore(&store, parts.url, parts.config)
            .await
            .map_err(SignInError::Failed)?;
        Ok(Arc::new(ServerAuth {
            server: parts.server.to_owned(),
            url: parts.url.to_owned(),
            config: parts.config.clone(),
            store,
            person: parts.person,
            trace: parts.trace.clone(),
            limits: parts.limits,
            person_time: parts.person_time,
            client: AuthClient::new(client::mcp_http_client(), manager),
            signing: tokio::sync::Mutex::new(()),
            generation: AtomicU64::new(0),
            failed: Mutex::new(None),
            dpop: Mutex::new(dpop),
        }))
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The store the sign-ins are kept in.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The person's time spent signing in to this server.
    pub fn person_time(&self) -> &PersonTime {
        &self.person_time
    }

    pub(crate) fn client(&self) -> &AuthClient<reqwest::Client> {
        &self.client
    }

    /// The key the current sign-in's tokens are bound to, if they are (DPoP).
    pub(crate) fn dpop(&self) -> Option<Arc<dpop::DpopKey>> {
        self.dpop.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The key of the sign-in that just completed.
    fn set_dpop(&self, key: Option<Arc<dpop::DpopKey>>) {
        *self.dpop.lock().unwrap_or_else(|e| e.into_inner()) = key;
    }

    /// How many sign-ins have completed.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Sign in now, whatever is stored (`gatehouse auth login`), starting from
    /// `challenge` if there is one (else the server is asked for its metadata).
    pub async fn sign_in(&self, challenge: Option<&str>) -> Result<SignedIn, SignInError> {
        let _one = self.signing.lock().await;
        self.run_sign_in(challenge, None).await
    }

    async fn run_sign_in(
        &self,
        challenge: Option<&str>,
        scopes: Option<Vec<String>>,
    ) -> Result<SignedIn, SignInError> {
        let outcome = flow::authorize(self, challenge, scopes).await;
        match outcome {
            Ok((manager, signed_in)) => {
                *self.client.auth_manager.lock().await = manager;
                self.generation.fetch_add(1, Ordering::SeqCst);
                *self.failed.lock().unwrap_or_else(|e| e.into_inner()) = None;
                self.trace.add(
                    Who::Host,
                    format!(
                        "signed in to {} at {} ({})",
                        self.server,
                        signed_in.issuer,
                        scope_words(&signed_in.scopes)
                    ),
                    json!({"server": self.server, "issuer": signed_in.issuer, "scopes": signed_in.scopes}),
                );
                Ok(signed_in)
            }
            Err(e) => {
                self.trace.add(
                    Who::Host,
                    format!("sign-in to {} failed: {e}", self.server),
                    json!({"server": self.server, "error": e.to_string()}),
                );
                *self.failed.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some((self.generation(), Instant::now(), e.clone()));
                Err(e)
            }
        }
    }

    /// A request sent at generation `seen` got 401 (after rmcp's own refresh, if it had a
    /// token to refresh): sign in, unless another request did so meanwhile.
    pub(crate) async fn unauthorized(&self, seen: u64, challenge: &str) -> Result<(), SignInError> {
        let _one = self.signing.lock().await;
        if self.generation() != seen {
            return Ok(());
        }
        if let Some((generation, at, e)) = &*self.failed.lock().unwrap_or_else(|e| e.into_inner())
            && *generation == seen
            && at.elapsed() < FAILED_SIGN_IN_QUIET
        {
            return Err(e.clone());
        }
        self.run_sign_in(Some(challenge), None).await.map(|_| ())
    }

    /// A request sent at generation `seen` got 403 `insufficient_scope`: sign in again for
    /// the scopes granted and the ones asked for, unless those are granted already (then
    /// more sign-ins cannot help).
    pub(crate) async fn insufficient_scope(
        &self,
        seen: u64,
        challenge: &str,
    ) -> Result<(), SignInError> {
        let _one = self.signing.lock().await;
        if self.generation() != seen {
            return Ok(());
        }
        let base =
            reqwest::Url::parse(&self.url).map_err(|e| SignInError::Failed(e.to_string()))?;
        let asked: Vec<String> = WWWAuthenticateParams::parse(challenge, &base)
            .scope
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let granted = flow::granted_scopes(self).await;
        let union = scopes::step_up(&asked, granted, &self.config.scopes)?;
        self.trace.add(
            Who::Host,
            format!(
                "{} asks for more scope ({}): signing in again",
                self.server,
                scope_words(&asked)
            ),
            json!({"server": self.server, "scopes": union}),
        );
        self.run_sign_in(Some(challenge), Some(union))
            .await
            .map(|_| ())
    }
}

/// Scopes in words.
fn scope_words(scopes: &[String]) -> String {
    if scopes.is_empty() {
        "no scope named".into()
    } else {
        format!("scopes {}", scopes.join(" "))
    }
}

/// The sign-in's futures are `Send` for every lifetime of what they borrow: the CLI runs
/// them on a thread pool, and a future holding a borrow across an await (a closure's
/// future, say) fails that only where it is used. Checked when the tests are built.
#[cfg(test)]
#[allow(dead_code)]
mod send_check {
    use std::sync::Arc;

    use super::{SignInLimits, account};
    use crate::{config::ServerSpec, person::Person, trace::Trace};

    fn is_send<T: Send>(_: T) {}

    fn futures<'a>(
        auth: &'a super::ServerAuth,
        spec: &'a ServerSpec,
        person: Arc<dyn Person>,
        trace: &'a Trace,
    ) {
        is_send(auth.sign_in(None));
        is_send(auth.unauthorized(0, ""));
        is_send(auth.insufficient_scope(0, ""));
        is_send(account::login(spec, person, trace, SignInLimits::default()));
        is_send(account::logout(spec, SignInLimits::default()));
        is_send(account::status(
            std::slice::from_ref(spec),
            SignInLimits::default(),
        ));
    }
}
