//! The approval page's rows in the SQLite store: its tables, and the three things the
//! page's operations (`store/page.rs`) ask of a database, done on a blocking thread with
//! the store's connection held throughout.

use rusqlite::{OptionalExtension, params, params_from_iter, types::Value as Sql};

use super::{Sqlite, blocking};
use crate::store::StoreError;
use crate::store::page::{Bounded, Cells, Kept, Pick, SQLITE, Statement, Value};

/// The page's tables (made with the store's others).
pub(super) const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS page_confirmations (id TEXT PRIMARY KEY, caller TEXT NOT NULL,
        call TEXT NOT NULL, decision INTEGER, expires_at INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS page_sessions (id TEXT PRIMARY KEY, caller TEXT NOT NULL,
        csrf TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS page_sign_ins (id TEXT PRIMARY KEY, caller TEXT NOT NULL,
        created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL);";

/// A statement's values as SQLite binds them (a flag is the integer 1 or 0).
fn bound(values: &[Value]) -> impl Iterator<Item = Sql> + '_ {
    values.iter().map(|v| match v {
        Value::Text(t) => Sql::Text(t.clone()),
        Value::Int(i) => Sql::Integer(*i),
        Value::Flag(f) => Sql::Integer(i64::from(*f)),
    })
}

impl Cells for rusqlite::Row<'_> {
    type Error = rusqlite::Error;
    fn text(&self, column: usize) -> rusqlite::Result<String> {
        self.get(column)
    }
    fn int(&self, column: usize) -> rusqlite::Result<i64> {
        self.get(column)
    }
    fn flag(&self, column: usize) -> rusqlite::Result<Option<bool>> {
        Ok(self.get::<_, Option<i64>>(column)?.map(|d| d == 1))
    }
}

impl Sqlite {
    /// Run `statement`: how many rows it changed.
    pub(in crate::store) async fn execute(&self, s: Statement) -> Result<u64, StoreError> {
        let store = self.clone();
        blocking(move || {
            store
                .held()
                .execute(&SQLITE.sql(s.sql), params_from_iter(bound(&s.values)))
                .map(|n| n as u64)
                .map_err(|e| store.error(&e))
        })
        .await
    }

    /// The `R` with id `values[0]`, unless it expired by `values[1]`, found or taken.
    pub(in crate::store) async fn pick<R: Kept>(
        &self,
        (how, values): (Pick, Vec<Value>),
    ) -> Result<Option<R>, StoreError> {
        let store = self.clone();
        blocking(move || {
            store
                .held()
                .query_row(
                    &SQLITE.pick::<R>(how),
                    params_from_iter(bound(&values)),
                    |r| R::read(r),
                )
                .optional()
                .map_err(|e| store.error(&e))
        })
        .await
    }

    /// A bounded write of an `R`, the connection held from the pruning to the insert.
    pub(in crate::store) async fn write<R: Kept>(&self, w: Bounded) -> Result<bool, StoreError> {
        let store = self.clone();
        blocking(move || {
            let db = store.held();
            let run = || -> rusqlite::Result<bool> {
                db.execute(&SQLITE.prune::<R>(), params![w.now])?;
                let run = |s: &Statement| {
                    db.execute(&SQLITE.sql(s.sql), params_from_iter(bound(&s.values)))
                };
                let (trim, refuse) = w.bound.parts();
                if let Some(trim) = trim {
                    run(trim)?;
                }
                if let Some((count, max)) = refuse {
                    let held: i64 = db.query_row(
                        &SQLITE.sql(count.sql),
                        params_from_iter(bound(&count.values)),
                        |r| r.get(0),
                    )?;
                    if held >= max {
                        return Ok(false);
                    }
                }
                run(&w.insert).map(|_| true)
            };
            run().map_err(|e| store.error(&e))
        })
        .await
    }
}
