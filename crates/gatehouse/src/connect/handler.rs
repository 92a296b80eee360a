//! The client side of one connection: what the host tells a server about itself, and where
//! a server's questions go: to the person, named with the asking server, and only while
//! the host has a call in flight on that server.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
};

use rmcp::{
    ClientHandler, ErrorData, RoleClient,
    model::{
        ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
        ElicitationCapability, FormElicitationCapability, Implementation,
        ProgressNotificationParam, ProgressToken, ProtocolVersion, UrlElicitationCapability,
    },
    service::RequestContext,
};
use serde_json::json;
use tokio::sync::mpsc;

use crate::{
    person::{self, Person},
    trace::{Trace, Who},
};

/// Most progress notifications queued for the call in flight. A server that sends them
/// faster than the host shows them loses the excess, never the host's memory.
pub const MAX_QUEUED_PROGRESS: usize = 1_024;

/// Each call in flight's progress token and where its progress goes. The host has one
/// call in flight per server; a gateway may have many, each with its own token.
pub(crate) type ProgressRoute =
    Arc<Mutex<HashMap<ProgressToken, mpsc::Sender<ProgressNotificationParam>>>>;

/// The log messages of the call in flight that wants them, by its progress token. A
/// server's `notifications/message` names no request, so a message goes to a call only
/// while it is the one call in flight on the connection; otherwise it is dropped.
#[allow(deprecated)] // SEP-2577 deprecates logging; servers on older revisions still log
pub(crate) type LogRoute =
    Arc<Mutex<HashMap<ProgressToken, mpsc::Sender<rmcp::model::LoggingMessageNotificationParam>>>>;

/// Who answers a server's own `elicitation/create` (an older server asks mid-call) for a
/// call in flight that brought someone: a gateway's caller, by the call's progress token.
/// The question names no request, so it goes to that person only while theirs is the one
/// call in flight on the connection.
pub(crate) type QuestionRoute = Arc<Mutex<HashMap<ProgressToken, Arc<dyn Person>>>>;

/// The client side of one connection. Progress and "tool list changed" are taken by the
/// transport as they are read ([`super::wire::InOrder`]); questions come here. Its clones
/// share every flag and count, so a server restarted under the same connection
/// (`connect::restart`) is served by the same handler.
#[derive(Clone)]
pub struct HostHandler {
    server: String,
    person: Arc<dyn Person>,
    trace: Trace,
    /// Where each call in flight's progress goes; empty when no call is in flight.
    pub(crate) progress: ProgressRoute,
    /// Where the log messages of a call in flight go, for the calls that want them.
    pub(crate) logs: LogRoute,
    /// Who answers the server's questions, for the calls in flight that brought someone;
    /// empty: the host's own person.
    askers: QuestionRoute,
    /// Set when an older server says its tool list changed.
    pub(crate) tools_changed: Arc<AtomicBool>,
    /// Set when the server asked the person during a call (older revisions).
    asked: Arc<AtomicBool>,
    /// Questions asked during the call in flight; past the call's cap they are declined.
    questions: Arc<AtomicUsize>,
    /// A question outside any call was refused already (and told in the run).
    told_outside: Arc<AtomicBool>,
    /// Most questions one call may ask ([`crate::config::Settings::max_input_rounds`]).
    max_questions: usize,
    /// The person's time answering an older server's question asked inside a call: the
    /// call's round leaves it out of its time limit (`dispatch`'s clocks watch it).
    answering: person::PersonTime,
    /// The revision offered by an `initialize` handshake.
    handshake_version: ProtocolVersion,
}

impl HostHandler {
    /// A handler for `server` that offers 2026-07-28.
    pub fn new(server: &str, person: Arc<dyn Person>, trace: Trace, max_questions: usize) -> Self {
        HostHandler {
            server: server.into(),
            person,
            trace,
            progress: Arc::new(Mutex::new(HashMap::new())),
            logs: Arc::new(Mutex::new(HashMap::new())),
            askers: Arc::new(Mutex::new(HashMap::new())),
            tools_changed: Arc::new(AtomicBool::new(false)),
            asked: Arc::default(),
            questions: Arc::default(),
            told_outside: Arc::default(),
            max_questions,
            answering: person::PersonTime::default(),
            handshake_version: ProtocolVersion::LATEST,
        }
    }

    /// The person's time answering this server's questions inside calls.
    pub(crate) fn answering(&self) -> &person::PersonTime {
        &self.answering
    }

    /// A handler for the `initialize` handshake, which offers the newest revision that
    /// still has one (2025-11-25), never 2026-07-28.
    pub fn for_handshake(
        server: &str,
        person: Arc<dyn Person>,
        trace: Trace,
        max_questions: usize,
    ) -> Self {
        HostHandler {
            handshake_version: ProtocolVersion::V_2025_11_25,
            ..HostHandler::new(server, person, trace, max_questions)
        }
    }

    /// Did the server ask the person since the last look? Clears the flag.
    pub fn take_asked(&self) -> bool {
        self.asked.swap(false, Ordering::SeqCst)
    }

    /// Send the progress notifications of one request (by its progress token) to `to`
    /// while it runs, until [`HostHandler::end_progress`]. Late progress of a request that
    /// ended is dropped. While a route is set, the server may ask the person questions
    /// (older revisions); a new call starts the count of its questions afresh.
    pub fn route_progress(
        &self,
        token: ProgressToken,
        to: mpsc::Sender<ProgressNotificationParam>,
    ) {
        self.questions.store(0, Ordering::SeqCst);
        self.routes().insert(token, to);
    }

    /// The request with this progress token ended: its progress goes nowhere now.
    pub fn end_progress(&self, token: &ProgressToken) {
        self.routes().remove(token);
    }

    /// Send the log messages the server sends while the request with this progress
    /// token is the only one in flight to `to`, until [`HostHandler::end_logs`].
    #[allow(deprecated)]
    pub fn route_logs(
        &self,
        token: ProgressToken,
        to: mpsc::Sender<rmcp::model::LoggingMessageNotificationParam>,
    ) {
        self.logs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(token, to);
    }

    /// The request with this progress token ended: its log messages go nowhere now.
    pub fn end_logs(&self, token: &ProgressToken) {
        self.logs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(token);
    }

    /// The server's questions asked while the request with this progress token is the
    /// only one in flight go to `person`, until [`HostHandler::end_questions`].
    pub fn route_questions(&self, token: ProgressToken, person: Arc<dyn Person>) {
        self.askers().insert(token, person);
    }

    /// The request with this progress token ended: its person is asked nothing more.
    pub fn end_questions(&self, token: &ProgressToken) {
        self.askers().remove(token);
    }

    fn askers(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, Arc<dyn Person>>> {
        self.askers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Who answers a question asked now: the host's person when no call brought one,
    /// else the one call in flight's; `None` when several calls are in flight and one of
    /// them brought someone, since the question cannot be told to be theirs.
    fn asker(&self) -> Option<Arc<dyn Person>> {
        let askers = self.askers();
        if askers.is_empty() {
            return Some(self.person.clone());
        }
        match (self.calls_in_flight(), askers.values().next()) {
            (1, Some(person)) if askers.len() == 1 => Some(person.clone()),
            _ => None,
        }
    }

    /// How many calls are in flight on this connection.
    pub fn calls_in_flight(&self) -> usize {
        self.routes().len()
    }

    fn routes(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, mpsc::Sender<ProgressNotificationParam>>>
    {
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The tool list must be read again (the server was restarted).
    pub(crate) fn mark_tools_changed(&self) {
        self.tools_changed.store(true, Ordering::SeqCst);
    }

    /// Did the server announce a changed tool list since the last look? Clears the flag.
    pub fn take_tools_changed(&self) -> bool {
        self.tools_changed.swap(false, Ordering::SeqCst)
    }

    fn in_call(&self) -> bool {
        self.calls_in_flight() > 0
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
        // The tasks extension exists from 2026-07-28 on: declared in every request then, so
        // any call may come back as a task (`dispatch::task`). A handshake-era connection
        // does not declare it.
        if self.handshake_version.as_str() >= ProtocolVersion::V_2026_07_28.as_str() {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(rmcp::model::TASKS_EXTENSION_ID.into(), Default::default());
        }
        let mut config = ClientConfig::new(capabilities, client_info());
        config.protocol_version = self.handshake_version.clone();
        config
    }

    /// A server on an older revision asks mid-call with `elicitation/create`; the person
    /// answers it exactly as they answer an `input_required` form. A question outside any
    /// call, or past the call's cap, is declined without bothering the person.
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        // Each kind of refusal is told once (per call, or for the connection), not once
        // per question: a flood of them must not flood the run.
        let asked = self.questions.fetch_add(1, Ordering::SeqCst);
        let asker = self.asker();
        let refused = if !self.in_call() {
            (!self.told_outside.swap(true, Ordering::SeqCst))
                .then_some("outside any call of the host's")
                .or(Some(""))
        } else if asked >= self.max_questions {
            (asked == self.max_questions)
                .then_some("more often than the host allows in one call")
                .or(Some(""))
        } else if asker.is_none() {
            Some(
                "while several calls were in flight on it (whose call it belongs to cannot be told)",
            )
        } else {
            None
        };
        if let Some(why) = refused {
            if !why.is_empty() {
                self.trace.add(
                    Who::Host,
                    format!(
                        "{} asked the person a question {why}: declined without asking (and any more like it)",
                        self.server
                    ),
                    json!({"server": self.server, "decision": "declined"}),
                );
            }
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        }
        let Some(asker) = asker else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        self.asked.store(true, Ordering::SeqCst);
        // The round that waits for this call stands still while the person answers.
        let _busy = self.answering.busy();
        Ok(person::ask_person(
            &self.server,
            "elicitation/create",
            &request,
            asker.as_ref(),
            &self.trace,
        )
        .await)
    }

    // No `on_progress` and no `on_tool_list_changed`: `InOrder` takes both notifications
    // as they are read, in order with the responses; the handler would see them later,
    // each in a task of its own.
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{person::Unattended, trace::Quiet};

    #[test]
    fn a_question_goes_to_the_one_call_in_flight_that_brought_someone_and_else_to_nobody() {
        let host: Arc<dyn Person> = Arc::new(Unattended::NOBODY);
        let caller: Arc<dyn Person> = Arc::new(Unattended::NOBODY);
        let handler = HostHandler::new("s", host.clone(), Trace::new(Arc::new(Quiet)), 4);
        let same = |a: Option<Arc<dyn Person>>, b: &Arc<dyn Person>| {
            a.is_some_and(|a| std::ptr::addr_eq(Arc::as_ptr(&a), Arc::as_ptr(b)))
        };
        let token = |n| ProgressToken(rmcp::model::NumberOrString::Number(n));
        let (tx, _rx) = mpsc::channel(1);
        assert!(
            same(handler.asker(), &host),
            "no call brought anyone: the host's person"
        );
        handler.route_progress(token(1), tx.clone());
        handler.route_questions(token(1), caller.clone());
        assert!(same(handler.asker(), &caller), "the one call in flight's");
        handler.route_progress(token(2), tx);
        assert!(
            handler.asker().is_none(),
            "two calls: whose it is cannot be told"
        );
        handler.end_progress(&token(2));
        assert!(same(handler.asker(), &caller));
        handler.end_questions(&token(1));
        assert!(same(handler.asker(), &host));
    }
}
