//! The gateway's task records, written once for both stores: one row per task the gateway
//! handed a client (`gateway_tasks` in SQLite, `gatehouse_gateway_tasks` in PostgreSQL),
//! so that any replica answers `tasks/get`, `tasks/update` and `tasks/cancel` for it. A
//! row holds whose task it is (the caller), what it runs (server, tool, the checked
//! arguments), where it runs (the server's own task id), where it is (status, message,
//! poll interval, the questions it waits on), and its end (the result or error, as the
//! client reads it). Every column
//! is NOT NULL (an empty text or a 0 for "none"), so a row of either database reads with
//! the page's [`Cells`].
//!
//! Changes are single conditional statements, so replicas racing on one task agree: an
//! end is written only over a task that has not ended (the first end wins).

use super::{
    Store, StoreError,
    page::{Bounded, Cells, Kept, Statement, Value},
};
use crate::caller::CallerName;

/// Is `status` (a status as the extension spells it) an end?
pub fn is_end(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

/// One task the gateway handed a client, as the store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRow {
    /// Its id: 128 random bits as hex.
    pub id: String,
    /// Whose it is (`user@tenant`): to anyone else it does not exist.
    pub caller: CallerName,
    /// The server that runs it (the servers file's name).
    pub server: String,
    /// The tool as the catalog names it (`SERVER__TOOL`).
    pub tool: String,
    /// The checked arguments it was sent with, as JSON (the `afterCall` hook's input).
    pub arguments: String,
    /// The server's own task id.
    pub server_task: String,
    /// Where it is.
    pub status: String,
    /// Its status message, visible and clipped; empty for none.
    pub message: String,
    /// The poll interval it suggests, in milliseconds.
    pub poll_ms: i64,
    /// The questions it waits on (`inputRequests`, as JSON) while `input_required`.
    pub asked: String,
    /// Its end, as JSON: the `CallToolResult` when completed, the JSON-RPC error object
    /// when failed; empty before.
    pub end_json: String,
    /// The trace id of the call that started it (the `afterCall` hook's input).
    pub trace_id: String,
    /// The call's step on the replica that started it.
    pub step: i64,
    /// When it was made, in milliseconds since the Unix epoch.
    pub created_at: i64,
    /// When it last changed.
    pub updated_at: i64,
    /// When it is dropped: its `ttlMs` after `created_at`.
    pub expires_at: i64,
}

/// A row of `caller`'s with nothing else in it, for the tests to fill in.
#[cfg(test)]
impl TaskRow {
    pub(crate) fn blank(caller: CallerName) -> TaskRow {
        TaskRow {
            id: String::new(),
            caller,
            server: String::new(),
            tool: String::new(),
            arguments: String::new(),
            server_task: String::new(),
            status: String::new(),
            message: String::new(),
            poll_ms: 0,
            asked: String::new(),
            end_json: String::new(),
            trace_id: String::new(),
            step: 0,
            created_at: 0,
            updated_at: 0,
            expires_at: 0,
        }
    }
}

impl Kept for TaskRow {
    const TABLE: &'static str = "{t}gateway_tasks";
    const COLUMNS: &'static str = "id, caller, server, tool, arguments, server_task, status, \
        message, poll_ms, asked, end_json, trace_id, step, created_at, updated_at, expires_at";
    fn read<C: Cells>(r: &C) -> Result<Self, C::Error> {
        // Each column read in the order COLUMNS names it.
        let mut next = 0..;
        let mut col = || next.next().unwrap_or_default();
        Ok(TaskRow {
            id: r.text(col())?,
            caller: r.caller(col())?,
            server: r.text(col())?,
            tool: r.text(col())?,
            arguments: r.text(col())?,
            server_task: r.text(col())?,
            status: r.text(col())?,
            message: r.text(col())?,
            poll_ms: r.int(col())?,
            asked: r.text(col())?,
            end_json: r.text(col())?,
            trace_id: r.text(col())?,
            step: r.int(col())?,
            created_at: r.int(col())?,
            updated_at: r.int(col())?,
            expires_at: r.int(col())?,
        })
    }
}

/// The table in SQLite (made with the store's others).
pub(super) const SQLITE_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS gateway_tasks (id TEXT PRIMARY KEY, caller TEXT NOT NULL,
        server TEXT NOT NULL, tool TEXT NOT NULL, arguments TEXT NOT NULL,
        server_task TEXT NOT NULL, status TEXT NOT NULL, message TEXT NOT NULL,
        poll_ms INTEGER NOT NULL, asked TEXT NOT NULL, end_json TEXT NOT NULL,
        trace_id TEXT NOT NULL, step INTEGER NOT NULL, created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL, expires_at INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS gateway_tasks_by_caller ON gateway_tasks (caller);";

/// The table in PostgreSQL (made with the store's others).
#[cfg(feature = "postgres")]
pub(super) const POSTGRES_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS gatehouse_gateway_tasks (id TEXT PRIMARY KEY,
        caller TEXT NOT NULL, server TEXT NOT NULL, tool TEXT NOT NULL,
        arguments TEXT NOT NULL, server_task TEXT NOT NULL, status TEXT NOT NULL,
        message TEXT NOT NULL, poll_ms BIGINT NOT NULL, asked TEXT NOT NULL,
        end_json TEXT NOT NULL, trace_id TEXT NOT NULL, step BIGINT NOT NULL,
        created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, expires_at BIGINT NOT NULL);
    CREATE INDEX IF NOT EXISTS gatehouse_gateway_tasks_by_caller
        ON gatehouse_gateway_tasks (caller);";

const COUNT_KEPT: &str = "SELECT COUNT(*) FROM {t}gateway_tasks WHERE caller = $1";
const INSERT: &str = "INSERT INTO {t}gateway_tasks (id, caller, server, tool, arguments,
    server_task, status, message, poll_ms, asked, end_json, trace_id, step, created_at,
    updated_at, expires_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)";
/// Where an unended task is now: nothing over an end.
const MOVE: &str = "UPDATE {t}gateway_tasks SET status = $1, message = $2, poll_ms = $3,
    asked = $4, updated_at = $5 WHERE id = $6 AND status IN ('working', 'input_required')";
/// An unended task's end: the first end written wins.
const END: &str = "UPDATE {t}gateway_tasks SET status = $1, message = $2, end_json = $3,
    asked = '', updated_at = $4,
    expires_at = $5 WHERE id = $6 AND status IN ('working', 'input_required')";
/// How a task moves on, short of its end ([`Store::task_move`]).
#[derive(Debug, Clone, Default)]
pub struct Move {
    /// Its status now: working or input_required.
    pub status: String,
    /// Its status message (empty: none).
    pub message: String,
    /// Its poll interval, in milliseconds.
    pub poll_ms: i64,
    /// The questions it waits on (empty: none).
    pub asked: String,
}

impl Move {
    /// The move that leaves `row` where it is: change what differs.
    pub fn from(row: &TaskRow) -> Move {
        Move {
            status: row.status.clone(),
            message: row.message.clone(),
            poll_ms: row.poll_ms,
            asked: row.asked.clone(),
        }
    }
}

fn text(s: &str) -> Value {
    Value::Text(s.to_owned())
}

/// The gateway's task records, in whichever store: every replica sees the same tasks.
impl Store {
    /// Keep a new task, unless its caller has `max` kept already (`Ok(false)`); expired
    /// ones are dropped first. It is in the store when this returns.
    pub async fn task_insert(
        &self,
        row: TaskRow,
        now: i64,
        max: usize,
    ) -> Result<bool, StoreError> {
        let r = &row;
        let values = vec![
            text(&r.id),
            Value::from(&r.caller),
            text(&r.server),
            text(&r.tool),
            text(&r.arguments),
            text(&r.server_task),
            text(&r.status),
            text(&r.message),
            Value::Int(r.poll_ms),
            text(&r.asked),
            text(&r.end_json),
            text(&r.trace_id),
            Value::Int(r.step),
            Value::Int(r.created_at),
            Value::Int(r.updated_at),
            Value::Int(r.expires_at),
        ];
        let insert = Statement {
            sql: INSERT,
            values,
        };
        let count = vec![Value::from(&row.caller)];
        let turn = row.caller.to_string();
        let write = Bounded::refusing(now, turn, (COUNT_KEPT, count), max, insert);
        self.write::<TaskRow>(write).await
    }

    /// The task with this id, whoever's it is, unless it expired by `now`.
    pub async fn task_row(&self, id: &str, now: i64) -> Result<Option<TaskRow>, StoreError> {
        self.find::<TaskRow>(id, now).await
    }

    /// Move an unended task on: `Ok(false)` when it has ended (or is gone).
    pub async fn task_move(&self, id: &str, to: &Move, now: i64) -> Result<bool, StoreError> {
        let values = vec![
            text(&to.status),
            text(&to.message),
            Value::Int(to.poll_ms),
            text(&to.asked),
            Value::Int(now),
            text(id),
        ];
        self.changed(MOVE, values).await
    }

    /// End an unended task with `status`, its message and its end (JSON), kept until
    /// `expires_at`: `Ok(false)` when it had ended already (the first end stays).
    pub async fn task_end(
        &self,
        id: &str,
        (status, message, end): (&str, &str, &str),
        now: i64,
        expires_at: i64,
    ) -> Result<bool, StoreError> {
        let values = vec![
            text(status),
            text(message),
            text(end),
            Value::Int(now),
            Value::Int(expires_at),
            text(id),
        ];
        self.changed(END, values).await
    }
}

#[cfg(test)]
mod tests;
