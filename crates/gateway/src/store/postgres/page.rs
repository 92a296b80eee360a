//! The approval page's rows in PostgreSQL: its tables, and the three things the page's
//! operations (`store/page.rs`) ask of a database, every statement within
//! [`STORE_TIMEOUT`] and a bounded write one transaction.

use tokio_postgres::{GenericClient, types::ToSql};

use super::{Postgres, STORE_TIMEOUT};
use crate::store::StoreError;
use crate::store::page::{Bounded, Cells, Kept, POSTGRES, Pick, Statement, Value};

/// The page's tables (made with the store's others).
pub(super) const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS gatehouse_page_confirmations (id TEXT PRIMARY KEY,
        caller TEXT NOT NULL, call TEXT NOT NULL, decision BOOLEAN, expires_at BIGINT NOT NULL);
    CREATE TABLE IF NOT EXISTS gatehouse_page_sessions (id TEXT PRIMARY KEY,
        caller TEXT NOT NULL, csrf TEXT NOT NULL, created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL);
    CREATE TABLE IF NOT EXISTS gatehouse_page_sign_ins (id TEXT PRIMARY KEY,
        caller TEXT NOT NULL, created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL);";

/// A statement's values as PostgreSQL binds them (a flag is a BOOLEAN).
fn bound(values: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    values
        .iter()
        .map(|v| match v {
            Value::Text(t) => t as &(dyn ToSql + Sync),
            Value::Int(i) => i,
            Value::Flag(f) => f,
        })
        .collect()
}

/// Run `s` on `c` (the connection, or a transaction on it).
async fn run(c: &impl GenericClient, s: &Statement) -> Result<u64, tokio_postgres::Error> {
    c.execute(&POSTGRES.sql(s.sql), &bound(&s.values)).await
}

impl Cells for tokio_postgres::Row {
    type Error = tokio_postgres::Error;
    fn text(&self, column: usize) -> Result<String, Self::Error> {
        self.try_get(column)
    }
    fn int(&self, column: usize) -> Result<i64, Self::Error> {
        self.try_get(column)
    }
    fn flag(&self, column: usize) -> Result<Option<bool>, Self::Error> {
        self.try_get(column)
    }
}

impl Postgres {
    /// Run `statement`: how many rows it changed.
    pub(in crate::store) async fn execute(&self, s: Statement) -> Result<u64, StoreError> {
        self.run(STORE_TIMEOUT, |c| Box::pin(async move { run(c, &s).await }))
            .await
    }

    /// The `R` with id `values[0]`, unless it expired by `values[1]`, found or taken.
    pub(in crate::store) async fn pick<R: Kept>(
        &self,
        (how, values): (Pick, Vec<Value>),
    ) -> Result<Option<R>, StoreError> {
        self.run(STORE_TIMEOUT, |c| {
            Box::pin(async move {
                let row = c
                    .query_opt(&POSTGRES.pick::<R>(how), &bound(&values))
                    .await?;
                row.as_ref().map(R::read).transpose()
            })
        })
        .await
    }

    /// A bounded write of an `R`, in one transaction.
    pub(in crate::store) async fn write<R: Kept>(&self, w: Bounded) -> Result<bool, StoreError> {
        self.run(STORE_TIMEOUT, |c| {
            Box::pin(async move {
                let tx = c.transaction().await?;
                tx.execute(&POSTGRES.prune::<R>(), &[&w.now]).await?;
                // Two replicas writing the same caller's at once take turns on this lock.
                tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&w.turn])
                    .await?;
                let (trim, refuse) = w.bound.parts();
                if let Some(trim) = trim {
                    run(&tx, trim).await?;
                }
                if let Some((count, max)) = refuse {
                    let held: i64 = tx
                        .query_one(&POSTGRES.sql(count.sql), &bound(&count.values))
                        .await?
                        .try_get(0)?;
                    if held >= max {
                        return Ok(false);
                    }
                }
                run(&tx, &w.insert).await?;
                tx.commit().await.map(|()| true)
            })
        })
        .await
    }
}
