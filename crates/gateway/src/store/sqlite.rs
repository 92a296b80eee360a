//! The gateway's shared state in one SQLite file (`--state FILE`, the default), for
//! replicas on one machine: callers' approvals and used confirmations,
//! the approval page's confirmations and sessions (`sqlite/page.rs`), and the ledger
//! file beside it (its appends lock the file). Every call runs on a
//! blocking thread, never on the runtime's workers. The file is made 0600 before SQLite
//! opens it, so its `-wal` and `-shm`, which SQLite makes with the main file's mode, are
//! too; wherever `--state` points, an existing folder included.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use rusqlite::{Connection, TransactionBehavior, params};

mod page;

use super::{
    STORE_TIMEOUT, StoreError,
    version::{self, Found, Migrated},
};
use crate::caller::CallerName;
use gatehouse::{
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
    /// `None`). A sealing key an earlier version kept in it is dropped.
    pub fn open(path: &Path, ledger: Option<Ledger>) -> Result<Sqlite, StoreError> {
        // A replica makes an empty store (and takes one made before versions to version
        // 1); any other it opens only at this version.
        let (db, found) = schema(path, false)?;
        version::check(found, &path.display().to_string())?;
        if let Some(ledger) = &ledger {
            ledger.check().map_err(StoreError::Ledger)?;
        }
        Ok(Sqlite {
            db: Arc::new(Mutex::new(db)),
            path: path.to_owned(),
            ledger,
        })
    }

    /// Take the store at `path` to this build's schema version, or make it
    /// (`gatehouse gateway migrate`), in one transaction.
    pub fn migrate(path: &Path) -> Result<Migrated, StoreError> {
        let (_, found) = schema(path, true)?;
        Ok(version::migrated(found))
    }

    /// Use a confirmation up: `Ok(true)` the first time, `Ok(false)` ever after, on any
    /// replica.
    pub fn use_confirmation(&self, nonce: &str) -> Result<bool, StoreError> {
        self.held()
            .execute(
                "INSERT OR IGNORE INTO used_confirmations (nonce, used_at) VALUES (?1, ?2)",
                params![nonce, gatehouse::ledger::now()],
            )
            .map(|n| n == 1)
            .map_err(|e| self.error(&e))
    }

    /// Was this confirmation used?
    #[cfg(test)]
    fn confirmation_used(&self, nonce: &str) -> Result<bool, StoreError> {
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

    fn error(&self, e: &rusqlite::Error) -> StoreError {
        StoreError::Unavailable {
            store: self.path.display().to_string(),
            cause: e.to_string(),
        }
    }

    pub(super) fn approvals_of(&self, caller: &CallerName) -> Result<Remembered, StoreError> {
        let db = self.held();
        let mut stmt = db
            .prepare_cached("SELECT tool, fingerprint FROM approvals WHERE caller = ?1")
            .map_err(|e| self.error(&e))?;
        let rows = stmt
            .query_map(params![caller.as_str()], |r| {
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
        caller: &CallerName,
        tool: &str,
        fingerprint: &str,
    ) -> Result<(), StoreError> {
        self.held()
            .execute(
                "INSERT OR REPLACE INTO approvals (caller, tool, fingerprint, approved_at)
                 VALUES (?1, ?2, ?3, ?4)",
                params![caller.as_str(), tool, fingerprint, gatehouse::ledger::now()],
            )
            .map(drop)
            .map_err(|e| self.error(&e))
    }
}

/// Step `i` takes the schema from version `i` to `i + 1` (`version.rs`). Step 0 is the
/// schema stores had before versions, made where missing, less the sealing key an earlier
/// version kept in the store (dropped, so it is never used again).
fn steps() -> [String; version::SCHEMA_VERSION as usize] {
    [format!(
        "DROP TABLE IF EXISTS gateway_key;
         CREATE TABLE IF NOT EXISTS approvals (caller TEXT NOT NULL, tool TEXT NOT NULL,
             fingerprint TEXT NOT NULL, approved_at TEXT NOT NULL, PRIMARY KEY (caller, tool));
         CREATE TABLE IF NOT EXISTS used_confirmations (nonce TEXT PRIMARY KEY, used_at TEXT NOT NULL);
         {page} {tasks} {sessions} {held}",
        page = page::SCHEMA,
        tasks = super::tasks::SQLITE_SCHEMA,
        sessions = super::sessions::SQLITE_SCHEMA,
        held = super::held::SQLITE_SCHEMA,
    )]
}

/// The store file at `path`, private, in WAL mode with every commit synced, and what its
/// schema was: in one write transaction, its version read and the steps run that take it
/// to this build's (an empty store's and one made before versions', and with `migrate`
/// those from any older version; a newer store is an error then).
fn schema(path: &Path, migrate: bool) -> Result<(Connection, Found), StoreError> {
    let unusable = |why: String| StoreError::Unusable {
        store: path.display().to_string(),
        why,
    };
    let shown = |e: rusqlite::Error| unusable(e.to_string());
    made_private(path)?;
    let mut db = Connection::open(path).map_err(shown)?;
    db.busy_timeout(STORE_TIMEOUT).map_err(shown)?;
    db.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;")
        .map_err(shown)?;
    let tx = (db.transaction_with_behavior(TransactionBehavior::Immediate)).map_err(shown)?;
    let found = found(&tx).map_err(shown)?;
    if migrate || version::opens_itself(found) {
        let first = version::first_step(found).map_err(unusable)?;
        for step in &steps()[first..] {
            tx.execute_batch(step).map_err(shown)?;
        }
        tx.execute_batch(&version::record("INTEGER"))
            .map_err(shown)?;
    }
    tx.commit().map_err(shown)?;
    Ok((db, found))
}

/// What the store's schema is, read in the transaction that may change it.
fn found(tx: &Connection) -> rusqlite::Result<Found> {
    let tables = |extra: &str| -> rusqlite::Result<i64> {
        tx.query_row(
            &format!("SELECT count(*) FROM sqlite_master WHERE type = 'table' {extra}"),
            [],
            |r| r.get(0),
        )
    };
    if tables(&format!("AND name = '{}'", version::VERSION_TABLE))? > 0 {
        let sql = format!(
            "SELECT version FROM {} WHERE id = 1",
            version::VERSION_TABLE
        );
        return tx.query_row(&sql, [], |r| r.get(0)).map(Found::Version);
    }
    Ok(match tables("AND name NOT LIKE 'sqlite_%'")? {
        0 => Found::Empty,
        _ => Found::Version(0),
    })
}

/// The store file at `path` and the `-wal` and `-shm` beside it, made readable by the user
/// only before SQLite opens them: the file created 0600 (its missing folders 0700), and
/// any of the three an earlier version left with a wider mode narrowed.
fn made_private(path: &Path) -> Result<(), StoreError> {
    let failed = |p: &Path, e: std::io::Error| StoreError::Unusable {
        store: p.display().to_string(),
        why: e.to_string(),
    };
    drop(gatehouse::files::create_private_keep(path).map_err(|e| failed(path, e))?);
    for suffix in ["-wal", "-shm"] {
        let mut beside = path.as_os_str().to_owned();
        beside.push(suffix);
        let beside = PathBuf::from(beside);
        if beside.exists() {
            drop(gatehouse::files::create_private_keep(&beside).map_err(|e| failed(&beside, e))?);
        }
    }
    Ok(())
}

/// Run a blocking store operation off the async workers.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(StoreError::Worker(e.to_string())))
}

impl Sqlite {
    /// Does the store answer within [`STORE_TIMEOUT`] (its lock included)?
    pub async fn ping(&self) -> Result<(), StoreError> {
        let store = self.clone();
        let asked = blocking(move || {
            let db = store.held();
            db.query_row("SELECT 1", [], |_| Ok(()))
                .map_err(|e| store.error(&e))
        });
        tokio::time::timeout(STORE_TIMEOUT, asked)
            .await
            .unwrap_or_else(|_| {
                Err(StoreError::Late {
                    store: self.path.display().to_string(),
                    limit: STORE_TIMEOUT,
                })
            })
    }

    /// Ledger lines waiting to be written.
    pub fn ledger_waiting(&self) -> usize {
        self.ledger.as_ref().map_or(0, Ledger::waiting)
    }

    /// A caller's approvals.
    pub async fn remembered(&self, who: &CallerName) -> Result<Remembered, StoreError> {
        let (store, who) = (self.clone(), who.to_owned());
        blocking(move || store.approvals_of(&who)).await
    }

    /// Remember that `who` approved `tool` at this definition.
    pub async fn remember(&self, who: &CallerName, tool: &str, fp: &str) -> Result<(), StoreError> {
        let store = self.clone();
        let (who, tool, fp) = (who.to_owned(), tool.to_owned(), fp.to_owned());
        blocking(move || store.approve(&who, &tool, &fp)).await
    }

    /// The confirmation (if the entry names one) is used up first, then the line is
    /// appended to the ledger file: a crash between the two loses the confirmation,
    /// never doubles a call.
    pub async fn append(&self, entry: Entry) -> Result<(), StoreError> {
        let store = self.clone();
        blocking(move || {
            if let Some(nonce) = &entry.confirmation
                && !store.use_confirmation(nonce)?
            {
                return Err(StoreError::Used);
            }
            match &store.ledger {
                Some(ledger) => ledger.append(&entry).map(drop).map_err(StoreError::Ledger),
                None => Ok(()),
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caller::who;

    #[test]
    fn two_openers_use_a_confirmation_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let a = Sqlite::open(&path, None).unwrap();
        let b = Sqlite::open(&path, None).unwrap();
        assert!(a.use_confirmation("n1").unwrap());
        assert!(!b.use_confirmation("n1").unwrap());
        assert!(b.confirmation_used("n1").unwrap());
        assert!(!a.confirmation_used("n2").unwrap());
    }

    #[cfg(unix)]
    #[test]
    fn the_store_and_its_wal_and_shm_are_private_in_an_open_folder_and_an_old_key_is_dropped() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.path().join("state.db");
        {
            // An earlier version's store: world-readable, its key in a table.
            let old = Connection::open(&path).unwrap();
            old.execute_batch(
                "PRAGMA journal_mode = WAL;
                 CREATE TABLE gateway_key (id INTEGER PRIMARY KEY, key BLOB NOT NULL);
                 INSERT INTO gateway_key (id, key) VALUES (1, x'0707');",
            )
            .unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        // Made before versions: taken to version 1 as it is opened, its key dropped.
        let store = Sqlite::open(&path, None).unwrap();
        assert!(store.use_confirmation("n1").unwrap());
        for suffix in ["", "-wal", "-shm"] {
            let file = PathBuf::from(format!("{}{suffix}", path.display()));
            assert_eq!(mode(&file), 0o600, "{}", file.display());
        }
        assert_eq!(
            mode(dir.path()),
            0o755,
            "an existing folder is left as it is"
        );
        let tables: i64 = store
            .held()
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = 'gateway_key'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 0, "the key kept by an earlier version is gone");
    }

    #[test]
    fn a_store_is_made_at_this_version_and_one_of_another_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        drop(Sqlite::open(&path, None).unwrap());
        let version = |db: &Connection| -> i64 {
            db.query_row("SELECT version FROM gatehouse_schema", [], |r| r.get(0))
                .unwrap()
        };
        let db = Connection::open(&path).unwrap();
        assert_eq!(version(&db), version::SCHEMA_VERSION);
        // Opened again, and migrated, it stays as it is.
        drop(Sqlite::open(&path, None).unwrap());
        let again = Sqlite::migrate(&path).unwrap();
        assert_eq!(
            again.to_string(),
            "the store is at schema version 1 already"
        );
        // A newer gatehouse's store: neither opened nor migrated back.
        db.execute("UPDATE gatehouse_schema SET version = 2", [])
            .unwrap();
        let newer = Sqlite::open(&path, None).err().unwrap();
        assert!(
            matches!(newer, StoreError::Newer { version: 2, .. }),
            "{newer}"
        );
        assert!(
            newer.to_string().contains("made by a newer gatehouse"),
            "{newer}"
        );
        assert!(Sqlite::migrate(&path).is_err());
        assert_eq!(version(&db), 2, "nothing changed");
        // One made before versions (its tables, no version) is taken to this version.
        db.execute("DROP TABLE gatehouse_schema", []).unwrap();
        drop(Sqlite::open(&path, None).unwrap());
        assert_eq!(version(&db), version::SCHEMA_VERSION);
    }

    #[test]
    fn approvals_are_the_callers_own() {
        let dir = tempfile::tempdir().unwrap();
        let store = Sqlite::open(&dir.path().join("state.db"), None).unwrap();
        store
            .approve(&who("sam@larkfield"), "tickets__open_ticket", "fp1")
            .unwrap();
        let sam = store.approvals_of(&who("sam@larkfield")).unwrap();
        assert!(sam.covers("tickets__open_ticket", "fp1").is_some());
        assert!(sam.covers("tickets__open_ticket", "fp2").is_none());
        let kim = store.approvals_of(&who("kim@larkfield")).unwrap();
        assert!(!kim.names("tickets__open_ticket"));
    }
}
