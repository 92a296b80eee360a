//! What the host does with each message on its way, below rmcp: [`Tap`] shows every
//! message to an observer that wants it (`--record`, the lab), with the host's secrets
//! replaced; [`InOrder`] takes progress, log messages and "tool list changed" as they are read, and lets
//! through only answers to requests the host actually has in flight.

use std::{
    collections::{HashSet, VecDeque},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use rmcp::{
    RoleClient,
    model::{ClientNotification, ClientRequest, JsonRpcMessage, RequestId, ServerNotification},
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};
use serde_json::json;

use super::handler::{HostHandler, LogRoute, ProgressRoute};
use crate::trace::{Direction, Observer, Trace, Who, WireEvent};

/// How many cancelled requests are remembered, so their late answers are dropped quietly.
pub const REMEMBERED_CANCELLED: usize = 64;
/// How many dropped answers are told one by one in the run; the rest are counted.
pub const NOTED_DROPS: usize = 10;

/// A transport that shows every message to an observer on its way (`--record`, the lab).
/// The host's secrets are replaced in what the observer sees; nothing else is changed.
pub struct Tap<T> {
    inner: T,
    server: String,
    observer: Arc<dyn Observer>,
    trace: Trace,
}

impl<T> Tap<T> {
    /// Wrap `inner`, showing its messages to `trace`'s observer.
    pub fn new(inner: T, server: &str, trace: &Trace) -> Self {
        Tap {
            inner,
            server: server.to_owned(),
            observer: trace.observer(),
            trace: trace.clone(),
        }
    }

    fn show(&self, direction: Direction, mut message: serde_json::Value) {
        self.trace.secrets().json(&mut message);
        self.observer
            .wire(&WireEvent::new(&self.server, direction, message));
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Tap<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.show(
            Direction::ToServer,
            serde_json::to_value(&item).unwrap_or_default(),
        );
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let received = self.inner.receive().await;
        if let Some(m) = &received {
            self.show(
                Direction::FromServer,
                serde_json::to_value(m).unwrap_or_default(),
            );
        }
        received
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// A transport that takes progress and "my tool list changed" (older revisions) as each
/// message is read, in the order they came, and checks every answer against the requests
/// in flight.
///
/// rmcp hands notifications to the handler in tasks of their own, so a call's response
/// read just after one could reach the turn first: the last progress lost, or the model
/// offered the old list. And rmcp matches an answer whose id is the string `"2"` to the
/// request `2`; the host accepts an answer only with its request's id in value and JSON
/// type, once. Answers to ids never asked, of the other type, with a null id, or repeated
/// after the real one are dropped here and noted in the run.
pub struct InOrder<T> {
    inner: T,
    server: String,
    tools_changed: Arc<AtomicBool>,
    progress: ProgressRoute,
    logs: LogRoute,
    trace: Trace,
    in_flight: HashSet<RequestId>,
    cancelled: VecDeque<RequestId>,
    /// `server/discover` probes not answered yet.
    probing: Vec<RequestId>,
    /// Probes given up when `initialize` followed them.
    abandoned_probes: Vec<RequestId>,
    /// Set when one of those is answered with a result: the server speaks 2026-07-28 and
    /// was only slower than rmcp's wait (it then refuses the `initialize`).
    late_discover: Arc<AtomicBool>,
    dropped: usize,
}

impl<T> InOrder<T> {
    /// Wrap `inner`, reporting to `handler`'s tool-list flag and progress route.
    pub fn new(inner: T, server: &str, handler: &HostHandler, trace: &Trace) -> Self {
        InOrder {
            inner,
            server: server.to_owned(),
            tools_changed: handler.tools_changed.clone(),
            progress: handler.progress.clone(),
            logs: handler.logs.clone(),
            trace: trace.clone(),
            in_flight: HashSet::new(),
            cancelled: VecDeque::new(),
            probing: Vec::new(),
            abandoned_probes: Vec::new(),
            late_discover: Arc::default(),
            dropped: 0,
        }
    }

    /// Set `flag` when a `server/discover` given up for `initialize` is answered with a
    /// result.
    pub fn noting_late_discover(mut self, flag: &Arc<AtomicBool>) -> Self {
        self.late_discover = flag.clone();
        self
    }

    /// A request the host no longer waits for: its late answer is dropped without a note.
    fn give_up(&mut self, id: RequestId) {
        if self.cancelled.len() == REMEMBERED_CANCELLED {
            self.cancelled.pop_front();
        }
        self.cancelled.push_back(id);
    }

    /// Is this answer one the host is waiting for? Takes it off the list if so.
    fn expected(&mut self, id: Option<&RequestId>) -> bool {
        if let Some(id) = id
            && self.in_flight.remove(id)
        {
            return true;
        }
        // A late answer to a request the host gave up on is no surprise.
        if id.is_some_and(|id| self.cancelled.contains(id)) {
            return false;
        }
        self.dropped += 1;
        if self.dropped <= NOTED_DROPS {
            let shown = id.map_or(serde_json::Value::Null, |id| json!(id));
            self.trace.add(
                Who::Host,
                format!(
                    "dropped an answer from {} with id {shown}: no request of the host's has that id{}",
                    self.server,
                    if self.dropped == NOTED_DROPS {
                        " (further dropped answers are counted, not shown)"
                    } else {
                        ""
                    }
                ),
                json!({"server": self.server, "id": shown, "decision": "dropped"}),
            );
        }
        false
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for InOrder<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        match &item {
            JsonRpcMessage::Request(r) => {
                match &r.request {
                    // rmcp's negotiation sends `initialize` on the same connection once
                    // it gave up waiting for its `server/discover` (10 s): that probe's
                    // late answer is not the handshake's ("uncorrelated error response").
                    ClientRequest::InitializeRequest(_) => {
                        for id in std::mem::take(&mut self.probing) {
                            if self.in_flight.remove(&id) {
                                self.give_up(id.clone());
                                self.abandoned_probes.push(id);
                            }
                        }
                    }
                    ClientRequest::DiscoverRequest(_) => self.probing.push(r.id.clone()),
                    _ => {}
                }
                self.in_flight.insert(r.id.clone());
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                    && self.in_flight.remove(id)
                {
                    self.give_up(id.clone());
                }
            }
            _ => {}
        }
        self.inner.send(item)
    }

    #[allow(deprecated)] // SEP-2577 deprecates logging; older revisions still log
    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let received = self.inner.receive().await?;
            match &received {
                JsonRpcMessage::Response(r) if !self.expected(Some(&r.id)) => {
                    if self.abandoned_probes.contains(&r.id) {
                        self.late_discover.store(true, Ordering::SeqCst);
                    }
                    continue;
                }
                JsonRpcMessage::Error(e) if !self.expected(e.id.as_ref()) => continue,
                JsonRpcMessage::Notification(n) => match &n.notification {
                    ServerNotification::ToolListChangedNotification(_) => {
                        self.tools_changed.store(true, Ordering::SeqCst);
                    }
                    ServerNotification::ProgressNotification(p) => {
                        let routes = self.progress.lock().unwrap_or_else(|e| e.into_inner());
                        if let Some(to) = routes.get(&p.params.progress_token) {
                            // Full: the host is behind; this one is not worth its memory.
                            let _ = to.try_send(p.params.clone());
                        }
                    }
                    ServerNotification::LoggingMessageNotification(m) => {
                        let routes = self.progress.lock().unwrap_or_else(|e| e.into_inner());
                        let only = (routes.len() == 1).then(|| routes.keys().next()).flatten();
                        let logs = self.logs.lock().unwrap_or_else(|e| e.into_inner());
                        if let Some(to) = only.and_then(|token| logs.get(token)) {
                            let _ = to.try_send(m.params.clone());
                        }
                    }
                    _ => {}
                },
                _ => {}
            }
            return Some(received);
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
