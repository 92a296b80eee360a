//! A server in the host's own process, reached over a pipe in memory instead of a child's
//! stdin and stdout: how the host's tests run their servers (`crate::testing`), through the
//! same handler, taps, revision agreement, restarts and close as a stdio server.
//!
//! The pipe's end is the server's end: when its side is dropped (the test "kills" it),
//! the run's [`Health`] ends, as a child's closed stdout ends it, and the connection
//! restarts it with the same backoff.

use std::sync::{Arc, atomic::AtomicBool};

use futures::future::BoxFuture;
use rmcp::{
    RoleClient,
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::{Transport, async_rw::AsyncRwTransport},
};
use tokio::io::{DuplexStream, ReadHalf, WriteHalf};

use super::{
    ConnectError, Connection, Health, Limits, Negotiation, Setup, restart, retry_with_initialize,
    session::Session,
};
use crate::{config::ServerSpec, person::Person, trace::Trace};

/// Opens a pipe to a fresh run of the server (the other end served by the test's server),
/// or says why it cannot.
pub type Opener = Arc<dyn Fn() -> BoxFuture<'static, Result<DuplexStream, String>> + Send + Sync>;

/// rmcp's transport over one end of the pipe, ending the run's [`Health`] when the other
/// end is gone.
struct Piped {
    inner: AsyncRwTransport<RoleClient, ReadHalf<DuplexStream>, WriteHalf<DuplexStream>>,
    health: Arc<Health>,
}

impl Transport<RoleClient> for Piped {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let received = self.inner.receive().await;
        if received.is_none() {
            self.health.end();
        }
        received
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

/// Connect to an in-process server as to a stdio one: `open` gives each run its pipe; a
/// run that ends is started again with the restart backoff until the connection closes.
pub async fn connect(
    spec: &ServerSpec,
    person: Arc<dyn Person>,
    trace: &Trace,
    limits: Limits,
    open: Opener,
) -> Result<Connection, ConnectError> {
    let setup = Setup::new(spec, person, trace, limits);
    let handler = setup.handler(Negotiation::PreferModern);
    let first = run_within(&setup, &open, Negotiation::PreferModern, &handler).await;
    let (session, negotiation, handler) = match first {
        Ok(session) => (session, Negotiation::PreferModern, handler),
        // A server of an older revision: a fresh pipe and the handshake, as for stdio.
        Err(Fail::Old) => {
            let handler = setup.handler(Negotiation::HandshakeOnly);
            let again = run_within(&setup, &open, Negotiation::HandshakeOnly, &handler).await;
            let session = again.map_err(|e| e.into_error(spec, limits))?;
            (session, Negotiation::HandshakeOnly, handler)
        }
        Err(e) => return Err(e.into_error(spec, limits)),
    };
    let conn = Connection::new(spec, handler.clone(), session);
    let (spec_again, trace_again, serving) = (spec.clone(), trace.clone(), handler.clone());
    let person = setup.person.clone();
    let start: restart::StartAgain = Box::new(move || {
        let parts = (spec_again.clone(), person.clone(), trace_again.clone());
        Box::pin(again(
            parts,
            limits,
            (open.clone(), negotiation),
            serving.clone(),
        ))
    });
    let restarter = restart::Restarter {
        name: spec.name.clone(),
        trace: trace.clone(),
        bounds: limits.restart,
        handler,
        start,
    };
    Ok(conn.supervised(restarter))
}

/// The server's next run, on the revision the first agreed on, within the start's limit.
async fn again(
    (spec, person, trace): (ServerSpec, Arc<dyn Person>, Trace),
    limits: Limits,
    (open, negotiation): (Opener, Negotiation),
    handler: super::HostHandler,
) -> Result<Session, String> {
    let setup = Setup::new(&spec, person, &trace, limits);
    run_within(&setup, &open, negotiation, &handler)
        .await
        .map_err(|e| e.into_error(&spec, limits).to_string())
}

/// Why one run did not start.
enum Fail {
    /// The pipe could not be opened.
    Open(String),
    /// The server speaks only older revisions: try the handshake.
    Old,
    /// The start-up exchange failed.
    Handshake(String),
    /// No answer within the start's limit.
    Timeout,
}

impl Fail {
    fn into_error(self, spec: &ServerSpec, limits: Limits) -> ConnectError {
        let server = spec.name.clone();
        match self {
            Fail::Timeout => ConnectError::Timeout {
                server,
                seconds: limits.timeout.as_secs_f64(),
                runner: None,
                stderr: Vec::new(),
            },
            Fail::Open(reason) => ConnectError::Spawn {
                server,
                command: "(in process)".into(),
                reason,
            },
            Fail::Old => ConnectError::Handshake {
                server,
                reason: "it speaks no revision the host speaks".into(),
                stderr: Vec::new(),
            },
            Fail::Handshake(reason) => ConnectError::Handshake {
                server,
                reason,
                stderr: Vec::new(),
            },
        }
    }
}

/// One run within the start's time limit (`limits.timeout`).
async fn run_within(
    setup: &Setup<'_>,
    open: &Opener,
    negotiation: Negotiation,
    handler: &super::HostHandler,
) -> Result<Session, Fail> {
    let timeout = setup.limits.timeout;
    tokio::time::timeout(timeout, run(setup, open, negotiation, handler))
        .await
        .unwrap_or(Err(Fail::Timeout))
}

/// One run: a pipe opened and a client served over it with `handler`.
async fn run(
    setup: &Setup<'_>,
    open: &Opener,
    negotiation: Negotiation,
    handler: &super::HostHandler,
) -> Result<Session, Fail> {
    let pipe = open().await.map_err(Fail::Open)?;
    let (read, write) = tokio::io::split(pipe);
    let health = Arc::new(Health::default());
    let transport = Piped {
        inner: AsyncRwTransport::new(read, write),
        health: health.clone(),
    };
    let late = Arc::new(AtomicBool::new(false));
    match setup
        .serve_with(transport, negotiation, handler, &late)
        .await
    {
        Ok(client) => Ok(Session::new(client, None, None, health)),
        Err(e) if negotiation == Negotiation::PreferModern && retry_with_initialize(&e) => {
            Err(Fail::Old)
        }
        Err(e) => Err(Fail::Handshake(e.to_string())),
    }
}
