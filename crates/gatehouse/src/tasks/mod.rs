//! Calls that go on as tasks after their turn (the tasks extension of 2026-07-28): the
//! host's records of them ([`records`]), what a record keeps of a task's end, the look a
//! turn takes first at the tasks no model was told the end of ([`look_again`]), and
//! `gatehouse tasks show|cancel|result` from any process ([`manage`]).
//!
//! A call whose task outlives the turn's wait ends as [`CallEnd::Background`]; its record
//! stays unreported until a later turn (of this session or another) finds it ended and
//! gives the model its result with the person's question, as a tool answer, so that what
//! a server wrote never reads as the person's words.

pub mod manage;
pub mod records;

use serde_json::{Value, json};

pub use records::{Record, Records, default_path};

use rmcp::model::TaskStatus;

use crate::{
    connect::Connection,
    dispatch::{
        self, CallEnd, CallLimits, Stopper,
        task::{self, TaskSeen},
    },
    person::Person,
    redact::Secrets,
    trace::{Trace, Who},
};

/// Most tasks a turn looks at before its question (the oldest first); the rest wait for
/// the next turn.
pub const MAX_LOOKED_AT_PER_TURN: usize = 8;

/// A task's end as a record keeps it; `None` while it goes on.
pub fn end_json(end: &CallEnd) -> Option<Value> {
    match end {
        CallEnd::Result(r) => Some(json!({"result": r})),
        CallEnd::ProtocolError(e) => Some(json!({"error": e})),
        CallEnd::Failed(reason) => Some(json!({"failed": reason})),
        CallEnd::Stopped => Some(json!({"failed": "the person stopped it; it was cancelled"})),
        CallEnd::TimedOut(_) | CallEnd::Background(_) => None,
    }
}

/// A kept end as a call's end again.
pub fn end_of(kept: &Value) -> CallEnd {
    if let Some(result) = kept.get("result")
        && let Ok(result) = serde_json::from_value(result.clone())
    {
        return CallEnd::Result(result);
    }
    if let Some(error) = kept.get("error").and_then(Value::as_object) {
        return CallEnd::ProtocolError(task::error_of(error));
    }
    let reason = kept
        .get("failed")
        .and_then(Value::as_str)
        .unwrap_or("the task's end could not be read");
    CallEnd::Failed(reason.to_owned())
}

/// The status a record gives a call's end, the task as last `seen` when known (a task
/// the server cancelled ends the call as a failure, but was cancelled).
pub fn status_of(end: &CallEnd, seen: Option<&TaskSeen>) -> &'static str {
    match (end, seen) {
        (CallEnd::Result(_), _) => "completed",
        (CallEnd::Failed(_), Some(s)) if s.status == TaskStatus::Cancelled => "cancelled",
        (CallEnd::ProtocolError(_) | CallEnd::Failed(_), _) => "failed",
        (CallEnd::Stopped, _) => "cancelled",
        (CallEnd::TimedOut(_), _) => "working",
        (CallEnd::Background(seen), _) => task::status_word(seen.status),
    }
}

/// `call`'s record as it stands after `end` (the task as last `seen`): its status,
/// message and end, its secrets replaced; `reported` when a model has been given the end.
pub fn record(
    call: &Record,
    end: &CallEnd,
    seen: Option<&TaskSeen>,
    reported: bool,
    secrets: &Secrets,
) -> Record {
    let mut kept = end_json(end);
    if let Some(kept) = &mut kept {
        secrets.json(kept);
    }
    Record {
        status: status_of(end, seen).into(),
        message: match end {
            CallEnd::Background(left) => left.message.clone(),
            _ => None,
        },
        updated_ms: records::now_ms(),
        end: kept,
        reported,
        ..call.clone()
    }
}

/// The `_meta` of a request about an earlier call's task: that call's trace (a fresh
/// span), session and step, so the server's records join the call's.
pub fn meta_of(r: &Record) -> rmcp::model::RequestMetaObject {
    use gatehouse_contract as contract;
    let mut meta = rmcp::model::RequestMetaObject::new();
    meta.set_traceparent(contract::traceparent(
        &r.trace_id,
        &crate::trace::random_hex(8),
    ));
    meta.insert(
        contract::TRACE_META_KEY.into(),
        json!({contract::SESSION_FIELD: r.session_id, contract::STEP_FIELD: r.step}),
    );
    meta
}

/// A task that went on in the background and has ended since.
#[derive(Debug)]
pub struct Ended {
    /// Its record, as it was before this look.
    pub record: Record,
    /// How it ended.
    pub end: CallEnd,
    /// The task as last seen, when this look saw it.
    pub seen: Option<TaskSeen>,
}

/// Where a turn looks again at its session's tasks: the records, the servers it is
/// connected to, the Stop of the call in flight, the person and the trace. (The pieces
/// of the host, not the host, so that `tasks` does not depend on `host`.)
pub(crate) struct Looking<'a> {
    /// The records of calls run as tasks.
    pub records: &'a Records,
    /// The host's connections.
    pub connections: &'a [Connection],
    /// The Stop that a look, as any call, answers to.
    pub stopper: &'a Stopper,
    /// Who answers a task's questions.
    pub person: &'a dyn Person,
    /// The run.
    pub trace: &'a Trace,
}

/// Look once at each task no model was told the end of, on the servers this host is
/// connected to (at most [`MAX_LOOKED_AT_PER_TURN`]): the ones that ended are returned
/// for the turn to report; the others stay as they are, their records brought up to
/// date. A task's questions are put to the person, as in its call.
pub(crate) async fn look_again(at: Looking<'_>, limits: CallLimits) -> Vec<Ended> {
    let trace = at.trace;
    let servers: Vec<String> = at.connections.iter().map(|c| c.name.to_string()).collect();
    let unreported = match at.records.unreported(&servers, MAX_LOOKED_AT_PER_TURN) {
        Ok(list) => list,
        Err(e) => {
            trace.add(Who::Host, format!("warning: {e}"), json!({}));
            return Vec::new();
        }
    };
    let mut ended = Vec::new();
    for r in unreported {
        if r.ended() {
            let end = r.end.as_ref().map(end_of).unwrap_or_else(|| {
                CallEnd::Failed(format!("task {} ended without a result", r.task_id))
            });
            ended.push(Ended {
                record: r,
                end,
                seen: None,
            });
            continue;
        }
        let Some(conn) = at.connections.iter().find(|c| c.name == r.server) else {
            continue;
        };
        let limits = limits.with_task_wait(std::time::Duration::ZERO);
        let stop = at.stopper.begin();
        let meta = Some(meta_of(&r));
        let watch = dispatch::Watch {
            person: at.person,
            trace,
            stop: &stop,
        };
        let done = dispatch::follow_task(conn, &r.task_id, meta, limits, watch).await;
        at.stopper.finish();
        match done.end {
            CallEnd::Background(_) | CallEnd::TimedOut(_) => {
                let now = record(&r, &done.end, done.task.as_ref(), false, trace.secrets());
                keep(at.records, &now, trace);
            }
            end => ended.push(Ended {
                record: r,
                end,
                seen: done.task,
            }),
        }
    }
    ended
}

/// Keep a record; a failure is told in the run, the call's answer is not lost for it.
pub fn keep(records: &Records, r: &Record, trace: &Trace) {
    if let Err(e) = records.keep(r) {
        trace.add(
            Who::Host,
            format!("warning: task {} was not recorded: {e}", r.task_id),
            json!({"task_id": r.task_id}),
        );
    }
}
