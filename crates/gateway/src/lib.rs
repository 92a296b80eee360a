//! A gateway: one MCP server in front of the servers of a servers file, for any MCP
//! client, with the host's policy. It offers the namespaced catalog less the tools a
//! deny rule hides, and sends every `tools/call` through the same gate as a host's
//! proposals (checks, rules, hooks, remembered approvals, pinned definitions, the
//! ledger) and the same dispatch (time limits, cancellation). When the policy asks, the
//! person is asked through their own client (`confirm.rs`, `client.rs`), or on the
//! approval page for a client that takes only URL questions (`page.rs`); a server's own
//! questions go to that client too, never answered by the gateway. A client that declared
//! the tasks extension gets a server's task as a task of the gateway's own (`tasks/`).
//! Replicas share their state through the store (`store.rs`). It is served on stdio or
//! on the HTTP face (`serve.rs`), which tells who calls ([`Callers`]). Its design notes
//! are in this crate's `README.md`.
#![warn(missing_docs)]
// No function over 80 lines (the workspace's clippy.toml); `gatehouse/tests/shape.rs`
// keeps the files short and the modules without an import cycle.
#![warn(clippy::too_many_lines)]

mod answer;
pub mod call;
pub mod caller;
pub mod client;
pub mod clients;
pub mod confirm;
pub mod error;
mod flows;
pub mod key;
pub mod names;
pub mod ops;
pub mod page;
pub mod passthrough;
mod relay;
pub mod serve;
pub mod session;
mod spans;
pub mod store;
pub mod subscribe;
pub mod tasks;

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CacheScope, CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult,
        GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult,
        ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
        ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
};

use gatehouse::{
    config::Config,
    dispatch::CallLimits,
    host::Host,
    person::{AnsweredBy, Approval, ApprovalRequest, Person},
    trace::Trace,
};

pub use caller::Callers;
pub use confirm::{CONFIRMATION_TTL, Confirmations};
pub use page::{Page, PageSettings};
pub use store::Store;

/// The gateway: a host's connections, catalog, settings and gate, served as one MCP
/// server. Cheap to clone: one per HTTP request or session, or stdio session, each clone
/// sharing everything but the session's own state (an older client's log level).
pub struct Gateway {
    inner: Arc<Inner>,
    session: Arc<SessionState>,
}

/// What one client's session sets for itself (older revisions; a 2026-07-28 request
/// carries it in its `_meta`).
#[derive(Default)]
struct SessionState {
    /// The level `logging/setLevel` asked for: the session's calls ask their servers to
    /// log from it, and relay what they log.
    #[allow(deprecated)] // SEP-2577 deprecates logging; older revisions still have it
    log_level: std::sync::Mutex<Option<rmcp::model::LoggingLevel>>,
    /// The resources it subscribed to (`resources/subscribe`), each a stream of the
    /// server's, ended with the session.
    subscriptions: subscribe::Subscriptions,
}

impl Clone for Gateway {
    /// A clone for a new session: the same gateway, a fresh session state.
    fn clone(&self) -> Gateway {
        Gateway {
            inner: self.inner.clone(),
            session: Arc::default(),
        }
    }
}

struct Inner {
    host: Host,
    confirmations: Confirmations,
    /// The shared store (the host's keeper too): the tasks handed to clients and older
    /// clients' sessions are read and written here.
    store: Store,
    /// Who calls: one caller (stdio) or each request's (HTTP).
    callers: Callers,
    /// The approval page, when `--approval-page` set one up.
    page: Option<Page>,
    /// Calls so far, for the ledger's step.
    calls: AtomicU64,
    /// Subscriptions every session holds together, at most `subscribe::MAX_SUBSCRIPTIONS`.
    subscription_limit: Arc<tokio::sync::Semaphore>,
    /// The calls held here while their callers answer a server's question
    /// (`call/held.rs`).
    held: call::held::Held,
    /// What this replica relayed to each caller (`flows.rs`).
    flows: flows::CallerFlows,
    /// Its metrics (`ops.rs`).
    meter: ops::Meter,
}

/// The person behind the servers' own `elicitation/create` outside any caller's call:
/// nobody the gateway can reach, so every such question is declined (and said). A
/// caller's calls are answered through [`client::ClientPerson`] instead.
struct Unreachable;

/// The person a gateway's host is started with ([`Gateway::on_host`]): nobody.
pub fn unreachable() -> Arc<dyn Person> {
    Arc::new(Unreachable)
}

impl Person for Unreachable {
    fn approve<'a>(
        &'a self,
        _request: &'a ApprovalRequest,
    ) -> futures::future::BoxFuture<'a, Approval> {
        Box::pin(async { Approval::once(false, AnsweredBy::Nobody) })
    }

    fn elicit<'a>(
        &'a self,
        _server: &'a str,
        _request: &'a rmcp::model::ElicitRequestParams,
    ) -> futures::future::BoxFuture<'a, (rmcp::model::ElicitResult, AnsweredBy)> {
        Box::pin(async { (gatehouse::person::decline(), AnsweredBy::Nobody) })
    }
}

/// A gateway traces a caller's arguments only to what it relayed to that caller on this
/// replica (`flows.rs`): the caller's own conversation is unseen, so a value found nowhere
/// cannot be told. Said once at the start when the settings count on flows.
fn say_what_flows_cannot_see(host: &Host) {
    let settings = host.settings();
    let from_rules = settings.rules.all().iter().any(|r| {
        r.conditions
            .iter()
            .any(|c| matches!(c.test, gatehouse::rules::Test::From(_)))
    });
    if settings.flows.consequential.is_empty() && settings.flows.trusted.is_empty() && !from_rules {
        return;
    }
    host.trace().add(
        gatehouse::trace::Who::Host,
        "flows: the gateway traces each caller's arguments to what it relayed to that \
         caller on this replica (definitions, results); it never sees the caller's own \
         conversation, so nothing is the person's and a value found nowhere cannot be told: \
         an allow with a \"from\" condition does not apply to it and the rule of two asks \
         (docs/flows.md)",
        serde_json::json!({"flows": "unseen"}),
    );
}

impl Gateway {
    /// Start every server of `config`, with approvals, confirmations and the ledger kept
    /// in `store`, its states sealed with `key` (from its key file, `key.rs`);
    /// `callers` says who calls; with `page`, clients that take only URL questions are
    /// asked on the approval page (its state in the same store).
    pub async fn start(
        config: &Config,
        (store, key): (Store, Vec<u8>),
        trace: Trace,
        callers: Callers,
        page: Option<PageSettings>,
    ) -> Result<Gateway, String> {
        let keeper = Arc::new(store.clone());
        let host = Host::start_keeping(config, unreachable(), trace, keeper).await;
        Gateway::on_host(host, (store, key), callers, page)
    }

    /// A gateway on a host already started with `store` as its keeper (and the
    /// [`unreachable`] person): [`Gateway::start`] after the host's start, and the unit
    /// tests' way in, on servers in their own process (`gatehouse::testing`).
    pub fn on_host(
        host: Host,
        (store, key): (Store, Vec<u8>),
        callers: Callers,
        page: Option<PageSettings>,
    ) -> Result<Gateway, String> {
        let page = page.map(|settings| Page::new(settings, store.clone()));
        let confirmations = Confirmations::new(key, CONFIRMATION_TTL)?;
        say_what_flows_cannot_see(&host);
        Ok(Gateway {
            inner: Arc::new(Inner {
                host,
                confirmations,
                store,
                callers,
                page,
                calls: AtomicU64::new(0),
                subscription_limit: subscribe::limit(),
                held: call::held::Held::default(),
                flows: flows::CallerFlows::default(),
                meter: ops::Meter::default(),
            }),
            session: Arc::default(),
        })
    }

    /// The tools offered: every running server's, namespaced, less those a deny rule
    /// without conditions hides (the host's own tools are a host's, not offered). A
    /// server that is down, waiting to be restarted, offers none until it is back.
    pub fn tools(&self) -> Vec<Tool> {
        let catalog = self.inner.host.catalog();
        self.names()
            .offered(&catalog, |t| self.offers(t))
            .into_iter()
            .map(|(shown, t)| {
                let mut tool = t.tool.clone();
                tool.name = shown.into();
                tool
            })
            .collect()
    }

    /// Is `tool` offered: its server up, no rule hiding it?
    fn offers(&self, tool: &gatehouse::catalog::CatalogTool) -> bool {
        let host = &self.inner.host;
        tool.origin
            .server()
            .is_some_and(|server| host.connection(server).is_some_and(|c| c.is_up()))
            && host.settings().rules.hiding(&tool.name).is_none()
    }

    /// The tool a client calls `shown`, as [`Gateway::tools`] offers it (hidden and
    /// down tools included: their calls are refused later, with the reason). rmcp's HTTP
    /// layer reads its input schema to check a call's SEP-2243 `Mcp-Param-*` headers
    /// against its `x-mcp-header` arguments, as it does for the reference servers.
    pub fn tool(&self, shown: &str) -> Option<Tool> {
        let catalog = self.host().catalog();
        let name = self.names().catalog_name(&catalog, shown)?;
        let mut tool = catalog.get(&name)?.tool.clone();
        tool.name = shown.to_owned().into();
        Some(tool)
    }

    /// The approval page, if one is set up: its routes are the binary's to serve.
    pub fn page(&self) -> Option<&Page> {
        self.inner.page.as_ref()
    }

    /// The log level this session's client set (older revisions), if it set one.
    #[allow(deprecated)]
    pub(crate) fn session_log_level(&self) -> Option<rmcp::model::LoggingLevel> {
        *self.log_level()
    }

    /// How the client sees the servers' names (`gatewayNames`).
    pub fn names(&self) -> names::Names {
        names::Names(self.host().settings().gateway_names)
    }

    /// Close every server, the calls held here cancelled first (their servers told).
    /// A clone still alive (a session the HTTP layer has not dropped yet) does not keep
    /// the servers running: they are closed under it, and its requests then fail.
    pub async fn shutdown(self) {
        self.inner.held.close().await;
        match Arc::try_unwrap(self.inner) {
            Ok(inner) => inner.host.shutdown().await,
            Err(shared) => shared.host.close_servers().await,
        }
    }

    fn host(&self) -> &Host {
        &self.inner.host
    }

    fn limits(&self) -> CallLimits {
        CallLimits::of(self.host().settings())
    }

    fn next_step(&self) -> u64 {
        self.inner.calls.fetch_add(1, Ordering::SeqCst) + 1
    }
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        let offered = |what: fn(&ServerCapabilities) -> bool| !self.offering(what).is_empty();
        let mut capabilities = ServerCapabilities::builder().enable_tools().build();
        if offered(|c| c.prompts.is_some()) {
            capabilities.prompts = Some(Default::default());
        }
        if self.sole(|c| c.resources.is_some()).is_some() {
            let mut resources = rmcp::model::ResourcesCapability::default();
            resources.subscribe = subscribe::offered(self).then_some(true);
            capabilities.resources = Some(resources);
        }
        if offered(|c| c.completions.is_some()) {
            capabilities.completions = Some(Default::default());
        }
        if offered(|c| c.logging.is_some()) {
            capabilities.logging = Some(Default::default());
        }
        // The gateway's own tasks (`tasks/`), for clients that declare the extension.
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(rmcp::model::TASKS_EXTENSION_ID.into(), Default::default());
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                "gatehouse-gateway",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(if self.names().unprefixed() {
                "Gatehouse gateway: one MCP server's tools under a policy. Some calls ask the \
                 user first, in a form."
            } else {
                "Gatehouse gateway: the tools of several MCP servers, named SERVER__TOOL, \
                 under one policy. Some calls ask the user first, in a form."
            })
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tool(name)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let _span = spans::request_span("tools/list", None, &context);
        // A server restarted, or one that announced a change, is listed anew first.
        self.host().refresh_catalog(false).await;
        let mut result = ListToolsResult::with_all_items(self.tools());
        // A server behind may change its list, or go down, at any time: no cache may
        // keep it as fresh. But the list is the same for every caller (rules hide tools by
        // name alone, and every server behind is reached with the servers file's
        // credentials, never a caller's), so a cache may share it between callers.
        result.ttl_ms = Some(0);
        result.cache_scope = Some(CacheScope::Public);
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // The session's own state, which another replica may have set.
        self.load_session(&context).await;
        // A server that started late (or changed) is in this replica's catalog only once
        // its list is read: a call to a tool the catalog does not know reads it first, as a
        // tools/list would, so no client has to list before it calls, on any replica.
        if self.tool(&request.name).is_none() {
            self.host().refresh_catalog(false).await;
        }
        let timed = self.inner.meter.call();
        let span = spans::call_span(&request, &context);
        let answer = call::Call::new(self, request, &context, &span).run().await;
        spans::answered_on(&span, &answer);
        timed.done(match &answer {
            Ok(CallToolResponse::InputRequired(_)) => ops::Answered::InputRequired,
            Ok(CallToolResponse::Task(_)) => ops::Answered::Task,
            Ok(_) => ops::Answered::Result,
            Err(_) => ops::Answered::Error,
        });
        answer
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        self.task_get(&request.task_id, &context).await
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.task_update(&request.task_id, request.input_responses, &context)
            .await
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.task_cancel(&request.task_id, &context).await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let span = spans::request_span("prompts/list", None, &context);
        spans::ended(&span, self.prompts().await)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let span = spans::request_span("prompts/get", Some(&request.name), &context);
        spans::ended(&span, self.prompt(request).await)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let span = spans::request_span("resources/list", None, &context);
        spans::ended(&span, self.resources().await)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let span = spans::request_span("resources/templates/list", None, &context);
        spans::ended(&span, self.resource_templates().await)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let span = spans::read_span(&request, &context);
        let read = self.read(request).await;
        if let Err(e) = &read {
            spans::failed_on(&span, e);
        }
        read
    }

    #[allow(deprecated)] // SEP-2577 deprecates logging; older revisions still have it
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // Kept for this session's calls, whose servers are asked to log from this level
        // (in each request's `_meta`); the messages are relayed during the call. Kept in
        // the shared store too, for the session's calls on other replicas.
        *self.log_level() = Some(request.level);
        self.keep_session(&context).await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        self.listen_filter(requested)
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        self.relay_listen(context).await
    }

    #[allow(deprecated)] // the older revisions' subscriptions; 2026-07-28 has listen
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscribe_to(request.uri, &context).await
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.unsubscribe_from(&request.uri);
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let span = spans::request_span("completion/complete", None, &context);
        spans::ended(&span, self.completion(request).await)
    }
}
