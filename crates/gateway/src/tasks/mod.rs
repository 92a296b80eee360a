//! The tasks the gateway hands its clients (the tasks extension of 2026-07-28, SEP-2663).
//!
//! A client that declared the extension on a `tools/call` the policy let run gets, when
//! the server behind answers with a task, a task of the gateway's own: an id of 128
//! random bits, bound to the caller (`user@tenant`; to anyone else it is "not found",
//! word for word a made-up id's), recorded in the shared store before the answer is sent
//! (`store/tasks.rs`). `tasks/get`, `tasks/update` and `tasks/cancel` are answered by any
//! replica from that record: while the task has not ended, the replica asks the server
//! (with the server's task id, over its own connection, declaring the caller's
//! capabilities), records what changed, and answers from the record.
//!
//! Who updates the record: whichever replica a client's request reaches. A task the
//! server runs needs no follower of the gateway's, so no replica's death can lose one;
//! the server's task is the work, the record only its face to the client. Each change is
//! one conditional statement and the first end written wins, so two replicas reading the
//! same end at once keep one. That end goes through the `afterCall` hook and the
//! gateway's shaping of a call's end ([`crate::answer::finished`]) once it is seen, its
//! secrets replaced, at most [`MAX_KEPT_BYTES`]. A server's questions inside its task are
//! the gateway task's own `input_required` (the client's `tasks/update` goes to the
//! server as it came); the gateway answers none of them.

mod wire;

use std::time::Duration;

use rmcp::model::{CallToolResponse, CancelTaskParams, CancelTaskRequest, ClientRequest};
use rmcp::model::{CreateTaskResult, ErrorCode, GetTaskParams, GetTaskRequest, GetTaskResult};
use rmcp::model::{InputRequiredResult, InputResponses, JsonObject, ServerResult, TaskPayload};
use rmcp::model::{TaskStatus, UpdateTaskParams, UpdateTaskRequest};
use rmcp::{ErrorData, RoleServer, service::RequestContext};
use serde_json::{Value, json};

use super::{
    Gateway,
    answer::{failed, finished},
    error::Error,
    relay::{declared, undeclared},
    store::{
        StoreError,
        tasks::{self as rows, Move, TaskRow},
    },
};
use crate::caller::CallerName;
use gatehouse::{
    catalog::CatalogTool,
    dispatch::{
        self, CallEnd,
        task::{
            MAX_STATUS_CHARS, error_of, poll_interval, result_of, status_word as word, usable_id,
        },
    },
    gate::Proposal,
    model::ToolCall,
    text,
    trace::{Who, random_hex},
};

/// How long a task is kept from its start (its `ttlMs`), whatever becomes of it.
pub const TASK_TTL: Duration = Duration::from_secs(24 * 3600);
/// How long a task is kept once it has ended (its `ttlMs` shortened to it), so that
/// ended tasks make room for a caller's new ones.
pub const ENDED_TTL: Duration = Duration::from_secs(3600);
/// Most tasks the store keeps for one caller (ended ones included, until they expire):
/// past it a call the server runs as a task is cancelled there and refused.
pub const MAX_TASKS_PER_CALLER: usize = 256;
/// The largest end (a result or an error, as JSON) or set of questions a record keeps;
/// a larger result is kept as a tool error that says so.
pub const MAX_KEPT_BYTES: usize = 1024 * 1024;
/// The largest `tasks/update` (its answers, as JSON) passed on.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// A call the gateway admitted and sent, which a task starts from.
pub(super) struct Started<'a> {
    pub caller: &'a CallerName,
    pub tool: &'a CatalogTool,
    pub arguments: &'a JsonObject,
    pub trace_id: &'a str,
    pub step: u64,
}

/// The answer to an id that names no task of this caller's: the same whether it never
/// existed, expired, or is another caller's.
fn not_found() -> ErrorData {
    Error::NoSuchTask.into()
}

fn store_down(cause: StoreError) -> ErrorData {
    let what = "the task's record";
    Error::Store { what, cause }.into()
}

/// A request about a task that did not get the server's answer, as the client reads it.
fn not_answered(server: &str, end: CallEnd) -> ErrorData {
    match end {
        CallEnd::ProtocolError(e) => Error::Server(e),
        CallEnd::TimedOut(after) => Error::TimedOut {
            server: server.to_owned(),
            after,
        },
        CallEnd::Failed(why) => Error::Failed(why),
        _ => Error::Failed(format!("{server} did not answer")),
    }
    .into()
}

impl Gateway {
    /// Hand the caller the task the server made for an admitted call, as a task of the
    /// gateway's own, recorded before it is answered.
    pub(super) async fn hand_task(
        &self,
        started: Started<'_>,
        created: CreateTaskResult,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let server = started.tool.origin.label().to_owned();
        let theirs = created.task.task_id;
        if !usable_id(&theirs) {
            return failed(format!(
                "{server} answered with a task whose id is not usable (empty, too long, or not printable)"
            ));
        }
        let now = wire::now_ms();
        let row = TaskRow {
            id: random_hex(16),
            caller: started.caller.clone(),
            server: server.clone(),
            tool: started.tool.name.clone(),
            arguments: Value::Object(started.arguments.clone()).to_string(),
            server_task: theirs,
            status: word(TaskStatus::Working).into(),
            message: shown(created.task.status_message.as_deref()),
            poll_ms: poll_ms(created.task.poll_interval_ms),
            asked: String::new(),
            end_json: String::new(),
            trace_id: started.trace_id.to_owned(),
            step: i64::try_from(started.step).unwrap_or(i64::MAX),
            created_at: now,
            updated_at: now,
            expires_at: now.saturating_add(TASK_TTL.as_millis() as i64),
        };
        let store = &self.inner.store;
        let why = match store
            .task_insert(row.clone(), now, MAX_TASKS_PER_CALLER)
            .await
        {
            Ok(true) => {
                self.host().trace().add(
                    Who::Server,
                    format!(
                        "runs {} as task {} for {}: the caller follows it as task {}",
                        row.tool, row.server_task, row.caller, row.id
                    ),
                    json!({"server": server, "task_id": row.server_task,
                           "gateway_task": row.id, "caller": row.caller}),
                );
                return CallToolResponse::Task(wire::created(&row));
            }
            Ok(false) => format!(
                "you have {MAX_TASKS_PER_CALLER} tasks kept by this gateway, the most it keeps for one caller"
            ),
            Err(e) => format!("its record could not be kept ({e})"),
        };
        let _ = self.ask_server(&row, Ask::Cancel, context).await;
        failed(format!(
            "{server} runs this call as a task, but {why}: the task was cancelled"
        ))
    }

    /// `tasks/get`: the record, brought up to date from the server while it runs.
    pub(super) async fn task_get(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let row = self.task_of(id, context).await?;
        let row = if rows::is_end(&row.status) {
            row
        } else {
            self.look(row, context).await?
        };
        Ok(wire::detailed(&row))
    }

    /// `tasks/update`: the client's answers to the task's questions, passed to the
    /// server as they came (checked for shape and size); an ended task ignores them.
    pub(super) async fn task_update(
        &self,
        id: &str,
        responses: InputResponses,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let row = self.task_of(id, context).await?;
        if let Some((key, _)) = responses.iter().find(|(_, v)| !v.is_object()) {
            return Err(Error::Invalid(format!(
                "the answer to {:?} is not a result object",
                text::clip(key, 80)
            ))
            .into());
        }
        let size = serde_json::to_string(&responses).map_or(usize::MAX, |t| t.len());
        if size > MAX_ANSWER_BYTES {
            return Err(Error::Invalid(format!(
                "the answers are longer than {MAX_ANSWER_BYTES} bytes"
            ))
            .into());
        }
        if rows::is_end(&row.status) || responses.is_empty() {
            return Ok(());
        }
        self.ask_server(&row, Ask::Update(responses), context)
            .await
            .map(drop)
            .map_err(|end| not_answered(&row.server, end))
    }

    /// `tasks/cancel`: passed to the server; an ended task is left as it is, and
    /// acknowledged all the same.
    pub(super) async fn task_cancel(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let row = self.task_of(id, context).await?;
        if rows::is_end(&row.status) {
            return Ok(());
        }
        match self.ask_server(&row, Ask::Cancel, context).await {
            Ok(_) => Ok(()),
            // The server forgot it: it is over, and cancelling it again is nothing.
            Err(CallEnd::ProtocolError(e)) if e.code == ErrorCode::INVALID_PARAMS => {
                self.lost(row, &e).await.map(drop)
            }
            Err(end) => Err(not_answered(&row.server, end)),
        }
    }

    /// The caller's task `id`, unless it is not theirs, never was, or expired.
    async fn task_of(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<TaskRow, ErrorData> {
        let caller = self.inner.callers.of(context);
        let row = self
            .inner
            .store
            .task_row(id, wire::now_ms())
            .await
            .map_err(store_down)?;
        row.filter(|r| r.caller == caller).ok_or_else(not_found)
    }

    /// Send a request about `row`'s task to its server, declared as the caller's calls are.
    async fn ask_server(
        &self,
        row: &TaskRow,
        ask: Ask,
        context: &RequestContext<RoleServer>,
    ) -> Result<ServerResult, CallEnd> {
        let host = self.host();
        let Some(conn) = host.connection(&row.server) else {
            return Err(CallEnd::Failed(format!("{} is not connected", row.server)));
        };
        let theirs = row.server_task.clone();
        let request = match ask {
            Ask::Get => {
                ClientRequest::GetTaskRequest(GetTaskRequest::new(GetTaskParams::new(theirs)))
            }
            Ask::Update(answers) => ClientRequest::UpdateTaskRequest(UpdateTaskRequest::new(
                UpdateTaskParams::new(theirs, answers),
            )),
            Ask::Cancel => ClientRequest::CancelTaskRequest(CancelTaskRequest::new(
                CancelTaskParams::new(theirs),
            )),
        };
        let relay = dispatch::Relay {
            capabilities: Some(declared(context, conn)),
            tasks_to_caller: true,
            ..dispatch::Relay::default()
        };
        let limits = self.limits();
        dispatch::task_request(conn, request, limits, &relay, host.trace(), &context.ct).await
    }

    /// Ask the server where its task is, and record what changed. A server that does
    /// not answer leaves the record as it was last seen.
    async fn look(
        &self,
        row: TaskRow,
        context: &RequestContext<RoleServer>,
    ) -> Result<TaskRow, ErrorData> {
        let server = row.server.clone();
        let seen = match self.ask_server(&row, Ask::Get, context).await {
            Ok(ServerResult::GetTaskResult(seen)) if seen.task.task.task_id == row.server_task => {
                seen
            }
            Ok(_) => {
                let why =
                    format!("{server} answered tasks/get with something that is not its task");
                return self.end(row, CallEnd::Failed(why)).await;
            }
            Err(CallEnd::ProtocolError(e)) if e.code == ErrorCode::INVALID_PARAMS => {
                return self.lost(row, &e).await;
            }
            Err(_) => return Ok(row),
        };
        let task = &seen.task.task;
        let mut to = Move::from(&row);
        to.message = shown(task.status_message.as_deref());
        to.poll_ms = poll_ms(task.poll_interval_ms);
        match seen.task.payload {
            TaskPayload::Working => {
                to.status = word(TaskStatus::Working).into();
                to.asked.clear();
            }
            TaskPayload::InputRequired { input_requests } => {
                let asked = InputRequiredResult::new(Some(input_requests), None);
                let why = undeclared(context, &asked)
                    .map(|why| format!("{server} asks {why}, which this client did not declare"));
                let kept = serde_json::to_string(&asked.input_requests).unwrap_or_default();
                let why = why.or_else(|| {
                    (kept.len() > MAX_KEPT_BYTES).then(|| {
                        format!("{server} asked questions longer than {MAX_KEPT_BYTES} bytes")
                    })
                });
                if let Some(why) = why {
                    let _ = self.ask_server(&row, Ask::Cancel, context).await;
                    return self.end(row, CallEnd::Failed(why)).await;
                }
                to.status = word(TaskStatus::InputRequired).into();
                to.asked = kept;
            }
            TaskPayload::Completed { result } => {
                let end = match result_of(result) {
                    Ok(result) => CallEnd::Result(result),
                    Err(why) => CallEnd::Failed(format!("{server}: {why}")),
                };
                return self.end(row, end).await;
            }
            TaskPayload::Failed { error } => {
                return self
                    .end(row, CallEnd::ProtocolError(error_of(&error)))
                    .await;
            }
            TaskPayload::Cancelled => return self.cancelled(row).await,
            _ => {
                let why = format!("{server} gave its task a status the gateway does not know");
                let _ = self.ask_server(&row, Ask::Cancel, context).await;
                return self.end(row, CallEnd::Failed(why)).await;
            }
        }
        self.moved(row, to).await
    }

    /// Record where the task is now, if that changed.
    async fn moved(&self, mut row: TaskRow, to: Move) -> Result<TaskRow, ErrorData> {
        let same = to.status == row.status
            && to.message == row.message
            && to.poll_ms == row.poll_ms
            && to.asked == row.asked;
        if same {
            return Ok(row);
        }
        let now = wire::now_ms();
        let store = &self.inner.store;
        if !store
            .task_move(&row.id, &to, now)
            .await
            .map_err(store_down)?
        {
            // Another replica ended it meanwhile: its end is the one.
            return self.reread(&row.id).await;
        }
        row.status = to.status;
        row.message = to.message;
        row.poll_ms = to.poll_ms;
        row.asked = to.asked;
        row.updated_at = now;
        Ok(row)
    }

    /// The server no longer knows its task (it expired there, or its store was lost).
    async fn lost(&self, row: TaskRow, e: &ErrorData) -> Result<TaskRow, ErrorData> {
        let why = format!(
            "{} no longer knows this task ({})",
            row.server,
            text::clip(&text::visible_line(&e.message), MAX_STATUS_CHARS)
        );
        let end = CallEnd::ProtocolError(Error::Failed(why).into());
        self.end(row, end).await
    }

    /// End the task as the server ended it: through `afterCall` and the gateway's
    /// shaping, its secrets replaced, bounded, then recorded (the first end wins).
    async fn end(&self, row: TaskRow, end: CallEnd) -> Result<TaskRow, ErrorData> {
        let end = self.after_call_of(&row, end).await;
        let (status, mut kept) = match finished(end) {
            Ok(result) => (
                word(TaskStatus::Completed),
                serde_json::to_value(result).unwrap_or_default(),
            ),
            Err(e) => (word(TaskStatus::Failed), wire::error_object(&e)),
        };
        self.host().trace().secrets().json(&mut kept);
        let mut text = kept.to_string();
        if text.len() > MAX_KEPT_BYTES {
            text = wire::too_large(text.len(), MAX_KEPT_BYTES).to_string();
        }
        self.record_end(row, status, &text).await
    }

    /// The server cancelled its task.
    async fn cancelled(&self, row: TaskRow) -> Result<TaskRow, ErrorData> {
        self.record_end(row, word(TaskStatus::Cancelled), "").await
    }

    async fn record_end(
        &self,
        mut row: TaskRow,
        status: &str,
        end: &str,
    ) -> Result<TaskRow, ErrorData> {
        let now = wire::now_ms();
        let expires_at = row
            .expires_at
            .min(now.saturating_add(ENDED_TTL.as_millis() as i64));
        let message = if status == word(TaskStatus::Cancelled) {
            "cancelled".to_owned()
        } else {
            row.message.clone()
        };
        let store = &self.inner.store;
        let ended = store
            .task_end(&row.id, (status, &message, end), now, expires_at)
            .await
            .map_err(store_down)?;
        if !ended {
            return self.reread(&row.id).await;
        }
        self.host().trace().add(
            Who::Server,
            format!("task {} ({}) ended: {status}", row.id, row.tool),
            json!({"server": row.server, "gateway_task": row.id, "status": status,
                   "caller": row.caller}),
        );
        row.status = status.to_owned();
        row.message = message;
        row.end_json = end.to_owned();
        row.asked.clear();
        row.updated_at = now;
        row.expires_at = expires_at;
        Ok(row)
    }

    async fn reread(&self, id: &str) -> Result<TaskRow, ErrorData> {
        let store = &self.inner.store;
        store
            .task_row(id, wire::now_ms())
            .await
            .map_err(store_down)?
            .ok_or_else(not_found)
    }

    /// The `afterCall` hook on a task's end, as on any call's through the gateway. A tool
    /// that left the catalog has its result withheld: the hook cannot be skipped.
    async fn after_call_of(&self, row: &TaskRow, end: CallEnd) -> CallEnd {
        let host = self.host();
        let Some(tool) = host.catalog().get(&row.tool).cloned() else {
            return CallEnd::Failed(format!(
                "{} is no longer in the gateway's catalog: the task's result is withheld",
                row.tool
            ));
        };
        let arguments: JsonObject = serde_json::from_str(&row.arguments).unwrap_or_default();
        let call = ToolCall {
            id: format!("gw-{}", row.step),
            name: row.tool.clone(),
            arguments: row.arguments.clone(),
        };
        let p = Proposal {
            call: &call,
            session: "gateway",
            trace_id: &row.trace_id,
            step: u64::try_from(row.step).unwrap_or_default(),
            caller: Some(&row.caller),
            confirmation: None,
            flows: None,
        };
        let end = host
            .gate()
            .after_call(&p, &tool, &arguments, end, host.trace())
            .await;
        // The end is what the caller reads when it asks for the task's result.
        self.relayed(&row.caller, &tool, p.step, &end);
        end
    }
}

/// A request about a task, to its server.
enum Ask {
    Get,
    Update(InputResponses),
    Cancel,
}

/// A server's status message as a record keeps it: visible, one line, clipped.
fn shown(message: Option<&str>) -> String {
    message
        .map(|m| text::clip(&text::visible_line(m), MAX_STATUS_CHARS).into_owned())
        .unwrap_or_default()
}

/// The poll interval a record suggests: the server's, within the host's bounds.
fn poll_ms(suggested: Option<u64>) -> i64 {
    i64::try_from(poll_interval(suggested).as_millis()).unwrap_or(i64::MAX)
}
