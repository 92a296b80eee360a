//! One leg of a task's work, run on this instance: the work itself, beside a heartbeat that
//! renews the lease every [`super::HEARTBEAT`] (writing the work's status message and
//! checkpoint, and reading a cancellation another instance recorded), and at its end the
//! leg's outcome written, if the lease is still this instance's. A leg whose lease was
//! taken over (this instance was too slow to renew it) stops and writes nothing.

use std::{panic::AssertUnwindSafe, sync::Arc};

use futures::FutureExt;
use rmcp::{ErrorData, model::InputRequest};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::{
    Control, Job, Leg, MAX_QUESTIONS, TaskWork, Tasks,
    table::{self, LegEnd, TaskRow},
};
use crate::common;

/// Removes a leg from the instance's running legs when it ends, however it ends.
struct Running {
    tasks: Tasks,
    id: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.tasks
            .0
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
    }
}

/// Start the leg `row` is leased for (to this instance), in the background.
pub(super) fn spawn_leg(tasks: Tasks, work: Arc<dyn TaskWork>, row: TaskRow) {
    let token = CancellationToken::new();
    if row.cancel_requested {
        token.cancel();
    }
    tasks
        .0
        .running
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(row.id.clone(), token.clone());
    let running = Running {
        tasks: tasks.clone(),
        id: row.id.clone(),
    };
    let control = Control::new(
        token.clone(),
        row.status_message.clone(),
        row.checkpoint.clone(),
    );
    let job = Job {
        tool: row.tool.clone(),
        args: row.args.clone(),
        answers: row.answers.clone(),
        checkpoint: row.checkpoint.clone(),
        control: control.clone(),
    };
    tokio::spawn(async move {
        let _running = running;
        let Some(leg) = run(&tasks, work.as_ref(), &row, job, &control, &token).await else {
            tasks.log("task_lease_lost", &row, json!({}));
            return;
        };
        let (status, recorded) = record(&tasks, &row, leg, &control);
        let mut ended = row.clone();
        ended.status = status.into();
        tasks.log("task_leg_ended", &ended, json!({"recorded": recorded}));
    });
}

/// The work, with the heartbeat beside it. `None` when the lease was lost.
async fn run(
    tasks: &Tasks,
    work: &dyn TaskWork,
    row: &TaskRow,
    job: Job,
    control: &Control,
    token: &CancellationToken,
) -> Option<Leg> {
    let leg = AssertUnwindSafe(work.leg(job)).catch_unwind();
    tokio::pin!(leg);
    let mut beat = tokio::time::interval(tasks.0.settings.heartbeat);
    beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    beat.tick().await;
    loop {
        tokio::select! {
            out = &mut leg => {
                return Some(out.unwrap_or_else(|_| {
                    Leg::Failed(ErrorData::internal_error("the tool's work failed", None))
                }));
            }
            _ = beat.tick() => {
                let note = control.take();
                let beat = table::heartbeat(
                    &tasks.db(),
                    &row.id,
                    &tasks.0.instance,
                    common::now_ms(),
                    note.as_ref().map(|(m, c)| (m, c)),
                );
                match beat {
                    Ok(Some(true)) => token.cancel(),
                    Ok(Some(false)) => {}
                    Ok(None) => return None,
                    // The store is busy (another instance writes): next beat.
                    Err(e) => common::log_line(json!({"ts": common::timestamp(),
                        "event": "task_heartbeat_failed", "task_id": row.id, "error": e.to_string()})),
                }
            }
        }
    }
}

/// Write how the leg ended; the status it recorded and whether the lease allowed it.
fn record(tasks: &Tasks, row: &TaskRow, leg: Leg, control: &Control) -> (&'static str, bool) {
    let message = control.message();
    let (id, lease, now) = (&row.id, &tasks.0.instance, common::now_ms());
    let write = |end: LegEnd<'_>, message: &Option<String>| {
        table::end_leg(&tasks.db(), id, lease, now, end, message).unwrap_or(false)
    };
    let fail = |why: String| {
        let error = json!({"code": -32603, "message": why});
        (table::FAILED, write(LegEnd::Failed(&error, &why), &None))
    };
    match leg {
        Leg::Done(result) => match serde_json::to_value(&result) {
            Ok(value) => (table::COMPLETED, write(LegEnd::Completed(&value), &message)),
            Err(e) => fail(format!("the tool's result could not be written: {e}")),
        },
        Leg::Failed(error) => {
            let mut object = json!({"code": error.code.0, "message": error.message});
            if let Some(data) = &error.data {
                object["data"] = data.clone();
            }
            let why = error.message.to_string();
            (table::FAILED, write(LegEnd::Failed(&object, &why), &None))
        }
        Leg::Cancelled => (table::CANCELLED, write(LegEnd::Cancelled, &None)),
        Leg::Ask(questions) => match questions_of(&questions, row.legs) {
            Ok(asked) => {
                let message = message.or_else(|| Some("waiting for an answer".into()));
                (
                    table::INPUT_REQUIRED,
                    write(LegEnd::Asking(&asked), &message),
                )
            }
            Err(why) => fail(why),
        },
    }
}

/// The questions of leg `leg` as the table keeps them: a wire key unique over the task's
/// life (the tool's key and the leg's number) → the tool's key and the request. Each must
/// be a request a client can be asked in a task.
fn questions_of(questions: &Map<String, Value>, leg: u64) -> Result<Map<String, Value>, String> {
    if questions.is_empty() || questions.len() > MAX_QUESTIONS {
        return Err(format!(
            "the tool asked {} questions at once (1 to {MAX_QUESTIONS} are allowed)",
            questions.len()
        ));
    }
    questions
        .iter()
        .map(|(key, request)| {
            serde_json::from_value::<InputRequest>(request.clone())
                .map_err(|e| format!("the tool's question {key:?} is not a valid request: {e}"))?;
            Ok((
                format!("{key}.{leg}"),
                json!({"key": key, "request": request}),
            ))
        })
        .collect()
}
