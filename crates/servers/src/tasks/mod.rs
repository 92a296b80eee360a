//! Calls that outlive their request: the tasks extension of revision 2026-07-28
//! (`io.modelcontextprotocol/tasks`, SEP-2663), as the reference servers serve it.
//!
//! A tool that may run as a task answers `tools/call` with a task (`resultType: "task"`)
//! when that very request declared the extension on 2026-07-28, and as an ordinary call
//! otherwise (or with -32021 when it cannot run without one). The client then reads the
//! task with `tasks/get`, answers its questions with `tasks/update` and cancels it with
//! `tasks/cancel`.
//!
//! - Ids are 128 random bits, and every task is bound to its owner (user and organization):
//!   another caller's id gets the same -32602 as an id that never existed.
//! - Tasks live in a SQLite store ([`table`]), so a task survives a restart of its server
//!   and any instance sharing the store answers for it. Work runs in *legs* ([`TaskWork`]):
//!   a leg ends with a result, an error, a cancellation, or questions; the answers start
//!   the next leg, on whichever instance received them. The instance running a leg holds
//!   a lease it renews every [`HEARTBEAT`], writing the work's status message and
//!   checkpoint; a lease silent for [`STALE_AFTER`] is taken over by the next instance
//!   that reads the task, which runs the leg again from the checkpoint (`run`).
//! - Bounds: [`MAX_ACTIVE_PER_OWNER`] unfinished tasks per owner, [`MAX_LEGS`] legs per
//!   task, [`MAX_ANSWER_BYTES`] per answer, a time to live of [`TASK_TTL`] after which a
//!   task is gone.

mod run;
pub mod table;
mod watch;
mod wire;

pub use watch::Watch;

use std::{
    collections::HashMap,
    path::Path,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::future::BoxFuture;
use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolResult, ClientCapabilities, CreateTaskResult, GetTaskResult, InputResponses,
        ProtocolVersion,
    },
    service::RequestContext,
};
use rusqlite::Connection;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::{self, Caller};

pub use rmcp::model::TASKS_EXTENSION_ID;

/// How long a task is kept, from its creation: its `ttlMs`. After it, the task is gone.
pub const TASK_TTL: Duration = Duration::from_secs(24 * 3600);
/// The poll interval a task suggests (`pollIntervalMs`).
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// How often the instance running a leg renews its lease (and writes the work's status
/// message and checkpoint).
pub const HEARTBEAT: Duration = Duration::from_secs(1);
/// A lease not renewed for this long belongs to a runner that stopped: the next instance
/// that reads the task takes it over.
pub const STALE_AFTER: Duration = Duration::from_secs(5);
/// Environment variable overriding [`STALE_AFTER`], in milliseconds (100 to 600,000).
pub const ENV_STALE_MS: &str = "GATEHOUSE_TASK_STALE_MS";
/// Environment variable naming the servers' task store when `--tasks-db` is not given.
pub const ENV_DB: &str = "GATEHOUSE_SERVER_TASKS_DB";
/// Most tasks one owner may have unfinished at once on one server.
pub const MAX_ACTIVE_PER_OWNER: usize = 32;
/// Most legs one task may run (each answer to its questions starts one).
pub const MAX_LEGS: u64 = 20;
/// Most questions one leg may ask.
pub const MAX_QUESTIONS: usize = 16;
/// The largest answer to one question, as JSON text.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// The longest status message a task shows.
pub const MAX_STATUS_MESSAGE_CHARS: usize = 200;

/// Where the servers keep their tasks when nothing says otherwise: [`ENV_DB`], else
/// `server-tasks.db` in the servers' data folder.
pub fn default_db_path() -> std::path::PathBuf {
    crate::store::path_from_env(ENV_DB, "server-tasks.db")
}

/// Did this request declare the extension, on a revision that has it? Only such a request
/// may get a task (the extension is not defined before 2026-07-28).
pub fn declared(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
        && context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks())
}

/// The -32021 a request gets when its tool runs only as a task and it declared no tasks.
pub fn needs_tasks() -> ErrorData {
    ErrorData::missing_required_client_capability(
        ClientCapabilities::builder().enable_tasks().build(),
    )
}

/// Whether a tool runs as a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskMode {
    /// Never: an ordinary call.
    Never,
    /// When the request declares the extension; an ordinary call otherwise.
    Optional,
    /// Only as a task: a request without the extension gets -32021.
    Required,
}

/// The owner a task is bound to: the caller's user and organization (each JSON-quoted, so
/// no pair can imitate another).
pub fn owner_of(caller: &Caller) -> String {
    json!([caller.user, caller.tenant]).to_string()
}

/// How one leg of a task's work ended.
#[derive(Debug)]
pub enum Leg {
    /// The tool's result (a tool error too: the task is `completed` either way).
    Done(CallToolResult),
    /// Questions for the client, by the tool's own keys, each `{"method", "params"}` as in
    /// `input_required`. The answers come back in the next leg's [`Job::answers`].
    Ask(Map<String, Value>),
    /// A JSON-RPC error: the task is `failed`.
    Failed(ErrorData),
    /// The work stopped on a cancellation.
    Cancelled,
}

/// One leg of work: what the task runs, the answers it has had, where it left off.
pub struct Job {
    /// The tool.
    pub tool: String,
    /// Its arguments, as the call gave them (to be checked by the work).
    pub args: Map<String, Value>,
    /// Answers to the questions of earlier legs, by the tool's keys.
    pub answers: Map<String, Value>,
    /// What an earlier run of this leg saved ([`Control::save`]), when it is run again.
    pub checkpoint: Option<Value>,
    /// Cancellation, status and checkpoints.
    pub control: Control,
}

/// What a leg of work can tell its task, and learn from it.
#[derive(Clone)]
pub struct Control {
    cancel: CancellationToken,
    note: Arc<Mutex<Note>>,
}

#[derive(Default)]
struct Note {
    message: Option<String>,
    checkpoint: Option<Value>,
    changed: bool,
}

impl Control {
    fn new(cancel: CancellationToken, message: Option<String>, checkpoint: Option<Value>) -> Self {
        Control {
            cancel,
            note: Arc::new(Mutex::new(Note {
                message,
                checkpoint,
                changed: false,
            })),
        }
    }

    /// Resolves when the task is cancelled.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await
    }

    /// Was the task cancelled?
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Say where the work is (the task's `statusMessage`), at most
    /// [`MAX_STATUS_MESSAGE_CHARS`].
    pub fn say(&self, message: &str) {
        let message: String = message.chars().take(MAX_STATUS_MESSAGE_CHARS).collect();
        let mut note = self.note.lock().unwrap_or_else(|e| e.into_inner());
        note.changed |= note.message.as_deref() != Some(&message);
        note.message = Some(message);
    }

    /// Save where the work is, so that a run of this leg on another instance (its runner
    /// stopped) goes on from here rather than from the start.
    pub fn save(&self, checkpoint: Value) {
        let mut note = self.note.lock().unwrap_or_else(|e| e.into_inner());
        note.checkpoint = Some(checkpoint);
        note.changed = true;
    }

    fn message(&self) -> Option<String> {
        self.note
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .message
            .clone()
    }

    /// What changed since the last look, if anything.
    fn take(&self) -> Option<(Option<String>, Option<Value>)> {
        let mut note = self.note.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::take(&mut note.changed).then(|| (note.message.clone(), note.checkpoint.clone()))
    }
}

/// The work of a server's task tools, one leg at a time.
pub trait TaskWork: Send + Sync + 'static {
    /// Run one leg of `job.tool`.
    fn leg(&self, job: Job) -> BoxFuture<'_, Leg>;
}

/// The bounds and times of a server's tasks.
#[derive(Debug, Clone, Copy)]
pub struct TaskSettings {
    /// Their `ttlMs`.
    pub ttl: Duration,
    /// Their `pollIntervalMs`.
    pub poll_interval: Duration,
    /// How often a runner renews its lease.
    pub heartbeat: Duration,
    /// When a lease counts as abandoned.
    pub stale_after: Duration,
    /// Most unfinished tasks per owner.
    pub max_active: usize,
}

impl Default for TaskSettings {
    fn default() -> Self {
        TaskSettings {
            ttl: TASK_TTL,
            poll_interval: POLL_INTERVAL,
            heartbeat: HEARTBEAT,
            stale_after: STALE_AFTER,
            max_active: MAX_ACTIVE_PER_OWNER,
        }
    }
}

impl TaskSettings {
    /// The defaults, with [`ENV_STALE_MS`] read and checked.
    pub fn from_env() -> anyhow::Result<Self> {
        let mut settings = TaskSettings::default();
        if let Ok(v) = std::env::var(ENV_STALE_MS) {
            let ms = v
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|ms| (100..=600_000).contains(ms))
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "{ENV_STALE_MS}={v:?} must be a whole number from 100 to 600000"
                    )
                })?;
            settings.stale_after = Duration::from_millis(ms);
            settings.heartbeat = settings.heartbeat.min(settings.stale_after / 3);
        }
        Ok(settings)
    }
}

/// Why a task was not made.
#[derive(Debug)]
pub enum NotCreated {
    /// The owner has [`TaskSettings::max_active`] unfinished tasks already.
    TooMany(usize),
    /// The store failed.
    Store(String),
}

/// One server's tasks: its store, this instance's name for leases, the legs running here.
/// Cheap to clone; every clone shares the same tasks (rmcp makes a handler per HTTP
/// request, and each must find the tasks the others made).
#[derive(Clone)]
pub struct Tasks(Arc<Inner>);

struct Inner {
    db: Mutex<Connection>,
    server: &'static str,
    instance: String,
    settings: TaskSettings,
    running: Mutex<HashMap<String, CancellationToken>>,
}

/// The answer to an id that names no task of this caller's: the same whether it never
/// existed, expired, or is another caller's.
fn not_found() -> ErrorData {
    ErrorData::invalid_params(
        "unknown task: no task of yours has this id (it may have expired)",
        None,
    )
}

fn store_error(e: rusqlite::Error) -> ErrorData {
    common::log_line(
        json!({"ts": common::timestamp(), "event": "task_store_error", "error": e.to_string()}),
    );
    ErrorData::internal_error("the task store is unavailable; try again", None)
}

fn new_id() -> String {
    let mut bytes = [0u8; 16];
    rand::fill(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Tasks {
    /// The tasks of `server` in the store at `path` (created if missing, private).
    pub fn open(path: &Path, server: &'static str, settings: TaskSettings) -> anyhow::Result<Self> {
        let db = crate::store::open_with(path, |db| {
            Ok(crate::store::retry_busy(|| table::create(db))?)
        })?;
        Ok(Self::with(db, server, settings))
    }

    /// The tasks of `server` in memory only: gone with the process (the conformance
    /// fixture, unit tests).
    pub fn in_memory(server: &'static str, settings: TaskSettings) -> anyhow::Result<Self> {
        let db = Connection::open_in_memory()?;
        table::create(&db)?;
        Ok(Self::with(db, server, settings))
    }

    fn with(db: Connection, server: &'static str, settings: TaskSettings) -> Self {
        Tasks(Arc::new(Inner {
            db: Mutex::new(db),
            server,
            instance: format!("{}-{}", std::process::id(), new_id()),
            settings,
            running: Mutex::new(HashMap::new()),
        }))
    }

    fn db(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.0.db.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Make a task of `tool` for `owner` and start its first leg. The task is in the store
    /// before this returns, so a `tasks/get` on any instance finds it at once.
    pub fn create(
        &self,
        work: Arc<dyn TaskWork>,
        owner: &str,
        tool: &str,
        args: Map<String, Value>,
    ) -> Result<CreateTaskResult, NotCreated> {
        let id = new_id();
        let now = common::now_ms();
        let settings = &self.0.settings;
        let new = table::NewTask {
            id: &id,
            server: self.0.server,
            owner,
            tool,
            args: &args,
            now_ms: now,
            ttl_ms: settings.ttl.as_millis() as u64,
            poll_ms: settings.poll_interval.as_millis() as u64,
            lease: &self.0.instance,
        };
        let inserted = table::insert(&mut self.db(), &new, settings.max_active)
            .map_err(|e| NotCreated::Store(e.to_string()))?;
        if !inserted {
            return Err(NotCreated::TooMany(settings.max_active));
        }
        let row = table::get(&self.db(), self.0.server, &id)
            .map_err(|e| NotCreated::Store(e.to_string()))?
            .ok_or_else(|| NotCreated::Store("the new task is not in the store".into()))?;
        self.log("task_created", &row, json!({}));
        let created = wire::created(&row);
        run::spawn_leg(self.clone(), work, row);
        Ok(created)
    }

    /// The row of task `id` if `owner` may see it and it has not expired.
    fn find(&self, owner: &str, id: &str) -> Result<table::TaskRow, ErrorData> {
        let db = self.db();
        let row = table::get(&db, self.0.server, id)
            .map_err(store_error)?
            .filter(|r| r.owner == owner)
            .ok_or_else(not_found)?;
        if row.created_ms.saturating_add(row.ttl_ms) < common::now_ms() {
            table::delete(&db, id).map_err(store_error)?;
            return Err(not_found());
        }
        Ok(row)
    }

    /// `tasks/get`. A working task whose runner went quiet is taken over here first.
    pub fn get(
        &self,
        work: Arc<dyn TaskWork>,
        owner: &str,
        id: &str,
    ) -> Result<GetTaskResult, ErrorData> {
        let mut row = self.find(owner, id)?;
        if let Some(taken) = self.adopt_if_abandoned(&row)? {
            row = taken.clone();
            run::spawn_leg(self.clone(), work, taken);
        }
        Ok(wire::detailed(&row))
    }

    fn adopt_if_abandoned(
        &self,
        row: &table::TaskRow,
    ) -> Result<Option<table::TaskRow>, ErrorData> {
        let now = common::now_ms();
        let stale_before = now.saturating_sub(self.0.settings.stale_after.as_millis() as u64);
        let abandoned = row.status == table::WORKING
            && !self.is_running_here(&row.id)
            && row.heartbeat_ms.unwrap_or(0) < stale_before;
        if !abandoned {
            return Ok(None);
        }
        let taken =
            table::adopt(&mut self.db(), row, &self.0.instance, now).map_err(store_error)?;
        let Some(taken) = taken else {
            return Ok(None);
        };
        self.log(
            "task_adopted",
            &taken,
            json!({"from": row.lease, "checkpoint": taken.checkpoint.is_some()}),
        );
        if taken.legs > MAX_LEGS {
            // A leg that keeps killing its runner is not run again for ever.
            self.end_early(&taken, "the task's work stopped too many times");
            return Ok(None);
        }
        Ok(Some(taken))
    }

    fn is_running_here(&self, id: &str) -> bool {
        self.0
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(id)
    }

    /// `tasks/update`: answers to the task's open questions. Keys that are not open
    /// (never asked, answered already, of an earlier leg) are ignored; an answer that is not
    /// a result of its question's kind is refused with -32602. The last answer starts the
    /// next leg, here.
    pub fn update(
        &self,
        work: Arc<dyn TaskWork>,
        owner: &str,
        id: &str,
        responses: InputResponses,
    ) -> Result<(), ErrorData> {
        let row = self.find(owner, id)?;
        let mut accepted = Map::new();
        for (key, answer) in responses {
            let Some(asked) = row.asked.get(&key) else {
                continue;
            };
            check_answer(&key, asked, &answer)?;
            accepted.insert(key, answer);
        }
        if accepted.is_empty() {
            return Ok(());
        }
        let answered = table::answer(
            &mut self.db(),
            id,
            &accepted,
            &self.0.instance,
            common::now_ms(),
        )
        .map_err(store_error)?;
        if let table::Answered::Resume(row) = answered {
            if row.legs > MAX_LEGS {
                self.end_early(
                    &row,
                    "the task asked more questions than this server allows",
                );
            } else {
                run::spawn_leg(self.clone(), work, *row);
            }
        }
        Ok(())
    }

    /// `tasks/cancel`: a task that has ended is left as it is (and acknowledged all the
    /// same); one waiting on questions ends `cancelled` at once; a working one is told, here
    /// or at its runner's next heartbeat.
    pub fn cancel(&self, owner: &str, id: &str) -> Result<(), ErrorData> {
        let row = self.find(owner, id)?;
        let now = common::now_ms();
        let stale_before = now.saturating_sub(self.0.settings.stale_after.as_millis() as u64);
        let running_here = self.is_running_here(id);
        let asked = table::cancel(
            &mut self.db(),
            id,
            now,
            if running_here { 0 } else { stale_before },
        )
        .map_err(store_error)?;
        if asked == table::CancelAsked::Requested
            && let Some(token) = self
                .0
                .running
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(id)
        {
            token.cancel();
        }
        self.log(
            "task_cancel",
            &row,
            json!({"cancel": format!("{asked:?}").to_lowercase()}),
        );
        Ok(())
    }

    /// End a task that cannot go on, as failed.
    fn end_early(&self, row: &table::TaskRow, why: &str) {
        let error = json!({"code": -32603, "message": why});
        let end = table::LegEnd::Failed(&error, why);
        let _ = table::end_leg(
            &self.db(),
            &row.id,
            &self.0.instance,
            common::now_ms(),
            end,
            &None,
        );
    }

    fn log(&self, event: &str, row: &table::TaskRow, extra: Value) {
        let mut record = json!({"ts": common::timestamp(), "event": event, "server": self.0.server,
            "task_id": row.id, "tool": row.tool, "status": row.status, "leg": row.legs});
        if let (Some(obj), Value::Object(more)) = (record.as_object_mut(), extra) {
            obj.extend(more);
        }
        common::log_line(record);
    }
}

/// Check an answer to the open question `asked` (`{key, request}`): a JSON object of at
/// most [`MAX_ANSWER_BYTES`]; for a form, an `action` of accept, decline or cancel, and
/// `content` an object when there is one.
fn check_answer(key: &str, asked: &Value, answer: &Value) -> Result<(), ErrorData> {
    let refuse = |why: &str| {
        Err(ErrorData::invalid_params(
            format!("the answer to {key:?} {why}"),
            None,
        ))
    };
    let Value::Object(fields) = answer else {
        return refuse("is not a result object");
    };
    if answer.to_string().len() > MAX_ANSWER_BYTES {
        return refuse(&format!("is longer than {MAX_ANSWER_BYTES} bytes"));
    }
    if asked["request"]["method"] == "elicitation/create" {
        if !matches!(
            fields.get("action").and_then(Value::as_str),
            Some("accept" | "decline" | "cancel")
        ) {
            return refuse("needs an action of accept, decline or cancel");
        }
        if fields.get("content").is_some_and(|c| !c.is_object()) {
            return refuse("has content that is not an object");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
