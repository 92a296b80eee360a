//! The approval page's rows in PostgreSQL: pending confirmations (with the person's
//! decision once made) and sign-in sessions, each with an expiry, pruned as new ones are
//! written and bounded per caller, every statement within [`STORE_TIMEOUT`].

use super::{Postgres, STORE_TIMEOUT};
use crate::gateway::store::{PageRow, PageSessionRow};

/// The page's tables (made with the store's others).
pub(super) const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS gatehouse_page_confirmations (id TEXT PRIMARY KEY,
        caller TEXT NOT NULL, call TEXT NOT NULL, decision BOOLEAN, expires_at BIGINT NOT NULL);
    CREATE TABLE IF NOT EXISTS gatehouse_page_sessions (id TEXT PRIMARY KEY,
        caller TEXT NOT NULL, csrf TEXT NOT NULL, created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL);";

impl Postgres {
    /// Keep a pending confirmation, unless its caller has `max` already: `Ok(false)`.
    pub async fn page_open(&self, row: PageRow, now: i64, max: usize) -> Result<bool, String> {
        let max = max as i64;
        self.run(STORE_TIMEOUT, |c| {
            Box::pin(async move {
                let tx = c.transaction().await?;
                tx.execute(
                    "DELETE FROM gatehouse_page_confirmations WHERE expires_at <= $1",
                    &[&now],
                )
                .await?;
                // Two replicas opening the same caller's at once take turns on this lock.
                tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&row.caller])
                    .await?;
                let held: i64 = tx
                    .query_one(
                        "SELECT COUNT(*) FROM gatehouse_page_confirmations WHERE caller = $1",
                        &[&row.caller],
                    )
                    .await?
                    .try_get(0)?;
                if held >= max {
                    return Ok(false);
                }
                tx.execute(
                    "INSERT INTO gatehouse_page_confirmations (id, caller, call, decision, expires_at)
                     VALUES ($1, $2, $3, NULL, $4)",
                    &[&row.id, &row.caller, &row.call, &row.expires_at],
                )
                .await?;
                tx.commit().await.map(|()| true)
            })
        })
        .await
    }

    /// A pending confirmation that has not expired.
    pub async fn page_row(&self, id: &str, now: i64) -> Result<Option<PageRow>, String> {
        let id = id.to_owned();
        self.run(STORE_TIMEOUT, |c| {
            Box::pin(async move {
                let row = c
                    .query_opt(
                        "SELECT id, caller, call, decision, expires_at
                         FROM gatehouse_page_confirmations WHERE id = $1 AND expires_at > $2",
                        &[&id, &now],
                    )
                    .await?;
                row.map(|r| {
                    Ok(PageRow {
                        id: r.try_get(0)?,
                        caller: r.try_get(1)?,
                        call: r.try_get(2)?,
                        decision: r.try_get(3)?,
                        expires_at: r.try_get(4)?,
                    })
                })
                .transpose()
            })
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
        let (id, caller) = (id.to_owned(), caller.to_owned());
        self.run(STORE_TIMEOUT, |c| {
            Box::pin(async move {
                c.execute(
                    "UPDATE gatehouse_page_confirmations SET decision = $1
                     WHERE id = $2 AND caller = $3 AND decision IS NULL AND expires_at > $4",
                    &[&yes, &id, &caller, &now],
                )
                .await
                .map(|n| n == 1)
            })
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
        let keep = max.saturating_sub(1) as i64;
        self.run(STORE_TIMEOUT, |c| {
            Box::pin(async move {
                let tx = c.transaction().await?;
                tx.execute(
                    "DELETE FROM gatehouse_page_sessions WHERE expires_at <= $1",
                    &[&now],
                )
                .await?;
                tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&row.caller])
                    .await?;
                tx.execute(
                    "DELETE FROM gatehouse_page_sessions WHERE caller = $1 AND id NOT IN
                     (SELECT id FROM gatehouse_page_sessions WHERE caller = $1
                      ORDER BY created_at DESC, id DESC LIMIT $2)",
                    &[&row.caller, &keep],
                )
                .await?;
                tx.execute(
                    "INSERT INTO gatehouse_page_sessions (id, caller, csrf, created_at, expires_at)
                     VALUES ($1, $2, $3, $4, $5)",
                    &[
                        &row.id,
                        &row.caller,
                        &row.csrf,
                        &row.created_at,
                        &row.expires_at,
                    ],
                )
                .await?;
                tx.commit().await
            })
        })
        .await
    }

    /// A sign-in session that has not expired.
    pub async fn session_row(&self, id: &str, now: i64) -> Result<Option<PageSessionRow>, String> {
        let id = id.to_owned();
        self.run(STORE_TIMEOUT, |c| {
            Box::pin(async move {
                let row = c
                    .query_opt(
                        "SELECT id, caller, csrf, created_at, expires_at FROM gatehouse_page_sessions
                         WHERE id = $1 AND expires_at > $2",
                        &[&id, &now],
                    )
                    .await?;
                row.map(|r| {
                    Ok(PageSessionRow {
                        id: r.try_get(0)?,
                        caller: r.try_get(1)?,
                        csrf: r.try_get(2)?,
                        created_at: r.try_get(3)?,
                        expires_at: r.try_get(4)?,
                    })
                })
                .transpose()
            })
        })
        .await
    }
}
