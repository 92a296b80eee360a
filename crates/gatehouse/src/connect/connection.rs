//! A live connection to one server: what the server said about itself, and the run of it
//! the host talks to now (a [`Session`]). A stdio server that dies is started again under
//! the same connection (`restart`), so the stages that hold a `&Connection` never see
//! the swap; while it is down its requests fail at once, saying so.

use std::sync::Arc;

use rmcp::{
    RoleClient, ServiceError,
    model::{
        CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
        Implementation, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    },
};

use super::{
    HostHandler, auth,
    restart::{self, Link},
    session::{CLOSE_LIMIT, Session},
};
use crate::{
    config::{ServerName, ServerSpec, Transport},
    person::PersonTime,
};

/// A request's answer from the server, or why there is none.
pub type Asked<T> = Result<T, ServiceError>;

/// A request not sent because its server is down, waiting to be restarted: why, and
/// when it is tried again.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ServerDown(pub String);

/// The words of a [`ServerDown`], when `e` is one: the request never reached a server.
pub fn server_down(e: &rmcp::ServiceError) -> Option<&str> {
    match e {
        rmcp::ServiceError::TransportSend(sent) => sent
            .error
            .downcast_ref::<ServerDown>()
            .map(|d| d.0.as_str()),
        _ => None,
    }
}

/// How a server is reached, as telemetry's `network.*` and `server.*` attributes say it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Network {
    /// A server's stdin and stdout.
    Pipe,
    /// Streamable HTTP to an address and port.
    Tcp {
        /// The host name or address (never the URL's credentials or path).
        address: String,
        /// The port.
        port: u16,
    },
    /// Not known to the span's maker (an HTTP client seen by the gateway).
    Unknown,
}

impl Network {
    /// The network of a server at `url`: its host and port, nothing else of it.
    pub fn of_url(url: &str) -> Network {
        match reqwest::Url::parse(url) {
            Ok(u) => match (u.host_str(), u.port_or_known_default()) {
                (Some(host), Some(port)) => Network::Tcp {
                    address: host.to_owned(),
                    port,
                },
                _ => Network::Unknown,
            },
            Err(_) => Network::Unknown,
        }
    }
}

/// A live connection to one server. The rmcp client stays inside: the host's stages use
/// the requests it offers, so every one goes through the same taps and checks.
pub struct Connection {
    /// The server's name in the servers file (the namespace of its tools).
    pub name: ServerName,
    /// The revision both sides agreed on.
    pub protocol: ProtocolVersion,
    /// The server's name and version, as it gave them.
    pub implementation: Option<Implementation>,
    /// The server's instructions (never passed to the model: a server must not depend on
    /// them for safety).
    pub instructions: Option<String>,
    /// How it is reached.
    pub network: Network,
    /// The client side, shared by every run of the server.
    handler: HostHandler,
    /// The run of the server in use, and whether it is down.
    link: Arc<Link>,
    /// Restarts a stdio server that dies; `None` for HTTP servers.
    supervisor: Option<tokio::task::JoinHandle<()>>,
    /// The person's time spent signing in to this server, which time limits leave out.
    pub(crate) person_time: PersonTime,
    /// The server's sign-in, for a server the host may sign in to.
    pub(crate) auth: Option<Arc<auth::ServerAuth>>,
}

impl Connection {
    /// A connection over this first run of the server.
    pub(crate) fn new(spec: &ServerSpec, handler: HostHandler, session: Session) -> Connection {
        let info = session.peer.peer_info();
        Connection {
            name: spec.name.clone(),
            protocol: info
                .as_ref()
                .map(|i| i.protocol_version.clone())
                .unwrap_or(ProtocolVersion::V_2025_11_25),
            implementation: info.as_ref().and_then(|i| i.server_info.clone()),
            instructions: info.as_ref().and_then(|i| i.instructions.clone()),
            network: match &spec.transport {
                Transport::Stdio { .. } => Network::Pipe,
                Transport::Http { url, .. } => Network::of_url(url),
            },
            handler,
            link: Link::new(session),
            supervisor: None,
            person_time: PersonTime::default(),
            auth: None,
        }
    }

    /// Restart the server with `restarter` whenever it dies, until the connection closes.
    pub(crate) fn supervised(mut self, restarter: restart::Restarter) -> Connection {
        self.supervisor = Some(restart::supervise(self.link.clone(), restarter));
        self
    }

    fn session(&self) -> Arc<Session> {
        self.link.current()
    }

    /// Is the server running (not down, waiting to be restarted)?
    pub fn is_up(&self) -> bool {
        self.link.down_reason().is_none() && !self.session().health.has_ended()
    }

    /// Why the server is not running, when it is not ([`Connection::is_up`]).
    pub fn down_reason(&self) -> Option<String> {
        if let Some(why) = self.link.down_reason() {
            return Some(why);
        }
        let ended = self.session().health.has_ended();
        ended.then(|| match self.broken_reason() {
            Some(why) => format!("the connection is closed: {why}"),
            None => "the server has ended".to_owned(),
        })
    }

    /// The server's process id, when it is a child process (of its run now).
    pub fn pid(&self) -> Option<u32> {
        self.session().pid
    }

    /// Why the connection is closed, in words, when the host broke it.
    pub fn broken_reason(&self) -> Option<String> {
        self.session().health.broken_reason()
    }

    /// The person's time spent signing in to this server: the limits of its requests
    /// leave it out.
    pub fn person_time(&self) -> &PersonTime {
        &self.person_time
    }

    /// The server's sign-in, if the host may sign in to it.
    pub fn sign_in(&self) -> Option<&Arc<auth::ServerAuth>> {
        self.auth.as_ref()
    }

    /// One page of one of the server's lists (tools, prompts, resources, resource
    /// templates: [`Paged`]), from `cursor`.
    pub async fn list_page<P: Paged>(
        &self,
        cursor: Option<String>,
    ) -> Result<P, rmcp::ServiceError> {
        let params = rmcp::model::PaginatedRequestParams::default().with_cursor(cursor);
        P::ask(self.up()?, params).await
    }

    /// One round of `prompts/get`: the prompt, or the server's questions (2026-07-28).
    pub async fn get_prompt(&self, params: GetPromptRequestParams) -> Asked<GetPromptResponse> {
        self.up()?.get_prompt_once(params).await
    }

    /// One round of `resources/read` outside a call: the contents, or the server's
    /// questions (2026-07-28). The host's own reads go through `dispatch::read_resource`.
    pub async fn read_resource_once(
        &self,
        params: ReadResourceRequestParams,
    ) -> Asked<ReadResourceResponse> {
        self.up()?.read_resource_once(params).await
    }

    /// `completion/complete`: the server's suggestions for an argument.
    pub async fn complete(&self, params: CompleteRequestParams) -> Asked<CompleteResult> {
        self.up()?.complete(params).await
    }

    /// Send one request and return its handle: the answer to wait for, the progress
    /// token it carries, and the way to cancel it. Tool calls and resource reads are sent
    /// this way, so one time limit and one Stop path serve both (`dispatch`). A server
    /// that is down fails it at once ([`Connection::broken_reason`] says why).
    pub async fn send(
        &self,
        request: rmcp::model::ClientRequest,
    ) -> Result<rmcp::service::RequestHandle<RoleClient>, rmcp::ServiceError> {
        self.send_declaring(request, None).await
    }

    /// [`Connection::send`], telling a 2026-07-28 server `capabilities` in the request's
    /// `_meta` instead of the host's own (a gateway declares its caller's).
    pub async fn send_declaring(
        &self,
        request: rmcp::model::ClientRequest,
        capabilities: Option<&rmcp::model::ClientCapabilities>,
    ) -> Result<rmcp::service::RequestHandle<RoleClient>, rmcp::ServiceError> {
        let mut options = rmcp::service::PeerRequestOptions::no_options();
        let modern = self.protocol.as_str() >= ProtocolVersion::V_2026_07_28.as_str();
        if let (Some(capabilities), true) = (capabilities, modern) {
            let mut meta = rmcp::model::RequestMetaObject::default();
            meta.set_client_capabilities(capabilities.clone());
            options = options.with_meta(meta);
        }
        self.up()?.send_request_with_option(request, options).await
    }

    /// The peer of the run in use, or, while the server is down, a [`ServerDown`].
    fn up(&self) -> Result<rmcp::Peer<RoleClient>, rmcp::ServiceError> {
        if let Some(why) = self.link.down_reason() {
            let error = rmcp::transport::DynamicTransportError::from_parts(
                "gatehouse restart",
                std::any::TypeId::of::<ServerDown>(),
                Box::new(ServerDown(why)),
            );
            return Err(rmcp::ServiceError::TransportSend(error));
        }
        Ok(self.session().peer.clone())
    }

    /// Do this connection's requests declare the tasks extension? Only on 2026-07-28,
    /// where it is defined; only then may a call come back as a task.
    pub fn declares_tasks(&self) -> bool {
        use rmcp::ClientHandler;
        self.protocol.as_str() >= ProtocolVersion::V_2026_07_28.as_str()
            && self.handler().get_info().capabilities.supports_tasks()
    }

    /// The client side of this connection (progress routing, questions asked).
    pub fn handler(&self) -> &HostHandler {
        &self.handler
    }

    /// The rmcp peer of the run in use, for requests the host itself never makes
    /// (prompt and resource lists, as the conformance client asks for).
    pub fn peer(&self) -> rmcp::Peer<RoleClient> {
        self.session().peer.clone()
    }

    /// Does the server offer resources (so `read_resource` may follow its links)?
    pub fn offers_resources(&self) -> bool {
        self.session()
            .peer
            .peer_info()
            .is_some_and(|i| i.capabilities.resources.is_some())
    }

    /// Does the server say it announces changes to its tool list?
    pub fn announces_tool_changes(&self) -> bool {
        self.session().peer.peer_info().is_some_and(|i| {
            i.capabilities
                .tools
                .as_ref()
                .and_then(|t| t.list_changed)
                .unwrap_or(false)
        })
    }

    /// Open a `subscriptions/listen` stream for tool-list changes (2026-07-28), waiting
    /// for its acknowledgment so no change made after this is missed.
    pub async fn listen_for_tool_changes(&self) -> Option<rmcp::service::Subscription> {
        let filter = rmcp::model::SubscriptionFilter::builder()
            .tools_list_changed()
            .build();
        self.session().peer.listen(filter).await.ok()
    }

    /// Open a `subscriptions/listen` stream for updates of these resources (2026-07-28),
    /// waiting for its acknowledgment; `None` when the server does not take it (an older
    /// server, or one whose acknowledgment leaves every one of them out). Which it took
    /// is the subscription's `acknowledged()`.
    pub async fn listen_for_resources(
        &self,
        uris: &[String],
    ) -> Option<rmcp::service::Subscription> {
        if self.protocol.as_str() < ProtocolVersion::V_2026_07_28.as_str() {
            return None;
        }
        let filter = rmcp::model::SubscriptionFilter::builder()
            .resource_subscriptions(uris.iter().cloned())
            .build();
        let subscription = self.up().ok()?.listen(filter).await.ok()?;
        let taken = subscription
            .acknowledged()
            .resource_subscriptions
            .as_ref()
            .is_some_and(|taken| taken.iter().any(|u| uris.contains(u)));
        taken.then_some(subscription)
    }

    /// Close the connection while others may still hold it (a gateway's sessions): no
    /// more restarts, and the run in use closed as [`Connection::close`] closes it. Their
    /// requests then fail as on a closed connection. The supervisor ends on its own.
    pub async fn close_shared(&self) {
        self.link.close();
        self.link.current().close().await;
    }

    /// Close the connection: no more restarts; the server gets [`CLOSE_LIMIT`] to exit,
    /// and its last stderr lines are read.
    pub async fn close(mut self) {
        self.link.close();
        if let Some(supervisor) = self.supervisor.take() {
            // A restart under way ends with the link closed; its run is closed below.
            let _ = tokio::time::timeout(CLOSE_LIMIT, supervisor).await;
        }
        self.link.current().close().await;
    }
}

impl Drop for Connection {
    /// A connection dropped without [`Connection::close`] is not restarted either: its
    /// run ends with it (the child is killed on drop).
    fn drop(&mut self) {
        self.link.close();
    }
}

/// A list a server gives page by page: how one page is asked for, and what it holds.
pub trait Paged: Sized + Send {
    /// What the list holds.
    type Item;
    /// One page, asked of the server's peer.
    fn ask(
        peer: rmcp::Peer<RoleClient>,
        params: rmcp::model::PaginatedRequestParams,
    ) -> futures::future::BoxFuture<'static, Result<Self, rmcp::ServiceError>>;
    /// The page's items, and the cursor of the next page.
    fn split(self) -> (Vec<Self::Item>, Option<String>);
    /// A whole list as one page that every caller may share, never fresh (a gateway
    /// passing a list on: `cacheScope: "public"`, `ttlMs: 0`).
    fn shared(items: Vec<Self::Item>) -> Self;
}

/// [`Paged`] for one of rmcp's list results: its peer method and its items' field.
macro_rules! paged {
    ($($result:ident: $item:ident, $method:ident, $field:ident;)*) => {$(
        impl Paged for rmcp::model::$result {
            type Item = rmcp::model::$item;
            fn ask(
                peer: rmcp::Peer<RoleClient>,
                params: rmcp::model::PaginatedRequestParams,
            ) -> futures::future::BoxFuture<'static, Result<Self, rmcp::ServiceError>> {
                Box::pin(async move { peer.$method(Some(params)).await })
            }
            fn split(self) -> (Vec<rmcp::model::$item>, Option<String>) {
                (self.$field, self.next_cursor)
            }
            fn shared(items: Vec<rmcp::model::$item>) -> Self {
                let mut page = Self::with_all_items(items);
                page.ttl_ms = Some(0);
                page.cache_scope = Some(rmcp::model::CacheScope::Public);
                page
            }
        }
    )*};
}

paged! {
    ListToolsResult: Tool, list_tools, tools;
    ListPromptsResult: Prompt, list_prompts, prompts;
    ListResourcesResult: Resource, list_resources, resources;
    ListResourceTemplatesResult: ResourceTemplate, list_resource_templates, resource_templates;
}
