//! A server written in the test: tools as closures, served over a pipe in memory
//! ([`crate::connect::in_process`]), that writes down every call it received and can be
//! killed and started again, so a test sees exactly what reached it.

use std::{
    borrow::Cow,
    sync::{Arc, Mutex},
};

use futures::future::BoxFuture;
use rmcp::{
    ErrorData, Peer, RoleServer, ServerHandler, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
        ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
        Tool,
    },
    service::RequestContext,
};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::connect::in_process::Opener;

/// Size of the pipe's buffer each way: big enough for any message a test sends.
pub(super) const PIPE_BYTES: usize = 1 << 20;

/// One call as the tool's closure sees it.
pub struct Called {
    /// The arguments the server received.
    pub arguments: JsonObject,
    /// The host, to ask it something during the call (older revisions' `elicitation/create`).
    pub peer: Peer<RoleServer>,
}

/// A tool's behaviour: what it answers to one call.
pub type ToolFn = Arc<dyn Fn(Called) -> BoxFuture<'static, CallToolResponse> + Send + Sync>;

/// A server being written: its tools, and the revisions it speaks.
#[derive(Clone)]
pub struct Server {
    name: String,
    tools: Vec<(Tool, ToolFn)>,
    versions: Cow<'static, [ProtocolVersion]>,
}

/// A call a server received: the tool's name and its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    /// The tool, as the server lists it.
    pub tool: String,
    /// The arguments.
    pub arguments: Value,
}

/// A running in-process server: what it received, how many runs it had, and a way to kill
/// the run in use (as a crash would).
#[derive(Clone)]
pub struct Serving {
    received: Arc<Mutex<Vec<Received>>>,
    /// Runs started so far; the value changes at each start.
    runs: watch::Sender<usize>,
    /// Starts tried so far (refused ones too), each with the clock's time.
    tried: watch::Sender<Vec<tokio::time::Instant>>,
    /// The run in use's kill switch: the server's end of its pipe dropped when fired.
    kill: Arc<Mutex<Option<tokio_util::sync::CancellationToken>>>,
    /// Runs the host closed (not killed): the value changes at each.
    closed: watch::Sender<usize>,
    /// Refuse new runs (a server that does not start again).
    refusing: Arc<std::sync::atomic::AtomicBool>,
}

impl Server {
    /// A server named `name` (its implementation's name) speaking every revision rmcp knows.
    pub fn new(name: &str) -> Server {
        Server {
            name: name.to_owned(),
            tools: Vec::new(),
            versions: Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS),
        }
    }

    /// Speak only revisions up to 2025-11-25 (a server of the handshake's era).
    pub fn older(mut self) -> Server {
        self.versions = Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25));
        self
    }

    /// A tool taking any object, answering with what `answer` gives.
    pub fn tool<F, Fut>(self, name: &str, answer: F) -> Server
    where
        F: Fn(Called) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = CallToolResponse> + Send + 'static,
    {
        let schema = json!({"type": "object"});
        self.tool_with(name, json!({}), schema, answer)
    }

    /// A tool with these annotations and input schema.
    pub fn tool_with<F, Fut>(
        mut self,
        name: &str,
        annotations: Value,
        input_schema: Value,
        answer: F,
    ) -> Server
    where
        F: Fn(Called) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = CallToolResponse> + Send + 'static,
    {
        let tool: Tool = serde_json::from_value(json!({
            "name": name,
            "description": format!("{name}, a tool of the test's own"),
            "inputSchema": input_schema,
            "annotations": annotations,
        }))
        .expect("a test's tool is a valid definition");
        let answer: ToolFn = Arc::new(move |called| Box::pin(answer(called)));
        self.tools.push((tool, answer));
        self
    }

    /// Serve it: each run over a pipe of its own, as [`Serving::opener`] opens them.
    pub fn serve(self) -> (Serving, Opener) {
        let serving = Serving {
            received: Arc::default(),
            runs: watch::channel(0).0,
            tried: watch::channel(Vec::new()).0,
            closed: watch::channel(0).0,
            kill: Arc::default(),
            refusing: Arc::default(),
        };
        let opener = serving.opener(Arc::new(self));
        (serving, opener)
    }
}

impl Serving {
    fn opener(&self, server: Arc<Server>) -> Opener {
        let serving = self.clone();
        Arc::new(move || {
            let (server, serving) = (server.clone(), serving.clone());
            Box::pin(async move {
                let now = tokio::time::Instant::now();
                serving.tried.send_modify(|t| t.push(now));
                if serving.refusing.load(std::sync::atomic::Ordering::SeqCst) {
                    return Err("the test's server refuses to start".to_owned());
                }
                let (host_end, server_end) = tokio::io::duplex(PIPE_BYTES);
                let kill = tokio_util::sync::CancellationToken::new();
                *serving.kill.lock().unwrap_or_else(|e| e.into_inner()) = Some(kill.clone());
                let handler = Handler {
                    server,
                    received: serving.received.clone(),
                };
                let ends = serving.clone();
                tokio::spawn(async move {
                    let Ok(running) = handler.serve(server_end).await else {
                        return;
                    };
                    // Killed: the service and its end of the pipe are dropped at once,
                    // as a crashed process's stdout closes.
                    let stop = running.cancellation_token();
                    tokio::select! {
                        _ = kill.cancelled() => stop.cancel(),
                        _ = running.waiting() => ends.closed.send_modify(|n| *n += 1),
                    }
                });
                serving.runs.send_modify(|n| *n += 1);
                Ok(host_end)
            })
        })
    }

    /// Every call received so far, in order.
    pub fn received(&self) -> Vec<Received> {
        self.received
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Runs started so far.
    pub fn runs(&self) -> usize {
        *self.runs.borrow()
    }

    /// Wait until at least `n` runs have started.
    pub async fn started(&self, n: usize) {
        let mut runs = self.runs.subscribe();
        let _ = runs.wait_for(|&r| r >= n).await;
    }

    /// Wait until at least `n` starts have been tried: when each was, on the clock.
    pub async fn tried(&self, n: usize) -> Vec<tokio::time::Instant> {
        let mut tried = self.tried.subscribe();
        let _ = tried.wait_for(|t| t.len() >= n).await;
        tried.borrow().clone()
    }

    /// Wait until the host has closed at least `n` runs.
    pub async fn closed(&self, n: usize) {
        let mut closed = self.closed.subscribe();
        let _ = closed.wait_for(|&c| c >= n).await;
    }

    /// Kill the run in use, as a crash would: its pipe closes.
    pub fn kill(&self) {
        if let Some(kill) = self.kill.lock().unwrap_or_else(|e| e.into_inner()).take() {
            kill.cancel();
        }
    }

    /// From now on, a new run fails to start (`false`: starts again).
    pub fn refuse_starts(&self, refuse: bool) {
        self.refusing
            .store(refuse, std::sync::atomic::Ordering::SeqCst);
    }
}

/// One run's rmcp handler.
#[derive(Clone)]
struct Handler {
    server: Arc<Server>,
    received: Arc<Mutex<Vec<Received>>>,
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().build();
        ServerConfig::new(capabilities)
            .with_server_info(rmcp::model::Implementation::new(&self.server.name, "0.0.0"))
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.server.versions.clone()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.server.tools.iter().map(|(t, _)| t.clone()).collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.clone().unwrap_or_default();
        self.received
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Received {
                tool: request.name.to_string(),
                arguments: Value::Object(arguments.clone()),
            });
        let Some((_, answer)) = self
            .server
            .tools
            .iter()
            .find(|(t, _)| t.name == request.name)
        else {
            return Err(ErrorData::invalid_params(
                format!("no tool {}", request.name),
                None,
            ));
        };
        let called = Called {
            arguments,
            peer: context.peer.clone(),
        };
        Ok(answer(called).await)
    }
}

/// A tool's answer: this text, not an error.
pub fn text(words: &str) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(words)]).into()
}
