//! One MCP client per configured server: spawn it, agree on a protocol revision, and keep
//! the connection and what the server said about itself.
//!
//! The host prefers revision 2026-07-28 (`server/discover`, then self-contained requests)
//! and falls back to the `initialize` handshake of 2025-11-25 for older servers, including
//! the ones rmcp's own probe gives up on (a -32022 that lists only old revisions).

use std::{
    collections::VecDeque,
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, RoleClient,
    model::{
        ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationCapability,
        FormElicitationCapability, Implementation, ProgressNotificationParam, ProgressToken,
        ProtocolVersion, UrlElicitationCapability,
    },
    service::{ClientInitializeError, RequestContext, RunningService},
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::{
        StreamableHttpClientTransport, TokioChildProcess, Transport,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use tokio::{io::AsyncBufReadExt, sync::mpsc};

use crate::{
    config::{ServerSpec, Transport as ServerTransport},
    person::Person,
    trace::{Direction, Observer, WireEvent},
};

/// How long the host waits, at shutdown, for a server's last stderr lines.
pub const STDERR_DRAIN: Duration = Duration::from_secs(1);

/// How many of a server's last stderr lines are kept to explain a failed start.
pub const STDERR_TAIL_LINES: usize = 8;

/// The client side of one connection: what the host tells the server about itself, and
/// where a server's questions go (to the person, named with the asking server).
pub struct HostHandler {
    server: String,
    person: Arc<dyn Person>,
    /// Where progress notifications go while a call is in flight (routed by
    /// [`InOrder`]). The host runs one call at a time per connection, so whatever arrives
    /// belongs to that call.
    progress: ProgressRoute,
    /// Set when an older server says its tool list changed, by [`InOrder`] (the
    /// 2026-07-28 way is a `subscriptions/listen` stream, handled by the catalog).
    tools_changed: Arc<std::sync::atomic::AtomicBool>,
    /// Where questions and answers are recorded; attached once the host has its trace.
    trace: Mutex<Option<crate::trace::Trace>>,
    /// Set when the server asked the person during a call (older revisions).
    asked: std::sync::atomic::AtomicBool,
    /// The revision offered by an `initialize` handshake.
    handshake_version: ProtocolVersion,
}

impl HostHandler {
    pub fn new(server: &str, person: Arc<dyn Person>) -> Self {
        HostHandler {
            server: server.into(),
            person,
            progress: Arc::new(Mutex::new(None)),
            tools_changed: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            trace: Mutex::new(None),
            asked: std::sync::atomic::AtomicBool::new(false),
            handshake_version: ProtocolVersion::LATEST,
        }
    }

    /// A handler for the `initialize` handshake, which offers the newest revision that
    /// still has one (2025-11-25), never 2026-07-28.
    pub fn for_handshake(server: &str, person: Arc<dyn Person>) -> Self {
        HostHandler {
            handshake_version: ProtocolVersion::V_2025_11_25,
            ..HostHandler::new(server, person)
        }
    }

    /// Record this server's questions in `trace` from now on.
    pub fn attach_trace(&self, trace: crate::trace::Trace) {
        *self.trace.lock().unwrap_or_else(|e| e.into_inner()) = Some(trace);
    }

    /// Did the server ask the person since the last look? Clears the flag.
    pub fn take_asked(&self) -> bool {
        self.asked.swap(false, std::sync::atomic::Ordering::SeqCst)
    }

    /// Send the progress notifications of one request (by its progress token) to `to`
    /// while it runs; `None` when it ended. Late progress of an earlier request is dropped.
    pub fn route_progress(
        &self,
        to: Option<(
            ProgressToken,
            mpsc::UnboundedSender<ProgressNotificationParam>,
        )>,
    ) {
        *self.progress.lock().unwrap_or_else(|e| e.into_inner()) = to;
    }

    /// Did the server announce a changed tool list since the last look? Clears the flag.
    pub fn take_tools_changed(&self) -> bool {
        self.tools_changed
            .swap(false, std::sync::atomic::Ordering::SeqCst)
    }
}

/// The name and version this host gives in every request's `_meta`.
pub fn client_info() -> Implementation {
    Implementation::new("gatehouse", env!("CARGO_PKG_VERSION"))
}

impl ClientHandler for HostHandler {
    fn get_info(&self) -> ClientConfig {
        let mut elicitation = ElicitationCapability::new();
        elicitation.form = Some(FormElicitationCapability::default());
        elicitation.url = Some(UrlElicitationCapability::default());
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(elicitation);
        let mut config = ClientConfig::new(capabilities, client_info());
        config.protocol_version = self.handshake_version.clone();
        config
    }

    /// A server on an older revision asks mid-call with `elicitation/create`; the person
    /// answers it exactly as they answer an `input_required` form.
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked.store(true, std::sync::atomic::Ordering::SeqCst);
        let trace = self.trace.lock().unwrap_or_else(|e| e.into_inner()).clone();
        Ok(match trace {
            Some(trace) => {
                crate::dispatch::ask_person(
                    &self.server,
                    "elicitation/create",
                    &request,
                    self.person.as_ref(),
                    &trace,
                )
                .await
            }
            None => self.person.elicit(&self.server, &request).await.0,
        })
    }

    // No `on_progress` and no `on_tool_list_changed`: `InOrder` takes both notifications
    // as they are read, in order with the responses; the handler would see them later,
    // each in a task of its own.
}

/// A live connection to one server.
pub struct Connection {
    /// The server's name in the servers file (the namespace of its tools).
    pub name: String,
    pub client: RunningService<RoleClient, HostHandler>,
    pub protocol: ProtocolVersion,
    pub implementation: Option<Implementation>,
    pub instructions: Option<String>,
    /// The server process id, when it is a child process.
    pub pid: Option<u32>,
    /// Reads the server's stderr; awaited at shutdown so its last lines are not lost.
    pub stderr_reader: Option<tokio::task::JoinHandle<()>>,
}

/// Why a server could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("server {server}: cannot start `{command}`: {reason}")]
    Spawn {
        server: String,
        command: String,
        reason: String,
    },
    #[error("server {server}: {reason}{}", tail_text(.stderr))]
    Handshake {
        server: String,
        reason: String,
        stderr: Vec<String>,
    },
    #[error("server {server} at {url}: {reason}")]
    Http {
        server: String,
        url: String,
        reason: String,
    },
    #[error("server {server}: no answer within {seconds:.1} s of starting{}", tail_text(.stderr))]
    Timeout {
        server: String,
        seconds: f64,
        stderr: Vec<String>,
    },
}

fn tail_text(lines: &[String]) -> String {
    if lines.is_empty() {
        String::new()
    } else {
        format!("; its last words on stderr: {}", lines.join(" | "))
    }
}

type Tail = Arc<Mutex<VecDeque<String>>>;

/// A transport that shows every message to an observer on its way (`--record`, the lab).
pub struct Tap<T> {
    inner: T,
    server: String,
    observer: Arc<dyn Observer>,
}

impl<T> Tap<T> {
    pub fn new(inner: T, server: &str, observer: Arc<dyn Observer>) -> Self {
        Tap {
            inner,
            server: server.to_owned(),
            observer,
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Tap<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let message = serde_json::to_value(&item).unwrap_or_default();
        self.observer
            .wire(&WireEvent::new(&self.server, Direction::ToServer, message));
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let received = self.inner.receive().await;
        if let Some(m) = &received {
            let message = serde_json::to_value(m).unwrap_or_default();
            self.observer.wire(&WireEvent::new(
                &self.server,
                Direction::FromServer,
                message,
            ));
        }
        received
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// The call in flight's progress token and where its progress goes.
type ProgressRoute = Arc<
    Mutex<
        Option<(
            ProgressToken,
            mpsc::UnboundedSender<ProgressNotificationParam>,
        )>,
    >,
>;

/// A transport that takes progress and "my tool list changed" (older revisions) as each
/// message is read, in the order they came. rmcp hands notifications to the handler in
/// tasks of their own, so a call's response read just after one could reach the turn
/// first: the last progress lost, or the model offered the old list.
pub struct InOrder<T> {
    inner: T,
    tools_changed: Arc<std::sync::atomic::AtomicBool>,
    progress: ProgressRoute,
}

impl<T> InOrder<T> {
    /// Wrap `inner`, reporting to `handler`'s tool-list flag and progress route.
    fn new(inner: T, handler: &HostHandler) -> Self {
        InOrder {
            inner,
            tools_changed: handler.tools_changed.clone(),
            progress: handler.progress.clone(),
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for InOrder<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let received = self.inner.receive().await;
        if let Some(rmcp::model::JsonRpcMessage::Notification(n)) = &received {
            match &n.notification {
                rmcp::model::ServerNotification::ToolListChangedNotification(_) => {
                    self.tools_changed
                        .store(true, std::sync::atomic::Ordering::SeqCst);
                }
                rmcp::model::ServerNotification::ProgressNotification(p) => {
                    let route = self.progress.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some((token, to)) = route.as_ref()
                        && *token == p.params.progress_token
                    {
                        let _ = to.send(p.params.clone());
                    }
                }
                _ => {}
            }
        }
        received
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Serve a client over `transport`, tapped when the observer wants every message.
async fn serve<T>(
    handler: HostHandler,
    transport: T,
    mode: ClientLifecycleMode,
    server: &str,
    observer: &Arc<dyn Observer>,
) -> Result<RunningService<RoleClient, HostHandler>, ClientInitializeError>
where
    T: Transport<RoleClient> + 'static,
{
    if observer.wants_wire() {
        let in_order = InOrder::new(Tap::new(transport, server, observer.clone()), &handler);
        handler.serve_with_lifecycle(in_order, mode).await
    } else {
        let in_order = InOrder::new(transport, &handler);
        handler.serve_with_lifecycle(in_order, mode).await
    }
}

/// A started server process: its transport, and the task that reads its stderr.
struct Spawned {
    transport: TokioChildProcess,
    stderr_reader: Option<tokio::task::JoinHandle<()>>,
}

fn spawn(
    spec: &ServerSpec,
    observer: &Arc<dyn Observer>,
    tail: &Tail,
) -> Result<Spawned, ConnectError> {
    let ServerTransport::Stdio {
        command,
        args,
        env,
        cwd,
        pass,
    } = &spec.transport
    else {
        return Err(ConnectError::Spawn {
            server: spec.name.clone(),
            command: String::new(),
            reason: "not a stdio server".into(),
        });
    };
    // The server's environment is what its entry says: the base set, the names it passes
    // through, its own `env`; never the host's credentials by accident.
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args)
        .env_clear()
        .envs(pass.select(std::env::vars_os()))
        .envs(env)
        .kill_on_drop(true);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| ConnectError::Spawn {
            server: spec.name.clone(),
            command: command.clone(),
            reason: match e.kind() {
                std::io::ErrorKind::NotFound => "no such command".into(),
                std::io::ErrorKind::PermissionDenied => "permission denied".into(),
                _ => e.to_string(),
            },
        })?;
    let stderr_reader = stderr.map(|stderr| {
        let (server, observer, tail) = (spec.name.clone(), observer.clone(), tail.clone());
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                observer.server_stderr(&server, &line);
                let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
                if t.len() == STDERR_TAIL_LINES {
                    t.pop_front();
                }
                t.push_back(line);
            }
        })
    });
    Ok(Spawned {
        transport,
        stderr_reader,
    })
}

/// Start (or reach) one server and agree on a revision, within `timeout`.
pub async fn connect(
    spec: &ServerSpec,
    person: Arc<dyn Person>,
    observer: Arc<dyn Observer>,
    timeout: Duration,
) -> Result<Connection, ConnectError> {
    match &spec.transport {
        ServerTransport::Stdio { .. } => connect_stdio(spec, person, observer, timeout).await,
        ServerTransport::Http { url, headers } => {
            connect_http(spec, url, headers, person, observer, timeout).await
        }
    }
}

/// The transport for a Streamable HTTP server: the revision's headers are rmcp's; the
/// servers file's headers (credentials) are added to every request.
fn http_transport(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    let mut custom = std::collections::HashMap::new();
    let mut auth = None;
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("authorization")
            && let Some(token) = value.strip_prefix("Bearer ")
        {
            // rmcp sends bearer credentials itself.
            auth = Some(token.to_owned());
            continue;
        }
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("header name {name:?} is not valid"))?;
        let value = HeaderValue::from_str(value)
            .map_err(|_| format!("the value of header {name} is not a valid header value"))?;
        custom.insert(name, value);
    }
    let mut config =
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).custom_headers(custom);
    if let Some(token) = auth {
        config = config.auth_header(token);
    }
    Ok(StreamableHttpClientTransport::from_config(config))
}

async fn connect_http(
    spec: &ServerSpec,
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    person: Arc<dyn Person>,
    observer: Arc<dyn Observer>,
    timeout: Duration,
) -> Result<Connection, ConnectError> {
    let fail = |reason: String| ConnectError::Http {
        server: spec.name.clone(),
        url: url.to_owned(),
        reason,
    };
    let attempt = async {
        let transport = http_transport(url, headers).map_err(fail)?;
        let auto = ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::V_2025_11_25),
        };
        let handler = HostHandler::new(&spec.name, person.clone());
        match serve(handler, transport, auto, &spec.name, &observer).await {
            Ok(client) => Ok(client),
            Err(e) if retry_with_initialize(&e) => {
                let transport = http_transport(url, headers).map_err(fail)?;
                let handler = HostHandler::for_handshake(&spec.name, person.clone());
                serve(
                    handler,
                    transport,
                    ClientLifecycleMode::Initialize,
                    &spec.name,
                    &observer,
                )
                .await
                .map_err(|e| fail(http_reason(&e)))
            }
            Err(e) => Err(fail(http_reason(&e))),
        }
    };
    let client = match tokio::time::timeout(timeout, attempt).await {
        Ok(result) => result?,
        Err(_) => {
            return Err(fail(format!(
                "no answer within {:.1} s",
                timeout.as_secs_f64()
            )));
        }
    };
    Ok(connection(spec, client, None, None))
}

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

/// Why an HTTP server could not be reached, in words (never with the credentials).
fn http_reason(e: &ClientInitializeError) -> String {
    // The debug form holds the whole chain (both attempts of a fallback); it is only
    // searched, never shown.
    let lower = format!("{e} {e:?}").to_lowercase();
    if e.is_authorization_required() || lower.contains("auth required") || lower.contains("401") {
        "the server wants credentials it did not get or did not accept (401); check the headers in the servers file".into()
    } else if lower.contains("insufficient scope") || lower.contains("403") {
        "the server refused these credentials (403)".into()
    } else if lower.contains("404") {
        "there is no MCP endpoint at this URL (404)".into()
    } else if lower.contains("connection refused")
        || lower.contains("error sending request")
        || lower.contains("connect")
    {
        "cannot connect: nothing answers at this address (connection refused)".into()
    } else {
        format!("the start-up exchange failed: {e}")
    }
}

/// What a connection keeps, however it was made.
fn connection(
    spec: &ServerSpec,
    client: RunningService<RoleClient, HostHandler>,
    pid: Option<u32>,
    stderr_reader: Option<tokio::task::JoinHandle<()>>,
) -> Connection {
    let info = client.peer_info();
    Connection {
        name: spec.name.clone(),
        protocol: info
            .as_ref()
            .map(|i| i.protocol_version.clone())
            .unwrap_or(ProtocolVersion::V_2025_11_25),
        implementation: info.as_ref().and_then(|i| i.server_info.clone()),
        instructions: info.as_ref().and_then(|i| i.instructions.clone()),
        client,
        pid,
        stderr_reader,
    }
}

async fn connect_stdio(
    spec: &ServerSpec,
    person: Arc<dyn Person>,
    observer: Arc<dyn Observer>,
    timeout: Duration,
) -> Result<Connection, ConnectError> {
    let tail: Tail = Arc::new(Mutex::new(VecDeque::new()));
    let stderr_tail = |tail: &Tail| -> Vec<String> {
        tail.lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    };
    let attempt = async {
        let Spawned {
            transport,
            stderr_reader,
        } = spawn(spec, &observer, &tail)?;
        let pid = transport.id();
        let auto = ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::V_2025_11_25),
        };
        let handler = HostHandler::new(&spec.name, person.clone());
        match serve(handler, transport, auto, &spec.name, &observer).await {
            Ok(client) => Ok((client, pid, stderr_reader)),
            // The server answered the probe with only handshake-era revisions. rmcp stops
            // there; a host connects anyway, with a fresh process and `initialize`.
            Err(e) if retry_with_initialize(&e) => {
                // Let the first process's stderr drain before it is replaced.
                tokio::time::sleep(Duration::from_millis(20)).await;
                let Spawned {
                    transport,
                    stderr_reader,
                } = spawn(spec, &observer, &tail)?;
                let pid = transport.id();
                let handler = HostHandler::for_handshake(&spec.name, person.clone());
                let result = serve(
                    handler,
                    transport,
                    ClientLifecycleMode::Initialize,
                    &spec.name,
                    &observer,
                )
                .await
                .map(|c| (c, pid, stderr_reader));
                match result {
                    Ok(ok) => Ok(ok),
                    Err(e) => Err(handshake_error(spec, e, &tail).await),
                }
            }
            Err(e) => Err(handshake_error(spec, e, &tail).await),
        }
    };
    let (client, pid, stderr_reader) = match tokio::time::timeout(timeout, attempt).await {
        Ok(result) => result?,
        Err(_) => {
            return Err(ConnectError::Timeout {
                server: spec.name.clone(),
                seconds: timeout.as_secs_f64(),
                stderr: stderr_tail(&tail),
            });
        }
    };
    Ok(connection(spec, client, pid, stderr_reader))
}

async fn handshake_error(spec: &ServerSpec, e: ClientInitializeError, tail: &Tail) -> ConnectError {
    // Give the stderr reader a moment: a server that exits usually says why first.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let reason = match e {
        // Either way the process is gone: it closed its stdout, or its stdin broke first.
        ClientInitializeError::ConnectionClosed(_)
        | ClientInitializeError::TransportError { .. } => {
            "the server exited (or closed its stdio) before it answered".to_string()
        }
        ClientInitializeError::JsonRpcError(err) => {
            format!(
                "the server refused to start a session: {} {}",
                err.code.0, err.message
            )
        }
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
        server: spec.name.clone(),
        reason,
        stderr: tail
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect(),
    }
}
