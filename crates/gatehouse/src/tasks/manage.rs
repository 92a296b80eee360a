//! `gatehouse tasks show|cancel|result ID` from any process: the task's record, and its
//! server reached again (a stdio server is started anew; with a durable task store it
//! answers for a task an earlier process of it started) to look at the task, follow it
//! for a while answering its questions through the person, or cancel it.

use std::{sync::Arc, time::Duration};

use rmcp::model::{CancelTaskParams, CancelTaskRequest, ClientRequest};
use tokio_util::sync::CancellationToken;

use super::{Record, Records, default_path, made_of, meta_of, record};
use crate::{
    config::Config,
    connect::{self, Connection},
    dispatch::{self, CANCEL_SEND_LIMIT, CallEnd, CallLimits},
    person::Person,
    trace::Trace,
};

/// The records a configuration names (`tasksFile`, else the default place).
pub fn records_of(config: &Config) -> Records {
    Records::at(
        config
            .settings
            .tasks_file
            .clone()
            .unwrap_or_else(default_path),
    )
}

/// What a look at one task came to.
#[derive(Debug)]
pub struct Looked {
    /// The record as it is now.
    pub record: Record,
    /// How the task ended, when it has.
    pub end: Option<CallEnd>,
}

/// Reach the record's server as the configuration describes it.
async fn reach(
    config: &Config,
    r: &Record,
    person: Arc<dyn Person>,
    trace: &Trace,
) -> Result<Connection, String> {
    let spec = config
        .servers
        .iter()
        .find(|s| s.name == r.server)
        .ok_or_else(|| {
            format!(
                "task {} is on server {:?}, which this servers file does not name",
                r.task_id, r.server
            )
        })?;
    let limits = connect::Limits {
        timeout: config.settings.connect_timeout,
        max_questions: config.settings.max_input_rounds,
    };
    connect::connect(spec, person, trace, limits)
        .await
        .map_err(|e| e.to_string())
}

fn limits(config: &Config, wait: Duration) -> CallLimits {
    let s = &config.settings;
    CallLimits {
        round_timeout: s.tool_timeout,
        max_round_timeout: s.tool_max_timeout,
        max_input_rounds: s.max_input_rounds,
        task_wait: wait,
    }
}

/// Look at task `id` (its id, or the start of it), following it for up to `wait` when it
/// has not ended; its questions go to `person`. A task whose record has its end is not
/// looked at again.
pub async fn look(
    config: &Config,
    id: &str,
    wait: Duration,
    person: Arc<dyn Person>,
    trace: &Trace,
) -> Result<Looked, String> {
    let records = records_of(config);
    let r = records.find(id)?;
    if r.ended() {
        let end = r.end.as_ref().map(super::end_of);
        return Ok(Looked { record: r, end });
    }
    let conn = reach(config, &r, person.clone(), trace).await?;
    let stop = CancellationToken::new();
    let done = dispatch::follow_task(
        &conn,
        &r.task_id,
        Some(meta_of(&r)),
        limits(config, wait),
        person.as_ref(),
        trace,
        &stop,
    )
    .await;
    conn.close().await;
    let now = record(&made_of(&r), &done.end, r.reported, trace.secrets());
    records.keep(&now)?;
    let end =
        (!matches!(done.end, CallEnd::Background(_) | CallEnd::TimedOut(_))).then_some(done.end);
    Ok(Looked { record: now, end })
}

/// Cancel task `id` on its server (`tasks/cancel`), then look at it once. A task that has
/// ended is left as it is.
pub async fn cancel(
    config: &Config,
    id: &str,
    person: Arc<dyn Person>,
    trace: &Trace,
) -> Result<Looked, String> {
    let records = records_of(config);
    let r = records.find(id)?;
    if r.ended() {
        let end = r.end.as_ref().map(super::end_of);
        return Ok(Looked { record: r, end });
    }
    let conn = reach(config, &r, person.clone(), trace).await?;
    let mut params = CancelTaskParams::new(r.task_id.clone());
    params.meta = Some(meta_of(&r));
    let request = ClientRequest::CancelTaskRequest(CancelTaskRequest::new(params));
    let sent = tokio::time::timeout(CANCEL_SEND_LIMIT.max(config.settings.tool_timeout), async {
        conn.send(request).await?.await_response().await
    })
    .await;
    let acknowledged = match sent {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(format!(
            "{} refused to cancel task {}: {e}",
            r.server, r.task_id
        )),
        Err(_) => Err(format!(
            "{} did not answer the cancellation of task {}",
            r.server, r.task_id
        )),
    };
    if let Err(e) = acknowledged {
        conn.close().await;
        return Err(e);
    }
    let stop = CancellationToken::new();
    let done = dispatch::follow_task(
        &conn,
        &r.task_id,
        Some(meta_of(&r)),
        limits(config, Duration::ZERO),
        person.as_ref(),
        trace,
        &stop,
    )
    .await;
    conn.close().await;
    let now = record(&made_of(&r), &done.end, r.reported, trace.secrets());
    records.keep(&now)?;
    let end =
        (!matches!(done.end, CallEnd::Background(_) | CallEnd::TimedOut(_))).then_some(done.end);
    Ok(Looked { record: now, end })
}
