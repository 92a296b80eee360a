//! The host's records of calls run as tasks, in a SQLite file of the user's (0600 in a
//! 0700 folder) that survives the host and is shared by every `gatehouse` process: a chat
//! writes them, `gatehouse tasks` reads and updates them from another process, the next
//! turn reports the ones that ended. The file is opened on first use, so a host that never
//! meets a task never creates it.

use std::{
    path::{Path, PathBuf},
    sync::Mutex,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::Serialize;
use serde_json::Value;

/// Environment variable naming the records file when `tasksFile` is not set.
pub const TASKS_FILE_ENV: &str = "GATEHOUSE_TASKS_FILE";
/// Most records kept; the oldest go first.
pub const MAX_RECORDS: usize = 1_000;
/// The largest end (a result, an error) a record keeps, as JSON text; a larger one is
/// replaced by a note of its size.
pub const MAX_STORED_END_BYTES: usize = 1024 * 1024;
/// How long a write waits for another process's.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the records are kept when `tasksFile` does not say: [`TASKS_FILE_ENV`], else
/// `$XDG_STATE_HOME/gatehouse/tasks.db`, else `~/.local/state/gatehouse/tasks.db`.
pub fn default_path() -> PathBuf {
    if let Some(p) = std::env::var_os(TASKS_FILE_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    crate::config::state_dir().join("tasks.db")
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64
}

/// One call the host saw run as a task.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Record {
    /// The task's id on its server.
    pub task_id: String,
    /// The server, by its name in the servers file.
    pub server: String,
    /// The tool as the model named it (`server__tool`).
    pub tool: String,
    /// The tool's own name on the server.
    pub wire_tool: String,
    /// The host session that made the call.
    pub session_id: String,
    /// The turn's trace and the call's step in it.
    pub trace_id: String,
    /// The call's number in its turn.
    pub step: u64,
    /// The last status the host knows (`working`, `input_required`, `completed`, `failed`,
    /// `cancelled`).
    pub status: String,
    /// The last status message, made visible.
    pub message: Option<String>,
    /// When the call was made, in ms since the epoch.
    pub started_ms: u64,
    /// When the record last changed.
    pub updated_ms: u64,
    /// How it ended, once it did: `{"result": …}`, `{"error": …}` or `{"failed": "…"}`.
    pub end: Option<Value>,
    /// Has a turn's model been given its end?
    pub reported: bool,
}

impl Record {
    /// Has the task ended (for the host: nothing more will come of it)?
    pub fn ended(&self) -> bool {
        matches!(self.status.as_str(), "completed" | "failed" | "cancelled")
    }
}

const COLUMNS: &str = "task_id, server, tool, wire_tool, session_id, trace_id, step, status, \
     message, started_ms, updated_ms, end_json, reported";

fn read(r: &Row<'_>) -> rusqlite::Result<Record> {
    let ms = |i: usize| r.get::<_, i64>(i).map(|v| v.max(0) as u64);
    Ok(Record {
        task_id: r.get(0)?,
        server: r.get(1)?,
        tool: r.get(2)?,
        wire_tool: r.get(3)?,
        session_id: r.get(4)?,
        trace_id: r.get(5)?,
        step: ms(6)?,
        status: r.get(7)?,
        message: r.get(8)?,
        started_ms: ms(9)?,
        updated_ms: ms(10)?,
        end: r
            .get::<_, Option<String>>(11)?
            .and_then(|t| serde_json::from_str(&t).ok()),
        reported: r.get::<_, i64>(12)? != 0,
    })
}

/// An end as the record keeps it: at most [`MAX_STORED_END_BYTES`].
fn stored(end: &Value) -> String {
    let text = end.to_string();
    if text.len() <= MAX_STORED_END_BYTES {
        return text;
    }
    serde_json::json!({"failed": format!(
        "the task's end was {} bytes, more than the host keeps ({MAX_STORED_END_BYTES})",
        text.len()
    )})
    .to_string()
}

/// The records file, opened on first use.
pub struct Records {
    path: PathBuf,
    db: Mutex<Option<Connection>>,
}

fn open(path: &Path) -> Result<Connection, String> {
    let fail =
        |e: &dyn std::fmt::Display| format!("cannot open the task records {}: {e}", path.display());
    // Made private before SQLite opens it: its -wal and -shm files take its mode.
    drop(crate::files::append_private(path).map_err(|e| fail(&e))?);
    let db = Connection::open(path).map_err(|e| fail(&e))?;
    db.busy_timeout(BUSY_TIMEOUT).map_err(|e| fail(&e))?;
    db.pragma_update(None, "journal_mode", "WAL")
        .map_err(|e| fail(&e))?;
    db.execute_batch(
        "CREATE TABLE IF NOT EXISTS host_tasks (
             task_id TEXT NOT NULL, server TEXT NOT NULL, tool TEXT NOT NULL,
             wire_tool TEXT NOT NULL, session_id TEXT NOT NULL, trace_id TEXT NOT NULL,
             step INTEGER NOT NULL, status TEXT NOT NULL, message TEXT,
             started_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL, end_json TEXT,
             reported INTEGER NOT NULL DEFAULT 0,
             PRIMARY KEY (server, task_id));
         CREATE INDEX IF NOT EXISTS host_tasks_by_age ON host_tasks (started_ms);",
    )
    .map_err(|e| fail(&e))?;
    Ok(db)
}

impl Records {
    /// The records at `path` (not opened yet).
    pub fn at(path: PathBuf) -> Records {
        Records {
            path,
            db: Mutex::new(None),
        }
    }

    /// Where they are.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Run `f` on the open file, opening it first (creating it only when `create`).
    /// `Ok(None)` when it does not exist and `create` is false.
    fn with<T>(
        &self,
        create: bool,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<Option<T>, String> {
        let mut db = self.db.lock().unwrap_or_else(|e| e.into_inner());
        if db.is_none() {
            if !create && !self.path.exists() {
                return Ok(None);
            }
            *db = Some(open(&self.path)?);
        }
        let conn = db.as_ref().expect("opened above");
        f(conn)
            .map(Some)
            .map_err(|e| format!("the task records {}: {e}", self.path.display()))
    }

    /// Keep a record (a new task, or one seen again), dropping the oldest past
    /// [`MAX_RECORDS`].
    pub fn keep(&self, r: &Record) -> Result<(), String> {
        self.with(true, |db| {
            db.execute(
                "INSERT INTO host_tasks (task_id, server, tool, wire_tool, session_id, trace_id,
                     step, status, message, started_ms, updated_ms, end_json, reported)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
                 ON CONFLICT (server, task_id) DO UPDATE SET status = ?8, message = ?9,
                     updated_ms = ?11, end_json = ?12, reported = ?13",
                params![
                    r.task_id,
                    r.server,
                    r.tool,
                    r.wire_tool,
                    r.session_id,
                    r.trace_id,
                    r.step as i64,
                    r.status,
                    r.message,
                    r.started_ms as i64,
                    r.updated_ms as i64,
                    r.end.as_ref().map(stored),
                    r.reported as i64
                ],
            )?;
            db.execute(
                "DELETE FROM host_tasks WHERE rowid NOT IN
                     (SELECT rowid FROM host_tasks ORDER BY started_ms DESC LIMIT ?1)",
                params![MAX_RECORDS as i64],
            )?;
            Ok(())
        })
        .map(|_| ())
    }

    /// Every record, the newest first.
    pub fn list(&self) -> Result<Vec<Record>, String> {
        self.with(false, |db| {
            let mut stmt = db.prepare(&format!(
                "SELECT {COLUMNS} FROM host_tasks ORDER BY started_ms DESC, task_id"
            ))?;
            let rows = stmt.query_map([], read)?;
            rows.collect()
        })
        .map(Option::unwrap_or_default)
    }

    /// The record of task `id` (its whole id, or the start of one that no other shares).
    pub fn find(&self, id: &str) -> Result<Record, String> {
        let found = self
            .with(false, |db| {
                let exact = db
                    .query_row(
                        &format!("SELECT {COLUMNS} FROM host_tasks WHERE task_id = ?1"),
                        params![id],
                        read,
                    )
                    .optional()?;
                if let Some(one) = exact {
                    return Ok(vec![one]);
                }
                let mut stmt = db.prepare(&format!(
                    "SELECT {COLUMNS} FROM host_tasks WHERE substr(task_id, 1, ?2) = ?1 LIMIT 2"
                ))?;
                let rows = stmt.query_map(params![id, id.len() as i64], read)?;
                rows.collect::<rusqlite::Result<Vec<_>>>()
            })?
            .unwrap_or_default();
        match found.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(format!("no task {id:?} in {}", self.path.display())),
            _ => Err(format!(
                "{id:?} is the start of more than one task's id: give more of it"
            )),
        }
    }

    /// The records no turn's model has been given the end of, on these servers, the
    /// oldest first, at most `max`.
    pub fn unreported(&self, servers: &[String], max: usize) -> Result<Vec<Record>, String> {
        let all = self
            .with(false, |db| {
                let mut stmt = db.prepare(&format!(
                    "SELECT {COLUMNS} FROM host_tasks WHERE reported = 0 ORDER BY started_ms"
                ))?;
                let rows = stmt.query_map([], read)?;
                rows.collect::<rusqlite::Result<Vec<_>>>()
            })?
            .unwrap_or_default();
        Ok(all
            .into_iter()
            .filter(|r| servers.contains(&r.server))
            .take(max)
            .collect())
    }
}
