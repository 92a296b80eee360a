//! What a gateway's replicas share: the key that seals confirmations, each caller's
//! remembered approvals and every confirmation used, in one SQLite file
//! (`--state FILE`), and the ledger file beside it. Any replica that opens the same
//! store seals and opens the same confirmations, and a confirmation is used once across
//! all of them: its nonce is inserted under a unique key before its ledger line is
//! written, and a second use finds it there.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension, params};

use crate::{
    approvals::{Remembered, Scope},
    gate::Keeper,
    ledger::{Entry, Ledger},
    trace::{Trace, Who},
};

/// How long a replica waits for another's write on the store before it gives up (the
/// call is then refused: never sent unrecorded).
pub const STORE_BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// The sealing key's length, in bytes.
const KEY_BYTES: usize = 32;

/// The store shared by a gateway's replicas. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    db: Arc<Mutex<Connection>>,
    path: PathBuf,
    ledger: Option<Ledger>,
}

impl Store {
    /// Open (or create) the store at `path`, with the ledger at `ledger` (none with
    /// `None`). The sealing key is made by the first replica and read by the others.
    pub fn open(path: &Path, ledger: Option<Ledger>) -> Result<Store, String> {
        let shown = |e: rusqlite::Error| format!("the state store {}: {e}", path.display());
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::files::private_dir(dir)
                .map_err(|e| format!("the state store's folder {}: {e}", dir.display()))?;
        }
        let db = Connection::open(path).map_err(shown)?;
        db.busy_timeout(STORE_BUSY_TIMEOUT).map_err(shown)?;
        db.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = FULL;
             CREATE TABLE IF NOT EXISTS gateway_key (id INTEGER PRIMARY KEY CHECK (id = 1), key BLOB NOT NULL);
             CREATE TABLE IF NOT EXISTS approvals (caller TEXT NOT NULL, tool TEXT NOT NULL,
                 fingerprint TEXT NOT NULL, approved_at TEXT NOT NULL, PRIMARY KEY (caller, tool));
             CREATE TABLE IF NOT EXISTS used_confirmations (nonce TEXT PRIMARY KEY, used_at TEXT NOT NULL);",
        )
        .map_err(shown)?;
        if let Some(ledger) = &ledger {
            ledger.check()?;
        }
        Ok(Store {
            db: Arc::new(Mutex::new(db)),
            path: path.to_owned(),
            ledger,
        })
    }

    /// The key confirmations are sealed with: the one in the store, or a new one put
    /// there if none is (two replicas starting at once agree: the first insert wins).
    pub fn sealing_key(&self) -> Result<Vec<u8>, String> {
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

    /// Was this confirmation used? (For tests and `gatehouse gateway` diagnostics.)
    pub fn confirmation_used(&self, nonce: &str) -> Result<bool, String> {
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

    fn approvals_of(&self, caller: &str) -> Result<Remembered, String> {
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

    fn approve(&self, caller: &str, tool: &str, fingerprint: &str) -> Result<(), String> {
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

impl Keeper for Store {
    /// A caller's approvals; a store that cannot be read remembers nothing (so the
    /// person is asked, never the other way round).
    fn remembered<'a>(&'a self, who: &'a str) -> BoxFuture<'a, Remembered> {
        let (store, who) = (self.clone(), who.to_owned());
        Box::pin(async move {
            blocking(move || store.approvals_of(&who))
                .await
                .unwrap_or_default()
        })
    }

    /// Every approval a gateway remembers is kept in the store, for that caller, on
    /// every replica.
    fn remember<'a>(
        &'a self,
        who: &'a str,
        _scope: Scope,
        tool: &'a str,
        fingerprint: &'a str,
        trace: &'a Trace,
    ) -> BoxFuture<'a, ()> {
        let store = self.clone();
        let (who, tool, fp) = (who.to_owned(), tool.to_owned(), fingerprint.to_owned());
        Box::pin(async move {
            if let Err(e) = blocking(move || store.approve(&who, &tool, &fp)).await {
                trace.add(
                    Who::Host,
                    format!("could not remember the approval ({e})"),
                    serde_json::json!({}),
                );
            }
        })
    }

    /// The confirmation (if the entry names one) is used up first, then the line is
    /// appended: a crash between the two loses the confirmation, never doubles a call.
    fn append(&self, entry: Entry) -> BoxFuture<'_, Result<(), String>> {
        let store = self.clone();
        Box::pin(blocking(move || {
            if let Some(nonce) = &entry.confirmation
                && !store.use_confirmation(nonce)?
            {
                return Err("this confirmation was used already".into());
            }
            match &store.ledger {
                Some(ledger) => ledger.append(&entry).map(drop),
                None => Ok(()),
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_openers_share_one_key_and_use_a_confirmation_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let a = Store::open(&path, None).unwrap();
        let b = Store::open(&path, None).unwrap();
        assert_eq!(a.sealing_key().unwrap(), b.sealing_key().unwrap());
        assert!(a.use_confirmation("n1").unwrap());
        assert!(!b.use_confirmation("n1").unwrap());
        assert!(b.confirmation_used("n1").unwrap());
        assert!(!a.confirmation_used("n2").unwrap());
    }

    #[test]
    fn approvals_are_the_callers_own() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state.db"), None).unwrap();
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
