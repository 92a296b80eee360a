//! A call the server runs as a task (the tasks extension of 2026-07-28, SEP-2663): the
//! host polls `tasks/get` at the server's interval, held within [`MIN_POLL_INTERVAL`] and
//! [`MAX_POLL_INTERVAL`]; shows the person each new status and status message; answers the
//! task's questions through the person (never the model) with `tasks/update`, each key
//! once and at most `max_input_rounds` questions in all; cancels it with `tasks/cancel` on
//! the person's Stop; and ends with the task's result like any call's.
//!
//! The turn waits on a task for [`super::CallLimits::task_wait`], not counting the
//! person's thinking. A task still running then is not cancelled: the call ends as
//! [`super::CallEnd::Background`], with the task's id, and the host keeps it
//! (`crate::tasks`). Every answer is checked: one about another task, a status the
//! extension does not have, a result that is no tool result, or any answer that is not
//! `tasks/get`'s ends the call with the reason, and the task is cancelled.

use std::{collections::HashSet, time::Duration};

use rmcp::model::{
    CallToolResult, CancelTaskParams, CancelTaskRequest, ClientRequest, CreateTaskResult,
    ErrorCode, ErrorData, GetTaskParams, GetTaskRequest, InputRequests, RequestMetaObject,
    ServerResult, TaskPayload, TaskStatus, UpdateTaskParams, UpdateTaskRequest,
};
use serde_json::{Value, json};

use super::{CANCEL_SEND_LIMIT, CallEnd, Round, Round1, answers};
use crate::{
    person::Person,
    text,
    trace::{Trace, Who},
};

/// The shortest wait between two polls, whatever the server suggests (a 0 must not spin).
pub const MIN_POLL_INTERVAL: Duration = Duration::from_millis(100);
/// The longest wait between two polls, whatever the server suggests (a year must not hold
/// the turn).
pub const MAX_POLL_INTERVAL: Duration = Duration::from_secs(5);
/// The poll interval when the server suggests none.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);
/// The longest task id the host accepts (ids are opaque, but they go into records).
pub const MAX_TASK_ID_CHARS: usize = 256;
/// Most status changes one task records as steps; later ones are not kept.
pub const MAX_STATUS_STEPS: usize = 200;
/// Most characters of a status message a step shows.
pub const MAX_STATUS_CHARS: usize = 200;

/// A task as the host last saw it: what it keeps, and, for a task the call left running,
/// what the model is told.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskSeen {
    /// The task's id on its server.
    pub id: String,
    /// Its last status, as the server gave it.
    pub status: TaskStatus,
    /// Its last status message, made visible and cut short.
    pub message: Option<String>,
}

/// The wait between polls the server suggests, within the host's bounds.
pub fn poll_interval(suggested_ms: Option<u64>) -> Duration {
    suggested_ms
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_POLL_INTERVAL)
        .clamp(MIN_POLL_INTERVAL, MAX_POLL_INTERVAL)
}

/// Is a task id one the host can keep: not empty, at most [`MAX_TASK_ID_CHARS`], printable
/// ASCII (it is sent back in `Mcp-Name` and shown on the terminal)?
pub fn usable_id(id: &str) -> bool {
    !id.is_empty()
        && id.chars().count() <= MAX_TASK_ID_CHARS
        && id.bytes().all(|b| b.is_ascii_graphic())
}

/// The word of a status, as the extension spells it.
pub fn status_word(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::Working => "working",
        TaskStatus::InputRequired => "input_required",
        TaskStatus::Completed => "completed",
        TaskStatus::Failed => "failed",
        TaskStatus::Cancelled => "cancelled",
        _ => "unknown",
    }
}

/// A task's result as a tool's: the original call's `CallToolResult` (extra keys allowed).
pub fn result_of(result: serde_json::Map<String, Value>) -> Result<CallToolResult, String> {
    serde_json::from_value(Value::Object(result))
        .map_err(|e| format!("the task's result is not a tool's result: {e}"))
}

/// A failed task's JSON-RPC error object, as an error.
pub fn error_of(error: &serde_json::Map<String, Value>) -> ErrorData {
    let code = error
        .get("code")
        .and_then(Value::as_i64)
        .and_then(|c| i32::try_from(c).ok())
        .unwrap_or(-32603);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("the task failed")
        .to_owned();
    ErrorData::new(ErrorCode(code), message, error.get("data").cloned())
}

/// One task followed by a turn.
pub(super) struct Follow<'a> {
    pub round: &'a Round1<'a>,
    pub person: &'a dyn Person,
    pub meta: Option<RequestMetaObject>,
    /// Is this a look again at a task an earlier call left running?
    pub resumed: bool,
}

/// How following a task ended, with whether the person was asked and the task as last
/// seen (none when its id was not usable).
pub(super) struct Followed {
    pub end: CallEnd,
    pub asked_user: bool,
    pub seen: Option<TaskSeen>,
}

/// What one poll came to.
enum Poll {
    /// The task is where this says; go on.
    Seen(Box<rmcp::model::GetTaskResult>),
    /// The call is over.
    Over(CallEnd),
}

impl Follow<'_> {
    fn trace(&self) -> &Trace {
        self.round.trace
    }

    fn server(&self) -> &str {
        &self.round.conn.name
    }

    /// Follow the task `created` to its end, to the person's Stop, or to the turn's wait.
    pub async fn run(&self, created: CreateTaskResult) -> Followed {
        let id = created.task.task_id.clone();
        if !usable_id(&id) {
            return Followed {
                end: CallEnd::Failed(format!(
                    "{} answered with a task whose id is not usable (empty, longer than {MAX_TASK_ID_CHARS} characters, or not printable)",
                    self.server()
                )),
                asked_user: false,
                seen: None,
            };
        }
        self.trace().add(
            Who::Server,
            format!("runs the call as task {id}"),
            json!({"server": self.server(), "task_id": id, "status": status_word(created.task.status)}),
        );
        let interval = poll_interval(created.task.poll_interval_ms);
        self.follow(State::new(id, created.task.status, interval))
            .await
    }

    /// Look again at task `id`, which an earlier call left running: at once, then as
    /// [`Follow::run`] does.
    pub async fn resume(&self, id: &str) -> Followed {
        self.follow(State::new(
            id.to_owned(),
            TaskStatus::Working,
            Duration::ZERO,
        ))
        .await
    }

    async fn follow(&self, mut state: State) -> Followed {
        let end = self.poll_to_end(&mut state).await;
        Followed {
            end,
            asked_user: state.asked_user,
            seen: Some(state.seen()),
        }
    }

    async fn poll_to_end(&self, state: &mut State) -> CallEnd {
        let stop = self.round.stop;
        loop {
            // A first look (`resume`) is made whatever the wait.
            if state.waited >= self.round.limits.task_wait && !state.interval.is_zero() {
                return self.left(state);
            }
            // The last wait is cut to what is left of the turn's, after a first look.
            let nap = match self.round.limits.task_wait.checked_sub(state.waited) {
                Some(left) if !state.interval.is_zero() => state.interval.min(left),
                _ => state.interval,
            };
            tokio::select! {
                _ = tokio::time::sleep(nap) => {}
                _ = stop.cancelled() => return self.cancel(state, CallEnd::Stopped).await,
            }
            state.waited += nap;
            let seen = match self.poll(state).await {
                Poll::Over(end) => return end,
                Poll::Seen(seen) => seen,
            };
            state.interval = poll_interval(seen.task.task.poll_interval_ms);
            self.show(state, &seen);
            match seen.task.payload {
                TaskPayload::Working => {}
                TaskPayload::InputRequired { input_requests } => {
                    if let Err(end) = self.answer(state, &input_requests).await {
                        return self.cancel(state, end).await;
                    }
                }
                TaskPayload::Completed { result } => {
                    return match result_of(result) {
                        Ok(result) => CallEnd::Result(result),
                        Err(why) => CallEnd::Failed(format!("{}: {why}", self.server())),
                    };
                }
                TaskPayload::Failed { error } => return CallEnd::ProtocolError(error_of(&error)),
                TaskPayload::Cancelled => {
                    return CallEnd::Failed(format!(
                        "{} cancelled task {} before it finished",
                        self.server(),
                        state.id
                    ));
                }
                _ => {
                    let end = CallEnd::Failed(format!(
                        "{} gave task {} a status the host does not know",
                        self.server(),
                        state.id
                    ));
                    return self.cancel(state, end).await;
                }
            }
        }
    }

    /// One `tasks/get`, checked.
    async fn poll(&self, state: &State) -> Poll {
        let mut params = GetTaskParams::new(state.id.clone());
        params.meta = self.meta.clone();
        let request = ClientRequest::GetTaskRequest(GetTaskRequest::new(params));
        let answer = match self.round.send(request, &mut 0).await {
            Round::Answered(answer) => answer,
            Round::Stopped => return Poll::Over(self.cancel(state, CallEnd::Stopped).await),
            // The task goes on; only this poll went unanswered. It is kept, not lost.
            Round::TimedOut(_) => return Poll::Over(self.left(state)),
        };
        let server = self.server();
        let seen = match super::failed(self.round.conn, answer) {
            Ok(ServerResult::GetTaskResult(seen)) => seen,
            Ok(_) => {
                let why = format!(
                    "{server} answered tasks/get with something that is not a task (a malformed task, or a status the extension does not have)"
                );
                return Poll::Over(self.cancel(state, CallEnd::Failed(why)).await);
            }
            Err(CallEnd::ProtocolError(e)) if e.code == ErrorCode::INVALID_PARAMS => {
                return Poll::Over(CallEnd::Failed(format!(
                    "{server} no longer knows task {} ({})",
                    state.id,
                    text::clip(&e.message, MAX_STATUS_CHARS)
                )));
            }
            Err(end) => return Poll::Over(end),
        };
        if seen.task.task.task_id != state.id {
            let why = format!(
                "{server} answered tasks/get for {} with another task ({}); the host stopped following it",
                state.id,
                text::clip(
                    &text::visible_line(&seen.task.task.task_id),
                    MAX_STATUS_CHARS
                )
            );
            return Poll::Over(self.cancel(state, CallEnd::Failed(why)).await);
        }
        Poll::Seen(Box::new(seen))
    }

    /// Tell the person when the status or its message changed (bounded).
    fn show(&self, state: &mut State, seen: &rmcp::model::GetTaskResult) {
        let status = seen.task.status();
        let message = seen
            .task
            .task
            .status_message
            .as_deref()
            .map(|m| text::clip(&text::visible_line(m), MAX_STATUS_CHARS).into_owned());
        if status == state.status && message == state.message {
            return;
        }
        state.status = status;
        state.message = message;
        state.steps += 1;
        if state.steps > MAX_STATUS_STEPS {
            return;
        }
        let word = status_word(status);
        let text = match &state.message {
            Some(m) => format!("task {}: {word}: {m}", state.id),
            None => format!("task {}: {word}", state.id),
        };
        let data = json!({"server": self.server(), "task_id": state.id, "status": word});
        self.trace().add(Who::Server, text, data);
    }

    /// Answer the questions not answered before, through the person; the time they take
    /// does not count against the turn's wait.
    async fn answer(&self, state: &mut State, asked: &InputRequests) -> Result<(), CallEnd> {
        let fresh: InputRequests = asked
            .iter()
            .filter(|(key, _)| !state.answered.contains(*key))
            .map(|(k, r)| (k.clone(), r.clone()))
            .collect();
        if fresh.is_empty() {
            return Ok(());
        }
        state.questions += fresh.len();
        if state.questions > self.round.limits.max_input_rounds {
            return Err(CallEnd::Failed(format!(
                "{} asked more than {} questions in task {}; the host stopped",
                self.server(),
                self.round.limits.max_input_rounds,
                state.id
            )));
        }
        state.asked_user |= fresh
            .values()
            .any(|r| matches!(r, rmcp::model::InputRequest::Elicitation(_)));
        let responses = answers(self.round.conn, &fresh, self.person, self.trace())
            .await
            .map_err(CallEnd::Failed)?;
        state.answered.extend(fresh.into_keys());
        let mut params = UpdateTaskParams::new(state.id.clone(), responses);
        params.meta = self.meta.clone();
        let request = ClientRequest::UpdateTaskRequest(UpdateTaskRequest::new(params));
        match self.round.send(request, &mut 0).await {
            Round::Answered(answer) => match super::failed(self.round.conn, answer) {
                Ok(_) => {}
                Err(end) => return Err(end),
            },
            Round::Stopped => return Err(CallEnd::Stopped),
            Round::TimedOut(after) => return Err(CallEnd::TimedOut(after)),
        }
        // The answers may finish it at once: look again soon.
        state.interval = MIN_POLL_INTERVAL;
        Ok(())
    }

    /// The task goes on without the turn.
    fn left(&self, state: &State) -> CallEnd {
        let text = if self.resumed {
            format!("task {} is still {}", state.id, status_word(state.status))
        } else {
            format!(
                "task {} goes on in the background after {}; the model is told its id",
                state.id,
                text::seconds(state.waited)
            )
        };
        self.trace().add(
            Who::Host,
            text,
            json!({"server": self.server(), "task_id": state.id, "status": status_word(state.status),
                   "decision": "background"}),
        );
        CallEnd::Background(state.seen())
    }

    /// Ask the server to cancel the task (bounded), and end with `end`.
    async fn cancel(&self, state: &State, end: CallEnd) -> CallEnd {
        let mut params = CancelTaskParams::new(state.id.clone());
        params.meta = self.meta.clone();
        let request = ClientRequest::CancelTaskRequest(CancelTaskRequest::new(params));
        let sent = tokio::time::timeout(CANCEL_SEND_LIMIT, async {
            let handle = self.round.conn.send(request).await.ok()?;
            handle.await_response().await.ok()
        })
        .await;
        let acknowledged = matches!(sent, Ok(Some(_)));
        self.trace().add(
            Who::Host,
            format!(
                "asked {} to cancel task {}{}",
                self.server(),
                state.id,
                if acknowledged {
                    ""
                } else {
                    " (no acknowledgment)"
                }
            ),
            json!({"server": self.server(), "task_id": state.id, "decision": "cancel_task",
                   "acknowledged": acknowledged}),
        );
        end
    }
}

impl State {
    fn seen(&self) -> TaskSeen {
        TaskSeen {
            id: self.id.clone(),
            status: self.status,
            message: self.message.clone(),
        }
    }

    fn new(id: String, status: TaskStatus, interval: Duration) -> State {
        State {
            id,
            interval,
            waited: Duration::ZERO,
            status,
            message: None,
            steps: 0,
            answered: HashSet::new(),
            questions: 0,
            asked_user: false,
        }
    }
}

/// Where a followed task is.
struct State {
    id: String,
    interval: Duration,
    waited: Duration,
    status: TaskStatus,
    message: Option<String>,
    steps: usize,
    answered: HashSet<String>,
    questions: usize,
    asked_user: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_poll_interval_is_the_servers_within_bounds() {
        assert_eq!(poll_interval(Some(0)), MIN_POLL_INTERVAL);
        assert_eq!(poll_interval(Some(250)), Duration::from_millis(250));
        assert_eq!(poll_interval(Some(365 * 86_400_000)), MAX_POLL_INTERVAL);
        assert_eq!(poll_interval(Some(u64::MAX)), MAX_POLL_INTERVAL);
        assert_eq!(poll_interval(None), DEFAULT_POLL_INTERVAL);
    }

    #[test]
    fn only_plain_bounded_ids_are_kept() {
        assert!(usable_id("0a21f6a8"));
        assert!(!usable_id(""));
        assert!(!usable_id("a b"));
        assert!(!usable_id("\u{1b}[2J"));
        assert!(!usable_id(&"x".repeat(MAX_TASK_ID_CHARS + 1)));
    }

    #[test]
    fn a_failed_tasks_error_keeps_its_code_and_message() {
        let e = error_of(
            json!({"code": -32000, "message": "boom", "data": {"x": 1}})
                .as_object()
                .unwrap(),
        );
        assert_eq!((e.code.0, e.message.as_ref()), (-32000, "boom"));
        let e = error_of(json!({"code": "nope"}).as_object().unwrap());
        assert_eq!(e.code.0, -32603);
    }
}
