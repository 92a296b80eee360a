//! What passes between a server and a gateway's caller while one call runs, besides
//! its questions and its end: what the server is told the caller's client can do, what
//! the client did not declare, and the call's progress and log messages on their way to
//! the caller ([`ToCaller`]).

use rmcp::{
    RoleServer,
    model::{ClientCapabilities, InputRequest, InputRequiredResult},
    service::RequestContext,
};

use gatehouse::{dispatch, text};

/// What the server is told the caller's client can do: what the client declared of
/// what the gateway passes on (forms, sampling, roots), and the tasks extension when the
/// caller takes tasks itself ([`takes_tasks`]) or cannot declare it (an older revision:
/// the gateway then follows a task itself). A 2026-07-28 caller that could declare the
/// extension and did not is not given tasks it never asked for: a tool that runs only as
/// a task answers it -32021, as the server would.
pub(super) fn declared(
    context: &RequestContext<RoleServer>,
    conn: &gatehouse::connect::Connection,
) -> ClientCapabilities {
    use rmcp::ClientHandler;
    let theirs = context.client_capabilities().unwrap_or_default();
    let mut caps = ClientCapabilities::default();
    caps.elicitation = theirs.elicitation;
    caps.sampling = theirs.sampling;
    caps.roots = theirs.roots;
    caps.extensions = conn.handler().get_info().capabilities.extensions;
    if modern(context)
        && !takes_tasks(context)
        && let Some(extensions) = caps.extensions.as_mut()
    {
        extensions.remove(rmcp::model::TASKS_EXTENSION_ID);
    }
    caps
}

/// Is the caller on revision 2026-07-28 or later?
pub(super) fn modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str())
}

/// Does the caller take tasks itself: a 2026-07-28 request that declared the extension?
pub(super) fn takes_tasks(context: &RequestContext<RoleServer>) -> bool {
    modern(context)
        && context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks())
}

/// Most characters of a server's progress message passed on to the caller.
pub const MAX_PROGRESS_MESSAGE_CHARS: usize = 500;
/// Most characters of a server's log message (its JSON) passed on; a longer one is cut
/// to its visible, clipped text.
pub const MAX_LOG_MESSAGE_CHARS: usize = 2_000;

/// A call's progress and log messages passed on to the caller while the call runs: the
/// progress under the caller's own progress token, when it gave one; the log messages
/// when it asked for them (a level in its `_meta`, or its session's `logging/setLevel`).
/// Text is made visible and clipped.
pub(super) struct ToCaller {
    progress: Option<dispatch::ProgressRelay>,
    #[allow(deprecated)]
    logs: Option<tokio::sync::mpsc::Sender<rmcp::model::LoggingMessageNotificationParam>>,
    #[allow(deprecated)]
    level: Option<rmcp::model::LoggingLevel>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl ToCaller {
    #[allow(deprecated)] // SEP-2577 deprecates logging; older revisions still have it
    pub(super) fn of(
        context: &RequestContext<RoleServer>,
        session_level: Option<rmcp::model::LoggingLevel>,
    ) -> ToCaller {
        let mut tasks = Vec::new();
        let progress = context.meta.get_progress_token().map(|token| {
            let (tx, mut rx) = tokio::sync::mpsc::channel::<rmcp::model::ProgressNotificationParam>(
                gatehouse::connect::handler::MAX_QUEUED_PROGRESS,
            );
            let peer = context.peer.clone();
            tasks.push(tokio::spawn(async move {
                while let Some(mut p) = rx.recv().await {
                    p.progress_token = token.clone();
                    p.message = p.message.map(|m| {
                        text::clip(&text::visible(&m), MAX_PROGRESS_MESSAGE_CHARS).into_owned()
                    });
                    let _ = peer.notify_progress(p).await;
                }
            }));
            tx
        });
        let level = context.meta.log_level().or(session_level);
        let logs = level.map(|_| {
            let (tx, mut rx) = tokio::sync::mpsc::channel::<
                rmcp::model::LoggingMessageNotificationParam,
            >(gatehouse::connect::handler::MAX_QUEUED_PROGRESS);
            let peer = context.peer.clone();
            tasks.push(tokio::spawn(async move {
                while let Some(mut m) = rx.recv().await {
                    m.logger = m
                        .logger
                        .map(|l| text::clip(&text::visible(&l), 200).into_owned());
                    let shown = m.data.to_string();
                    if shown.chars().count() > MAX_LOG_MESSAGE_CHARS {
                        m.data = serde_json::Value::String(
                            text::clip(&text::visible(&shown), MAX_LOG_MESSAGE_CHARS).into_owned(),
                        );
                    }
                    let _ = peer.notify_logging_message(m).await;
                }
            }));
            tx
        });
        ToCaller {
            progress,
            logs,
            level,
            tasks,
        }
    }

    /// What a call passed on for this caller takes to the server, with who answers the
    /// server's questions no round carries (an older client's person, or a 2026-07-28
    /// caller's whose call is held meanwhile, with their time answering).
    pub(super) fn relay(
        &self,
        capabilities: ClientCapabilities,
        tasks_to_caller: bool,
        person: Option<std::sync::Arc<dyn gatehouse::person::Person>>,
        person_time: Option<gatehouse::person::PersonTime>,
    ) -> dispatch::Relay {
        dispatch::Relay {
            progress: self.progress.clone(),
            capabilities: Some(capabilities),
            logs: self.logs.clone(),
            tasks_to_caller,
            person,
            person_time,
        }
    }

    /// The request `_meta` asking the server to log from the caller's level, if it asked.
    pub(super) fn meta(&self) -> Option<rmcp::model::RequestMetaObject> {
        let level = self.level?;
        let mut meta = rmcp::model::RequestMetaObject::default();
        meta.set_log_level(level);
        Some(meta)
    }

    /// The round ended: what came is sent before the answer is.
    pub(super) async fn finish(self) {
        let ToCaller {
            progress,
            logs,
            tasks,
            ..
        } = self;
        drop((progress, logs));
        for task in tasks {
            let _ = tokio::time::timeout(dispatch::CANCEL_SEND_LIMIT, task).await;
        }
    }
}

/// What a server asks that the caller's client did not declare it can answer, if
/// anything: a form (elicitation), the client's model (sampling) or its roots.
pub(super) fn undeclared(
    context: &RequestContext<RoleServer>,
    asked: &InputRequiredResult,
) -> Option<&'static str> {
    let caps = context.client_capabilities();
    asked
        .input_requests
        .iter()
        .flatten()
        .find_map(|(_, r)| match r {
            InputRequest::Elicitation(_) if !can_ask(context) => Some("the person a question"),
            InputRequest::CreateMessage(_)
                if caps.as_ref().is_none_or(|c| c.sampling.is_none()) =>
            {
                Some("for the client's model (sampling)")
            }
            InputRequest::ListRoots(_) if caps.as_ref().is_none_or(|c| c.roots.is_none()) => {
                Some("for the client's roots")
            }
            InputRequest::Elicitation(_)
            | InputRequest::CreateMessage(_)
            | InputRequest::ListRoots(_) => None,
            _ => Some("for a kind of input the gateway does not know"),
        })
}

/// Can the caller's client show the person a form?
pub(super) fn can_ask(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|c| c.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}
