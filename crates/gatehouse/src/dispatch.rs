//! The call itself: `tools/call` with a time limit per server round, and the
//! `input_required` rounds of revision 2026-07-28 driven by the host.
//!
//! The host drives the rounds itself (rather than rmcp's automatic loop) so that the time
//! limit covers each server round and never the person's thinking, the rounds are capped,
//! and every question reaches the person with the name of the server that asks. When a
//! round runs out of time, dropping its request makes rmcp send `notifications/cancelled`.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use rmcp::{
    ServiceError,
    model::{
        CallToolRequest, CallToolRequestParams, CallToolResponse, CallToolResult, ClientRequest,
        ErrorData, InputRequest, InputResponses, JsonObject, RequestMetaObject, ServerResult,
    },
    service::PeerRequestOptions,
};
use serde_json::json;

use crate::{
    connect::{Connection, handler::MAX_QUEUED_PROGRESS},
    person::{self, Person},
    trace::{ProgressEvent, Trace},
};

/// How a call ended, before it is shaped for the model.
#[derive(Debug)]
pub enum CallEnd {
    /// The server answered with a result (which may be `isError: true`).
    Result(CallToolResult),
    /// The server answered with a JSON-RPC error.
    ProtocolError(ErrorData),
    /// A server round took longer than the limit; the request was cancelled.
    TimedOut(Duration),
    /// The connection failed or the server broke the protocol.
    Failed(String),
    /// The person stopped the call (Ctrl-C, the lab's Stop button); it was cancelled.
    Stopped,
}

/// Stops the call in flight, if any: its request is dropped, which sends
/// `notifications/cancelled` to the server. Cheap to clone and to hand to a signal handler.
#[derive(Clone, Default)]
pub struct Stopper {
    current: Arc<Mutex<Option<CancellationToken>>>,
}

impl Stopper {
    /// Stop the call in flight. Returns whether there was one.
    pub fn stop(&self) -> bool {
        match self
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// A token for a call that starts now; it is cleared by [`Stopper::finish`].
    pub fn begin(&self) -> CancellationToken {
        let token = CancellationToken::new();
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(token.clone());
        token
    }

    pub fn finish(&self) {
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// A finished call: how it ended, and what it took.
#[derive(Debug)]
pub struct Dispatched {
    pub end: CallEnd,
    /// Did the server ask the person anything during this call?
    pub asked_user: bool,
    /// Server rounds sent (1 without `input_required`).
    pub rounds: usize,
    pub elapsed: Duration,
}

/// Limits for one call.
#[derive(Debug, Clone, Copy)]
pub struct CallLimits {
    /// How long a server round may go without finishing or reporting progress.
    pub round_timeout: Duration,
    /// Progress extends a round's limit, but never past this.
    pub max_round_timeout: Duration,
    pub max_input_rounds: usize,
}

/// Most progress notifications recorded as steps for one call; the rest are still shown
/// live but not kept, so a chatty server cannot fill memory.
pub const MAX_PROGRESS_STEPS: usize = 200;

/// How one server round ended. It lives for one match on the stack, so the large answer
/// is not worth a heap allocation per call.
#[allow(clippy::large_enum_variant)]
enum Round {
    Answered(Result<CallToolResponse, ServiceError>),
    TimedOut(Duration),
    Stopped,
}

/// Wait for one server round: its answer, the time limit (extended by progress up to the
/// hard maximum), or the person's stop. Progress is reported as it comes.
async fn one_round(
    conn: &Connection,
    params: CallToolRequestParams,
    tool: &str,
    limits: CallLimits,
    trace: &Trace,
    stop: &CancellationToken,
    progress_steps: &mut usize,
) -> Round {
    let started = tokio::time::Instant::now();
    // Sent by hand rather than with `call_tool_once`, for two reasons: the request's own
    // progress token routes only its progress to this call, and a cancellation is
    // awaited until it is written, so a server hears it even if the host exits next.
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let mut handle = match conn
        .client
        .peer()
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
    {
        Ok(handle) => handle,
        Err(e) => return Round::Answered(Err(e)),
    };
    let (tx, mut rx) = mpsc::channel(MAX_QUEUED_PROGRESS);
    let handler = conn.client.service();
    handler.route_progress(Some((handle.progress_token.clone(), tx)));
    let hard_deadline = started + limits.max_round_timeout.max(limits.round_timeout);
    let mut deadline = started + limits.round_timeout;
    let mut record = |p: rmcp::model::ProgressNotificationParam| {
        let event = ProgressEvent {
            server: conn.name.clone(),
            tool: tool.to_owned(),
            progress: p.progress,
            total: p.total,
            message: p.message,
        };
        *progress_steps += 1;
        trace.progress(&event, *progress_steps <= MAX_PROGRESS_STEPS);
    };
    let round = loop {
        tokio::select! {
            answer = &mut handle.rx => {
                let answer = answer
                    .map_err(|_| ServiceError::TransportClosed)
                    .and_then(|r| r)
                    .and_then(|result| match result {
                        ServerResult::CallToolResult(r) => Ok(CallToolResponse::Complete(r)),
                        ServerResult::InputRequiredResult(r) => Ok(CallToolResponse::InputRequired(r)),
                        ServerResult::CreateTaskResult(r) => Ok(CallToolResponse::Task(r)),
                        _ => Err(ServiceError::UnexpectedResponse),
                    });
                handler.route_progress(None);
                // Progress the server sent before its answer was routed as it was read
                // (`connect::InOrder`), so it is all here: shown before the result.
                while let Ok(p) = rx.try_recv() {
                    record(p);
                }
                return Round::Answered(answer);
            }
            Some(p) = rx.recv() => {
                deadline = (tokio::time::Instant::now() + limits.round_timeout).min(hard_deadline);
                record(p);
            }
            _ = tokio::time::sleep_until(deadline) => break (Round::TimedOut(started.elapsed()), "request timeout"),
            _ = stop.cancelled() => break (Round::Stopped, "stopped by the person"),
        }
    };
    handler.route_progress(None);
    let (round, reason) = round;
    // Bounded: a server that stops reading its input must not hold the host here.
    let _ = tokio::time::timeout(CANCEL_SEND_LIMIT, handle.cancel(Some(reason.into()))).await;
    round
}

/// How long the host waits for a cancellation to be written to the server.
pub const CANCEL_SEND_LIMIT: Duration = Duration::from_secs(2);

/// One call to send: to which server, which tool (its name on the wire), with what.
pub struct Call<'a> {
    pub conn: &'a Connection,
    pub wire_name: &'a str,
    pub arguments: JsonObject,
    /// Request `_meta` beyond the protocol envelope (trace context).
    pub meta: Option<RequestMetaObject>,
}

/// Send one call and see it through to its end.
pub async fn call_tool(
    call: Call<'_>,
    limits: CallLimits,
    person: &dyn Person,
    trace: &Trace,
    stop: &CancellationToken,
) -> Dispatched {
    let start = Instant::now();
    let conn = call.conn;
    let mut params =
        CallToolRequestParams::new(call.wire_name.to_owned()).with_arguments(call.arguments);
    params.meta = call.meta;
    let mut asked_user = false;
    let mut rounds = 0;
    let mut progress_steps = 0;
    let end = loop {
        rounds += 1;
        let round = one_round(
            conn,
            params.clone(),
            call.wire_name,
            limits,
            trace,
            stop,
            &mut progress_steps,
        )
        .await;
        // An older server may have asked with elicitation/create during the round.
        asked_user |= conn.client.service().take_asked();
        let reply = match round {
            Round::Answered(reply) => reply,
            Round::TimedOut(after) => break CallEnd::TimedOut(after),
            Round::Stopped => break CallEnd::Stopped,
        };
        let response = match reply {
            Err(ServiceError::McpError(e)) => break CallEnd::ProtocolError(e),
            Err(ServiceError::TransportClosed) => {
                break CallEnd::Failed(match conn.broken_reason() {
                    Some(why) => format!("{}: {why}", conn.name),
                    None => format!("the connection to {} closed during the call", conn.name),
                });
            }
            Err(e) => break CallEnd::Failed(e.to_string()),
            Ok(response) => response,
        };
        let asked = match response {
            CallToolResponse::Complete(result) => break CallEnd::Result(result),
            CallToolResponse::InputRequired(asked) => asked,
            _ => {
                break CallEnd::Failed(
                    "the server answered with a task, which this host did not ask for".into(),
                );
            }
        };
        if rounds > limits.max_input_rounds {
            break CallEnd::Failed(format!(
                "the server asked for input more than {} times in one call; the host stopped",
                limits.max_input_rounds
            ));
        }
        let mut responses = InputResponses::new();
        let mut refused = None;
        for (key, request) in asked.input_requests.iter().flatten() {
            match request {
                InputRequest::Elicitation(req) => {
                    asked_user = true;
                    let answer =
                        person::ask_person(&conn.name, key, &req.params, person, trace).await;
                    responses.insert(
                        key.clone(),
                        serde_json::to_value(&answer).unwrap_or_default(),
                    );
                }
                InputRequest::ListRoots(_) => {
                    // The host shares no filesystem roots with servers.
                    responses.insert(key.clone(), json!({"roots": []}));
                }
                InputRequest::CreateMessage(_) => {
                    refused = Some(format!(
                        "{} asked to use the host's model (sampling), which this host does not offer",
                        conn.name
                    ));
                }
                _ => {
                    refused = Some(format!(
                        "{} asked for a kind of input this host does not know",
                        conn.name
                    ));
                }
            }
        }
        if let Some(reason) = refused {
            break CallEnd::Failed(reason);
        }
        params = params.with_input_responses(responses);
        if let Some(state) = asked.request_state {
            params = params.with_request_state(state);
        } else {
            params.request_state = None;
        }
    };
    Dispatched {
        end,
        asked_user,
        rounds,
        elapsed: start.elapsed(),
    }
}
