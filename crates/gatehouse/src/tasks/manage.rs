//! `gatehouse tasks show|cancel|result ID` from any process: the task's record, and its
//! server reached again (a stdio server is started anew; with a durable task store it
//! answers for a task an earlier process of it started) to look at the task, follow it
//! for a while answering its questions through the person, or cancel it.

use std::{sync::Arc, time::Duration};

use rmcp::model::{CancelTaskParams, CancelTaskRequest, ClientRequest};
use tokio_util::sync::CancellationToken;

use super::{Record, Records, default_path, meta_of, record};
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

/// A task's record, as the look at it starts.
enum Found {
    /// It has ended: the record says how.
    Ended(Box<Looked>),
    /// It may still be running: its server, reached again, must be asked.
    Running(Records, Box<Record>, Box<Connection>),
}

/// What a look at a task works with: the configuration that names its server and records,
/// the person its questions go to, and the trace.
pub struct Manager<'a> {
    /// The servers file the task's server is reached by.
    pub config: &'a Config,
    /// Who answers the task's questions.
    pub person: Arc<dyn Person>,
    /// Where the looks are recorded.
    pub trace: &'a Trace,
}

fn limits(config: &Config, wait: Duration) -> CallLimits {
    CallLimits::of(&config.settings).with_task_wait(wait)
}

/// How long `cancel` follows a task after asking, for the cancellation to show: it is
/// cooperative, and a task whose runner stopped is taken over (and so ends) only once its
/// lease is stale.
pub const CANCEL_SETTLE: Duration = Duration::from_secs(10);

impl Manager<'_> {
    /// Task `id`'s record, and its server reached when the record has no end.
    async fn find(&self, id: &str) -> Result<Found, String> {
        let records = records_of(self.config);
        let r = records.find(id)?;
        if r.ended() {
            let end = r.end.as_ref().map(super::end_of);
            return Ok(Found::Ended(Box::new(Looked { record: r, end })));
        }
        let conn = self.reach(&r).await?;
        Ok(Found::Running(records, Box::new(r), Box::new(conn)))
    }

    /// Reach the record's server as the configuration describes it.
    async fn reach(&self, r: &Record) -> Result<Connection, String> {
        let spec = self
            .config
            .servers
            .iter()
            .find(|s| s.name == r.server)
            .ok_or_else(|| {
                format!(
                    "task {} is on server {:?}, which this servers file does not name",
                    r.task_id, r.server
                )
            })?;
        let limits = connect::Limits::from_settings(&self.config.settings);
        connect::connect(spec, self.person.clone(), self.trace, limits)
            .await
            .map_err(|e| e.to_string())
    }

    /// Look at task `id` (its id, or the start of it), following it for up to `wait` when
    /// it has not ended; its questions go to the person. A task whose record has its end is
    /// not looked at again.
    pub async fn look(&self, id: &str, wait: Duration) -> Result<Looked, String> {
        let (records, r, conn) = match self.find(id).await? {
            Found::Ended(looked) => return Ok(*looked),
            Found::Running(records, r, conn) => (records, *r, *conn),
        };
        let looked = self.follow(&conn, &records, r, wait).await;
        conn.close().await;
        looked
    }

    /// Follow the task of `r` on `conn` for up to `wait`, and keep what came of it.
    async fn follow(
        &self,
        conn: &Connection,
        records: &Records,
        r: Record,
        wait: Duration,
    ) -> Result<Looked, String> {
        let stop = CancellationToken::new();
        let meta = Some(meta_of(&r));
        let limits = limits(self.config, wait);
        let watch = dispatch::Watch {
            person: self.person.as_ref(),
            trace: self.trace,
            stop: &stop,
        };
        let done = dispatch::follow_task(conn, &r.task_id, meta, limits, watch).await;
        let now = record(
            &r,
            &done.end,
            done.task.as_ref(),
            r.reported,
            self.trace.secrets(),
        );
        records.keep(&now)?;
        let goes_on = matches!(done.end, CallEnd::Background(_) | CallEnd::TimedOut(_));
        Ok(Looked {
            record: now,
            end: (!goes_on).then_some(done.end),
        })
    }

    /// Cancel task `id` on its server (`tasks/cancel`), then follow it for up to
    /// [`CANCEL_SETTLE`] until it ends. A task that has ended is left as it is.
    pub async fn cancel(&self, id: &str) -> Result<Looked, String> {
        let (records, r, conn) = match self.find(id).await? {
            Found::Ended(looked) => return Ok(*looked),
            Found::Running(records, r, conn) => (records, *r, *conn),
        };
        let mut params = CancelTaskParams::new(r.task_id.clone());
        params.meta = Some(meta_of(&r));
        let request = ClientRequest::CancelTaskRequest(CancelTaskRequest::new(params));
        let limit = CANCEL_SEND_LIMIT.max(self.config.settings.tool_timeout);
        let sent = tokio::time::timeout(limit, async {
            conn.send(request).await?.await_response().await
        })
        .await;
        let refused = match sent {
            Ok(Ok(_)) => None,
            Ok(Err(e)) => Some(format!(
                "{} refused to cancel task {}: {e}",
                r.server, r.task_id
            )),
            Err(_) => Some(format!(
                "{} did not answer the cancellation of task {}",
                r.server, r.task_id
            )),
        };
        let looked = match refused {
            Some(why) => Err(why),
            None => self.follow(&conn, &records, r, CANCEL_SETTLE).await,
        };
        conn.close().await;
        looked
    }
}
