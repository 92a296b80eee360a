//! One MCP client per configured server: start or reach it, agree on a protocol revision,
//! and keep the connection and what the server said about itself.
//!
//! The host prefers revision 2026-07-28 (`server/discover`, then self-contained requests)
//! and falls back to the `initialize` handshake of 2025-11-25 for older servers, including
//! the ones rmcp's own probe gives up on (a -32022 that lists only old revisions). A stdio
//! server slower than rmcp's 10 s wait for the probe, which answers it after rmcp sent
//! `initialize` and so refuses that, is started again with the probe alone.
//!
//! - [`handler`]: what the host tells a server, and where its questions go;
//! - [`wire`]: the taps on every message (recording, order, answers checked against requests);
//! - [`stdio`]: child processes, their environment, bounded reading, shutdown; `group`:
//!   each in a process group of its own, stopped gently, then killed;
//! - [`runner`]: servers started through a package runner (`npx`, `uvx`, …), which get a
//!   first start long enough for a download; [`last_words`]: what a failed start said;
//! - [`http`]: Streamable HTTP and why a connection failed;
//! - [`auth`]: signing in to an HTTP server that asks for it (OAuth), and keeping the
//!   sign-in working;
//! - `connection`: a [`Connection`] and the run of the server it talks to now;
//! - [`restart`]: a stdio server that dies started again, with backoff;
//! - [`late`]: in a gateway, a stdio server that failed its first start tried again;
//! - `in_process`: a server in the host's own process over a pipe in memory (tests);
//! - `error`: why a server could not be used ([`ConnectError`]).

pub mod auth;
mod connection;
mod error;
mod group;
pub mod handler;
mod http;
#[cfg(any(test, feature = "testing"))]
pub mod in_process;
pub mod last_words;
pub mod late;
pub mod lines;
pub mod restart;
pub mod runner;
pub mod sandbox;
mod session;
pub mod stdio;
pub mod wire;

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use rmcp::{
    ClientLifecycleMode, ClientServiceExt, RoleClient,
    model::ProtocolVersion,
    service::{ClientInitializeError, RunningService},
    transport::Transport,
};

pub use connection::{Connection, Network, Paged, ServerDown, server_down};
pub use error::ConnectError;
pub use group::STOP_GRACE;
pub use handler::{HostHandler, client_info};
pub use last_words::{LastWords, STDERR_TAIL_LINES};
pub use session::CLOSE_LIMIT;
use session::Session;
pub use stdio::{Health, MAX_MESSAGE_BYTES, STDERR_DRAIN};
pub use wire::{InOrder, Tap};

use crate::{
    config::{OAuthConfig, ServerSpec, Settings, Transport as ServerTransport},
    person::{Person, PersonTime},
    trace::{Trace, Who},
};

/// How a connection agrees on a revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Negotiation {
    /// 2026-07-28 first, the `initialize` handshake when the server is older.
    PreferModern,
    /// The `initialize` handshake only (2025-11-25), as a client of that era would.
    HandshakeOnly,
    /// `server/discover` only, waited for as long as the start may take: a server known
    /// to speak 2026-07-28 that was slower than rmcp's wait before it falls back.
    DiscoverOnly,
}

/// The bounds of one connection: its start, the questions a server may ask in a call,
/// and its sign-ins.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// How long the start may take (the person's time signing in left out).
    pub timeout: Duration,
    /// How long a stdio server started through a package runner ([`runner`]) may take
    /// to answer, when that is longer than `timeout`: a first start downloads it.
    pub first_start: Duration,
    /// Most questions a server may ask the person during one call (older revisions).
    pub max_questions: usize,
    /// How long a sign-in may take, and where sign-ins are kept.
    pub sign_in: auth::SignInLimits,
    /// The backoff of its restarts (and of a gateway's later tries at a first start).
    pub restart: crate::config::Restart,
}

impl Limits {
    /// The bounds the settings give.
    pub fn from_settings(settings: &Settings) -> Self {
        Limits {
            timeout: settings.connect_timeout,
            first_start: settings.first_start_timeout,
            max_questions: settings.max_input_rounds,
            sign_in: auth::SignInLimits::from_settings(settings),
            restart: settings.restart,
        }
    }
}

/// Start (or reach) one server and agree on a revision, within `limits.timeout`. Every
/// message and every question is recorded in `trace` from the first one on.
pub async fn connect(
    spec: &ServerSpec,
    person: Arc<dyn Person>,
    trace: &Trace,
    limits: Limits,
) -> Result<Connection, ConnectError> {
    connect_with(spec, person, trace, limits, Negotiation::PreferModern).await
}

/// As [`connect`], agreeing on a revision as `negotiation` says.
pub async fn connect_with(
    spec: &ServerSpec,
    person: Arc<dyn Person>,
    trace: &Trace,
    limits: Limits,
    negotiation: Negotiation,
) -> Result<Connection, ConnectError> {
    let setup = Setup::new(spec, person, trace, limits);
    match &spec.transport {
        ServerTransport::Stdio { .. } => setup.stdio(negotiation).await,
        ServerTransport::Http {
            url,
            headers,
            oauth,
        } => match oauth {
            None => setup.http(url, headers, negotiation).await,
            Some(oauth) => {
                setup
                    .http_signing_in(url, headers, oauth, negotiation)
                    .await
            }
        },
    }
}

/// What every attempt at one connection shares.
pub(crate) struct Setup<'a> {
    spec: &'a ServerSpec,
    person: Arc<dyn Person>,
    trace: &'a Trace,
    limits: Limits,
}

impl<'a> Setup<'a> {
    pub(crate) fn new(
        spec: &'a ServerSpec,
        person: Arc<dyn Person>,
        trace: &'a Trace,
        limits: Limits,
    ) -> Setup<'a> {
        Setup {
            spec,
            person,
            trace,
            limits,
        }
    }

    fn handler(&self, negotiation: Negotiation) -> HostHandler {
        let (name, person, trace) = (&self.spec.name, self.person.clone(), self.trace.clone());
        let max = self.limits.max_questions;
        match negotiation {
            Negotiation::PreferModern | Negotiation::DiscoverOnly => {
                HostHandler::new(name, person, trace, max)
            }
            Negotiation::HandshakeOnly => HostHandler::for_handshake(name, person, trace, max),
        }
    }

    /// Serve a client over `transport` with a new handler, tapped when the observer wants
    /// every message.
    async fn serve<T>(
        &self,
        transport: T,
        negotiation: Negotiation,
    ) -> Result<(RunningService<RoleClient, HostHandler>, HostHandler), ClientInitializeError>
    where
        T: Transport<RoleClient> + 'static,
    {
        let handler = self.handler(negotiation);
        let late = Arc::default();
        let client = self
            .serve_with(transport, negotiation, &handler, &late)
            .await?;
        Ok((client, handler))
    }

    /// Serve a client over `transport` with (a clone of) `handler`; `late_discover` is set
    /// when the server answered `server/discover` after rmcp had sent `initialize`.
    async fn serve_with<T>(
        &self,
        transport: T,
        negotiation: Negotiation,
        handler: &HostHandler,
        late_discover: &Arc<AtomicBool>,
    ) -> Result<RunningService<RoleClient, HostHandler>, ClientInitializeError>
    where
        T: Transport<RoleClient> + 'static,
    {
        let handler = handler.clone();
        let mode = match negotiation {
            Negotiation::PreferModern => ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: Some(ProtocolVersion::V_2025_11_25),
            },
            Negotiation::HandshakeOnly => ClientLifecycleMode::Initialize,
            Negotiation::DiscoverOnly => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        };
        let name = &self.spec.name;
        if self.trace.observer().wants_wire() {
            let tapped = InOrder::new(
                Tap::new(transport, name, self.trace),
                name,
                &handler,
                self.trace,
            )
            .noting_late_discover(late_discover);
            handler.serve_with_lifecycle(tapped, mode).await
        } else {
            let in_order = InOrder::new(transport, name, &handler, self.trace)
                .noting_late_discover(late_discover);
            handler.serve_with_lifecycle(in_order, mode).await
        }
    }

    async fn http(
        &self,
        url: &str,
        headers: &std::collections::BTreeMap<String, String>,
        negotiation: Negotiation,
    ) -> Result<Connection, ConnectError> {
        let fail = |reason: String| ConnectError::Http {
            server: self.spec.name.clone(),
            url: url.to_owned(),
            reason: self.trace.secrets().text(&reason).into_owned(),
        };
        let attempt = async {
            let transport = http::transport(url, headers).map_err(fail)?;
            match self.serve(transport, negotiation).await {
                Ok(client) => Ok(client),
                Err(e) if negotiation == Negotiation::PreferModern && retry_with_initialize(&e) => {
                    let transport = http::transport(url, headers).map_err(fail)?;
                    self.serve(transport, Negotiation::HandshakeOnly)
                        .await
                        .map_err(|e| fail(http::reason(&e)))
                }
                Err(e) => Err(fail(http::reason(&e))),
            }
        };
        let timeout = self.limits.timeout;
        let (client, handler) = match tokio::time::timeout(timeout, attempt).await {
            Ok(result) => result?,
            Err(_) => {
                return Err(fail(format!(
                    "no answer within {:.1} s",
                    timeout.as_secs_f64()
                )));
            }
        };
        let session = Session::new(client, None, None, Arc::default());
        Ok(Connection::new(self.spec, handler, session))
    }

    /// An HTTP server the host signs in to when it answers 401: rmcp's client with the
    /// sign-in around it ([`auth::HostHttp`]). The person's time signing in is left out of
    /// the start's time limit.
    async fn http_signing_in(
        &self,
        url: &str,
        headers: &std::collections::BTreeMap<String, String>,
        oauth: &OAuthConfig,
        negotiation: Negotiation,
    ) -> Result<Connection, ConnectError> {
        let person_time = PersonTime::default();
        let made = auth::ServerAuth::new(auth::Parts {
            server: &self.spec.name,
            url,
            config: oauth,
            person: self.person.clone(),
            trace: self.trace,
            limits: self.limits.sign_in,
            person_time: person_time.clone(),
        })
        .await;
        let server_auth = match made {
            Ok(a) => a,
            Err(e) => {
                self.trace.add(
                    Who::Host,
                    format!("{}: signing in is not possible: {e}", self.spec.name),
                    serde_json::json!({"server": self.spec.name, "error": e.to_string()}),
                );
                return self.http(url, headers, negotiation).await;
            }
        };
        let fail = |reason: String| ConnectError::Http {
            server: self.spec.name.clone(),
            url: url.to_owned(),
            reason: self.trace.secrets().text(&reason).into_owned(),
        };
        let client = auth::HostHttp::new(server_auth.clone());
        let attempt = async {
            let transport = http::signing_in(url, headers, client.clone()).map_err(fail)?;
            match self.serve(transport, negotiation).await {
                Ok(client) => Ok(client),
                Err(e) if negotiation == Negotiation::PreferModern && retry_with_initialize(&e) => {
                    let transport = http::signing_in(url, headers, client).map_err(fail)?;
                    self.serve(transport, Negotiation::HandshakeOnly)
                        .await
                        .map_err(|e| fail(http::reason(&e)))
                }
                Err(e) => Err(fail(http::reason(&e))),
            }
        };
        let timeout = self.limits.timeout;
        let (client, handler) = match person_time.within(timeout, attempt).await {
            Ok(result) => result?,
            Err(()) => {
                return Err(fail(format!(
                    "no answer within {:.1} s",
                    timeout.as_secs_f64()
                )));
            }
        };
        let session = Session::new(client, None, None, Arc::default());
        let mut conn = Connection::new(self.spec, handler, session);
        conn.person_time = person_time;
        conn.auth = Some(server_auth);
        Ok(conn)
    }

    /// A stdio server, restarted under its connection whenever it dies.
    async fn stdio(&self, negotiation: Negotiation) -> Result<Connection, ConnectError> {
        let handler = self.handler(negotiation);
        let (session, handler) = self.stdio_session(negotiation, &handler).await?;
        let conn = Connection::new(self.spec, handler.clone(), session);
        // A restart agrees on the revision this run agreed on, with the same handler.
        let negotiation = if conn.protocol.as_str() >= ProtocolVersion::V_2026_07_28.as_str() {
            Negotiation::PreferModern
        } else {
            Negotiation::HandshakeOnly
        };
        let restarter = restart::Restarter::stdio(
            self.spec.clone(),
            (self.person.clone(), self.trace.clone()),
            self.limits,
            negotiation,
            handler,
        );
        Ok(conn.supervised(restarter))
    }

    /// Start the server's process and agree on a revision, within `limits.timeout` (a
    /// package runner's start within `limits.first_start`, noted as it goes), served by
    /// `handler` (or, when a server answers the probe with only handshake-era revisions,
    /// by a handshake handler like it): the run, and the handler that serves it. A start
    /// that runs out of time has its processes stopped (SIGTERM, then SIGKILL) before the
    /// error is returned.
    pub(crate) async fn stdio_session(
        &self,
        negotiation: Negotiation,
        handler: &HostHandler,
    ) -> Result<(Session, HostHandler), ConnectError> {
        let tail = LastWords::default();
        let stoppers = std::sync::Mutex::new(Vec::new());
        let attempt = self.stdio_attempt(negotiation, handler, &tail, &stoppers);
        let runner = match &self.spec.transport {
            ServerTransport::Stdio { command, args, .. } => runner::package_runner(command, args),
            ServerTransport::Http { .. } => None,
        };
        let timeout = match runner {
            Some(_) => self.limits.timeout.max(self.limits.first_start),
            None => self.limits.timeout,
        };
        let attempt = tokio::time::timeout(timeout, attempt);
        let started = match &runner {
            Some(runner) => {
                let every = self.note_every();
                runner::noting_every(attempt, every, |so_far| {
                    self.note_still_starting(runner, so_far)
                })
                .await
            }
            None => attempt.await,
        };
        let Ok(result) = started else {
            let stoppers = std::mem::take(&mut *stoppers.lock().unwrap_or_else(|e| e.into_inner()));
            futures::future::join_all(stoppers.iter().map(group::Stopper::stop)).await;
            return Err(ConnectError::Timeout {
                server: self.spec.name.clone(),
                seconds: timeout.as_secs_f64(),
                runner: runner.map(|r| r.kind),
                stderr: tail.lines(),
            });
        };
        let (client, handler, pid, stderr_reader, health) = result?;
        let session = Session::new(client, pid, Some(stderr_reader), health);
        Ok((session, handler))
    }

    /// "still starting after 12 s (npx may be downloading PKG…)": a package runner's
    /// start, still waiting for its answer.
    fn note_still_starting(&self, runner: &runner::PackageRunner, so_far: Duration) {
        let package = runner.package.as_deref().unwrap_or("its package");
        let allowed = self.limits.timeout.max(self.limits.first_start);
        self.trace.add(
            Who::Host,
            format!(
                "{}: {}",
                self.spec.name,
                runner::still_starting(runner, so_far, allowed)
            ),
            serde_json::json!({"server": self.spec.name, runner::STILL_STARTING_KEY: package,
                "runner": runner.kind.as_str(), "seconds": so_far.as_secs()}),
        );
    }

    /// How often a package runner's start is noted ([`runner::NOTE_EVERY_ENV`]); a value
    /// that cannot be used is warned about and the default kept.
    fn note_every(&self) -> Duration {
        let set = std::env::var_os(runner::NOTE_EVERY_ENV);
        let set = set.as_ref().map(|v| v.to_string_lossy());
        runner::note_every(set.as_deref()).unwrap_or_else(|why| {
            self.trace
                .add(Who::Host, format!("warning: {why}"), serde_json::json!({}));
            runner::STILL_STARTING_NOTE_EVERY
        })
    }

    /// One start: the process, and the revision agreed (again with `initialize` and a
    /// fresh process when the server answers the probe with only older revisions). Each
    /// process's stopper is kept in `stoppers`.
    async fn stdio_attempt(
        &self,
        negotiation: Negotiation,
        handler: &HostHandler,
        tail: &LastWords,
        stoppers: &std::sync::Mutex<Vec<group::Stopper>>,
    ) -> Result<Started, ConnectError> {
        let spawn = |health: &Arc<Health>| {
            let spawned = stdio::spawn(self.spec, self.trace, tail, health)?;
            stoppers
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(spawned.stopper.clone());
            Ok::<_, ConnectError>(spawned)
        };
        let health = Arc::new(Health::default());
        let mut spawned = spawn(&health)?;
        let pid = spawned.transport.id();
        let late = Arc::new(AtomicBool::new(false));
        match self
            .serve_with(spawned.transport, negotiation, handler, &late)
            .await
        {
            Ok(client) => Ok((client, handler.clone(), pid, spawned.stderr_reader, health)),
            // Slower than rmcp's 10 s wait for `server/discover` (a first start through a
            // package runner, a loaded machine), the server answered it after rmcp had
            // sent `initialize`, which it then refused: it speaks 2026-07-28. Again with a
            // fresh process and the probe only, waited for as long as the start may take.
            Err(_) if negotiation == Negotiation::PreferModern && late.load(Ordering::SeqCst) => {
                self.trace.add(
                    Who::Host,
                    format!(
                        "{}: answered server/discover only after the handshake had been tried instead: started again with server/discover alone",
                        self.spec.name
                    ),
                    serde_json::json!({"server": self.spec.name, "negotiation": "discover_only"}),
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
                let health = Arc::new(Health::default());
                let mut spawned = spawn(&health)?;
                let pid = spawned.transport.id();
                match self
                    .serve_with(spawned.transport, Negotiation::DiscoverOnly, handler, &late)
                    .await
                {
                    Ok(client) => Ok((client, handler.clone(), pid, spawned.stderr_reader, health)),
                    Err(e) => Err(self.handshake_error(e, tail, spawned.stderr_reader).await),
                }
            }
            // The server answered the probe with only handshake-era revisions. rmcp
            // stops there; a host connects anyway, with a fresh process and `initialize`.
            Err(e) if negotiation == Negotiation::PreferModern && retry_with_initialize(&e) => {
                // Let the first process's stderr drain before it is replaced.
                tokio::time::sleep(Duration::from_millis(20)).await;
                let health = Arc::new(Health::default());
                let mut spawned = spawn(&health)?;
                let pid = spawned.transport.id();
                match self
                    .serve(spawned.transport, Negotiation::HandshakeOnly)
                    .await
                {
                    Ok((client, handler)) => {
                        Ok((client, handler, pid, spawned.stderr_reader, health))
                    }
                    Err(e) => Err(self.handshake_error(e, tail, spawned.stderr_reader).await),
                }
            }
            Err(e) => Err(self.handshake_error(e, tail, spawned.stderr_reader).await),
        }
    }

    async fn handshake_error(
        &self,
        e: ClientInitializeError,
        tail: &LastWords,
        stderr_reader: tokio::task::JoinHandle<()>,
    ) -> ConnectError {
        let gone = matches!(
            e,
            ClientInitializeError::ConnectionClosed(_)
                | ClientInitializeError::TransportError { .. }
        );
        if gone {
            // A server that exits usually says why first: read its stderr to the end (it
            // closes with the process), within STDERR_DRAIN should a child keep it open. A
            // fixed pause lost the reason on a loaded machine.
            let _ = tokio::time::timeout(STDERR_DRAIN, stderr_reader).await;
        } else {
            // The server is still there: what it said so far is nearly all read.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let reason = match e {
            // Either way the process is gone: it closed its stdout, or its stdin broke first.
            ClientInitializeError::ConnectionClosed(_)
            | ClientInitializeError::TransportError { .. } => {
                "the server exited (or closed its stdio) before it answered".to_string()
            }
            ClientInitializeError::JsonRpcError(err) => format!(
                "the server refused to start a session: {} {}",
                err.code.0, err.message
            ),
            ClientInitializeError::NoCompatibleProtocolVersion {
                server_supported, ..
            } => format!(
                "no protocol revision in common (the server speaks {})",
                server_supported
                    .iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            other => format!("the start-up exchange failed: {other}"),
        };
        ConnectError::Handshake {
            server: self.spec.name.clone(),
            reason: self.trace.secrets().text(&reason).into_owned(),
            stderr: tail.lines(),
        }
    }
}

/// A stdio server started: its client, the handler serving it, its pid, the task reading
/// its stderr, and its health.
type Started = (
    RunningService<RoleClient, HostHandler>,
    HostHandler,
    Option<u32>,
    tokio::task::JoinHandle<()>,
    Arc<Health>,
);

/// Errors after which a host connects again with the `initialize` handshake. rmcp's own
/// probe falls back on most legacy answers; these are the ones where it gives up but a
/// handshake-era server may still answer `initialize`: a -32022 that lists only old
/// revisions, and a discover answer that is not a discover result.
fn retry_with_initialize(e: &ClientInitializeError) -> bool {
    matches!(
        e,
        ClientInitializeError::NoCompatibleProtocolVersion { .. }
            | ClientInitializeError::ExpectedInitResult(_)
            | ClientInitializeError::ExpectedInitResponse(_)
    )
}

/// The host's words for a request that failed because a sign-in to its server failed.
pub fn sign_in_failure(e: &rmcp::ServiceError) -> Option<String> {
    http::sign_in_failure(e)
}
