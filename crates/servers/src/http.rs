//! Any reference server over Streamable HTTP, at [`MCP_PATH`]: `gatehouse serve NAME
//! --http 127.0.0.1:PORT --tokens FILE`.
//!
//! rmcp's `StreamableHttpService` speaks the protocol: clients on 2026-07-28 are served
//! statelessly, one POST per request, with `MCP-Protocol-Version`, `Mcp-Method` and
//! `Mcp-Name` checked against the body (400, -32020); older clients get a session after
//! `initialize` (`Mcp-Session-Id`, rmcp's `LocalSessionManager` inside our
//! [`sessions::BoundedSessions`]), so servers can still send them requests such as
//! `elicitation/create`. rmcp also checks `Host` (loopback names by default) and `Origin`
//! (this server's own loopback origins by default) against DNS rebinding, with 403.
//!
//! Around it, layers of ours:
//!
//! - **connections** ([`connections`]): our own accept loop serves at most
//!   `--max-connections` at once and closes a connection that keeps the server waiting
//!   (idle, headers too slow, answer unread); at the bound the longest-waiting connection
//!   makes room, so slow or idle sockets never starve other clients.
//! - **who is calling**: the bearer token is looked up in the tokens file
//!   ([`crate::auth`]), or with `--oauth-issuer` checked as the issuer's access token
//!   ([`crate::oauth`]: protected-resource metadata served beside the endpoint, 401 and 403
//!   challenges naming it and the scopes a request needs); a missing or unknown token gets
//!   401 with `WWW-Authenticate`. The
//!   token's caller is put in the HTTP request's extensions, which rmcp hands to the
//!   handler inside `http::request::Parts`, where [`Caller::of_request`] finds it. A legacy
//!   session belongs to the caller that opened it; another token cannot use it.
//! - **sessions** ([`sessions`]): an `initialize` opens a session only within
//!   `--max-sessions-per-caller` (429 past it) and `--max-sessions` (503), never pushing
//!   out a live one, and on the servers that check membership only for a member (403,
//!   -32003); a session unused for `--session-idle` ends and gives its place back.
//! - **the body**: an authenticated POST's body is read here, whole, within
//!   `--body-timeout` (408 after) and [`MAX_REQUEST_BODY_BYTES`] (413 beyond, whether it
//!   declares its length or comes chunked), before rmcp parses it.
//! - **how long, and shutting down**: a POST may take [`REQUEST_TIMEOUT`], answer
//!   included; SIGTERM or Ctrl-C stops accepting connections, lets the POSTs in flight
//!   finish for up to [`SHUTDOWN_DRAIN`] (a second signal cuts that short), then closes
//!   what is left (sessions' notification streams) and returns.

use std::{
    net::SocketAddr,
    path::PathBuf,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use axum::{
    Router,
    body::{Body, Bytes, HttpBody},
    extract::{Request, State},
    http::{HeaderValue, Method, StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
};
use futures::{Stream, StreamExt};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::{
    auth::{self, Tokens},
    common::{self, Caller},
    membership::{self, Memberships},
    oauth::{self, OAuthOptions, Refusal as TokenRefusal, ResourceServer},
};

pub mod answers;
pub mod connections;
pub mod sessions;
pub mod shared;
pub mod task_route;

use connections::{Connections, ThrottledLog};
use sessions::{BoundedSessions, Refused, SessionLimits, Sessions};
use shared::{RowStore, Shared, SharedSessions};

/// Where the MCP endpoint is served.
pub const MCP_PATH: &str = "/mcp";
/// The largest request body accepted (413 beyond it). MCP requests are small; tool
/// arguments that need more are better sent as resources.
pub const MAX_REQUEST_BODY_BYTES: usize = 1024 * 1024;
/// The deepest nesting of arrays and objects a request body may have (400 beyond it):
/// below serde_json's own limit of 128, so whatever passes here rmcp can parse.
pub const MAX_JSON_DEPTH: usize = 100;
/// The longest one POST may take, its streamed answer included: room for long calls that
/// report progress (the testbed's longest `sleep` is 600 s). When it runs out the answer
/// stream ends and the call is cancelled.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(11 * 60);
/// On SIGTERM or Ctrl-C, how long the requests in flight get to finish before they are cut.
pub const SHUTDOWN_DRAIN: Duration = Duration::from_secs(30);
/// After the drain, how long the remaining connections get to close.
pub const SHUTDOWN_CLOSE: Duration = Duration::from_secs(2);
/// The realm named in `WWW-Authenticate`.
pub const AUTH_REALM: &str = "gatehouse";
/// The JSON-RPC error code of a refused `initialize` when a session bound is reached (429
/// for the caller's, 503 for the server's); `data.reason` says which.
pub const SESSION_LIMIT_CODE: i32 = -32004;
/// The session header of the legacy (handshake) revisions.
const SESSION_HEADER: &str = "mcp-session-id";

/// The bounds of an HTTP server, each with a flag of `gatehouse serve` (checked there).
#[derive(Debug, Clone)]
pub struct HttpLimits {
    /// `--max-connections`: most connections open at once; `None` means
    /// [`connections::DEFAULT_MAX_CONNECTIONS`], or fewer if the open-file limit says so.
    pub max_connections: Option<usize>,
    /// `--header-timeout`: how long a request's headers may take from their first byte.
    pub header_timeout: Duration,
    /// `--body-timeout`: how long a request's body may take after its headers.
    pub body_timeout: Duration,
    /// `--idle-timeout`: how long a connection may wait for a request, or leave its
    /// answer unread.
    pub idle_timeout: Duration,
    /// `--max-sessions`, `--max-sessions-per-caller`, `--session-idle`: legacy sessions.
    pub sessions: SessionLimits,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_connections: None,
            header_timeout: connections::HEADER_TIMEOUT,
            body_timeout: connections::BODY_TIMEOUT,
            idle_timeout: connections::IDLE_TIMEOUT,
            sessions: SessionLimits::default(),
        }
    }
}

/// Who may open a legacy session, beyond holding a valid token.
#[derive(Debug, Clone, Copy)]
pub enum SessionAccess {
    /// Any caller: servers that check no membership (cmdb, orders, testbed).
    AnyCaller,
    /// Only a member of the organization it acts in: servers that check membership on
    /// every call (support, tickets). A session would be of no use to anyone else, and
    /// costs memory; they get 403 with JSON-RPC -32003 instead.
    Members(&'static Memberships),
}

/// How `gatehouse serve NAME --http ADDR` was asked to serve.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen; port 0 picks a free one (printed on stderr).
    pub addr: SocketAddr,
    /// The tokens file (`--tokens`).
    pub tokens: Option<PathBuf>,
    /// `--no-auth`: every request acts as the caller in the environment. For local tests
    /// only; refused unless `addr` is a loopback address.
    pub no_auth: bool,
    /// Browser origins allowed to call (`--allowed-origin`); empty means this server's own
    /// loopback origins (`http://127.0.0.1:PORT`, `http://localhost:PORT`, `http://[::1]:PORT`).
    pub allowed_origins: Vec<String>,
    /// `Host` values accepted (`--allowed-host`); empty means loopback names only.
    pub allowed_hosts: Vec<String>,
    /// `--oauth-issuer` (and its companions): access tokens from that authorization server.
    pub oauth: Option<OAuthOptions>,
    /// Connections, times and sessions.
    pub limits: HttpLimits,
}

/// How requests are authenticated.
#[derive(Debug, Clone)]
pub enum Auth {
    /// Bearer tokens from a tokens file.
    Tokens(Arc<Tokens>),
    /// Access tokens from an authorization server (checked once the server knows the
    /// address it listens on), and the tokens file's tokens besides, if one is given.
    OAuth(OAuthOptions, Option<Arc<Tokens>>),
    /// None: every request acts as the server's default caller (local testing only).
    Off,
}

impl Auth {
    /// Decide from the options, before any server is built: tokens if given, no
    /// authentication only when asked for explicitly and on loopback.
    pub fn from_options(options: &HttpOptions) -> anyhow::Result<Self> {
        if let Some(oauth) = &options.oauth {
            anyhow::ensure!(
                !options.no_auth,
                "--oauth-issuer and --no-auth exclude each other"
            );
            let tokens = match &options.tokens {
                Some(path) => Some(Arc::new(Tokens::load(path)?)),
                None => None,
            };
            return Ok(Auth::OAuth(oauth.clone(), tokens));
        }
        match (&options.tokens, options.no_auth) {
            (Some(_), true) => anyhow::bail!("--tokens and --no-auth exclude each other"),
            (Some(path), false) => Ok(Auth::Tokens(Arc::new(Tokens::load(path)?))),
            (None, true) => {
                anyhow::ensure!(
                    options.addr.ip().is_loopback(),
                    "--no-auth is for local testing only: listen on a loopback address (127.0.0.1 or ::1), not {}",
                    options.addr.ip()
                );
                Ok(Auth::Off)
            }
            (None, false) => anyhow::bail!(
                "serving over HTTP needs --tokens FILE (bearer tokens; see docs/scaling.md) or \
                 --oauth-issuer URL (access tokens from an authorization server; docs/oauth.md), \
                 or --no-auth for local testing only"
            ),
        }
    }

    /// The caller a server falls back to for requests the HTTP layer named no caller for.
    pub fn default_caller(&self) -> Caller {
        match self {
            // Every request is authenticated; an unattributed one acts as nobody.
            Auth::Tokens(_) | Auth::OAuth(..) => Caller::nobody(auth::DEFAULT_HTTP_CLIENT),
            Auth::Off => Caller::from_env(),
        }
    }
}

/// The origins a browser page may call from when none are configured: this server's own.
fn default_origins(addr: SocketAddr) -> Vec<String> {
    let port = addr.port();
    let mut origins = vec![
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
        format!("http://[::1]:{port}"),
    ];
    if !addr.ip().is_loopback() && !addr.ip().is_unspecified() {
        origins.push(format!("http://{addr}"));
    }
    origins
}

/// Serve `server` over Streamable HTTP until SIGTERM or Ctrl-C, then drain and return.
/// `access` says who may open a legacy session.
pub async fn serve<S>(
    server: S,
    auth: Auth,
    access: SessionAccess,
    options: &HttpOptions,
) -> anyhow::Result<()>
where
    S: rmcp::ServerHandler + Clone + Send + Sync + 'static,
{
    serve_with(server, auth, access, options, |_| Ok(Router::new())).await
}

/// [`serve`], with pages served beside the MCP endpoint: outside its bearer-token
/// check (they authenticate people their own way, e.g. the gateway's approval page),
/// inside the connection bounds and the drain on shutdown. `pages` makes them once the
/// access-token checks exist (with `--oauth-issuer`), so that they check a token the
/// same way; an error there stops the server before it serves.
pub async fn serve_with<S, P>(
    server: S,
    auth: Auth,
    access: SessionAccess,
    options: &HttpOptions,
    pages: P,
) -> anyhow::Result<()>
where
    S: rmcp::ServerHandler + Clone + Send + Sync + 'static,
    P: FnOnce(Option<Arc<ResourceServer>>) -> anyhow::Result<Router>,
{
    serve_sharing(server, auth, access, options, pages, None).await
}

/// [`serve_with`], with legacy sessions kept in `shared` when given, so that replicas
/// behind a balancer serve each other's sessions ([`shared`], [`answers`]).
pub async fn serve_sharing<S, P>(
    server: S,
    auth: Auth,
    access: SessionAccess,
    options: &HttpOptions,
    pages: P,
    shared: Option<Arc<dyn SharedSessions>>,
) -> anyhow::Result<()>
where
    S: rmcp::ServerHandler + Clone + Send + Sync + 'static,
    P: FnOnce(Option<Arc<ResourceServer>>) -> anyhow::Result<Router>,
{
    let limits = &options.limits;
    let max_connections =
        connections::max_connections(limits.max_connections, connections::open_file_limit())?;
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", options.addr))?;
    let local = listener.local_addr()?;

    let closing = CancellationToken::new();
    let mut config = http_config(options, local, &closing);
    // Without authentication every request is the same caller: only the server's bound
    // means anything then.
    let sessions = Sessions::new(limits.sessions, !matches!(auth, Auth::Off));
    let shared = shared.map(|book| Shared::new(book, limits.sessions.idle));
    if let Some(shared) = &shared {
        config.session_store = Some(Arc::new(RowStore(shared.clone())));
    }
    let manager = Arc::new(BoundedSessions::new(sessions.clone(), shared.clone()));
    let oauth = match &auth {
        Auth::OAuth(options, _) => Some(Arc::new(
            ResourceServer::start(options, local, Memberships::embedded()?).await?,
        )),
        _ => None,
    };
    let read_only = read_only_of(server.clone());
    let service = StreamableHttpService::new(move || Ok(server.clone()), manager.clone(), config);

    let tracker = Arc::new(Tracker::default());
    let gate_sessions = sessions.clone();
    let door = Arc::new(Doorway {
        caller: auth.default_caller(),
        auth: auth.clone(),
        access,
        body_timeout: limits.body_timeout,
        sessions,
        manager,
        shared,
        log: ThrottledLog::default(),
        oauth: oauth.clone(),
        read_only,
    });
    let mut app = Router::new()
        .route_service(MCP_PATH, service)
        .layer(middleware::from_fn_with_state(door, authenticate))
        .merge(pages(oauth.clone())?)
        .layer(middleware::from_fn_with_state(tracker.clone(), bound));
    if let Some(rs) = &oauth {
        app = with_metadata(app, rs);
    }

    say_the_door(&auth, oauth.as_deref(), options, max_connections);
    // Signals are ours before anyone learns the address, so a SIGTERM is always graceful.
    let mut signals = Signals::new()?;
    eprintln!("listening on http://{local}{MCP_PATH}");

    let stop_accepting = CancellationToken::new();
    let connections = Arc::new(Connections::new(
        max_connections,
        connections::Timeouts {
            header: limits.header_timeout,
            idle: limits.idle_timeout,
        },
    ));
    tokio::spawn(gate_sessions.clone().give_memory_back());
    let accepting = tokio::spawn(connections::accept(
        listener,
        app,
        connections.clone(),
        stop_accepting.clone(),
    ));
    signals.next().await;

    shut_down(Shutdown {
        tracker,
        sessions: gate_sessions,
        stop_accepting,
        accepting,
        signals,
        closing,
        connections,
    })
    .await;
    eprintln!("stopped");
    Ok(())
}

/// rmcp's configuration of the endpoint: JSON answers, bounded bodies, the origins
/// and hosts allowed (by default the listening address's own).
fn http_config(
    options: &HttpOptions,
    local: std::net::SocketAddr,
    closing: &CancellationToken,
) -> StreamableHttpServerConfig {
    let origins = if options.allowed_origins.is_empty() {
        default_origins(local)
    } else {
        options.allowed_origins.clone()
    };
    let mut config = StreamableHttpServerConfig::default()
        .with_json_response(true)
        .with_max_request_body_bytes(MAX_REQUEST_BODY_BYTES)
        .with_cancellation_token(closing.clone())
        .with_allowed_origins(origins);
    if !options.allowed_hosts.is_empty() {
        config = config.with_allowed_hosts(options.allowed_hosts.clone());
    }
    config
}

/// What the server says of each tool's `readOnlyHint`, for the OAuth scope check.
fn read_only_of<S: rmcp::ServerHandler + Send + Sync + 'static>(server: S) -> ReadOnly {
    Arc::new(move |tool: &str| {
        server
            .get_tool(tool)
            .and_then(|t| t.annotations.and_then(|a| a.read_only_hint))
    })
}

/// What the server says of its door at start: how callers are checked, and its bounds.
fn say_the_door(
    auth: &Auth,
    oauth: Option<&ResourceServer>,
    options: &HttpOptions,
    max_connections: usize,
) {
    let limits = &options.limits;
    match auth {
        Auth::Tokens(tokens) => eprintln!(
            "authentication: bearer tokens ({} in {})",
            tokens.len(),
            options
                .tokens
                .as_ref()
                .map_or_else(String::new, |p| p.display().to_string())
        ),
        Auth::OAuth(_, tokens) => {
            if let Some(rs) = oauth {
                eprintln!(
                    "authentication: OAuth access tokens from {} for {} (metadata at {}){}",
                    rs.issuer(),
                    rs.resource(),
                    rs.metadata_path(),
                    tokens.as_ref().map_or_else(String::new, |t| format!(
                        ", and {} bearer token(s) from the tokens file",
                        t.len()
                    ))
                );
            }
        }
        Auth::Off => eprintln!(
            "authentication: NONE (--no-auth, for local testing only): every request acts as {}/{}",
            std::env::var(common::ENV_USER).unwrap_or_default(),
            std::env::var(common::ENV_TENANT).unwrap_or_default()
        ),
    }
    eprintln!(
        "bounds: {max_connections} connections; headers {} s, bodies {} s, idle {} s; \
         legacy sessions {} in all, {} per caller, ended after {} s unused",
        limits.header_timeout.as_secs(),
        limits.body_timeout.as_secs(),
        limits.idle_timeout.as_secs(),
        limits.sessions.total,
        limits.sessions.per_caller,
        limits.sessions.idle.as_secs(),
    );
}

/// `app` with the protected-resource metadata document at its path.
fn with_metadata(app: Router, rs: &ResourceServer) -> Router {
    // Outside the authentication layer: metadata is for clients that have no token yet.
    let document = rs.metadata_document().to_string();
    app.route(
        rs.metadata_path(),
        axum::routing::get(move || async move {
            (
                [
                    (header::CONTENT_TYPE, "application/json"),
                    (header::CACHE_CONTROL, "max-age=300"),
                ],
                document,
            )
        }),
    )
}

/// What a graceful stop needs of a running server.
struct Shutdown {
    tracker: Arc<Tracker>,
    sessions: Arc<Sessions>,
    stop_accepting: CancellationToken,
    accepting: tokio::task::JoinHandle<()>,
    signals: Signals,
    closing: CancellationToken,
    connections: Arc<Connections>,
}

/// After the first signal: stop accepting, let requests in flight finish within
/// [`SHUTDOWN_DRAIN`] (a second signal cuts them), then end sessions and connections.
async fn shut_down(stop: Shutdown) {
    let Shutdown {
        tracker,
        sessions,
        stop_accepting,
        accepting,
        mut signals,
        closing,
        connections,
    } = stop;
    let in_flight = tracker.count();
    eprintln!(
        "shutting down: no new connections; {in_flight} request(s) in flight get up to {} s to finish",
        SHUTDOWN_DRAIN.as_secs()
    );
    let open = sessions.count();
    if open > 0 {
        eprintln!("shutting down: {open} legacy session(s) end after that");
    }
    // The listener is closed once the loop has seen this; connections finish their
    // request in flight, then close.
    stop_accepting.cancel();
    let _ = accepting.await;
    let mut counter = tracker.in_flight.subscribe();
    tokio::select! {
        drained = tokio::time::timeout(SHUTDOWN_DRAIN, counter.wait_for(|n| *n == 0)) => {
            if drained.is_err() {
                eprintln!("shutting down: cutting {} request(s) still running", tracker.count());
            }
        }
        _ = signals.next() => {
            eprintln!("shutting down now: cutting {} request(s) still running", tracker.count());
        }
    }
    // Ends sessions, their notification streams and any answer stream still open.
    closing.cancel();
    if tokio::time::timeout(SHUTDOWN_CLOSE, connections.closed())
        .await
        .is_err()
    {
        eprintln!(
            "shutting down: closing {} connection(s) still open",
            connections.open()
        );
    }
}

/// SIGTERM and Ctrl-C (SIGINT), as one stream of "stop" events.
struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> anyhow::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Signals {
                term: signal(SignalKind::terminate())?,
                interrupt: signal(SignalKind::interrupt())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    async fn next(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.interrupt.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}

// ---------------------------------------------------------------------------------------
// Request time and the count of requests in flight.
// ---------------------------------------------------------------------------------------

/// How many POSTs are in flight (their answer streams included).
#[derive(Default)]
struct Tracker {
    in_flight: watch::Sender<usize>,
}

impl Tracker {
    fn count(&self) -> usize {
        *self.in_flight.borrow()
    }

    fn enter(self: &Arc<Self>) -> InFlight {
        self.in_flight.send_modify(|n| *n += 1);
        InFlight(self.clone())
    }
}

/// One request in flight, until dropped.
struct InFlight(Arc<Tracker>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// An answer body that holds its request's place in flight until it ends.
struct Held<S> {
    inner: Pin<Box<S>>,
    _in_flight: InFlight,
}

impl<S: Stream> Stream for Held<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

/// Count every POST as in flight until its answer has been sent, and bound it by
/// [`REQUEST_TIMEOUT`]. GETs (a legacy session's notification stream) are neither counted
/// nor bounded: they end with their session, or at shutdown.
async fn bound(State(tracker): State<Arc<Tracker>>, request: Request, next: Next) -> Response {
    if request.method() == Method::DELETE {
        // Ending a legacy session has nothing to send back: 204, as the Python and
        // TypeScript SDKs answer (and their clients expect), rather than rmcp's 202.
        let mut response = next.run(request).await;
        if response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::NO_CONTENT;
            *response.body_mut() = axum::body::Body::empty();
        }
        return response;
    }
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let in_flight = tracker.enter();
    let deadline = tokio::time::Instant::now() + REQUEST_TIMEOUT;
    let Ok(response) = tokio::time::timeout_at(deadline, next.run(request)).await else {
        timed_out_log();
        return (
            StatusCode::GATEWAY_TIMEOUT,
            format!(
                "the request took longer than {} s and was stopped",
                REQUEST_TIMEOUT.as_secs()
            ),
        )
            .into_response();
    };
    // An answer already whole (plain JSON) is sent as it is; a stream (SSE) holds the
    // request in flight until it ends, and ends at the deadline.
    if response.body().size_hint().exact().is_some() {
        return response;
    }
    let (parts, body) = response.into_parts();
    let deadline = Box::pin(async move {
        tokio::time::sleep_until(deadline).await;
        timed_out_log();
    });
    let stream = body.into_data_stream().take_until(deadline);
    let held = Held {
        inner: Box::pin(stream),
        _in_flight: in_flight,
    };
    Response::from_parts(parts, Body::from_stream(held))
}

fn timed_out_log() {
    common::log_line(json!({
        "ts": common::timestamp(), "event": "http_request_timeout",
        "after_s": REQUEST_TIMEOUT.as_secs(),
    }));
}

// ---------------------------------------------------------------------------------------
// Who is calling.
// ---------------------------------------------------------------------------------------

/// The authentication layer's state: the tokens, how long a body may take, and the legacy
/// sessions with who may open one.
struct Doorway {
    auth: Auth,
    /// With `--oauth-issuer`: the checks of access tokens, once the issuer was read.
    oauth: Option<Arc<ResourceServer>>,
    /// Whether a tool is marked read-only (`None`: unknown), for the scopes it needs.
    read_only: ReadOnly,
    /// Who every request is without authentication (`--no-auth`).
    caller: Caller,
    access: SessionAccess,
    body_timeout: Duration,
    sessions: Arc<Sessions>,
    /// rmcp's session manager, to end a session here whose shared row is gone.
    manager: Arc<BoundedSessions>,
    /// The store legacy sessions are shared through, if any.
    shared: Option<Arc<Shared>>,
    log: ThrottledLog,
}

fn unauthorized(error: Option<&str>) -> Response {
    // RFC 6750 §3.1: no error code when the request carried no credentials at all.
    let challenge = match error {
        Some(e) => format!("Bearer realm=\"{AUTH_REALM}\", error=\"{e}\""),
        None => format!("Bearer realm=\"{AUTH_REALM}\""),
    };
    challenged(
        StatusCode::UNAUTHORIZED,
        "Unauthorized: send Authorization: Bearer <token>".into(),
        &challenge,
    )
}

/// A refusal with its `WWW-Authenticate` challenge.
fn challenged(status: StatusCode, body: String, challenge: &str) -> Response {
    let mut response = (status, body).into_response();
    if let Ok(value) = HeaderValue::from_str(challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

fn refused_log(reason: &str) {
    common::log_line(json!({
        "ts": common::timestamp(), "event": "http_unauthorized", "reason": reason,
    }));
}

fn session_not_found() -> Response {
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

impl Doorway {
    /// Admit an `initialize` from `caller`, or say why not: no membership where sessions
    /// need one, or a session bound reached.
    fn admit(&self, caller: &Caller) -> Result<sessions::Admission, NoSession> {
        if let SessionAccess::Members(members) = self.access
            && !members.is_member(caller)
        {
            return Err(NoSession::NotAMember);
        }
        self.sessions.reserve(caller).map_err(NoSession::Full)
    }

    /// The answer refusing an `initialize` (request `id`): 403 with -32003 for a caller
    /// with no membership, 429 at the caller's bound, 503 at the server's.
    fn refuse_session(&self, why: NoSession, id: &Value) -> Response {
        let (status, code, message, data, reason) = match why {
            NoSession::NotAMember => (
                StatusCode::FORBIDDEN,
                common::FORBIDDEN_CODE,
                membership::FORBIDDEN_MESSAGE.to_owned(),
                None,
                "not_a_member",
            ),
            NoSession::Full(Refused::CallerFull(limit)) => (
                StatusCode::TOO_MANY_REQUESTS,
                SESSION_LIMIT_CODE,
                format!(
                    "too many sessions: you already hold {limit}, the most one caller may; \
                     end one (DELETE) or use a 2026-07-28 client, which needs none"
                ),
                Some(json!({"reason": "caller_session_limit", "limit": limit})),
                "caller_limit",
            ),
            NoSession::Full(Refused::ServerFull(limit)) => (
                StatusCode::SERVICE_UNAVAILABLE,
                SESSION_LIMIT_CODE,
                format!(
                    "the server holds its most sessions ({limit}); try again later, or use \
                     a 2026-07-28 client, which needs none"
                ),
                Some(json!({"reason": "server_session_limit", "limit": limit})),
                "server_limit",
            ),
        };
        self.log.note("http_session_refused", reason, json!({}));
        jsonrpc_refusal(status, id, code, &message, data)
    }
}

/// Whether a tool of the server is marked read-only.
type ReadOnly = Arc<dyn Fn(&str) -> Option<bool> + Send + Sync>;

/// Why an `initialize` opens no session.
enum NoSession {
    NotAMember,
    Full(Refused),
}

/// An HTTP error whose body is a JSON-RPC error answering request `id`.
fn jsonrpc_refusal(
    status: StatusCode,
    id: &Value,
    code: i32,
    message: &str,
    data: Option<Value>,
) -> Response {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string(),
    )
        .into_response()
}

/// Who calls, by the request's token (and what an OAuth token grants), or the refusal.
async fn caller_and_grant(
    door: &Doorway,
    headers: &axum::http::HeaderMap,
) -> Result<(Caller, Option<oauth::Grant>), Response> {
    match &door.auth {
        Auth::Off => Ok((door.caller.clone(), None)),
        Auth::Tokens(tokens) => match caller_of(tokens, headers) {
            Ok(caller) => Ok((caller, None)),
            Err(refusal) => Err(refusal.response()),
        },
        Auth::OAuth(_, tokens) => {
            let presented = headers.get(header::AUTHORIZATION).cloned();
            oauth_caller(door, tokens.as_deref(), presented).await
        }
    }
}

/// The legacy session the request names, if any, kept to the caller that opened it (with
/// a shared store, its row vetted), or the 404 of an unknown session.
async fn session_of(
    door: &Doorway,
    headers: &axum::http::HeaderMap,
    caller: &Caller,
) -> Result<(Option<String>, Option<shared::Vetted>), Response> {
    let session = match headers.get(SESSION_HEADER).map(|v| v.to_str()) {
        None => None,
        Some(Ok(id)) => Some(id.to_owned()),
        Some(Err(_)) => return Err(session_not_found()),
    };
    let vetted = match (&session, &door.shared) {
        (Some(id), Some(shared)) => match shared.vet(id, caller, &door.manager).await {
            Ok(vetted) => Some(vetted),
            Err(refusal) => return Err(refusal),
        },
        (Some(id), None) if !door.sessions.may_use(id, caller) => return Err(session_not_found()),
        _ => None,
    };
    Ok((session, vetted))
}

/// A place among the sessions for a new session (`initialize`) or one this replica
/// restores from the shared store, each within the same bounds; none for the rest.
fn admission(
    door: &Doorway,
    caller: &Caller,
    initialize: bool,
    restoring: bool,
) -> Result<Option<sessions::Admission>, NoSession> {
    if initialize {
        door.admit(caller).map(Some)
    } else if restoring {
        door.sessions
            .reserve(caller)
            .map(Some)
            .map_err(NoSession::Full)
    } else {
        Ok(None)
    }
}

/// Check the bearer token, attach its caller to the request, keep legacy sessions to the
/// caller that opened them, read a POST's body within its bounds, and admit an
/// `initialize` (a new session) only within the session bounds. Bodies declared too large
/// are refused before reading, and nothing is read before the token is checked.
async fn authenticate(State(door): State<Arc<Doorway>>, request: Request, next: Next) -> Response {
    let started = tokio::time::Instant::now();
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let (caller, granted) = match caller_and_grant(&door, request.headers()).await {
        Ok(found) => found,
        Err(refusal) => return refusal,
    };
    if declared.is_some_and(|n| n > MAX_REQUEST_BODY_BYTES as u64) {
        return too_large();
    }
    let (session, vetted) = match session_of(&door, request.headers(), &caller).await {
        Ok(found) => found,
        Err(refusal) => return refusal,
    };
    let (mut request, message) = match read_post(request, started + door.body_timeout, &door).await
    {
        Ok(read) => read,
        Err(refusal) => return refusal,
    };
    if let (Some(shared), Some(vetted), Some(answer)) = (&door.shared, &vetted, &message)
        && let Some(id) = answer.answers()
        && !shared.awaits(&vetted.row.id, &id)
    {
        let row = &vetted.row;
        return answers::relay(shared, &row.id, &row.owner, id, &answer.body).await;
    }
    if let (Some(rs), Some(grant)) = (&door.oauth, &granted) {
        let method = message.as_ref().and_then(|m| m.method.as_deref());
        let tool = message
            .as_ref()
            .and_then(|m| m.params.as_ref()?.get("name")?.as_str());
        let needed = rs.required_scopes(method, tool.and_then(|t| (door.read_only)(t)));
        if !grant.missing(needed).is_empty() {
            return insufficient_scope(rs, grant, needed, tool);
        }
    }
    request.extensions_mut().insert(caller.clone());
    let id = message
        .as_ref()
        .and_then(|m| m.id.clone())
        .unwrap_or(Value::Null);
    let initialize = session.is_none()
        && message
            .as_ref()
            .is_some_and(|m| m.method.as_deref() == Some("initialize"));
    // A new session, or one of the shared store this replica will restore: each within
    // the same bounds. Ending a session restores nothing (rmcp ends the row alone).
    let ending = request.method() == Method::DELETE;
    let restore = vetted.filter(|v| !v.here && !ending).map(|v| v.row);
    let admission = match admission(&door, &caller, initialize, restore.is_some()) {
        Ok(admission) => admission,
        Err(why) => return door.refuse_session(why, &id),
    };
    if door.shared.is_none() {
        return sessions::with_admission(admission, next.run(request)).await;
    }
    let serving = sessions::with_admission(admission, next.run(request));
    let (response, served) = shared::with_request(caller, restore, serving).await;
    match served.opened {
        None | Some(Ok(true)) => response,
        // A session rmcp opened here but the store did not keep would be a session on
        // this replica alone: it is ended, and the initialize refused.
        Some(kept) => {
            if let Some(new) = response.headers().get(SESSION_HEADER)
                && let Ok(new) = new.to_str()
            {
                door.manager.end(new).await;
            }
            match kept {
                Ok(_) => door.refuse_session(
                    NoSession::Full(Refused::CallerFull(shared::MAX_SHARED_SESSIONS_PER_CALLER)),
                    &id,
                ),
                Err(e) => shared::unavailable(&e),
            }
        }
    }
}

/// Why a request gets 401: the reason logged, and the `error` its challenge names.
struct Unauthorized {
    reason: &'static str,
    error: Option<&'static str>,
}

impl Unauthorized {
    fn response(self) -> Response {
        refused_log(self.reason);
        unauthorized(self.error)
    }
}

/// The caller a request's bearer token stands for, or why it has none.
fn caller_of(tokens: &Tokens, headers: &axum::http::HeaderMap) -> Result<Caller, Unauthorized> {
    let refused = |reason, error| Unauthorized { reason, error };
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Err(refused("missing", None));
    };
    let Some(token) = value.to_str().ok().and_then(auth::bearer_token) else {
        return Err(refused("malformed", Some("invalid_token")));
    };
    tokens
        .caller_for(token)
        .ok_or_else(|| refused("unknown", Some("invalid_token")))
}

/// The caller and scopes of a request under `--oauth-issuer`: its access token checked, or
/// (a token that is no JWT, with a tokens file) the tokens file's caller, with every scope.
/// A refusal is a 401 whose challenge names this server's metadata and the scope to ask for.
async fn oauth_caller(
    door: &Doorway,
    tokens: Option<&Tokens>,
    presented: Option<HeaderValue>,
) -> Result<(Caller, Option<oauth::Grant>), Response> {
    let Some(rs) = &door.oauth else {
        return Err(unauthorized(Some("invalid_token")));
    };
    let challenge = |refusal: Option<TokenRefusal>, reason: &str| {
        refused_log(reason);
        let error = refusal.map(|r| ("invalid_token", r.description()));
        oauth_unauthorized(rs.challenge(error, rs.basic_scopes()))
    };
    let Some(value) = presented else {
        return Err(challenge(None, "missing"));
    };
    let Some(token) = value.to_str().ok().and_then(auth::bearer_token) else {
        return Err(challenge(Some(TokenRefusal::Malformed), "malformed"));
    };
    if let Some(tokens) = tokens
        && token.split('.').count() != 3
    {
        return match tokens.caller_for(token) {
            Some(caller) => Ok((caller, None)),
            None => Err(challenge(Some(TokenRefusal::Malformed), "unknown")),
        };
    }
    match rs.check(token).await {
        Ok(grant) => Ok((grant.caller.clone(), Some(grant))),
        Err(refusal) => Err(challenge(Some(refusal), refusal.word())),
    }
}

/// 401 with an OAuth challenge.
fn oauth_unauthorized(challenge: String) -> Response {
    challenged(
        StatusCode::UNAUTHORIZED,
        "Unauthorized: send Authorization: Bearer <access token>".into(),
        &challenge,
    )
}

/// 403 `insufficient_scope`, naming every scope the request needs in one challenge.
fn insufficient_scope(
    rs: &ResourceServer,
    grant: &oauth::Grant,
    needed: &[&str],
    tool: Option<&str>,
) -> Response {
    let missing = grant.missing(needed).join(" ");
    let description = match tool {
        Some(_) => format!("this tool needs {missing}"),
        None => format!("this request needs {missing}"),
    };
    common::log_line(json!({
        "ts": common::timestamp(), "event": "http_insufficient_scope",
        "user": grant.caller.user, "client": grant.caller.client, "missing": missing,
    }));
    let challenge = rs.challenge(Some(("insufficient_scope", &description)), needed);
    challenged(
        StatusCode::FORBIDDEN,
        format!("Forbidden: {description}"),
        &challenge,
    )
}

/// A POST with its body read whole (by `deadline`, at most [`MAX_REQUEST_BODY_BYTES`]),
/// checked to be JSON, and the message's id and method; other methods as they are (rmcp
/// reads no body for them).
async fn read_post(
    request: Request,
    deadline: tokio::time::Instant,
    door: &Doorway,
) -> Result<(Request, Option<Peek>), Response> {
    if request.method() != Method::POST {
        return Ok((request, None));
    }
    let (parts, body) = request.into_parts();
    let bytes = read_body(body, deadline).await.map_err(|refusal| {
        body_refused_log(refusal);
        match refusal {
            BodyRefusal::TooLarge => too_large(),
            BodyRefusal::TooSlow => too_slow(door.body_timeout),
            BodyRefusal::Broken => (
                StatusCode::BAD_REQUEST,
                [(header::CONNECTION, "close")],
                "Bad Request: the request body could not be read",
            )
                .into_response(),
        }
    })?;
    if nests_deeper_than(&bytes, MAX_JSON_DEPTH) {
        return Err(parse_error(format!(
            "the body nests deeper than {MAX_JSON_DEPTH} levels"
        )));
    }
    // The whole text is parsed (whatever is not the id or the method only checked), so
    // that malformed JSON is answered here; a message of another shape is rmcp's to judge.
    let message = match serde_json::from_slice::<Peek>(&bytes) {
        Ok(mut message) => {
            message.body = bytes.clone();
            Some(message)
        }
        Err(e) if e.is_data() => None,
        Err(e) => return Err(parse_error(e.to_string())),
    };
    let mut parts = parts;
    if let Some(m) = &message {
        task_route::fill_in(&mut parts.headers, m.method.as_deref(), m.params.as_ref());
    }
    Ok((Request::from_parts(parts, Body::from(bytes)), message))
}

/// What the HTTP layer reads of a JSON-RPC message: its id, its method, and its params
/// (the name in them is a tool call's tool, for the scopes it needs; [`task_route`] reads
/// the rest).
#[derive(Deserialize)]
struct Peek {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Value>,
    /// Present in an answer to a server's request.
    #[serde(default)]
    result: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
    /// The whole body, as read.
    #[serde(skip)]
    body: Bytes,
}

impl Peek {
    /// If the message answers a server's request: the id it answers, as JSON.
    fn answers(&self) -> Option<String> {
        let answer = self.method.is_none() && (self.result.is_some() || self.error.is_some());
        answer.then(|| self.id.as_ref().map(Value::to_string))?
    }
}

/// Whether JSON text opens more than `max` arrays or objects inside one another. One pass
/// over the bytes, nothing allocated; brackets inside strings do not count. Malformed text
/// is left to the parser.
fn nests_deeper_than(text: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in text {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// 400 with JSON-RPC's parse error, for a body that is not JSON at all or nests too deep:
/// a clearer answer than rmcp's 415, and nothing of the body is kept.
fn parse_error(why: String) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": null,
                      "error": {"code": -32700, "message": format!("Parse error: {why}")}});
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Why a body was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyRefusal {
    /// More than [`MAX_REQUEST_BODY_BYTES`], declared or not.
    TooLarge,
    /// Not all there by the deadline.
    TooSlow,
    /// The client broke it off or sent it malformed (a bad chunk, a short body).
    Broken,
}

/// Read a whole body, chunk by chunk, never holding more than [`MAX_REQUEST_BODY_BYTES`].
async fn read_body(body: Body, deadline: tokio::time::Instant) -> Result<Bytes, BodyRefusal> {
    let hint = usize::try_from(body.size_hint().lower()).unwrap_or(usize::MAX);
    let mut collected = Vec::with_capacity(hint.min(MAX_REQUEST_BODY_BYTES));
    let mut chunks = body.into_data_stream();
    loop {
        let next = tokio::time::timeout_at(deadline, chunks.next())
            .await
            .map_err(|_| BodyRefusal::TooSlow)?;
        match next {
            None => return Ok(Bytes::from(collected)),
            Some(Err(_)) => return Err(BodyRefusal::Broken),
            Some(Ok(chunk)) => {
                if chunk.len() > MAX_REQUEST_BODY_BYTES - collected.len() {
                    return Err(BodyRefusal::TooLarge);
                }
                collected.extend_from_slice(&chunk);
            }
        }
    }
}

fn body_refused_log(refusal: BodyRefusal) {
    common::log_line(json!({
        "ts": common::timestamp(), "event": "http_body_refused",
        "reason": match refusal {
            BodyRefusal::TooLarge => "too_large",
            BodyRefusal::TooSlow => "too_slow",
            BodyRefusal::Broken => "broken",
        },
    }));
}

fn too_large() -> Response {
    // The rest of the body is not read: the connection closes after the answer.
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        [(header::CONNECTION, "close")],
        format!("Payload Too Large: request body exceeds {MAX_REQUEST_BODY_BYTES} bytes"),
    )
        .into_response()
}

fn too_slow(limit: Duration) -> Response {
    (
        StatusCode::REQUEST_TIMEOUT,
        [(header::CONNECTION, "close")],
        format!(
            "Request Timeout: the request body took longer than {} s",
            limit.as_secs()
        ),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(addr: &str, tokens: Option<&str>, no_auth: bool) -> HttpOptions {
        HttpOptions {
            addr: addr.parse().unwrap(),
            tokens: tokens.map(PathBuf::from),
            no_auth,
            allowed_origins: vec![],
            allowed_hosts: vec![],
            oauth: None,
            limits: HttpLimits::default(),
        }
    }

    #[test]
    fn serving_without_tokens_needs_an_explicit_no_auth_on_loopback() {
        let err = Auth::from_options(&options("127.0.0.1:0", None, false)).unwrap_err();
        assert!(err.to_string().contains("--tokens FILE"), "{err}");
        assert!(matches!(
            Auth::from_options(&options("127.0.0.1:0", None, true)).unwrap(),
            Auth::Off
        ));
        assert!(Auth::from_options(&options("[::1]:0", None, true)).is_ok());
        let err = Auth::from_options(&options("0.0.0.0:8080", None, true)).unwrap_err();
        assert!(err.to_string().contains("loopback"), "{err}");
        assert!(Auth::from_options(&options("127.0.0.1:0", Some("/nonexistent"), false)).is_err());
    }

    #[test]
    fn nesting_is_counted_outside_strings_only() {
        assert!(!nests_deeper_than(br#"{"a":[1,{"b":[]}]}"#, 4));
        assert!(nests_deeper_than(br#"{"a":[1,{"b":[]}]}"#, 3));
        assert!(!nests_deeper_than(br#"{"a":"[[[[{{{{\"[[["}"#, 1));
        let deep = "[".repeat(100_000);
        assert!(nests_deeper_than(deep.as_bytes(), MAX_JSON_DEPTH));
        let fits = format!(
            "{}{}",
            "[".repeat(MAX_JSON_DEPTH),
            "]".repeat(MAX_JSON_DEPTH)
        );
        assert!(!nests_deeper_than(fits.as_bytes(), MAX_JSON_DEPTH));
        // What passes is what serde_json (and so rmcp) can parse.
        assert!(serde_json::from_str::<serde_json::Value>(&fits).is_ok());
    }

    #[test]
    fn an_answer_to_a_servers_request_is_told_from_requests_and_notifications() {
        let peek = |text: &str| serde_json::from_str::<Peek>(text).unwrap().answers();
        assert_eq!(
            peek(r#"{"jsonrpc":"2.0","id":"ab","result":{}}"#).as_deref(),
            Some("\"ab\"")
        );
        assert_eq!(
            peek(r#"{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"}}"#).as_deref(),
            Some("7")
        );
        assert_eq!(
            peek(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#),
            None
        );
        assert_eq!(
            peek(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            None
        );
        assert_eq!(peek(r#"{"jsonrpc":"2.0","result":{}}"#), None, "no id");
        assert_eq!(
            peek(r#"{"jsonrpc":"2.0","id":7}"#),
            None,
            "neither result nor error"
        );
    }

    #[test]
    fn default_origins_are_this_servers_own() {
        let o = default_origins("127.0.0.1:4123".parse().unwrap());
        assert!(o.contains(&"http://127.0.0.1:4123".to_owned()));
        assert!(o.contains(&"http://localhost:4123".to_owned()));
        assert!(o.iter().all(|o| o.ends_with(":4123")));
    }
}
