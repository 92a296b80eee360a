//! The request itself: `tools/call` (and the host's own `resources/read`) with a time
//! limit per server round, the person's Stop, and the `input_required` rounds of revision
//! 2026-07-28 driven by the host; a call the server runs as a task is followed by
//! [`task`].
//!
//! The host drives the rounds itself (rather than rmcp's automatic loop) so that the time
//! limit covers each server round and never the person's thinking, the rounds are capped,
//! and every question reaches the person with the name of the server that asks. When a
//! round runs out of time, or the person stops it, the request is cancelled: rmcp sends
//! `notifications/cancelled`, awaited until written. Progress extends a round's limit (up
//! to its hard maximum) only when it rises ([`rising`]).

mod clock;
mod relayed;
mod rising;
mod stop;
pub mod task;
#[cfg(test)]
mod tests;

pub use relayed::{Answered, Relayed, asks_the_person, call_tool_round, task_request};
pub use stop::Stopper;

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use rmcp::{
    ServiceError,
    model::{
        CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, CreateTaskResult,
        ErrorData, InputRequest, InputRequests, InputRequiredResult, InputResponses, JsonObject,
        ReadResourceRequest, ReadResourceRequestParams, ReadResourceResult, RequestMetaObject,
        ServerResult,
    },
};
use serde_json::json;

use crate::{
    connect::{Connection, handler::MAX_QUEUED_PROGRESS},
    person::{self, Person},
    trace::{ProgressEvent, Trace},
};

/// How a request ended, before it is shaped for the model: `T` is what a complete answer
/// holds (a tool's result, or a resource's contents).
#[derive(Debug)]
pub enum CallEnd<T = CallToolResult> {
    /// The server answered with a result (for a tool, possibly `isError: true`).
    Result(T),
    /// The server answered with a JSON-RPC error.
    ProtocolError(ErrorData),
    /// A server round took longer than the limit; the request was cancelled.
    TimedOut(Duration),
    /// The connection failed or the server broke the protocol.
    Failed(String),
    /// The person stopped the call (Ctrl-C, the lab's Stop button); it was cancelled.
    Stopped,
    /// The server runs the call as a task that was still going when the turn's wait ran
    /// out: it goes on in the background.
    Background(task::TaskSeen),
}

/// A finished request: how it ended, and what it took.
#[derive(Debug)]
pub struct Dispatched<T = CallToolResult> {
    /// How it ended.
    pub end: CallEnd<T>,
    /// Did the server ask the person anything during this call?
    pub asked_user: bool,
    /// Server rounds sent (1 without `input_required`).
    pub rounds: usize,
    /// From the first round sent to the end.
    pub elapsed: Duration,
    /// The task the server ran the call as, if it did, as last seen.
    pub task: Option<task::TaskSeen>,
}

/// Limits for one call.
#[derive(Debug, Clone, Copy)]
pub struct CallLimits {
    /// How long a server round may go without finishing or reporting progress.
    pub round_timeout: Duration,
    /// Progress extends a round's limit, but never past this.
    pub max_round_timeout: Duration,
    /// Most `input_required` rounds before the host gives up (for a task: most questions).
    pub max_input_rounds: usize,
    /// How long a call run as a task is waited on before it goes on in the background.
    pub task_wait: Duration,
}

impl CallLimits {
    /// The limits the settings give a call (`toolTimeoutMs`, `toolMaxTimeoutMs`,
    /// `maxInputRounds`, `taskWaitMs`).
    pub fn of(settings: &crate::config::Settings) -> CallLimits {
        CallLimits {
            round_timeout: settings.tool_timeout,
            max_round_timeout: settings.tool_max_timeout,
            max_input_rounds: settings.max_input_rounds,
            task_wait: settings.task_wait,
        }
    }

    /// These limits with another wait for a call run as a task (`gatehouse tasks` waits
    /// as long as it is told; a task followed again at a turn's start does not wait).
    pub fn with_task_wait(self, task_wait: Duration) -> CallLimits {
        CallLimits { task_wait, ..self }
    }
}

/// Most progress notifications recorded as steps for one call; the rest are still shown
/// live but not kept, so a chatty server cannot fill memory.
pub const MAX_PROGRESS_STEPS: usize = 200;

/// How long the host waits for a cancellation to be written to the server.
pub const CANCEL_SEND_LIMIT: Duration = Duration::from_secs(2);

/// How one server round ended. It lives for one match on the stack, so the large answer
/// is not worth a heap allocation per call.
#[allow(clippy::large_enum_variant)]
enum Round {
    Answered(Result<ServerResult, ServiceError>),
    TimedOut(Duration),
    Stopped,
}

/// What one round is about, for the progress it reports.
struct Round1<'a> {
    conn: &'a Connection,
    label: &'a str,
    limits: CallLimits,
    trace: &'a Trace,
    stop: &'a CancellationToken,
    /// The caller a gateway passes the call on for, if any.
    relay: Option<&'a Relay>,
}

/// A copy of a call's progress, for someone else to show (a gateway passes it to its
/// caller): bounded, and a notification that does not fit is dropped, never waited for.
pub type ProgressRelay = mpsc::Sender<rmcp::model::ProgressNotificationParam>;

/// What a gateway's caller brings to a call the gateway passes on: where its progress
/// goes, and the capabilities the server is told in each request (2026-07-28), so a
/// server asks only what the caller's client can answer.
#[derive(Clone, Default)]
pub struct Relay {
    /// Where each progress notification goes too, as it comes.
    pub progress: Option<ProgressRelay>,
    /// Declared to the server instead of the host's own.
    pub capabilities: Option<rmcp::model::ClientCapabilities>,
    /// Where the server's log messages go while the call is the one in flight on its
    /// connection (`connect::handler::LogRoute`); `None`: nowhere.
    #[allow(deprecated)] // SEP-2577 deprecates logging; older revisions still log
    pub logs: Option<mpsc::Sender<rmcp::model::LoggingMessageNotificationParam>>,
    /// The caller takes tasks itself (it declared the extension): a task the server
    /// makes is handed back ([`Relayed::Task`]) rather than followed here.
    pub tasks_to_caller: bool,
    /// Who answers the server's questions that no round of the caller's carries: those of
    /// a task followed here, and an older server's `elicitation/create` while this call is
    /// the one in flight on its connection. `None`: nobody (each is declined).
    pub person: Option<Arc<dyn crate::person::Person>>,
    /// The caller's own time answering the server's question while a gateway holds the
    /// call: left out of the round's time limit, as a sign-in's is.
    pub person_time: Option<person::PersonTime>,
}

impl Round1<'_> {
    /// Wait for one server round: its answer, the time limit (extended by progress up to
    /// the hard maximum), or the person's stop. Progress is reported as it comes.
    async fn send(&self, request: ClientRequest, progress_steps: &mut usize) -> Round {
        let (conn, limits) = (self.conn, self.limits);
        let started = tokio::time::Instant::now();
        let _waiting = Waited::on(self.trace, &conn.name, self.label);
        // Sent by hand rather than with rmcp's helpers, for two reasons: the request's own
        // progress token routes only its progress here, and a cancellation is awaited until
        // it is written, so a server hears it even if the host exits next.
        let declared = self.relay.and_then(|r| r.capabilities.as_ref());
        let mut handle = match conn.send_declaring(request, declared).await {
            Ok(handle) => handle,
            Err(e) => return Round::Answered(Err(e)),
        };
        let (tx, mut rx) = mpsc::channel(MAX_QUEUED_PROGRESS);
        let handler = conn.handler();
        let token = handle.progress_token.clone();
        handler.route_progress(token.clone(), tx);
        if let Some(logs) = self.relay.and_then(|r| r.logs.clone()) {
            handler.route_logs(token.clone(), logs);
        }
        if let Some(person) = self.relay.and_then(|r| r.person.clone()) {
            handler.route_questions(token.clone(), person);
        }
        let mut hard_deadline = started + limits.max_round_timeout.max(limits.round_timeout);
        let mut deadline = started + limits.round_timeout;
        // The person signing in to the server (a step-up for this call), answering an
        // older server's question inside it, or answering its question while a gateway
        // holds the call, stops the clock.
        let own = self.relay.and_then(|r| r.person_time.as_ref());
        let times = [conn.person_time(), handler.answering()];
        let mut person = clock::Clocks::of(times.into_iter().chain(own));
        let mut rising = rising::Rising::default();
        let mut record = |p: rmcp::model::ProgressNotificationParam| {
            if let Some(relay) = self.relay.and_then(|r| r.progress.as_ref()) {
                let _ = relay.try_send(p.clone());
            }
            let event = ProgressEvent {
                server: conn.name.to_string(),
                tool: self.label.to_owned(),
                progress: p.progress,
                total: p.total,
                message: p.message,
            };
            *progress_steps += 1;
            self.trace
                .progress(&event, *progress_steps <= MAX_PROGRESS_STEPS);
        };
        let ended = loop {
            let person_busy = person.busy();
            tokio::select! {
                answer = &mut handle.rx => {
                    handler.end_progress(&token);
                    handler.end_logs(&token);
                    handler.end_questions(&token);
                    // Progress the server sent before its answer was routed as it was read
                    // (`connect::InOrder`), so it is all here: shown before the result.
                    while let Ok(p) = rx.try_recv() {
                        if rising.admits(p.progress) {
                            record(p);
                        }
                    }
                    let answer = answer.map_err(|_| ServiceError::TransportClosed).and_then(|r| r);
                    return Round::Answered(answer);
                }
                Some(p) = rx.recv() => {
                    if rising.admits(p.progress) {
                        deadline = (tokio::time::Instant::now() + limits.round_timeout).min(hard_deadline);
                        record(p);
                    }
                }
                paused = person.changed() => {
                    deadline += paused;
                    hard_deadline += paused;
                }
                _ = tokio::time::sleep_until(deadline), if !person_busy => break (Round::TimedOut(started.elapsed()), "request timeout"),
                _ = self.stop.cancelled() => break (Round::Stopped, "stopped by the person"),
            }
        };
        handler.end_progress(&token);
        handler.end_logs(&token);
        handler.end_questions(&token);
        let (round, reason) = ended;
        // Bounded: a server that stops reading its input must not hold the host here.
        let _ = tokio::time::timeout(CANCEL_SEND_LIMIT, handle.cancel(Some(reason.into()))).await;
        round
    }
}

/// The observer told that the host waits on a round, and told it no longer does however
/// the round ends (an answer, the time limit, the person's stop, an error).
struct Waited<'a>(&'a Trace);

impl<'a> Waited<'a> {
    fn on(trace: &'a Trace, server: &str, tool: &str) -> Waited<'a> {
        trace.waiting(Some(&crate::trace::Waiting { server, tool }));
        Waited(trace)
    }
}

impl Drop for Waited<'_> {
    fn drop(&mut self) {
        self.0.waiting(None);
    }
}

/// The end of a round that did not answer, or an answer that is an error.
fn failed<T>(
    conn: &Connection,
    reply: Result<ServerResult, ServiceError>,
) -> Result<ServerResult, CallEnd<T>> {
    match reply {
        Ok(result) => Ok(result),
        Err(ServiceError::McpError(e)) => Err(CallEnd::ProtocolError(e)),
        Err(ServiceError::TransportClosed) => Err(CallEnd::Failed(match conn.broken_reason() {
            Some(why) => format!("{}: {why}", conn.name),
            None => format!("the connection to {} closed during the call", conn.name),
        })),
        Err(e) => Err(CallEnd::Failed(
            match crate::connect::server_down(&e)
                .map(str::to_owned)
                .or_else(|| crate::connect::sign_in_failure(&e))
            {
                Some(words) => format!("{}: {words}", conn.name),
                None => e.to_string(),
            },
        )),
    }
}

/// One call to send: to which server, which tool (its name on the wire), with what.
pub struct Call<'a> {
    /// The server's connection.
    pub conn: &'a Connection,
    /// The tool's own name, as the server lists it.
    pub wire_name: &'a str,
    /// The checked arguments.
    pub arguments: JsonObject,
    /// Request `_meta` beyond the protocol envelope (trace context).
    pub meta: Option<RequestMetaObject>,
    /// The gateway's caller the call is passed on for, if it is.
    pub relay: Option<Relay>,
}

impl<'a> Call<'a> {
    /// The round that sends this call, and its first request's params.
    fn first_round<'r>(
        &'r self,
        limits: CallLimits,
        trace: &'r Trace,
        stop: &'r CancellationToken,
    ) -> (Round1<'r>, CallToolRequestParams)
    where
        'a: 'r,
    {
        let round = Round1 {
            conn: self.conn,
            label: self.wire_name,
            limits,
            trace,
            stop,
            relay: self.relay.as_ref(),
        };
        let mut params = CallToolRequestParams::new(self.wire_name.to_owned())
            .with_arguments(self.arguments.clone());
        params.meta = self.meta.clone();
        (round, params)
    }
}

/// How one round of a call ended: the call's end, or the server's questions.
enum Asked {
    Ended(CallEnd),
    Asks(InputRequiredResult),
    /// The server runs the call as a task (only when the connection declared tasks).
    Task(Box<CreateTaskResult>),
}

impl Round1<'_> {
    /// Send one round of a call and read its answer: the end of the call, or the
    /// server's `input_required` questions.
    async fn call_round(
        &self,
        params: &CallToolRequestParams,
        progress_steps: &mut usize,
    ) -> Asked {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params.clone()));
        let reply = match self.send(request, progress_steps).await {
            Round::Answered(reply) => reply,
            Round::TimedOut(after) => return Asked::Ended(CallEnd::TimedOut(after)),
            Round::Stopped => return Asked::Ended(CallEnd::Stopped),
        };
        Asked::Ended(match failed(self.conn, reply) {
            Err(end) => end,
            Ok(ServerResult::CallToolResult(result)) => CallEnd::Result(result),
            Ok(ServerResult::InputRequiredResult(asked)) => return Asked::Asks(asked),
            Ok(ServerResult::CreateTaskResult(created)) if self.conn.declares_tasks() => {
                return Asked::Task(Box::new(created));
            }
            Ok(ServerResult::CreateTaskResult(_)) => CallEnd::Failed(
                "the server answered with a task, which this host did not ask for".into(),
            ),
            Ok(_) => CallEnd::Failed(
                "the server answered with something that is not a tool's result".into(),
            ),
        })
    }
}

/// Who and what watch over a call while it runs: the person who answers its questions,
/// the trace its steps are told to, and the token that stops it.
#[derive(Clone, Copy)]
pub struct Watch<'a> {
    /// Answers the server's questions (never the model).
    pub person: &'a dyn Person,
    /// Where the call's steps and records go.
    pub trace: &'a Trace,
    /// Cancelled by Stop or Ctrl-C: the call is cancelled at the server.
    pub stop: &'a CancellationToken,
}

/// Send one call and see it through to its end, answering the server's questions through
/// the person.
pub async fn call_tool(call: Call<'_>, limits: CallLimits, watch: Watch<'_>) -> Dispatched {
    let Watch {
        person,
        trace,
        stop,
    } = watch;
    let start = Instant::now();
    let conn = call.conn;
    let (round, mut params) = call.first_round(limits, trace, stop);
    let (mut asked_user, mut rounds, mut progress_steps) = (false, 0, 0);
    let mut seen = None;
    let end = loop {
        rounds += 1;
        let sent = round.call_round(&params, &mut progress_steps).await;
        // An older server may have asked with elicitation/create during the round.
        asked_user |= conn.handler().take_asked();
        let asked = match sent {
            Asked::Ended(end) => break end,
            Asked::Asks(asked) => asked,
            Asked::Task(created) => {
                let follow = task::Follow {
                    round: &round,
                    person,
                    meta: params.meta.clone(),
                    resumed: false,
                };
                let followed = follow.run(*created).await;
                asked_user |= followed.asked_user;
                seen = followed.seen;
                break followed.end;
            }
        };
        if rounds > limits.max_input_rounds {
            break CallEnd::Failed(format!(
                "the server asked for input more than {} times in one call; the host stopped",
                limits.max_input_rounds
            ));
        }
        asked_user |= asks_the_person(&asked);
        let requests = asked.input_requests.clone().unwrap_or_default();
        match answers(conn, &requests, person, trace).await {
            Ok(responses) => params = next_round(params, responses, asked.request_state),
            Err(reason) => break CallEnd::Failed(reason),
        }
    };
    // A boxed server's refusal may be its box's: the person is told what would allow it.
    let refused = match &end {
        CallEnd::Result(r) if r.is_error == Some(true) => Some(
            r.content
                .iter()
                .filter_map(|b| b.as_text().map(|t| t.text.as_str()))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        CallEnd::ProtocolError(e) => Some(e.message.to_string()),
        _ => None,
    };
    if let Some(text) = refused {
        crate::connect::sandbox::walls::tell(trace, &conn.name, &text);
    }
    Dispatched {
        end,
        asked_user,
        rounds,
        elapsed: start.elapsed(),
        task: seen,
    }
}

/// Look again at task `id` on `conn`, which an earlier call left running: one look at
/// once, then polls for `limits.task_wait`, its questions answered through the person, as
/// a call's are.
pub async fn follow_task(
    conn: &Connection,
    id: &str,
    meta: Option<RequestMetaObject>,
    limits: CallLimits,
    watch: Watch<'_>,
) -> Dispatched {
    let start = Instant::now();
    let round = Round1 {
        conn,
        label: "tasks/get",
        limits,
        trace: watch.trace,
        stop: watch.stop,
        relay: None,
    };
    let follow = task::Follow {
        round: &round,
        person: watch.person,
        meta,
        resumed: true,
    };
    let followed = follow.resume(id).await;
    Dispatched {
        end: followed.end,
        asked_user: followed.asked_user,
        rounds: 0,
        elapsed: start.elapsed(),
        task: followed.seen,
    }
}

/// The same call again, with the answers and the server's state echoed byte for byte.
fn next_round(
    params: CallToolRequestParams,
    responses: InputResponses,
    state: Option<String>,
) -> CallToolRequestParams {
    let mut params = params.with_input_responses(responses);
    match state {
        Some(state) => params.with_request_state(state),
        None => {
            params.request_state = None;
            params
        }
    }
}

/// Answer every question of an `input_required` round or of a task: forms through the
/// person, roots as none; a request for the host's model is refused (the host offers no
/// sampling).
async fn answers(
    conn: &Connection,
    asked: &InputRequests,
    person: &dyn Person,
    trace: &Trace,
) -> Result<InputResponses, String> {
    let mut responses = InputResponses::new();
    for (key, request) in asked {
        match request {
            InputRequest::Elicitation(req) => {
                let answer = person::ask_person(&conn.name, key, &req.params, person, trace).await;
                responses.insert(
                    key.clone(),
                    serde_json::to_value(&answer).unwrap_or_default(),
                );
            }
            // The host shares no filesystem roots with servers.
            InputRequest::ListRoots(_) => {
                responses.insert(key.clone(), json!({"roots": []}));
            }
            InputRequest::CreateMessage(_) => {
                return Err(format!(
                    "{} asked to use the host's model (sampling), which this host does not offer",
                    conn.name
                ));
            }
            _ => {
                return Err(format!(
                    "{} asked for a kind of input this host does not know",
                    conn.name
                ));
            }
        }
    }
    Ok(responses)
}

/// Read one resource, through the same time limit and Stop as a call (one round: the host
/// answers no questions on a read).
pub async fn read_resource(
    conn: &Connection,
    uri: &str,
    meta: Option<RequestMetaObject>,
    limits: CallLimits,
    trace: &Trace,
    stop: &CancellationToken,
) -> Dispatched<ReadResourceResult> {
    let start = Instant::now();
    let mut params = ReadResourceRequestParams::new(uri.to_owned());
    params.meta = meta;
    let round = Round1 {
        conn,
        label: "read_resource",
        limits,
        trace,
        stop,
        relay: None,
    };
    let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(params));
    let end = match round.send(request, &mut 0).await {
        Round::TimedOut(after) => CallEnd::TimedOut(after),
        Round::Stopped => CallEnd::Stopped,
        Round::Answered(reply) => match failed(conn, reply) {
            Err(end) => end,
            Ok(ServerResult::ReadResourceResult(read)) => CallEnd::Result(read),
            Ok(_) => CallEnd::Failed(
                "the server answered with something that is not a resource's contents".into(),
            ),
        },
    };
    Dispatched {
        end,
        asked_user: false,
        rounds: 1,
        elapsed: start.elapsed(),
        task: None,
    }
}
