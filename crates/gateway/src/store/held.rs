//! Calls held on one replica while their caller answers a server's question, as the
//! other replicas reach them (`held_calls` in SQLite, `gatehouse_held_calls` in
//! PostgreSQL): one row per held call, written once for both databases as the page's rows
//! are (`page.rs`). The call itself (the server's request in flight) stays on the replica
//! that holds it (`gateway/call/held/`); the row carries the caller's answer there and
//! what the server did next back, whichever replica the caller's next round reached.
//!
//! Questions are numbered from 1 in a call. The row says which question the call waits on
//! (`asked`, 0 when it waits on none), the last one answered (`answered`, so an answer is
//! written once: a state is used once, on any replica), the answer until the holder takes
//! it (`answer`, and whether it was `taken`), what followed which question (`outcome_of`,
//! `outcome`), and a mark the holder moves while the server works on an answer (`alive`),
//! which tells the waiting replica that the holder still runs. Every change is one
//! conditional statement, so the replicas agree on who did what first.

use super::{
    Store, StoreError,
    page::{Bounded, Cells, Kept, Statement, Value, kept},
};
use crate::caller::CallerName;

kept! {
    /// A held call as the store keeps it.
    #[derive(Debug, Clone, PartialEq)]
    pub struct HeldRow in "{t}held_calls" {
        /// Its id: 128 random bits as hex (the sealed state names it).
        pub id: String = text,
        /// Whose call it is (`user@tenant`): only they answer it.
        pub caller: CallerName = caller,
        /// Whether the holder took the answer to `answered`: `None` before any answer,
        /// `Some(false)` while one waits for it.
        pub taken: Option<bool> = flag,
        /// The question the call waits on; 0 when it waits on none.
        pub asked: i64 = int,
        /// The last question answered (0 before the first).
        pub answered: i64 = int,
        /// The answer to `answered` (an `ElicitResult`, as JSON) until the holder takes it;
        /// empty then.
        pub answer: String = text,
        /// The question that `outcome` followed (0 before any).
        pub outcome_of: i64 = int,
        /// What the server did after that question was answered (the next question, or
        /// the call's end), as JSON; empty before.
        pub outcome: String = text,
        /// Moved by the holder while the server works on an answer; a waiting replica that
        /// sees it stand still for long takes the holder for gone.
        pub alive: i64 = int,
        /// When the row is dropped, in milliseconds since the Unix epoch.
        pub expires_at: i64 = int,
    }
}

impl HeldRow {
    /// A call `caller` has held from `now` (milliseconds), waiting on its first question
    /// and kept until `expires_at`.
    pub fn first(id: String, caller: CallerName, now: i64, expires_at: i64) -> HeldRow {
        HeldRow {
            id,
            caller,
            taken: None,
            asked: 1,
            answered: 0,
            answer: String::new(),
            outcome_of: 0,
            outcome: String::new(),
            alive: now,
            expires_at,
        }
    }
}

/// The table in SQLite (made with the store's others).
pub(super) const SQLITE_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS held_calls (id TEXT PRIMARY KEY, caller TEXT NOT NULL,
        taken INTEGER, asked INTEGER NOT NULL, answered INTEGER NOT NULL,
        answer TEXT NOT NULL, outcome_of INTEGER NOT NULL, outcome TEXT NOT NULL,
        alive INTEGER NOT NULL, expires_at INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS held_calls_by_caller ON held_calls (caller);";

/// The table in PostgreSQL (made with the store's others).
#[cfg(feature = "postgres")]
pub(super) const POSTGRES_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS gatehouse_held_calls (id TEXT PRIMARY KEY,
        caller TEXT NOT NULL, taken BOOLEAN, asked BIGINT NOT NULL, answered BIGINT NOT NULL,
        answer TEXT NOT NULL, outcome_of BIGINT NOT NULL, outcome TEXT NOT NULL,
        alive BIGINT NOT NULL, expires_at BIGINT NOT NULL);
    CREATE INDEX IF NOT EXISTS gatehouse_held_calls_by_caller
        ON gatehouse_held_calls (caller);";

// Each statement about one question of one call takes the call's id and the question's
// number last ([`keyed`]).

/// A caller's calls still held (those whose end was read stay only as a mark that their
/// states were used, until they expire).
const COUNT_HELD: &str = "SELECT COUNT(*) FROM {t}held_calls WHERE caller = $1 AND asked <> 0";
const INSERT_HELD: &str = "INSERT INTO {t}held_calls (id, caller, taken, asked, answered,
    answer, outcome_of, outcome, alive, expires_at)
    VALUES ($1, $2, NULL, $3, 0, '', 0, '', $4, $5)";
/// The caller's answer to the question the call waits on, once.
const ANSWER: &str = "UPDATE {t}held_calls SET answer = $1, answered = $5, taken = FALSE
    WHERE caller = $2 AND expires_at > $3 AND id = $4 AND asked = $5 AND answered < $5";
/// The holder takes the answer (and says it runs).
const TAKE: &str = "UPDATE {t}held_calls SET answer = '', taken = TRUE, alive = $1
    WHERE id = $2 AND asked = $3 AND answered = $3 AND taken = FALSE";
/// The waiting replica takes back an answer nobody took: the call is dropped.
const WITHDRAW: &str = "DELETE FROM {t}held_calls
    WHERE id = $1 AND asked = $2 AND answered = $2 AND taken = FALSE";
/// What followed question `$5`, while the call still waits on it (or works on its answer).
const OUTCOME: &str = "UPDATE {t}held_calls SET outcome = $1, asked = $2, expires_at = $3,
    outcome_of = $5 WHERE id = $4 AND asked = $5";
const ALIVE: &str = "UPDATE {t}held_calls SET alive = $1 WHERE id = $2";
const DROP: &str = "DELETE FROM {t}held_calls WHERE id = $1 AND caller = $2";
/// The call's end was read: only the mark that its questions were answered stays.
const DONE: &str = "UPDATE {t}held_calls SET asked = 0, answer = '', outcome = ''
    WHERE id = $1 AND caller = $2";

/// How a held call is done with ([`Store::held_close`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    /// Given up (cancelled at its server): its row is dropped.
    GivenUp,
    /// Its end was read: the answer and the end are dropped, and only the mark of what
    /// was answered stays until the row expires, so a state used again is told so.
    Read,
}

fn text(s: &str) -> Value {
    Value::Text(s.to_owned())
}

/// A statement's `values`, then the call's id and the question's number.
fn keyed<const N: usize>(values: [Value; N], (id, question): (&str, usize)) -> Vec<Value> {
    let number = Value::Int(i64::try_from(question).unwrap_or(i64::MAX));
    values.into_iter().chain([text(id), number]).collect()
}

/// The held calls, in whichever store: every replica reaches every held call.
impl Store {
    /// Keep a newly held call, waiting on its first question, unless its caller has
    /// `max` held already (`Ok(false)`); expired rows are dropped first.
    pub async fn held_open(&self, row: &HeldRow, now: i64, max: usize) -> Result<bool, StoreError> {
        let insert = Statement {
            sql: INSERT_HELD,
            values: vec![
                text(&row.id),
                Value::from(&row.caller),
                Value::Int(row.asked),
                Value::Int(row.alive),
                Value::Int(row.expires_at),
            ],
        };
        let count = vec![Value::from(&row.caller)];
        let turn = row.caller.to_string();
        let write = Bounded::refusing(now, turn, (COUNT_HELD, count), max, insert);
        self.write::<HeldRow>(write).await
    }

    /// The held call `id`, whoever's it is, unless it expired by `now`.
    pub async fn held_row(&self, id: &str, now: i64) -> Result<Option<HeldRow>, StoreError> {
        self.find::<HeldRow>(id, now).await
    }

    /// Write `caller`'s answer to question `key.1` of call `key.0`, the one it waits on:
    /// `Ok(false)` when it is not theirs, waits on another question, was answered
    /// already or expired by `now`.
    pub async fn held_answer(
        &self,
        key: (&str, usize),
        caller: &CallerName,
        answer: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        let values = [text(answer), Value::from(caller), Value::Int(now)];
        self.changed(ANSWER, keyed(values, key)).await
    }

    /// The holder takes the answer to question `key.1`, marking itself alive with
    /// `alive`: `Ok(false)` when there is none to take (or it was withdrawn).
    pub async fn held_take(&self, key: (&str, usize), alive: i64) -> Result<bool, StoreError> {
        self.changed(TAKE, keyed([Value::Int(alive)], key)).await
    }

    /// Take back an answer to question `key.1` the holder did not take, dropping the
    /// call: `Ok(false)` when the holder took it first.
    pub async fn held_withdraw(&self, key: (&str, usize)) -> Result<bool, StoreError> {
        self.changed(WITHDRAW, keyed([], key)).await
    }

    /// What followed question `key.1` (`outcome`, JSON), the call then waiting on
    /// `asked` (0: none) and kept until `expires_at`: `Ok(false)` when the call no longer
    /// waits on that question (its answer was withdrawn, or it is gone).
    pub async fn held_outcome(
        &self,
        key: (&str, usize),
        outcome: &str,
        (asked, expires_at): (usize, i64),
    ) -> Result<bool, StoreError> {
        let asked = Value::Int(i64::try_from(asked).unwrap_or(0));
        let values = [text(outcome), asked, Value::Int(expires_at)];
        self.changed(OUTCOME, keyed(values, key)).await
    }

    /// The holder still runs (`alive` moved on).
    pub async fn held_alive(&self, id: &str, alive: i64) -> Result<(), StoreError> {
        let values = vec![Value::Int(alive), text(id)];
        self.changed(ALIVE, values).await.map(drop)
    }

    /// Be done with `caller`'s held call `id`, as `how` says.
    pub async fn held_close(
        &self,
        id: &str,
        caller: &CallerName,
        how: Closed,
    ) -> Result<(), StoreError> {
        let sql = match how {
            Closed::GivenUp => DROP,
            Closed::Read => DONE,
        };
        self.changed(sql, vec![text(id), Value::from(caller)])
            .await
            .map(drop)
    }
}

#[cfg(test)]
mod tests;
