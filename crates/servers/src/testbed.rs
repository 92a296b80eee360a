//! `testbed`: a server for the host's own tests, not in the default set. It does what the
//! reference servers never do: sleeps past time limits (with progress), crashes mid-call,
//! returns every kind of content block, breaks its own output schema, offers a tool with
//! a broken input schema, pages a long tool list, changes its list on request, answers
//! "unknown tool" in both forms, writes garbage on stdout, refuses to start, or speaks only
//! older protocol revisions.
//!
//! Environment:
//! - `TESTBED_START`: `garbage` (junk lines on stdout, then serve), `garbage-exit` (junk,
//!   then exit 1), `exit` (a message on stderr, exit 3);
//! - `TESTBED_MAX_VERSION=2025-11-25`: a server of that revision or older;
//! - `TESTBED_TOOLS=N`: N generated tools (`gen_0001`…) after the fixed ones;
//! - `TESTBED_PAGE_SIZE=P`: `tools/list` pages of P tools. The first page's `nextCursor`
//!   is the empty string, which is a cursor like any other;
//! - `TESTBED_TOOLS_FILE=PATH`: list the tools of that file instead of the fixed ones (a
//!   JSON array of definitions, or `{"tools": [...]}`, as `bench/catalog/servers/` pins real
//!   servers' lists); every call of one answers with its arguments. With `TESTBED_TOOLS`,
//!   the generated tools come after them.
//!
//! `task_job` (`job`) is its long job, a task for clients that declare the tasks extension.

mod job;
mod options;
mod paging;
mod tools;

pub use options::{TestbedOptions, misbehave_at_start};
use paging::page_of;
pub use tools::MAX_GENERATED_TOOLS;

use std::{
    sync::{Arc, RwLock},
    time::Duration,
};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, GetTaskMethod,
        GetTaskParams, GetTaskResult, Implementation, ListToolsResult, PaginatedRequestParams,
        ProgressNotificationParam, ProtocolVersion, ServerCapabilities, ServerConfig,
        SubscriptionFilter, Tool, UpdateTaskParams,
    },
    service::{RequestContext, SubscriptionContext},
};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::{
    common::{self, Caller},
    data,
    tasks::{self, Tasks, Watch},
};

/// The longest a `sleep` call may ask for.
pub const MAX_SLEEP_SECONDS: f64 = 600.0;
/// How often `sleep` reports progress.
pub const SLEEP_PROGRESS_EVERY: Duration = Duration::from_millis(100);

#[derive(Clone)]
/// The testbed server: the tests' misbehaving one.
pub struct Testbed {
    info: Implementation,
    tools: Arc<RwLock<Vec<Tool>>>,
    max_version: ProtocolVersion,
    page_size: Option<usize>,
    /// The tools came from `TESTBED_TOOLS_FILE`: every call answers with its arguments.
    from_file: bool,
    /// Bumped on every change; each listen stream watches it, so no change is missed
    /// between two notifications.
    changed: Arc<watch::Sender<u64>>,
    /// The last change some listen stream has sent, and how many streams are open: a
    /// change is answered only after the streams told their clients, so a client sees
    /// the notification before the answer.
    announced: Arc<watch::Sender<u64>>,
    listeners: Arc<std::sync::atomic::AtomicUsize>,
    /// Where `task_job` runs as a task.
    tasks: Option<Tasks>,
}

impl Testbed {
    /// Is a tool of this name listed now?
    fn lists(&self, name: &str) -> bool {
        self.tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|t| t.name == name)
    }

    /// `repeat`: the text, so many times (a result as large as asked).
    fn repeat(&self, args: &serde_json::Map<String, Value>) -> CallToolResponse {
        let text = common::string_arg(args, "text", 1, 1_000);
        let times = common::int_arg(args, "times", 1, 1, 100_000);
        match (text, times) {
            (Ok(text), Ok(times)) => {
                common::structured_result(json!({"text": text.repeat(times as usize)}), &self.info)
                    .into()
            }
            (Err(e), _) | (_, Err(e)) => common::tool_error(e, &self.info).into(),
        }
    }

    /// `add_tool` and `change_echo`: the tool list changed while the host runs, and said.
    async fn change_list(
        &self,
        name: &str,
        args: &serde_json::Map<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match name {
            "add_tool" => {
                let name = match common::string_arg(args, "name", 1, 32) {
                    Ok(n) if n.chars().all(|c| c.is_ascii_lowercase() || c == '_') => n,
                    _ => {
                        return Ok(common::tool_error(
                            "\"name\" must be 1-32 lowercase letters or _",
                            &self.info,
                        )
                        .into());
                    }
                };
                let tool = common::tool_from_json(
            &json!({"name": name, "description": "A tool added while the host was running.",
                    "inputSchema": {"type": "object", "properties": {}}}).to_string(),
        );
                self.tools
                    .write()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(tool);
                self.announce_change(context).await;
                Ok(common::structured_result(json!({"added": name}), &self.info).into())
            }
            "change_echo" => {
                let description =
                    common::string_arg(args, "description", 1, 500).unwrap_or_default();
                if let Some(echo) = self
                    .tools
                    .write()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter_mut()
                    .find(|t| t.name == "echo")
                {
                    echo.description = Some(description.clone().into());
                }
                self.announce_change(context).await;
                Ok(common::structured_result(json!({"echo": description}), &self.info).into())
            }
            other => Err(ErrorData::invalid_params(
                format!("unknown tool: {other}"),
                None,
            )),
        }
    }

    /// `ask_forever` (a form every round, for ever) and `ask_url` (a URL to open), on
    /// 2026-07-28's `input_required`.
    fn ask(&self, request: &CallToolRequestParams) -> Result<CallToolResponse, ErrorData> {
        match request.name.as_ref() {
            "ask_forever" => {
                let round = request
                    .request_state
                    .as_deref()
                    .and_then(|s| s.strip_prefix("round-"))
                    .and_then(|n| n.parse::<u32>().ok())
                    .unwrap_or(0)
                    + 1;
                Ok(Self::asking(
                    "again",
                    json!({"message": format!("Round {round}: go on?"),
                   "requestedSchema": {"type": "object", "properties": {"again": {"type": "boolean"}}, "required": ["again"]}}),
                    format!("round-{round}"),
                ))
            }
            "ask_url" => match request
                .input_responses
                .as_ref()
                .and_then(|r| r.get("consent"))
            {
                Some(answer) => Ok(common::structured_result(
                    json!({"answer": answer.get("action").cloned().unwrap_or(Value::Null)}),
                    &self.info,
                )
                .into()),
                None => Ok(Self::asking(
                    "consent",
                    json!({"mode": "url", "message": "Approve the change in the change-management system",
                   "url": "https://changes.example.com/approve?change=CHG-2291"}),
                    "asked".into(),
                )),
            },
            other => Err(ErrorData::invalid_params(
                format!("unknown tool: {other}"),
                None,
            )),
        }
    }

    /// A testbed with these options.
    pub fn new(options: TestbedOptions) -> Self {
        let from_file = options.tools.is_some();
        let tools = tools::listed(options.tools, options.generated_tools);
        Testbed {
            info: Implementation::new("testbed", "0.1.0"),
            tools: Arc::new(RwLock::new(tools)),
            max_version: options.max_version.unwrap_or(ProtocolVersion::LATEST),
            page_size: options.page_size,
            from_file,
            changed: Arc::new(watch::Sender::new(0)),
            announced: Arc::new(watch::Sender::new(0)),
            listeners: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            tasks: None,
        }
    }

    /// The same testbed, running `task_job` as a task in `tasks` when asked to.
    pub fn with_tasks(mut self, tasks: Tasks) -> Self {
        self.tasks = Some(tasks);
        self
    }

    /// Its tasks, or -32601 for a testbed without them.
    fn store(&self) -> Result<&Tasks, ErrorData> {
        self.tasks
            .as_ref()
            .ok_or_else(ErrorData::method_not_found::<GetTaskMethod>)
    }

    fn job_work(&self) -> Arc<dyn tasks::TaskWork> {
        Arc::new(job::JobWork(self.info.clone()))
    }

    fn owner(context: &RequestContext<RoleServer>) -> String {
        tasks::owner_of(&Caller::of_request(&Caller::from_env(), context))
    }

    /// `task_job`: a task when the request declares the extension; otherwise an ordinary
    /// call, its question asked through `input_required`.
    async fn task_job(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = common::arguments(request.arguments.as_ref());
        let order = match job::Order::of(&args) {
            Ok(order) => order,
            Err(e) => return Ok(common::tool_error(e, &self.info).into()),
        };
        if let Some(tasks) = &self.tasks
            && tasks::declared(context)
        {
            return match tasks.create(self.job_work(), &Self::owner(context), "task_job", args) {
                Ok(created) => Ok(CallToolResponse::Task(created)),
                Err(e) => Ok(common::tool_error(format!("no task: {e:?}"), &self.info).into()),
            };
        }
        let answer = request
            .input_responses
            .as_ref()
            .and_then(|r| r.get(job::QUESTION_KEY));
        if order.must_ask(answer) {
            let params = job::question()["params"].clone();
            return Ok(Self::asking(job::QUESTION_KEY, params, "job".into()));
        }
        let leg = job::run(&order, 0.0, answer, Watch::Call(context), &self.info).await;
        job::answer_of(leg).map(Into::into)
    }

    /// An `input_required` answer with one elicitation under `key`.
    fn asking(key: &str, params: Value, state: String) -> CallToolResponse {
        let result: rmcp::model::InputRequiredResult = serde_json::from_value(json!({
            "resultType": "input_required",
            "inputRequests": {key: {"method": "elicitation/create", "params": params}},
            "requestState": state,
        }))
        .expect("a valid input_required result");
        result.into()
    }

    fn blocks(kind: &str) -> Vec<Value> {
        let png = data::file("data/testbed/tiny.png.b64").unwrap_or("").trim();
        let wav = data::file("data/testbed/beep.wav.b64").unwrap_or("").trim();
        let all = [
            (
                "text",
                json!({"type": "text", "text": "Order A-1001 is shipped."}),
            ),
            (
                "image",
                json!({"type": "image", "data": png, "mimeType": "image/png"}),
            ),
            (
                "audio",
                json!({"type": "audio", "data": wav, "mimeType": "audio/wav"}),
            ),
            (
                "resource_link",
                json!({"type": "resource_link", "uri": "orders://A-1001", "name": "Order A-1001", "mimeType": "application/json"}),
            ),
            (
                "resource",
                json!({"type": "resource", "resource": {"uri": "kb://shipping", "mimeType": "text/plain", "text": "Standard shipping takes 3 to 6 days."}}),
            ),
            (
                "blob",
                json!({"type": "resource", "resource": {"uri": "kb://logo.png", "mimeType": "image/png", "blob": png}}),
            ),
            (
                "for_user",
                json!({"type": "text", "text": "Shown to the person only: the export finished at 14:02.",
                       "annotations": {"audience": ["user"]}}),
            ),
        ];
        all.into_iter()
            .filter(|(k, _)| kind == "all" || *k == kind)
            .map(|(_, v)| v)
            .collect()
    }

    async fn sleep(
        &self,
        args: &serde_json::Map<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(seconds) = args
            .get("seconds")
            .and_then(Value::as_f64)
            .filter(|s| (0.0..=MAX_SLEEP_SECONDS).contains(s))
        else {
            return Ok(common::tool_error(
                "\"seconds\" must be a number from 0 to 600",
                &self.info,
            )
            .into());
        };
        let quiet = args.get("quiet").and_then(Value::as_bool).unwrap_or(false);
        let token = context.meta.get_progress_token().filter(|_| !quiet);
        let total = Duration::from_secs_f64(seconds);
        let start = tokio::time::Instant::now();
        // The call is in flight here: a test waits for this line rather than for a time.
        common::log_line(json!({"event": "sleeping", "tool": "sleep", "seconds": seconds}));
        // Progress must rise (the spec): on a busy machine two ticks can round to the
        // same tenth, and the second is not sent.
        let mut sent = -1.0_f64;
        loop {
            let left = total.saturating_sub(start.elapsed());
            if left.is_zero() {
                return Ok(common::structured_result(json!({"slept": seconds}), &self.info).into());
            }
            tokio::select! {
                _ = context.ct.cancelled() => {
                    common::log_line(json!({"event": "cancelled", "tool": "sleep", "seconds": seconds,
                        "after_ms": start.elapsed().as_millis() as u64}));
                    return Err(ErrorData::internal_error("cancelled", None));
                }
                _ = tokio::time::sleep(left.min(SLEEP_PROGRESS_EVERY)) => {}
            }
            let done = start.elapsed().as_secs_f64().min(seconds);
            let tenth = (done * 10.0).round() / 10.0;
            if let Some(token) = token.as_ref().filter(|_| tenth > sent) {
                sent = tenth;
                let _ = context
                    .peer
                    .notify_progress(
                        ProgressNotificationParam::new(token.clone(), tenth)
                            .with_total(seconds)
                            .with_message(format!("slept {done:.1} of {seconds} s")),
                    )
                    .await;
            }
        }
    }

    /// Tell clients the list changed: old-revision peers by notification, 2026-07-28 ones
    /// through their `subscriptions/listen` streams.
    async fn announce_change(&self, context: &RequestContext<RoleServer>) {
        self.changed.send_modify(|v| *v += 1);
        let version = *self.changed.borrow();
        if self.listeners.load(std::sync::atomic::Ordering::SeqCst) > 0 {
            let mut announced = self.announced.subscribe();
            let _ = tokio::time::timeout(
                Duration::from_secs(2),
                announced.wait_for(|v| *v >= version),
            )
            .await;
        }
        let modern = context
            .protocol_version()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        if !modern {
            let _ = context.peer.notify_tool_list_changed().await;
        }
    }
}

impl ServerHandler for Testbed {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed();
        let capabilities = match self.tasks {
            Some(_) => capabilities.enable_tasks().build(),
            None => capabilities.build(),
        };
        ServerConfig::new(capabilities)
            .with_server_info(self.info.clone())
            .with_instructions(
                "Test server: sleeps, echoes, crashes, changes its tool list on request.",
            )
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(ProtocolVersion::known_up_to(&self.max_version))
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        use std::sync::atomic::Ordering;
        self.listeners.fetch_add(1, Ordering::SeqCst);
        let mut changes = self.changed.subscribe();
        // Start from "nothing sent", so a change made while this stream was opening is
        // still announced.
        let mut sent = 0;
        let outcome = loop {
            let current = *changes.borrow_and_update();
            if current > sent {
                let _ = context.sink().notify_tool_list_changed().await;
                sent = current;
                self.announced.send_modify(|v| *v = (*v).max(sent));
                continue;
            }
            tokio::select! {
                _ = context.cancelled() => break Ok(()),
                changed = changes.changed() => {
                    if changed.is_err() {
                        break Ok(());
                    }
                }
            }
        };
        self.listeners.fetch_sub(1, Ordering::SeqCst);
        outcome
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.tools.read().unwrap_or_else(|e| e.into_inner()).clone();
        let Some(size) = self.page_size else {
            return Ok(ListToolsResult::with_all_items(tools));
        };
        let cursor = request.and_then(|r| r.cursor);
        let (range, next_cursor) = page_of(tools.len(), size, cursor.as_deref())?;
        let mut result = ListToolsResult::with_all_items(tools[range].to_vec());
        result.next_cursor = next_cursor;
        Ok(result)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let tasks = self.store()?;
        tasks.get(self.job_work(), &Self::owner(&context), &request.task_id)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (tasks, owner) = (self.store()?, Self::owner(&context));
        let (task, answers) = (&request.task_id, request.input_responses);
        tasks.update(self.job_work(), &owner, task, answers)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let tasks = self.store()?;
        tasks.cancel(&Self::owner(&context), &request.task_id)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = common::arguments(request.arguments.as_ref());
        if self.from_file && self.lists(&request.name) {
            let answer = json!({"tool": request.name, "arguments": args});
            return Ok(common::structured_result(answer, &self.info).into());
        }
        match request.name.as_ref() {
            "sleep" => self.sleep(&args, &context).await,
            "task_job" => self.task_job(&request, &context).await,
            "echo" => match common::string_arg(&args, "text", 0, 1_000_000) {
                Ok(text) => Ok(common::structured_result(json!({"text": text}), &self.info).into()),
                Err(e) => Ok(common::tool_error(e, &self.info).into()),
            },
            "repeat" => Ok(self.repeat(&args)),
            "content" => {
                let kind = args.get("kind").and_then(Value::as_str).unwrap_or("all");
                let blocks = Self::blocks(kind);
                if blocks.is_empty() {
                    return Ok(
                        common::tool_error(format!("unknown kind {kind:?}"), &self.info).into(),
                    );
                }
                let result: CallToolResult = serde_json::from_value(
                    json!({"resultType": "complete", "content": blocks, "isError": false}),
                )
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                Ok(result.into())
            }
            "bad_output" => {
                Ok(common::structured_result(json!({"count": "many"}), &self.info).into())
            }
            "add_tool" | "change_echo" => {
                self.change_list(request.name.as_ref(), &args, &context)
                    .await
            }
            "ghost_rpc" => Err(ErrorData::invalid_params("tool not found: ghost_rpc", None)),
            "ghost_result" => {
                Ok(common::tool_error("Unknown tool: ghost_result", &self.info).into())
            }
            "ask_forever" | "ask_url" => self.ask(&request),
            "crash" => {
                common::log_line(json!({"event": "crash", "tool": "crash"}));
                std::process::exit(70);
            }
            other
                if other.starts_with("gen_")
                    || self
                        .tools
                        .read()
                        .unwrap_or_else(|e| e.into_inner())
                        .iter()
                        .any(|t| t.name == other) =>
            {
                Ok(
                    common::structured_result(
                        json!({"tool": other, "arguments": args}),
                        &self.info,
                    )
                    .into(),
                )
            }
            other => Err(ErrorData::invalid_params(
                format!("unknown tool: {other}"),
                None,
            )),
        }
    }
}
