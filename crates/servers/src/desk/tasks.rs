//! A desk's tasks on the wire: a call that becomes a task (its `tool_call` record says
//! `task`, with the id), and `tasks/get`, `tasks/update` and `tasks/cancel`, each with its
//! `mcp.request` record, for the caller of that very request only.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::{
    ErrorData, RoleServer,
    model::{CallToolResponse, GetTaskResult, InputResponses},
    service::RequestContext,
};
use serde_json::{Value, json};

use super::{Call, Desk, Failure, Served};
use crate::{
    common::{Caller, RequestLog},
    tasks::{self, Job, Leg, NotCreated, TaskWork, Tasks},
};

/// A desk as the work of its tasks.
struct DeskWork<D>(Arc<D>);

impl<D: Desk> TaskWork for DeskWork<D> {
    fn leg(&self, job: Job) -> BoxFuture<'_, Leg> {
        Box::pin(self.0.run_task(job))
    }
}

fn work<D: Desk>(served: &Served<D>) -> Arc<dyn TaskWork> {
    Arc::new(DeskWork(served.0.clone()))
}

/// Make `call` a task of its caller's and answer with it.
pub(super) fn start<D: Desk>(
    served: &Served<D>,
    tasks: &Tasks,
    call: &Call<'_>,
    record: &dyn Fn(&str, Value),
) -> Result<CallToolResponse, ErrorData> {
    let desk = &served.0;
    if let Err(failure) = desk.check_task(call) {
        record(failure.word(), json!({}));
        return failure.answer(desk.info());
    }
    let owner = tasks::owner_of(call.caller);
    let failure = match tasks.create(work(served), &owner, call.name, call.args.clone()) {
        Ok(created) => {
            record("task", json!({"task_id": created.task.task_id}));
            return Ok(CallToolResponse::Task(created));
        }
        Err(NotCreated::TooMany(n)) => Failure::Unavailable(format!(
            "you have {n} unfinished tasks on this server, the most it runs for one caller: \
             wait for one to finish, or cancel one"
        )),
        Err(NotCreated::Store(e)) => {
            Failure::Unavailable(format!("the task store is unavailable: {e}"))
        }
    };
    record(failure.word(), json!({}));
    failure.answer(desk.info())
}

/// The caller's owner key and the desk's tasks, or -32601 for a desk that runs none.
fn tasks_of<'a, D: Desk>(
    served: &'a Served<D>,
    context: &RequestContext<RoleServer>,
) -> Result<(&'a Tasks, String), ErrorData> {
    let tasks = served
        .0
        .tasks()
        .ok_or_else(ErrorData::method_not_found::<rmcp::model::GetTaskMethod>)?;
    let caller = Caller::of_request(served.0.default_caller(), context);
    Ok((tasks, tasks::owner_of(&caller)))
}

/// `tasks/get`, its record's outcome the task's status.
pub(super) fn get<D: Desk>(
    served: &Served<D>,
    id: &str,
    context: &RequestContext<RoleServer>,
) -> Result<GetTaskResult, ErrorData> {
    let log = RequestLog::start(D::PROFILE.name, "tasks/get", Some(id), &context.meta);
    let got = tasks_of(served, context).and_then(|(t, owner)| t.get(work(served), &owner, id));
    let outcome = match &got {
        Ok(r) => serde_json::to_value(r.task.status())
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "ok".into()),
        Err(_) => "error".into(),
    };
    log.finish(&outcome);
    got
}

/// `tasks/update`.
pub(super) fn update<D: Desk>(
    served: &Served<D>,
    id: String,
    responses: InputResponses,
    context: &RequestContext<RoleServer>,
) -> Result<(), ErrorData> {
    let log = RequestLog::start(D::PROFILE.name, "tasks/update", Some(&id), &context.meta);
    let done = tasks_of(served, context)
        .and_then(|(t, owner)| t.update(work(served), &owner, &id, responses));
    log.finish(if done.is_ok() { "ok" } else { "error" });
    done
}

/// `tasks/cancel`.
pub(super) fn cancel<D: Desk>(
    served: &Served<D>,
    id: &str,
    context: &RequestContext<RoleServer>,
) -> Result<(), ErrorData> {
    let log = RequestLog::start(D::PROFILE.name, "tasks/cancel", Some(id), &context.meta);
    let done = tasks_of(served, context).and_then(|(t, owner)| t.cancel(&owner, id));
    log.finish(if done.is_ok() { "ok" } else { "error" });
    done
}
