//! Any reference server over Streamable HTTP, at [`MCP_PATH`]: `gatehouse serve NAME
//! --http 127.0.0.1:PORT --tokens FILE`.
//!
//! rmcp's `StreamableHttpService` speaks the protocol: clients on 2026-07-28 are served
//! statelessly, one POST per request, with `MCP-Protocol-Version`, `Mcp-Method` and
//! `Mcp-Name` checked against the body (400, -32020); older clients get a session after
//! `initialize` (`Mcp-Session-Id`, rmcp's `LocalSessionManager`), so servers can still send
//! them requests such as `elicitation/create`. rmcp also checks `Host` (loopback names by
//! default) and `Origin` (this server's own loopback origins by default) against DNS
//! rebinding, with 403, and bounds the body it reads ([`MAX_REQUEST_BODY_BYTES`], 413).
//!
//! Around it, two layers of ours:
//!
//! - **who is calling**: the bearer token is looked up in the tokens file
//!   ([`crate::auth`]); a missing or unknown token gets 401 with `WWW-Authenticate`. The
//!   token's caller is put in the HTTP request's extensions, which rmcp hands to the
//!   handler inside `http::request::Parts`, where [`Caller::of_request`] finds it. A legacy
//!   session belongs to the caller that opened it; another token cannot use it.
//! - **how long, and shutting down**: a POST may take [`REQUEST_TIMEOUT`], answer
//!   included; SIGTERM or Ctrl-C stops accepting connections, lets the POSTs in flight
//!   finish for up to [`SHUTDOWN_DRAIN`] (a second signal cuts that short), then closes
//!   what is left (sessions' notification streams) and returns.

use std::{
    collections::HashMap,
    net::SocketAddr,
    path::PathBuf,
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
    time::{Duration, Instant},
};

use axum::{
    Router,
    body::{Body, HttpBody},
    extract::{Request, State},
    http::{HeaderValue, Method, StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
};
use futures::{Stream, StreamExt};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use serde_json::json;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::{
    auth::{self, Tokens},
    common::{self, Caller},
};

/// Where the MCP endpoint is served.
pub const MCP_PATH: &str = "/mcp";
/// The largest request body accepted (413 beyond it). MCP requests are small; tool
/// arguments that need more are better sent as resources.
pub const MAX_REQUEST_BODY_BYTES: usize = 1024 * 1024;
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
/// A legacy session unused this long is forgotten by the owner check (rmcp closes idle
/// sessions after 5 minutes); a request naming it then gets 404 and starts a new one.
pub const SESSION_OWNER_IDLE: Duration = Duration::from_secs(60 * 60);
/// Most legacy sessions whose owners are remembered; the least recently used goes first.
pub const MAX_SESSION_OWNERS: usize = 10_000;
/// The session header of the legacy (handshake) revisions.
const SESSION_HEADER: &str = "mcp-session-id";

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
}

/// How requests are authenticated.
#[derive(Debug, Clone)]
pub enum Auth {
    /// Bearer tokens from a tokens file.
    Tokens(Arc<Tokens>),
    /// None: every request acts as the server's default caller (local testing only).
    Off,
}

impl Auth {
    /// Decide from the options, before any server is built: tokens if given, no
    /// authentication only when asked for explicitly and on loopback.
    pub fn from_options(options: &HttpOptions) -> anyhow::Result<Self> {
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
                "serving over HTTP needs --tokens FILE (bearer tokens; see docs/scaling.md), \
                 or --no-auth for local testing only"
            ),
        }
    }

    /// The caller a server falls back to for requests the HTTP layer named no caller for.
    pub fn default_caller(&self) -> Caller {
        match self {
            // Every request is authenticated; an unattributed one acts as nobody.
            Auth::Tokens(_) => Caller::nobody(auth::DEFAULT_HTTP_CLIENT),
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
pub async fn serve<S>(server: S, auth: Auth, options: &HttpOptions) -> anyhow::Result<()>
where
    S: rmcp::ServerHandler + Clone + Send + Sync + 'static,
{
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", options.addr))?;
    let local = listener.local_addr()?;

    let closing = CancellationToken::new();
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
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );

    let tracker = Arc::new(Tracker::default());
    let gate = Arc::new(Gate {
        auth: auth.clone(),
        owners: Mutex::new(HashMap::new()),
    });
    let app = Router::new()
        .route_service(MCP_PATH, service)
        .layer(middleware::from_fn_with_state(gate, authenticate))
        .layer(middleware::from_fn_with_state(tracker.clone(), bound));

    match &auth {
        Auth::Tokens(tokens) => eprintln!(
            "authentication: bearer tokens ({} in {})",
            tokens.len(),
            options
                .tokens
                .as_ref()
                .map_or_else(String::new, |p| p.display().to_string())
        ),
        Auth::Off => eprintln!(
            "authentication: NONE (--no-auth, for local testing only): every request acts as {}/{}",
            std::env::var(common::ENV_USER).unwrap_or_default(),
            std::env::var(common::ENV_TENANT).unwrap_or_default()
        ),
    }
    // Signals are ours before anyone learns the address, so a SIGTERM is always graceful.
    let mut signals = Signals::new()?;
    eprintln!("listening on http://{local}{MCP_PATH}");

    let stop_accepting = CancellationToken::new();
    let serving = axum::serve(listener, app)
        .with_graceful_shutdown(stop_accepting.clone().cancelled_owned())
        .into_future();
    let mut serving = tokio::spawn(serving);

    tokio::select! {
        ended = &mut serving => {
            // The server stopped by itself: an accept error it could not get past.
            return ended
                .map_err(|e| anyhow::anyhow!("the HTTP server failed: {e}"))?
                .map_err(|e| anyhow::anyhow!("the HTTP server failed: {e}"));
        }
        _ = signals.next() => {}
    }

    let in_flight = tracker.count();
    eprintln!(
        "shutting down: no new connections; {in_flight} request(s) in flight get up to {} s to finish",
        SHUTDOWN_DRAIN.as_secs()
    );
    stop_accepting.cancel();
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
    if tokio::time::timeout(SHUTDOWN_CLOSE, &mut serving)
        .await
        .is_err()
    {
        serving.abort();
    }
    eprintln!("stopped");
    Ok(())
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

/// The authentication layer's state: the tokens, and who opened each legacy session.
struct Gate {
    auth: Auth,
    owners: Mutex<HashMap<String, (Caller, Instant)>>,
}

fn unauthorized(error: Option<&str>) -> Response {
    // RFC 6750 §3.1: no error code when the request carried no credentials at all.
    let challenge = match error {
        Some(e) => format!("Bearer realm=\"{AUTH_REALM}\", error=\"{e}\""),
        None => format!("Bearer realm=\"{AUTH_REALM}\""),
    };
    let mut response = (
        StatusCode::UNAUTHORIZED,
        "Unauthorized: send Authorization: Bearer <token>",
    )
        .into_response();
    if let Ok(value) = HeaderValue::from_str(&challenge) {
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

impl Gate {
    /// Whether `caller` may use the legacy session `id`: only the caller that opened it.
    fn may_use(&self, id: &str, caller: &Caller) -> bool {
        let mut owners = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        match owners.get_mut(id) {
            Some((owner, seen))
                if owner.user == caller.user
                    && owner.tenant == caller.tenant
                    && seen.elapsed() < SESSION_OWNER_IDLE =>
            {
                *seen = Instant::now();
                true
            }
            _ => false,
        }
    }

    /// Remember that `caller` opened the session `id`.
    fn opened(&self, id: &str, caller: &Caller) {
        let mut owners = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        owners.retain(|_, (_, seen)| seen.elapsed() < SESSION_OWNER_IDLE);
        if owners.len() >= MAX_SESSION_OWNERS
            && let Some(oldest) = owners
                .iter()
                .min_by_key(|(_, (_, seen))| *seen)
                .map(|(k, _)| k.clone())
        {
            owners.remove(&oldest);
        }
        owners.insert(id.to_owned(), (caller.clone(), Instant::now()));
    }

    fn closed(&self, id: &str) {
        self.owners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }
}

/// Check the bearer token, attach its caller to the request, and keep legacy sessions to
/// the caller that opened them. Bodies declared too large are refused before reading.
async fn authenticate(State(gate): State<Arc<Gate>>, mut request: Request, next: Next) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let Auth::Tokens(tokens) = &gate.auth else {
        if declared.is_some_and(|n| n > MAX_REQUEST_BODY_BYTES as u64) {
            return too_large();
        }
        return next.run(request).await;
    };
    let caller = match request.headers().get(header::AUTHORIZATION) {
        None => {
            refused_log("missing");
            return unauthorized(None);
        }
        Some(value) => match value.to_str().ok().and_then(auth::bearer_token) {
            None => {
                refused_log("malformed");
                return unauthorized(Some("invalid_token"));
            }
            Some(token) => match tokens.caller_for(token) {
                None => {
                    refused_log("unknown");
                    return unauthorized(Some("invalid_token"));
                }
                Some(caller) => caller,
            },
        },
    };
    if declared.is_some_and(|n| n > MAX_REQUEST_BODY_BYTES as u64) {
        return too_large();
    }
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(id) = &session
        && !gate.may_use(id, &caller)
    {
        return session_not_found();
    }
    let deleting = request.method() == Method::DELETE;
    request.extensions_mut().insert(caller.clone());
    let response = next.run(request).await;
    match (&session, response.headers().get(SESSION_HEADER)) {
        (None, Some(opened)) => {
            if let Ok(id) = opened.to_str() {
                gate.opened(id, &caller);
            }
        }
        (Some(id), _) if deleting && response.status().is_success() => gate.closed(id),
        _ => {}
    }
    response
}

fn too_large() -> Response {
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("Payload Too Large: request body exceeds {MAX_REQUEST_BODY_BYTES} bytes"),
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
    fn default_origins_are_this_servers_own() {
        let o = default_origins("127.0.0.1:4123".parse().unwrap());
        assert!(o.contains(&"http://127.0.0.1:4123".to_owned()));
        assert!(o.contains(&"http://localhost:4123".to_owned()));
        assert!(o.iter().all(|o| o.ends_with(":4123")));
    }

    #[test]
    fn a_session_belongs_to_the_caller_that_opened_it() {
        let gate = Gate {
            auth: Auth::Off,
            owners: Mutex::new(HashMap::new()),
        };
        let sam = Caller {
            user: "usr-sam".into(),
            tenant: "larkfield".into(),
            client: "http".into(),
        };
        let omar = Caller {
            user: "usr-omar".into(),
            ..sam.clone()
        };
        gate.opened("s1", &sam);
        assert!(gate.may_use("s1", &sam));
        assert!(!gate.may_use("s1", &omar));
        assert!(!gate.may_use("s2", &sam));
        gate.closed("s1");
        assert!(!gate.may_use("s1", &sam));
    }
}
