//! The tasks table: one row per task, in a SQLite store that every instance of a server
//! shares. Every change is one statement or one transaction, so what one instance wrote a
//! `tasks/get` on another reads at once. A row holds who may see the task (its owner),
//! what it runs (tool and arguments), where it is (status, the questions it waits on, the
//! answers so far, the work's checkpoint), how it ended (result or error), and who runs it
//! now (a lease with a heartbeat, so that another instance can take over a task whose
//! runner stopped).

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::{Map, Value};

/// The statuses, as the extension spells them and the table keeps them.
pub const WORKING: &str = "working";
/// Waiting on `tasks/update`.
pub const INPUT_REQUIRED: &str = "input_required";
/// Ended with a result (which may be a tool error).
pub const COMPLETED: &str = "completed";
/// Ended with a JSON-RPC error.
pub const FAILED: &str = "failed";
/// Ended by a cancellation.
pub const CANCELLED: &str = "cancelled";

/// Is `status` an end?
pub fn is_terminal(status: &str) -> bool {
    matches!(status, COMPLETED | FAILED | CANCELLED)
}

/// Create the table (and its indexes) if the store has none.
pub fn create(db: &Connection) -> rusqlite::Result<()> {
    db.execute_batch(
        "CREATE TABLE IF NOT EXISTS tasks (
             id TEXT PRIMARY KEY,
             server TEXT NOT NULL,
             owner TEXT NOT NULL,
             tool TEXT NOT NULL,
             args TEXT NOT NULL,
             status TEXT NOT NULL,
             status_message TEXT,
             created_ms INTEGER NOT NULL,
             updated_ms INTEGER NOT NULL,
             ttl_ms INTEGER NOT NULL,
             poll_ms INTEGER NOT NULL,
             legs INTEGER NOT NULL DEFAULT 0,
             asked TEXT NOT NULL DEFAULT '{}',
             answers TEXT NOT NULL DEFAULT '{}',
             checkpoint TEXT,
             result TEXT,
             error TEXT,
             cancel_requested INTEGER NOT NULL DEFAULT 0,
             lease TEXT,
             heartbeat_ms INTEGER);
         CREATE INDEX IF NOT EXISTS tasks_by_owner ON tasks (server, owner, status);
         CREATE INDEX IF NOT EXISTS tasks_by_age ON tasks (created_ms);",
    )
}

/// One task as the table holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRow {
    /// The task's id.
    pub id: String,
    /// Who may see it.
    pub owner: String,
    /// The tool it runs.
    pub tool: String,
    /// The tool's arguments.
    pub args: Map<String, Value>,
    /// Where it is.
    pub status: String,
    /// What the work last said about itself.
    pub status_message: Option<String>,
    /// When it was made, in ms since the epoch.
    pub created_ms: u64,
    /// When it last changed.
    pub updated_ms: u64,
    /// How long it is kept from `created_ms`.
    pub ttl_ms: u64,
    /// The poll interval it suggests.
    pub poll_ms: u64,
    /// How many legs of work were started (the next leg's number is this plus one).
    pub legs: u64,
    /// The questions it waits on: wire key → `{"key": the tool's key, "request": {…}}`.
    pub asked: Map<String, Value>,
    /// The answers so far, by the tool's key.
    pub answers: Map<String, Value>,
    /// What the work saved to go on from.
    pub checkpoint: Option<Value>,
    /// The `CallToolResult`, when completed.
    pub result: Option<Value>,
    /// The JSON-RPC error object, when failed.
    pub error: Option<Value>,
    /// A cancellation was asked for.
    pub cancel_requested: bool,
    /// The instance running it now, if any.
    pub lease: Option<String>,
    /// The lease holder's last sign of life.
    pub heartbeat_ms: Option<u64>,
}

const COLUMNS: &str = "id, owner, tool, args, status, status_message, created_ms, updated_ms, \
     ttl_ms, poll_ms, legs, asked, answers, checkpoint, result, error, cancel_requested, lease, \
     heartbeat_ms";

fn object(text: String) -> Map<String, Value> {
    match serde_json::from_str(&text) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

fn json(text: Option<String>) -> Option<Value> {
    text.and_then(|t| serde_json::from_str(&t).ok())
}

fn read(r: &Row<'_>) -> rusqlite::Result<TaskRow> {
    let ms = |i: usize| r.get::<_, i64>(i).map(|v| v.max(0) as u64);
    Ok(TaskRow {
        id: r.get(0)?,
        owner: r.get(1)?,
        tool: r.get(2)?,
        args: object(r.get(3)?),
        status: r.get(4)?,
        status_message: r.get(5)?,
        created_ms: ms(6)?,
        updated_ms: ms(7)?,
        ttl_ms: ms(8)?,
        poll_ms: ms(9)?,
        legs: ms(10)?,
        asked: object(r.get(11)?),
        answers: object(r.get(12)?),
        checkpoint: json(r.get(13)?),
        result: json(r.get(14)?),
        error: json(r.get(15)?),
        cancel_requested: r.get::<_, i64>(16)? != 0,
        lease: r.get(17)?,
        heartbeat_ms: r.get::<_, Option<i64>>(18)?.map(|v| v.max(0) as u64),
    })
}

/// What a new task starts with.
pub struct NewTask<'a> {
    /// Its id.
    pub id: &'a str,
    /// The server it belongs to (a store may be shared by several servers).
    pub server: &'a str,
    /// Who may see it.
    pub owner: &'a str,
    /// The tool and its arguments.
    pub tool: &'a str,
    /// The arguments.
    pub args: &'a Map<String, Value>,
    /// Now.
    pub now_ms: u64,
    /// How long it is kept.
    pub ttl_ms: u64,
    /// The poll interval it suggests.
    pub poll_ms: u64,
    /// The instance that runs its first leg.
    pub lease: &'a str,
}

/// Insert a new task, `working`, its first leg leased to `lease` — unless its owner has
/// `max_active` tasks that have not ended already. Expired tasks are removed first.
/// Returns whether it was inserted.
pub fn insert(
    db: &mut Connection,
    task: &NewTask<'_>,
    max_active: usize,
) -> rusqlite::Result<bool> {
    let tx = db.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    tx.execute(
        "DELETE FROM tasks WHERE created_ms + ttl_ms < ?1",
        params![task.now_ms as i64],
    )?;
    let active: i64 = tx.query_row(
        "SELECT count(*) FROM tasks WHERE server = ?1 AND owner = ?2
           AND status IN ('working', 'input_required')",
        params![task.server, task.owner],
        |r| r.get(0),
    )?;
    if active as usize >= max_active {
        return Ok(false);
    }
    tx.execute(
        "INSERT INTO tasks (id, server, owner, tool, args, status, created_ms, updated_ms,
             ttl_ms, poll_ms, legs, lease, heartbeat_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, 'working', ?6, ?6, ?7, ?8, 1, ?9, ?6)",
        params![
            task.id,
            task.server,
            task.owner,
            task.tool,
            Value::Object(task.args.clone()).to_string(),
            task.now_ms as i64,
            task.ttl_ms as i64,
            task.poll_ms as i64,
            task.lease,
        ],
    )?;
    tx.commit()?;
    Ok(true)
}

/// The task `id` of `server`, whoever owns it (the caller checks).
pub fn get(db: &Connection, server: &str, id: &str) -> rusqlite::Result<Option<TaskRow>> {
    db.query_row(
        &format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1 AND server = ?2"),
        params![id, server],
        read,
    )
    .optional()
}

/// Remove a task (it expired).
pub fn delete(db: &Connection, id: &str) -> rusqlite::Result<()> {
    db.execute("DELETE FROM tasks WHERE id = ?1", params![id])
        .map(|_| ())
}

/// The lease holder's sign of life, with what the work said since (its status message,
/// its checkpoint). Returns `None` when the lease is no longer `lease`'s, else whether a
/// cancellation was asked for.
pub fn heartbeat(
    db: &Connection,
    id: &str,
    lease: &str,
    now_ms: u64,
    note: Option<(&Option<String>, &Option<Value>)>,
) -> rusqlite::Result<Option<bool>> {
    let changed = match note {
        None => db.execute(
            "UPDATE tasks SET heartbeat_ms = ?3 WHERE id = ?1 AND lease = ?2 AND status = 'working'",
            params![id, lease, now_ms as i64],
        )?,
        Some((message, checkpoint)) => db.execute(
            "UPDATE tasks SET heartbeat_ms = ?3, updated_ms = CASE WHEN status_message IS ?4
                 THEN updated_ms ELSE ?3 END, status_message = ?4, checkpoint = ?5
             WHERE id = ?1 AND lease = ?2 AND status = 'working'",
            params![
                id,
                lease,
                now_ms as i64,
                message,
                checkpoint.as_ref().map(Value::to_string)
            ],
        )?,
    };
    if changed == 0 {
        return Ok(None);
    }
    db.query_row(
        "SELECT cancel_requested FROM tasks WHERE id = ?1",
        params![id],
        |r| r.get::<_, i64>(0),
    )
    .map(|c| Some(c != 0))
}

/// How a leg of work ended, as the table records it.
pub enum LegEnd<'a> {
    /// The task is done: `completed` with this result.
    Completed(&'a Value),
    /// The task failed with this JSON-RPC error object, and says why.
    Failed(&'a Value, &'a str),
    /// The task was cancelled.
    Cancelled,
    /// The task waits on these questions (wire key → `{key, request}`).
    Asking(&'a Map<String, Value>),
}

/// Record how the leg leased to `lease` ended, if the lease is still its own. Returns
/// whether it was recorded.
pub fn end_leg(
    db: &Connection,
    id: &str,
    lease: &str,
    now_ms: u64,
    end: LegEnd<'_>,
    message: &Option<String>,
) -> rusqlite::Result<bool> {
    let now = now_ms as i64;
    let n = match end {
        LegEnd::Completed(result) => db.execute(
            "UPDATE tasks SET status = 'completed', result = ?3, updated_ms = ?4, lease = NULL,
                 status_message = ?5
             WHERE id = ?1 AND lease = ?2 AND status = 'working'",
            params![id, lease, result.to_string(), now, message],
        )?,
        LegEnd::Failed(error, why) => db.execute(
            "UPDATE tasks SET status = 'failed', error = ?3, updated_ms = ?4, lease = NULL,
                 status_message = ?5
             WHERE id = ?1 AND lease = ?2 AND status = 'working'",
            params![id, lease, error.to_string(), now, why],
        )?,
        LegEnd::Cancelled => db.execute(
            "UPDATE tasks SET status = 'cancelled', updated_ms = ?3, lease = NULL,
                 status_message = 'cancelled'
             WHERE id = ?1 AND lease = ?2 AND status = 'working'",
            params![id, lease, now],
        )?,
        LegEnd::Asking(asked) => db.execute(
            "UPDATE tasks SET status = 'input_required', asked = ?3, updated_ms = ?4,
                 lease = NULL, status_message = ?5
             WHERE id = ?1 AND lease = ?2 AND status = 'working'",
            params![
                id,
                lease,
                Value::Object(asked.clone()).to_string(),
                now,
                message
            ],
        )?,
    };
    Ok(n == 1)
}

/// Take over a `working` task whose lease holder went quiet: its lease as `seen` (holder
/// and heartbeat) becomes `lease`'s, and a new leg is counted. Returns the row as taken,
/// or `None` when another instance was quicker (or the holder woke up).
pub fn adopt(
    db: &mut Connection,
    row: &TaskRow,
    lease: &str,
    now_ms: u64,
) -> rusqlite::Result<Option<TaskRow>> {
    let tx = db.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let n = tx.execute(
        "UPDATE tasks SET lease = ?2, heartbeat_ms = ?3, legs = legs + 1
         WHERE id = ?1 AND status = 'working' AND lease IS ?4 AND heartbeat_ms IS ?5",
        params![
            row.id,
            lease,
            now_ms as i64,
            row.lease,
            row.heartbeat_ms.map(|v| v as i64)
        ],
    )?;
    let taken = if n == 1 {
        tx.query_row(
            &format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1"),
            params![row.id],
            read,
        )
        .optional()?
    } else {
        None
    };
    tx.commit()?;
    Ok(taken)
}

/// What answering some of a task's questions came to.
pub enum Answered {
    /// Questions are still open.
    StillAsking,
    /// Every question is answered: the task is `working` again, its next leg leased to
    /// the instance that answered, and this is the row to run it from.
    Resume(Box<TaskRow>),
    /// The task is not waiting on questions (it is working or has ended).
    NotAsking,
}

/// Record answers (by wire key, each already checked to be one of `asked`'s), in one
/// transaction. When none is left open, the task goes back to `working` under `lease`.
pub fn answer(
    db: &mut Connection,
    id: &str,
    answers: &Map<String, Value>,
    lease: &str,
    now_ms: u64,
) -> rusqlite::Result<Answered> {
    let tx = db.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let Some(mut row) = tx
        .query_row(
            &format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1"),
            params![id],
            read,
        )
        .optional()?
    else {
        return Ok(Answered::NotAsking);
    };
    if row.status != INPUT_REQUIRED {
        return Ok(Answered::NotAsking);
    }
    for (wire, answer) in answers {
        if let Some(asked) = row.asked.remove(wire)
            && let Some(key) = asked.get("key").and_then(Value::as_str)
        {
            row.answers.insert(key.to_owned(), answer.clone());
        }
    }
    let done = row.asked.is_empty();
    let now = now_ms as i64;
    tx.execute(
        "UPDATE tasks SET asked = ?2, answers = ?3, updated_ms = ?4,
             status = CASE WHEN ?5 THEN 'working' ELSE status END,
             lease = CASE WHEN ?5 THEN ?6 ELSE lease END,
             heartbeat_ms = CASE WHEN ?5 THEN ?4 ELSE heartbeat_ms END,
             legs = CASE WHEN ?5 THEN legs + 1 ELSE legs END
         WHERE id = ?1",
        params![
            id,
            Value::Object(row.asked.clone()).to_string(),
            Value::Object(row.answers.clone()).to_string(),
            now,
            done,
            lease
        ],
    )?;
    tx.commit()?;
    if !done {
        return Ok(Answered::StillAsking);
    }
    row.status = WORKING.into();
    row.legs += 1;
    row.lease = Some(lease.to_owned());
    Ok(Answered::Resume(Box::new(row)))
}

/// What asking for a cancellation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelAsked {
    /// The task had ended already: nothing changed.
    Ended,
    /// The task is `cancelled` now (it was waiting on questions, or its runner was gone).
    Cancelled,
    /// Its runner (maybe on another instance) will see the request at its next heartbeat.
    Requested,
}

/// Ask for a task's cancellation. A task waiting on questions, or one whose runner's last
/// heartbeat is older than `stale_before`, is cancelled at once.
pub fn cancel(
    db: &mut Connection,
    id: &str,
    now_ms: u64,
    stale_before: u64,
) -> rusqlite::Result<CancelAsked> {
    let tx = db.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let row: Option<(String, Option<i64>)> = tx
        .query_row(
            "SELECT status, heartbeat_ms FROM tasks WHERE id = ?1",
            params![id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let outcome = match row {
        None => CancelAsked::Ended,
        Some((status, _)) if is_terminal(&status) => CancelAsked::Ended,
        Some((status, beat))
            if status == INPUT_REQUIRED || beat.unwrap_or(0) < stale_before as i64 =>
        {
            tx.execute(
                "UPDATE tasks SET status = 'cancelled', cancel_requested = 1, updated_ms = ?2,
                     lease = NULL, asked = '{}', status_message = 'cancelled'
                 WHERE id = ?1",
                params![id, now_ms as i64],
            )?;
            CancelAsked::Cancelled
        }
        Some(_) => {
            tx.execute(
                "UPDATE tasks SET cancel_requested = 1 WHERE id = ?1",
                params![id],
            )?;
            CancelAsked::Requested
        }
    };
    tx.commit()?;
    Ok(outcome)
}
