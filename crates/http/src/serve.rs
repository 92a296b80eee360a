//! Serving one server: the listener, rmcp's endpoint inside our layers (the door, the
//! drain), pages beside it, and the graceful stop.

use std::sync::Arc;

use axum::{Router, http::header, middleware};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::{
    Auth, HttpOptions, MAX_REQUEST_BODY_BYTES, MCP_PATH, SessionAccess, caller,
    connections::{self, Connections},
    door::{Doorway, ReadOnly, authenticate},
    drain::{Shutdown, Signals, Tracker, bound, shut_down},
    log::ThrottledLog,
    oauth::ResourceServer,
    options::default_origins,
    sessions::{BoundedSessions, Sessions},
    shared::{RowStore, Shared, SharedSessions},
};

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
        Auth::OAuth {
            options, members, ..
        } => Some(Arc::new(
            ResourceServer::start(options, local, *members).await?,
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
        Auth::OAuth { tokens, .. } => {
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
            std::env::var(caller::ENV_USER).unwrap_or_default(),
            std::env::var(caller::ENV_TENANT).unwrap_or_default()
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
