//! The approval page's rows in the SQLite store: pending confirmations (with the
//! person's decision once made) and sign-in sessions, each with an expiry, pruned as new
//! ones are written and bounded per caller.

use rusqlite::{OptionalExtension, params};

use super::{Sqlite, blocking};
use crate::gateway::store::{PageRow, PageSessionRow};

/// The page's tables (made with the store's others).
pub(super) const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS page_confirmations (id TEXT PRIMARY KEY, caller TEXT NOT NULL,
        call TEXT NOT NULL, decision INTEGER, expires_at INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS page_sessions (id TEXT PRIMARY KEY, caller TEXT NOT NULL,
        csrf TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL);";

impl Sqlite {
    /// Keep a pending confirmation, unless its caller has `max` already: `Ok(false)`.
    pub async fn page_open(&self, row: PageRow, now: i64, max: usize) -> Result<bool, String> {
        let store = self.clone();
        blocking(move || {
            let db = store.held();
            let run = || -> rusqlite::Result<bool> {
                db.execute(
                    "DELETE FROM page_confirmations WHERE expires_at <= ?1",
                    params![now],
                )?;
                let held: i64 = db.query_row(
                    "SELECT COUNT(*) FROM page_confirmations WHERE caller = ?1",
                    params![row.caller],
                    |r| r.get(0),
                )?;
                if held >= max as i64 {
                    return Ok(false);
                }
                db.execute(
                    "INSERT INTO page_confirmations (id, caller, call, decision, expires_at)
                     VALUES (?1, ?2, ?3, NULL, ?4)",
                    params![row.id, row.caller, row.call, row.expires_at],
                )?;
                Ok(true)
            };
            run().map_err(|e| store.error(&e))
        })
        .await
    }

    /// A pending confirmation that has not expired.
    pub async fn page_row(&self, id: &str, now: i64) -> Result<Option<PageRow>, String> {
        let (store, id) = (self.clone(), id.to_owned());
        blocking(move || {
            store
                .held()
                .query_row(
                    "SELECT id, caller, call, decision, expires_at FROM page_confirmations
                     WHERE id = ?1 AND expires_at > ?2",
                    params![id, now],
                    |r| {
                        Ok(PageRow {
                            id: r.get(0)?,
                            caller: r.get(1)?,
                            call: r.get(2)?,
                            decision: r.get::<_, Option<i64>>(3)?.map(|d| d == 1),
                            expires_at: r.get(4)?,
                        })
                    },
                )
                .optional()
                .map_err(|e| store.error(&e))
        })
        .await
    }

    /// Decide a pending confirmation of `caller`'s once: `Ok(false)` when it was decided
    /// already, expired, or is not theirs.
    pub async fn page_decide(
        &self,
        id: &str,
        caller: &str,
        yes: bool,
        now: i64,
    ) -> Result<bool, String> {
        let (store, id, caller) = (self.clone(), id.to_owned(), caller.to_owned());
        blocking(move || {
            store
                .held()
                .execute(
                    "UPDATE page_confirmations SET decision = ?1
                     WHERE id = ?2 AND caller = ?3 AND decision IS NULL AND expires_at > ?4",
                    params![i64::from(yes), id, caller, now],
                )
                .map(|n| n == 1)
                .map_err(|e| store.error(&e))
        })
        .await
    }

    /// Keep a sign-in session, the caller's oldest ones dropped so they keep at most `max`.
    pub async fn session_open(
        &self,
        row: PageSessionRow,
        now: i64,
        max: usize,
    ) -> Result<(), String> {
        let store = self.clone();
        blocking(move || {
            let db = store.held();
            let run = || -> rusqlite::Result<()> {
                db.execute(
                    "DELETE FROM page_sessions WHERE expires_at <= ?1",
                    params![now],
                )?;
                db.execute(
                    "DELETE FROM page_sessions WHERE caller = ?1 AND id NOT IN
                     (SELECT id FROM page_sessions WHERE caller = ?1
                      ORDER BY created_at DESC, id DESC LIMIT ?2)",
                    params![row.caller, max.saturating_sub(1) as i64],
                )?;
                db.execute(
                    "INSERT INTO page_sessions (id, caller, csrf, created_at, expires_at)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![row.id, row.caller, row.csrf, row.created_at, row.expires_at],
                )?;
                Ok(())
            };
            run().map_err(|e| store.error(&e))
        })
        .await
    }

    /// A sign-in session that has not expired.
    pub async fn session_row(&self, id: &str, now: i64) -> Result<Option<PageSessionRow>, String> {
        let (store, id) = (self.clone(), id.to_owned());
        blocking(move || {
            store
                .held()
                .query_row(
                    "SELECT id, caller, csrf, created_at, expires_at FROM page_sessions
                     WHERE id = ?1 AND expires_at > ?2",
                    params![id, now],
                    |r| {
                        Ok(PageSessionRow {
                            id: r.get(0)?,
                            caller: r.get(1)?,
                            csrf: r.get(2)?,
                            created_at: r.get(3)?,
                            expires_at: r.get(4)?,
                        })
                    },
                )
                .optional()
                .map_err(|e| store.error(&e))
        })
        .await
    }
}
