//! One scaffold for the reference servers: what each of them is (its name, info,
//! instructions, tools from their definition files, the caller it was started for), the
//! handler methods they all answer the same way (discovery, `tools/list`, `tools/call` with
//! its `mcp.request` record), one shape for the `tool_call` record, and one mapping from a
//! tool's failure to the word its record logs and the answer the client gets.
//!
//! A server implements [`Desk`]; [`Served`] turns it into an rmcp `ServerHandler`. A desk
//! whose tools may run as tasks gives its [`Tasks`] and their work (`tasks`: the glue to
//! the tasks extension).

mod tasks;

use std::{sync::Arc, time::Instant};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, GetTaskParams,
        GetTaskResult, Implementation, ListResourcesResult, ListToolsResult,
        PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
        ServerCapabilities, ServerConfig, Tool, UpdateTaskParams,
    },
    service::RequestContext,
};
use serde_json::{Map, Value, json};

use crate::{
    common::{self, Caller, RequestLog},
    membership::{self, Refusal, Role},
    tasks::{Job, Leg, TaskMode, Tasks},
};

/// How a tool call failed. Each kind has one word in the `tool_call` record and one
/// answer: a tool error the model can read, or (cancelled, protocol) a JSON-RPC error.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// What was asked for does not exist for this caller (another organization's ticket
    /// reads the same as one that never existed).
    NotFound(String),
    /// The arguments are wrong: the message says how.
    InvalidArguments(String),
    /// The caller's role does not grant the tool's scope.
    Forbidden(String),
    /// The person said no (or closed the form): nothing was done.
    Declined(String),
    /// The server cannot do it now (its store is unavailable).
    Unavailable(String),
    /// The client cancelled the call.
    Cancelled,
    /// A JSON-RPC error the client must see as such (a tampered request state).
    Protocol(ErrorData),
}

impl From<String> for Failure {
    /// A checking helper's message: the arguments are wrong.
    fn from(message: String) -> Self {
        Failure::InvalidArguments(message)
    }
}

impl Failure {
    /// The word the `tool_call` record logs.
    pub fn word(&self) -> &'static str {
        match self {
            Failure::NotFound(_) => "not_found",
            Failure::InvalidArguments(_) => "invalid_arguments",
            Failure::Forbidden(_) => "forbidden",
            Failure::Declined(_) => "declined",
            Failure::Unavailable(_) => "unavailable",
            Failure::Cancelled => "cancelled",
            Failure::Protocol(_) => "error",
        }
    }

    /// The end of a task's leg this failure makes: a cancellation, a JSON-RPC error (the
    /// task fails), or a tool error (the task completes with it).
    pub fn into_leg(self, info: &Implementation) -> Leg {
        match self {
            Failure::Cancelled => Leg::Cancelled,
            Failure::Protocol(e) => Leg::Failed(e),
            other => match other.answer(info) {
                Ok(CallToolResponse::Complete(result)) => Leg::Done(result),
                Ok(_) => Leg::Failed(ErrorData::internal_error("the tool asked mid-task", None)),
                Err(e) => Leg::Failed(e),
            },
        }
    }

    /// The answer the client gets. A tool error's text starts with `not_found:` for a
    /// missing object, as the support desk has always said it.
    pub fn answer(self, info: &Implementation) -> Result<CallToolResponse, ErrorData> {
        let text = match self {
            Failure::Cancelled => return Err(ErrorData::internal_error("cancelled", None)),
            Failure::Protocol(e) => return Err(e),
            Failure::NotFound(m) => format!("not_found: {m}"),
            Failure::InvalidArguments(m)
            | Failure::Forbidden(m)
            | Failure::Declined(m)
            | Failure::Unavailable(m) => m,
        };
        Ok(common::tool_error(text, info).into())
    }
}

/// What a tool run gives back.
#[derive(Debug)]
pub enum Ran {
    /// A structured value: sent as `structuredContent` and as its JSON text.
    Value(Value),
    /// A result the tool shaped itself (links, other blocks).
    Result(CallToolResult),
    /// The call goes on (`input_required`): no record of a tool run yet.
    Asking(CallToolResponse),
}

/// A finished run, with what its `tool_call` record adds (a count of results, say).
#[derive(Debug)]
pub struct Done {
    /// What the tool gave back.
    pub ran: Ran,
    /// Extra fields for the record.
    pub extra: Value,
}

impl Done {
    /// A structured value, nothing extra to log.
    pub fn value(value: Value) -> Self {
        Done {
            ran: Ran::Value(value),
            extra: json!({}),
        }
    }
}

/// What a tool run is given: the tool, its arguments, who calls, the request itself.
pub struct Call<'a> {
    /// The tool's name.
    pub name: &'a str,
    /// Its arguments (absent means empty).
    pub args: Map<String, Value>,
    /// The request, for what the arguments do not carry (input responses, state).
    pub request: &'a CallToolRequestParams,
    /// Who calls.
    pub caller: &'a Caller,
    /// The request's context (progress, cancellation, the peer).
    pub context: &'a RequestContext<RoleServer>,
}

/// Who may call, as a server decides before any tool runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Admission {
    /// Let the call run; the role, when the server knows one, goes in the record.
    Admitted(Option<&'static str>),
    /// Refuse the call before anything is looked at (JSON-RPC -32003).
    Refused(ErrorData),
    /// Refuse it as a tool error the model can read, logged with the role.
    Forbidden {
        /// The caller's role.
        role: &'static str,
        /// What the model reads.
        message: String,
    },
}

impl Admission {
    /// The admission a membership check gives: a member whose role has the scope is
    /// admitted with that role, a member without it is forbidden, anyone else refused.
    pub fn of(check: Result<Role, Refusal>) -> Self {
        match check {
            Ok(role) => Admission::Admitted(Some(role.name())),
            Err(Refusal::NotMember) => Admission::Refused(membership::not_a_member()),
            Err(refusal @ Refusal::Scope { role, .. }) => Admission::Forbidden {
                role: role.name(),
                message: refusal.message(),
            },
        }
    }
}

/// What every reference server holds the same way: its name and version, its tools read
/// from their definition files (`tools/SERVER.TOOL.json`), and the caller it was started for.
#[derive(Debug, Clone)]
pub struct Parts {
    /// Its name and version, as discovery gives them.
    pub info: Implementation,
    /// Its tools.
    pub tools: Arc<Vec<Tool>>,
    /// The caller when a request names none: the one it was started for (stdio).
    pub caller: Caller,
}

impl Parts {
    /// The parts of the server `server` (its files' prefix), named `name` at `version`,
    /// with these tools, started for `caller`.
    pub fn new(server: &str, name: &str, version: &str, tools: &[&str], caller: Caller) -> Self {
        let tools = tools
            .iter()
            .map(|t| {
                let file = format!("tools/{server}.{t}.json");
                common::tool_from_json(crate::data::file(&file).expect("tool file embedded"))
            })
            .collect();
        Parts {
            info: Implementation::new(name, version),
            tools: Arc::new(tools),
            caller,
        }
    }
}

/// What a reference server says about itself, as one value each server writes once.
#[derive(Debug, Clone, Copy)]
pub struct Profile {
    /// Its name in its records (`support`, `tickets`, …).
    pub name: &'static str,
    /// What it tells a client about itself at discovery.
    pub instructions: &'static str,
    /// Whether it offers resources besides its tools.
    pub resources: bool,
}

impl Profile {
    /// A server named `name` that says `instructions` at discovery and offers only tools.
    pub const fn new(name: &'static str, instructions: &'static str) -> Self {
        Profile {
            name,
            instructions,
            resources: false,
        }
    }

    /// The same server, offering resources too.
    pub const fn with_resources(self) -> Self {
        Profile {
            resources: true,
            ..self
        }
    }
}

/// What a reference server is, apart from the protocol plumbing they all share.
pub trait Desk: Clone + Send + Sync + 'static {
    /// Its name, what it says about itself, what it offers besides tools.
    const PROFILE: Profile;

    /// What it holds the same way as every other server.
    fn parts(&self) -> &Parts;
    /// Its name and version.
    fn info(&self) -> &Implementation {
        &self.parts().info
    }
    /// Its tools, from their definition files.
    fn tools(&self) -> &[Tool] {
        &self.parts().tools
    }
    /// The caller when a request names none: the one it was started for (stdio).
    fn default_caller(&self) -> &Caller {
        &self.parts().caller
    }
    /// What it offers: tools, and resources when it has them.
    fn capabilities(&self) -> ServerCapabilities {
        let offers = ServerCapabilities::builder().enable_tools();
        if Self::PROFILE.resources {
            offers.enable_resources().build()
        } else {
            offers.build()
        }
    }
    /// May `caller` call `tool`? Checked before the tool is even looked up, so a caller
    /// with no membership learns nothing (default: anyone may).
    fn admit(&self, caller: &Caller, tool: &str) -> Admission {
        let _ = (caller, tool);
        Admission::Admitted(None)
    }
    /// Run one of its tools.
    fn run(&self, call: Call<'_>) -> impl Future<Output = Result<Done, Failure>> + Send;
    /// The server's tasks, when some of its tools may run as tasks.
    fn tasks(&self) -> Option<&Tasks> {
        None
    }
    /// Whether `tool` runs as a task (when the request declares the extension).
    fn task_mode(&self, tool: &str) -> TaskMode {
        let _ = tool;
        TaskMode::Never
    }
    /// Check a call that is about to become a task, so that wrong arguments are told at
    /// once rather than as the task's result (default: the work checks them).
    fn check_task(&self, call: &Call<'_>) -> Result<(), Failure> {
        let _ = call;
        Ok(())
    }
    /// One leg of a task's work.
    fn run_task(&self, job: Job) -> impl Future<Output = Leg> + Send {
        async move {
            Leg::Failed(ErrorData::internal_error(
                format!("{} runs no tasks", job.tool),
                None,
            ))
        }
    }
    /// `resources/list`, for a server with resources.
    fn list_resources(&self, caller: &Caller) -> Result<ListResourcesResult, ErrorData> {
        let _ = caller;
        Err(ErrorData::method_not_found::<
            rmcp::model::ListResourcesRequestMethod,
        >())
    }
    /// `resources/read`, for a server with resources.
    fn read_resource(&self, caller: &Caller, uri: &str) -> Result<ReadResourceResponse, ErrorData> {
        let _ = (caller, uri);
        Err(ErrorData::method_not_found::<
            rmcp::model::ReadResourceRequestMethod,
        >())
    }
}

/// A [`Desk`] served over MCP.
#[derive(Clone)]
pub struct Served<D>(pub Arc<D>);

impl<D> Served<D> {
    /// Serve `desk`.
    pub fn new(desk: D) -> Self {
        Served(Arc::new(desk))
    }
}

/// The one `tool_call` record every reference server writes for a tool run.
pub fn tool_call_record(
    server: &str,
    caller: &Caller,
    role: Option<&str>,
    tool: &str,
    outcome: &str,
    extra: Value,
    start: Instant,
) {
    let mut record = json!({
        "ts": common::timestamp(),
        "event": "tool_call",
        "server": server,
        "user": caller.user,
        "tenant": caller.tenant,
        "role": role,
        "client": caller.client,
        "tool": tool,
        "outcome": outcome,
    });
    if let (Some(obj), Value::Object(more)) = (record.as_object_mut(), extra) {
        obj.extend(more);
    }
    record["ms"] = json!(common::elapsed_ms(start));
    common::log_line(record);
}

/// The request log of `method` on `subject` to the server `profile` names.
fn log(
    profile: Profile,
    method: &'static str,
    subject: Option<&str>,
    context: &RequestContext<RoleServer>,
) -> RequestLog {
    RequestLog::start(profile.name, method, subject, &context.meta)
}

impl<D: Desk> Served<D> {
    /// Answer a request of `method` (on `subject`) for the request's caller, as one log
    /// record ending `ok` or `error`.
    fn logged<T>(
        &self,
        method: &'static str,
        subject: Option<&str>,
        context: &RequestContext<RoleServer>,
        answer: impl FnOnce(&Caller) -> Result<T, ErrorData>,
    ) -> Result<T, ErrorData> {
        let log = log(D::PROFILE, method, subject, context);
        let response = answer(&Caller::of_request(self.0.default_caller(), context));
        log.finish(if response.is_ok() { "ok" } else { "error" });
        response
    }

    async fn call(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let desk = &self.0;
        let start = Instant::now();
        let caller = Caller::of_request(desk.default_caller(), context);
        let name = request.name.as_ref();
        let role = match desk.admit(&caller, name) {
            Admission::Refused(e) => return Err(e),
            Admission::Forbidden { role, message } => {
                tool_call_record(
                    D::PROFILE.name,
                    &caller,
                    Some(role),
                    name,
                    "forbidden",
                    json!({}),
                    start,
                );
                return Ok(common::tool_error(message, desk.info()).into());
            }
            Admission::Admitted(role) => role,
        };
        if !desk.tools().iter().any(|t| t.name == name) {
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {name}"),
                None,
            ));
        }
        let call = Call {
            name,
            args: common::arguments(request.arguments.as_ref()),
            request,
            caller: &caller,
            context,
        };
        let record = |outcome: &str, extra: Value| {
            tool_call_record(D::PROFILE.name, &caller, role, name, outcome, extra, start)
        };
        if let Some(tasks) = desk.tasks() {
            match (desk.task_mode(name), crate::tasks::declared(context)) {
                (TaskMode::Never, _) | (TaskMode::Optional, false) => {}
                (TaskMode::Required, false) => {
                    record("needs_tasks", json!({}));
                    return Err(crate::tasks::needs_tasks());
                }
                (_, true) => return tasks::start(self, tasks, &call, &record),
            }
        }
        match desk.run(call).await {
            Ok(Done {
                ran: Ran::Asking(response),
                ..
            }) => Ok(response),
            Ok(Done { ran, extra }) => {
                record("ok", extra);
                Ok(match ran {
                    Ran::Value(value) => common::structured_result(value, desk.info()).into(),
                    Ran::Result(result) => result.into(),
                    Ran::Asking(response) => response,
                })
            }
            Err(failure) => {
                record(failure.word(), json!({}));
                failure.answer(desk.info())
            }
        }
    }
}

impl<D: Desk> ServerHandler for Served<D> {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = self.0.capabilities();
        if self.0.tasks().is_some() {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(crate::tasks::TASKS_EXTENSION_ID.into(), Default::default());
        }
        ServerConfig::new(capabilities)
            .with_server_info(self.0.info().clone())
            .with_instructions(D::PROFILE.instructions)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut result = common::tool_list(
            D::PROFILE.name,
            self.0.tools(),
            self.0.info(),
            &context.meta,
        );
        // Private: what a caller may do with the list depends on who they are.
        result.cache_scope = Some(rmcp::model::CacheScope::Private);
        result.ttl_ms = Some(0);
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        common::find_tool(self.0.tools(), name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let log = log(D::PROFILE, "tools/call", Some(&request.name), &context);
        let response = self.call(&request, &context).await;
        log.finish(common::call_outcome(&response));
        response
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        tasks::get(self, &request.task_id, &context)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tasks::update(self, request.task_id, request.input_responses, &context)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tasks::cancel(self, &request.task_id, &context)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.logged("resources/list", None, &context, |caller| {
            self.0.list_resources(caller)
        })
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.logged("resources/read", Some(&request.uri), &context, |caller| {
            self.0.read_resource(caller, &request.uri)
        })
    }
}
