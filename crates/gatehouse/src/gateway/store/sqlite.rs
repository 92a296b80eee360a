//! The gateway's shared state in one SQLite file (`--state FILE`, the default), for
//! replicas on one machine: the sealing key, callers' approvals and used confirmations,
//! the approval page's confirmations and sessions (`sqlite/page.rs`), and the ledger
//! file beside it (its appends lock the file). Every call runs on a
//! blocking thread, never on the runtime's workers.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use rusqlite::{Connection, params};

mod page;

use super::{KEY_BYTES, STORE_TIMEOUT};
use crate::{
    approvals::{Remembered, Scope},
    ledger::{Entry, Ledger},
};

/// A store file shared by replicas on one machine. Cheap to clone.
#[derive(Clone)]
pub struct Sqlite {
    db: Arc<Mutex<Connection>>,
    path: PathBuf,
    ledger: Option<Ledger>,
}

impl Sqlite {
    /// Open (or create) the store at `path`, with the ledger at `ledger` (none with
    /// `None`). The sealing key is made by the first replica and read by the others.
    pub fn open(path: &Path, ledger: Option<Ledger>) -> Result<Sqlite, String> {
        let shown = |e: rusqlite::Error| format!("the state store {}: {e}", path.display());
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::files::private_dir(dir)
                .map_err(|e| format!("the state store's folder {}: {e}", dir.display()))?;
        }
        let db = Connection::open(path).map_err(shown)?;
        db.busy_timeout(STORE_TIMEOUT).map_err(shown)?;
        db.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = FULL;
             CREATE TABLE IF NOT EXISTS gateway_key (id INTEGER PRIMARY KEY CHECK (id = 1), key BLOB NOT NULL);
             CREATE TABLE IF NOT EXISTS approvals (caller TEXT NOT NULL, tool TEXT NOT NULL,
                 fingerprint TEXT NOT NULL, approved_at TEXT NOT NULL, PRIMARY KEY (caller, tool));
             CREATE TABLE IF NOT EXISTS used_confirmations (nonce TEXT PRIMARY KEY, used_at TEXT NOT NULL);",
        )
        .map_err(shown)?;
        db.execute_batch(page::SCHEMA).map_err(shown)?;
        db.execute_batch(super::tasks::SQLITE_SCHEMA)
            .map_err(shown)?;
        db.execute_batch(super::sessions::SQLITE_SCHEMA)
            .map_err(shown)?;
        db.execute_batch(super::held::SQLITE_SCHEMA)
            .map_err(shown)?;
        if let Some(ledger) = &ledger {
            ledger.check()?;
        }
        Ok(Sqlite {
            db: Arc::new(Mutex::new(db)),
            path: path.to_owned(),
            ledger,
        })
    }

    /// The key confirmations are sealed with: the one in the store, or a new one put
    /// there if none is (two replicas starting at once agree: the first insert wins).
    fn sealing_key_now(&self) -> Result<Vec<u8>, String> {
        let mut key = [0u8; KEY_BYTES];
        rand::fill(&mut key);
        let db = self.held();
        db.execute(
            "INSERT OR IGNORE INTO gateway_key (id, key) VALUES (1, ?1)",
            params![key.to_vec()],
        )
        .and_then(|_| db.query_row("SELECT key FROM gateway_key WHERE id = 1", [], |r| r.get(0)))
        .map_err(|e| self.error(&e))
    }

    /// Use a confirmation up: `Ok(true)` the first time, `Ok(false)` ever after, on any
    /// replica.
    pub fn use_confirmation(&self, nonce: &str) -> Result<bool, String> {
        self.held()
            .execute(
                "INSERT OR IGNORE INTO used_confirmations (nonce, used_at) VALUES (?1, ?2)",
                params![nonce, crate::ledger::now()],
            )
            .map(|n| n == 1)
            .map_err(|e| self.error(&e))
    }

    /// Was this confirmation used?
    #[cfg(test)]
    fn confirmation_used(&self, nonce: &str) -> Result<bool, String> {
        use rusqlite::OptionalExtension;
        self.held()
            .query_row(
                "SELECT 1 FROM used_confirmations WHERE nonce = ?1",
                params![nonce],
                |_| Ok(()),
            )
            .optional()
            .map(|r| r.is_some())
            .map_err(|e| self.error(&e))
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.db.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn error(&self, e: &rusqlite::Error) -> String {
        format!(
            "the state store {} is unavailable: {e}",
            self.path.display()
        )
    }

    pub(super) fn approvals_of(&self, caller: &str) -> Result<Remembered, String> {
        let db = self.held();
        let mut stmt = db
            .prepare_cached("SELECT tool, fingerprint FROM approvals WHERE caller = ?1")
            .map_err(|e| self.error(&e))?;
        let rows = stmt
            .query_map(params![caller], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(|e| self.error(&e))?;
        let mut remembered = Remembered::default();
        for row in rows {
            let (tool, fingerprint) = row.map_err(|e| self.error(&e))?;
            remembered.remember(Scope::Project, &tool, &fingerprint);
        }
        Ok(remembered)
    }

    pub(super) fn approve(
        &self,
        caller: &str,
        tool: &str,
        fingerprint: &str,
    ) -> Result<(), String> {
        self.held()
            .execute(
                "INSERT OR REPLACE INTO approvals (caller, tool, fingerprint, approved_at)
                 VALUES (?1, ?2, ?3, ?4)",
                params![caller, tool, fingerprint, crate::ledger::now()],
            )
            .map(drop)
            .map_err(|e| self.error(&e))
    }
}

/// Run a blocking store operation off the async workers.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(format!("the state store's worker failed: {e}")))
}

impl Sqlite {
    /// The sealing key, as [`super::Store::sealing_key`] gives it.
    pub async fn sealing_key(&self) -> Result<Vec<u8>, String> {
        let store = self.clone();
        blocking(move || store.sealing_key_now()).await
    }

    /// A caller's approvals.
    pub async fn remembered(&self, who: &str) -> Result<Remembered, String> {
        let (store, who) = (self.clone(), who.to_owned());
        blocking(move || store.approvals_of(&who)).await
    }

    /// Remember that `who` approved `tool` at this definition.
    pub async fn remember(&self, who: &str, tool: &str, fingerprint: &str) -> Result<(), String> {
        let store = self.clone();
        let (who, tool, fp) = (who.to_owned(), tool.to_owned(), fingerprint.to_owned());
        blocking(move || store.approve(&who, &tool, &fp)).await
    }

    /// The confirmation (if the entry names one) is used up first, then the line is
    /// appended to the ledger file: a crash between the two loses the confirmation,
    /// never doubles a call.
    pub async fn append(&self, entry: Entry) -> Result<(), String> {
        let store = self.clone();
        blocking(move || {
            if let Some(nonce) = &entry.confirmation
                && !store.use_confirmation(nonce)?
            {
                return Err(super::USED.into());
            }
            match &store.ledger {
                Some(ledger) => ledger.append(&entry).map(drop),
                None => Ok(()),
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_openers_share_one_key_and_use_a_confirmation_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let a = Sqlite::open(&path, None).unwrap();
        let b = Sqlite::open(&path, None).unwrap();
        assert_eq!(a.sealing_key_now().unwrap(), b.sealing_key_now().unwrap());
        assert!(a.use_confirmation("n1").unwrap());
        assert!(!b.use_confirmation("n1").unwrap());
        assert!(b.confirmation_used("n1").unwrap());
        assert!(!a.confirmation_used("n2").unwrap());
    }

    #[test]
    fn approvals_are_the_callers_own() {
        let dir = tempfile::tempdir().unwrap();
        let store = Sqlite::open(&dir.path().join("state.db"), None).unwrap();
        store
            .approve("sam@larkfield", "tickets__open_ticket", "fp1")
            .unwrap();
        let sam = store.approvals_of("sam@larkfield").unwrap();
        assert!(sam.covers("tickets__open_ticket", "fp1").is_some());
        assert!(sam.covers("tickets__open_ticket", "fp2").is_none());
        let kim = store.approvals_of("kim@larkfield").unwrap();
        assert!(!kim.names("tickets__open_ticket"));
    }
}
