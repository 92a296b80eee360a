//! Older clients' sessions in the shared store, so that any replica serves a session
//! another replica opened (the HTTP layer, `gatehouse_http::shared`, decides
//! what a row means; this keeps them): one row per session (its caller, its `initialize`
//! parameters, what the gateway keeps for it, its expiry), the answers a client POSTed to
//! one replica for a request another replica is waiting on, and the pruning of what
//! expired, used confirmations included. Written once for both databases, as the
//! page's rows are (`page.rs`).

mod shared;

use std::{sync::atomic::Ordering, time::Duration};

use super::{
    Store, StoreError,
    page::{Bounded, Cells, Kept, Statement, Value, kept},
};
use crate::{caller::CallerName, confirm::CONFIRMATION_TTL};

/// How much longer than [`CONFIRMATION_TTL`] a used confirmation's nonce is kept: room
/// for replicas' clocks to disagree, so no replica can still open a state whose nonce is
/// already forgotten.
pub const CLOCK_MARGIN: Duration = Duration::from_secs(5 * 60);
/// How long a used confirmation's nonce is kept: as long as its sealed state could still
/// be opened, and a margin.
pub const USED_CONFIRMATION_KEPT: Duration =
    Duration::from_secs(CONFIRMATION_TTL.as_secs() + CLOCK_MARGIN.as_secs());
/// How often a replica drops what expired from the store (expired sessions and answers,
/// used confirmations past [`USED_CONFIRMATION_KEPT`]), at most.
pub const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// An older client's session, as the store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRow {
    /// The session's id (`Mcp-Session-Id`): rmcp's random UUID, which nobody can guess.
    pub id: String,
    /// Who opened it (`user@tenant`): only they may use it, on any replica.
    pub caller: CallerName,
    /// The client's `initialize` parameters, as JSON: what a replica replays to restore
    /// the session.
    pub init: String,
    /// When it expires unless used again, in seconds since the Unix epoch.
    pub expires_at: i64,
}

/// A client's answer to a request of the gateway's, waiting for the replica that sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerRow {
    /// Its session and the request's id (as JSON), one line each ([`AnswerRow::key`]).
    pub id: String,
    /// The session's caller: only theirs is taken.
    pub caller: CallerName,
    /// The JSON-RPC answer as the client sent it (bounded by the HTTP layer).
    pub body: String,
    /// When it is dropped if nobody took it, in seconds since the Unix epoch: an answer
    /// nobody waits for does not stay.
    pub expires_at: i64,
}

kept! {
    /// A session as it is read by its id.
    pub struct Session in "{t}sessions" {
        /// Who opened it.
        pub caller: CallerName = caller,
        /// Its `initialize` parameters.
        pub init: String = text,
        /// When it expires.
        pub expires_at: i64 = int,
    }

    /// What the gateway keeps for a session (`data`), read with whose session it is.
    pub struct SessionData in "{t}sessions" {
        /// Whose session it is.
        pub caller: CallerName = caller,
        /// The gateway's state of it, as JSON (empty when none).
        pub data: String = text,
    }

    /// An answer as it is read by its key.
    pub struct Answer in "{t}session_answers" {
        /// Whose session it was sent in.
        pub caller: CallerName = caller,
        /// The answer itself.
        pub body: String = text,
    }
}

impl AnswerRow {
    /// The key of the answer to `request` (its id as JSON) in `session`: a session id
    /// holds no newline (it is a header value), so no two pairs share one.
    pub fn key(session: &str, request: &str) -> String {
        format!("{session}\n{request}")
    }
}

/// The SQLite store's tables for sessions (made with its others).
pub(super) const SQLITE_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, caller TEXT NOT NULL,
        init TEXT NOT NULL, data TEXT NOT NULL DEFAULT '', expires_at INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS sessions_caller ON sessions (caller);
    CREATE TABLE IF NOT EXISTS session_answers (id TEXT PRIMARY KEY, session TEXT NOT NULL,
        caller TEXT NOT NULL, body TEXT NOT NULL, expires_at INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS session_answers_session ON session_answers (session);
    CREATE INDEX IF NOT EXISTS used_confirmations_used_at ON used_confirmations (used_at);";
/// The PostgreSQL store's tables for sessions (made with its others).
#[cfg(feature = "postgres")]
pub(super) const POSTGRES_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS gatehouse_sessions (id TEXT PRIMARY KEY, caller TEXT NOT NULL,
        init TEXT NOT NULL, data TEXT NOT NULL DEFAULT '', expires_at BIGINT NOT NULL);
    CREATE INDEX IF NOT EXISTS gatehouse_sessions_caller ON gatehouse_sessions (caller);
    CREATE TABLE IF NOT EXISTS gatehouse_session_answers (id TEXT PRIMARY KEY,
        session TEXT NOT NULL, caller TEXT NOT NULL, body TEXT NOT NULL,
        expires_at BIGINT NOT NULL);
    CREATE INDEX IF NOT EXISTS gatehouse_session_answers_session
        ON gatehouse_session_answers (session);
    CREATE INDEX IF NOT EXISTS gatehouse_used_confirmations_used_at
        ON gatehouse_used_confirmations (used_at);";

const COUNT_SESSIONS: &str = "SELECT COUNT(*) FROM {t}sessions WHERE caller = $1";
const INSERT_SESSION: &str =
    "INSERT INTO {t}sessions (id, caller, init, data, expires_at) VALUES ($1, $2, $3, '', $4)";
const TOUCH_SESSION: &str = "UPDATE {t}sessions SET expires_at = $1 WHERE id = $2 AND caller = $3";
const END_SESSION: &str = "DELETE FROM {t}sessions WHERE id = $1 AND caller = $2";
const END_ANSWERS: &str = "DELETE FROM {t}session_answers WHERE session = $1 AND caller = $2";
const SET_SESSION_DATA: &str = "UPDATE {t}sessions SET data = $1 WHERE id = $2 AND caller = $3";
const COUNT_ANSWERS: &str = "SELECT COUNT(*) FROM {t}session_answers WHERE session = $1";
const INSERT_ANSWER: &str = "INSERT INTO {t}session_answers (id, session, caller, body, expires_at)
    VALUES ($1, $2, $3, $4, $5)";
const TAKE_ANSWER: &str = "DELETE FROM {t}session_answers WHERE id = $1 AND caller = $2";
const PRUNE_SESSIONS: &str = "DELETE FROM {t}sessions WHERE expires_at <= $1";
const PRUNE_ANSWERS: &str = "DELETE FROM {t}session_answers WHERE expires_at <= $1";
const PRUNE_USED: &str = "DELETE FROM {t}used_confirmations WHERE used_at < $1";

fn text(s: &str) -> Value {
    Value::Text(s.to_owned())
}

impl Store {
    /// Keep a new session, unless its caller has `max` already (`Ok(false)`); expired
    /// sessions are dropped first.
    pub async fn mcp_session_open(
        &self,
        row: SessionRow,
        now: i64,
        max: usize,
    ) -> Result<bool, StoreError> {
        let caller = row.caller;
        let values = vec![text(&row.id), Value::from(&caller), Value::Text(row.init)];
        let mut insert = Statement {
            sql: INSERT_SESSION,
            values,
        };
        insert.values.push(Value::Int(row.expires_at));
        let count = vec![Value::from(&caller)];
        self.write::<Session>(Bounded::refusing(
            now,
            caller.to_string(),
            (COUNT_SESSIONS, count),
            max,
            insert,
        ))
        .await
    }

    /// The session `id`, unless it expired by `now`.
    pub async fn mcp_session_row(
        &self,
        id: &str,
        now: i64,
    ) -> Result<Option<SessionRow>, StoreError> {
        let found = self.find::<Session>(id, now).await?;
        Ok(found.map(|s| SessionRow {
            id: id.to_owned(),
            caller: s.caller,
            init: s.init,
            expires_at: s.expires_at,
        }))
    }

    /// Move the expiry of `caller`'s session `id` to `expires_at`.
    pub async fn mcp_session_touch(
        &self,
        id: &str,
        caller: &CallerName,
        expires_at: i64,
    ) -> Result<(), StoreError> {
        let values = vec![Value::Int(expires_at), text(id), Value::from(caller)];
        self.execute(Statement {
            sql: TOUCH_SESSION,
            values,
        })
        .await
        .map(drop)
    }

    /// End `caller`'s session `id`, and drop the answers waiting in it.
    pub async fn mcp_session_end(&self, id: &str, caller: &CallerName) -> Result<(), StoreError> {
        for sql in [END_SESSION, END_ANSWERS] {
            let values = vec![text(id), Value::from(caller)];
            self.execute(Statement { sql, values }).await?;
        }
        Ok(())
    }

    /// What the gateway keeps for `caller`'s session `id` (JSON; empty when nothing),
    /// `None` when there is no such session or it expired by `now`.
    pub async fn mcp_session_data(
        &self,
        id: &str,
        caller: &CallerName,
        now: i64,
    ) -> Result<Option<String>, StoreError> {
        let found = self.find::<SessionData>(id, now).await?;
        Ok(found
            .filter(|row| row.caller == *caller)
            .map(|row| row.data))
    }

    /// Keep `data` (JSON) for `caller`'s session `id`.
    pub async fn set_mcp_session_data(
        &self,
        id: &str,
        caller: &CallerName,
        data: &str,
    ) -> Result<(), StoreError> {
        let values = vec![text(data), text(id), Value::from(caller)];
        self.execute(Statement {
            sql: SET_SESSION_DATA,
            values,
        })
        .await
        .map(drop)
    }

    /// Keep an answer in `session`, unless the session has `max` waiting or the request
    /// has one already (`Ok(false)`, the first stands); expired answers dropped first.
    pub async fn answer_put(
        &self,
        session: &str,
        row: AnswerRow,
        now: i64,
        max: usize,
    ) -> Result<bool, StoreError> {
        if self.find::<Answer>(&row.id, now).await?.is_some() {
            return Ok(false);
        }
        let values = vec![text(&row.id), text(session), Value::from(&row.caller)];
        let mut insert = Statement {
            sql: INSERT_ANSWER,
            values,
        };
        insert
            .values
            .extend([Value::Text(row.body), Value::Int(row.expires_at)]);
        let count = vec![text(session)];
        let write = Bounded::refusing(now, session.to_owned(), (COUNT_ANSWERS, count), max, insert);
        self.write::<Answer>(write).await
    }

    /// Take (read and remove) the answer keyed `id` if it is `caller`'s and unexpired.
    pub async fn answer_take(
        &self,
        id: &str,
        caller: &CallerName,
        now: i64,
    ) -> Result<Option<String>, StoreError> {
        let Some(row) = self.find::<Answer>(id, now).await? else {
            return Ok(None);
        };
        if row.caller != *caller {
            return Ok(None);
        }
        let take = Statement {
            sql: TAKE_ANSWER,
            values: vec![text(id), Value::from(caller)],
        };
        Ok((self.execute(take).await? == 1).then_some(row.body))
    }

    /// Drop what expired, at most once per [`PRUNE_EVERY`] on this replica: sessions and
    /// answers past their expiry, and used confirmations older than
    /// [`USED_CONFIRMATION_KEPT`] (their states can no longer be opened, so a nonce is
    /// never forgotten while its state could still be used).
    pub async fn prune_due(&self, now: i64) -> Result<(), StoreError> {
        let last = self.pruned.load(Ordering::Relaxed);
        if now - last < PRUNE_EVERY.as_secs() as i64
            || self
                .pruned
                .compare_exchange(last, now, Ordering::SeqCst, Ordering::Relaxed)
                .is_err()
        {
            return Ok(());
        }
        self.prune(now).await
    }

    /// Drop what expired by `now` (see [`Store::prune_due`]).
    pub async fn prune(&self, now: i64) -> Result<(), StoreError> {
        let kept = chrono::Duration::from_std(USED_CONFIRMATION_KEPT).unwrap_or_default();
        let cutoff = chrono::DateTime::from_timestamp(now, 0).unwrap_or_default() - kept;
        let cutoff = cutoff.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        for sql in [PRUNE_SESSIONS, PRUNE_ANSWERS] {
            let values = vec![Value::Int(now)];
            self.execute(Statement { sql, values }).await?;
        }
        let used = Statement {
            sql: PRUNE_USED,
            values: vec![Value::Text(cutoff)],
        };
        self.execute(used).await.map(drop)
    }
}

#[cfg(test)]
mod tests;
