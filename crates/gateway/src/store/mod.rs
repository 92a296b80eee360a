//! What a gateway's replicas share: each caller's remembered approvals, every confirmation used, the approval page's confirmations,
//! decisions and sign-in sessions, the tasks handed to clients (`tasks.rs`), older
//! clients' sessions (`sessions.rs`), the calls held on one replica while their caller
//! answers a server's question (`held.rs`), and the ledger. Any replica that opens the same
//! store seals and opens the same confirmations, and a confirmation is used once across
//! all of them: its nonce is inserted under a unique key before (or, in PostgreSQL, in
//! the same transaction as) its ledger line, and a second use finds it.
//!
//! Where it lives is the `--state` [`Location`]: one SQLite file for replicas on one
//! machine (`sqlite.rs`, the ledger the servers file's), or a PostgreSQL database for
//! replicas on several (`postgres.rs`, the ledger a table in it).
//!
//! The key that seals the gateway's states is not here (whoever reads the store could
//! forge them): it is a file of its own (`gateway/key.rs`). A store an earlier version
//! kept a key in has that key dropped when it is opened, so it is never used again.

mod error;
mod held;
mod page;
#[cfg(feature = "postgres")]
mod postgres;
pub mod remembered;
mod sessions;
mod sqlite;
pub mod tasks;
pub mod version;

use std::{
    path::PathBuf,
    sync::{Arc, atomic::AtomicI64},
    time::Duration,
};

use futures::future::BoxFuture;

use crate::caller::CallerName;
pub use error::StoreError;
pub use held::{Closed, HeldRow};
pub use page::{PageRow, PageSessionRow, PageSignInRow};
#[cfg(feature = "postgres")]
pub use postgres::Database;
pub use sessions::{AnswerRow, CLOCK_MARGIN, PRUNE_EVERY, SessionRow, USED_CONFIRMATION_KEPT};
pub use tasks::TaskRow;

use gatehouse::{
    approvals::{Remembered, Scope},
    gate::Keeper,
    ledger::{Bad, Entry, Ledger, Verified},
    trace::{Trace, Who},
};

/// How long a replica waits on the store (another replica's write, a slow or unreachable
/// database) before it gives up: the call is then refused, never sent unrecorded.
pub const STORE_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the shared state lives, as `--state` names it: checked when read.
#[derive(Clone)]
pub enum Location {
    /// A SQLite file (replicas on one machine).
    File(PathBuf),
    /// A PostgreSQL database (`postgres://` or `postgresql://`).
    #[cfg(feature = "postgres")]
    Postgres(Box<Database>),
}

impl Location {
    /// Read `--state`: a `postgres://` or `postgresql://` URL, else a file's path. Any
    /// other URL, or a malformed PostgreSQL one, is an error that says why (and never
    /// shows the URL's password).
    pub fn parse(text: &str) -> Result<Location, String> {
        let scheme = text.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        match scheme.as_deref() {
            #[cfg(feature = "postgres")]
            Some("postgres" | "postgresql") => {
                Database::parse(text).map(|db| Location::Postgres(Box::new(db)))
            }
            #[cfg(not(feature = "postgres"))]
            Some("postgres" | "postgresql") => Err(
                "--state postgres://… needs a gatehouse built with PostgreSQL (the `postgres` \
                 feature; the published binaries have it): this one keeps the state in a file"
                    .into(),
            ),
            Some(other) if !other.contains('/') => Err(format!(
                "--state takes a file or a postgres:// URL, not a {}:// URL",
                gatehouse::text::visible_line(other)
            )),
            _ if text.trim().is_empty() => Err("--state is empty".into()),
            _ => Ok(Location::File(PathBuf::from(text))),
        }
    }
}

impl Location {
    /// Is the state shared by replicas on several machines (a database), rather than kept
    /// in a file on this one?
    pub fn is_shared(&self) -> bool {
        match self {
            Location::File(_) => false,
            #[cfg(feature = "postgres")]
            Location::Postgres(_) => true,
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::File(path) => write!(f, "{}", path.display()),
            #[cfg(feature = "postgres")]
            Location::Postgres(db) => write!(f, "{db}"),
        }
    }
}

impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Location({self})")
    }
}

/// The store shared by a gateway's replicas. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    kind: Kind,
    /// When this replica last dropped what expired (`sessions.rs`), in seconds.
    pruned: Arc<AtomicI64>,
    /// Callers' approvals as this replica last read them (`remembered.rs`).
    approvals: Arc<remembered::Cache>,
}

#[derive(Clone)]
enum Kind {
    Sqlite(sqlite::Sqlite),
    #[cfg(feature = "postgres")]
    Postgres(Arc<postgres::Postgres>),
}

impl Store {
    /// Open (or create) the store at `location`, keeping a ledger when `ledger` names one:
    /// for a file, that ledger file; in PostgreSQL, the database's ledger table (the
    /// file's path is then not used). A sealing key an earlier version kept in it is
    /// dropped.
    pub async fn open(location: &Location, ledger: Option<Ledger>) -> Result<Store, StoreError> {
        let kind = match location {
            Location::File(path) => Kind::Sqlite(sqlite::Sqlite::open(path, ledger)?),
            #[cfg(feature = "postgres")]
            Location::Postgres(db) => Kind::Postgres(Arc::new(
                postgres::Postgres::open((**db).clone(), ledger.is_some()).await?,
            )),
        };
        Ok(Store {
            kind,
            pruned: Arc::default(),
            approvals: Arc::default(),
        })
    }

    /// Take the store at `location` to this build's schema version, or make it
    /// (`gatehouse gateway migrate`). Run once, with every replica stopped: replicas
    /// refuse to open a store at another version.
    pub async fn migrate(location: &Location) -> Result<version::Migrated, StoreError> {
        match location {
            Location::File(path) => sqlite::Sqlite::migrate(path),
            #[cfg(feature = "postgres")]
            Location::Postgres(db) => postgres::Postgres::migrate((**db).clone()).await,
        }
    }

    /// Is the ledger kept in the store itself (PostgreSQL) rather than in a file?
    pub fn keeps_the_ledger(&self) -> bool {
        match self.kind {
            #[cfg(feature = "postgres")]
            Kind::Postgres(_) => true,
            Kind::Sqlite(_) => false,
        }
    }

    /// Does the store answer a trivial query within [`STORE_TIMEOUT`]? `Err` says why not.
    pub async fn ping(&self) -> Result<(), StoreError> {
        match &self.kind {
            Kind::Sqlite(s) => s.ping().await,
            #[cfg(feature = "postgres")]
            Kind::Postgres(p) => p.ping().await,
        }
    }

    /// How many ledger lines wait on this replica to be written now.
    pub fn ledger_waiting(&self) -> usize {
        match &self.kind {
            Kind::Sqlite(s) => s.ledger_waiting(),
            #[cfg(feature = "postgres")]
            Kind::Postgres(p) => p.ledger_waiting(),
        }
    }
}

/// The ledger kept in the store at `location` (`gatehouse ledger verify|show --state`).
pub struct KeptLedger {
    /// Its lines as JSON, in order (those that are not JSON left out: `verified` says
    /// which).
    pub entries: Vec<serde_json::Value>,
    /// Its chain walked: `Err` at the first bad line.
    pub verified: Result<Verified, Bad>,
}

/// Read back the ledger kept in the store at `location`: `Err` when it cannot be read.
pub async fn kept_ledger(location: &Location) -> Result<KeptLedger, StoreError> {
    match location {
        Location::File(path) => Err(StoreError::Unusable {
            store: path.display().to_string(),
            why: "it is a SQLite store, which keeps no ledger (the servers file's \
                  `ledger.path` is the ledger: use --file)"
                .into(),
        }),
        #[cfg(feature = "postgres")]
        Location::Postgres(db) => {
            let (lines, head) = postgres::Postgres::connect_only((**db).clone())
                .read_ledger()
                .await?;
            Ok(KeptLedger {
                entries: lines
                    .iter()
                    .filter_map(|l| serde_json::from_str(l).ok())
                    .collect(),
                verified: postgres::walk(&lines, head),
            })
        }
    }
}

impl Store {
    /// A caller's approvals read from the store, and kept for the next calls; a store
    /// that cannot be read remembers nothing (so the person is asked, never the other way
    /// round), and that is not kept.
    async fn read_approvals(&self, who: &CallerName) -> Remembered {
        let read = match &self.kind {
            Kind::Sqlite(s) => s.remembered(who).await,
            #[cfg(feature = "postgres")]
            Kind::Postgres(p) => p.remembered(who).await,
        };
        match read {
            Ok(remembered) => {
                self.approvals.put(who, remembered.clone());
                remembered
            }
            Err(_) => Remembered::default(),
        }
    }
}

// A gateway's proposals always name their caller (`Callers::of`); one that named none
// would have no approvals (so its person is asked) and keep none.
impl Keeper for Store {
    /// A caller's approvals, as this replica read them less than `APPROVALS_TTL` ago,
    /// else read now (`remembered.rs` says why that is safe).
    fn remembered<'a>(&'a self, who: Option<&'a CallerName>) -> BoxFuture<'a, Remembered> {
        Box::pin(async move {
            let Some(who) = who else {
                return Remembered::default();
            };
            match self.approvals.get(who) {
                Some(kept) => kept,
                None => self.read_approvals(who).await,
            }
        })
    }

    /// Read again before a person is asked: an approval given on another replica since
    /// counts.
    fn remembered_now<'a>(
        &'a self,
        who: Option<&'a CallerName>,
    ) -> BoxFuture<'a, Option<Remembered>> {
        Box::pin(async move { Some(self.read_approvals(who?).await) })
    }

    /// Every approval a gateway remembers is kept in the store, for that caller, on
    /// every replica.
    fn remember<'a>(
        &'a self,
        who: Option<&'a CallerName>,
        _scope: Scope,
        tool: &'a str,
        fingerprint: &'a str,
        trace: &'a Trace,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let Some(who) = who else {
                return;
            };
            let kept = match &self.kind {
                Kind::Sqlite(s) => s.remember(who, tool, fingerprint).await,
                #[cfg(feature = "postgres")]
                Kind::Postgres(p) => p.remember(who, tool, fingerprint).await,
            };
            if kept.is_ok() {
                self.approvals.approved(who, tool, fingerprint);
            }
            if let Err(e) = kept {
                trace.add(
                    Who::Host,
                    format!("could not remember the approval ({e})"),
                    serde_json::json!({}),
                );
            }
        })
    }

    /// The confirmation (if the entry names one) is used up no later than the line is
    /// appended: a crash loses the confirmation, never doubles a call.
    fn append(&self, entry: Entry) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            match &self.kind {
                Kind::Sqlite(s) => s.append(entry).await,
                #[cfg(feature = "postgres")]
                Kind::Postgres(p) => p.append(entry).await,
            }
            .map_err(|e| e.to_string())?;
            // Expired rows and old used confirmations go now and then; failing to drop
            // them costs only room, so the decision stands.
            let _ = self.prune_due(chrono::Utc::now().timestamp()).await;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_is_a_file_or_a_postgres_url_and_a_bad_url_says_why() {
        assert!(matches!(Location::parse("state.db"), Ok(Location::File(_))));
        assert!(matches!(
            Location::parse("/srv/gatehouse/gateway.db"),
            Ok(Location::File(_))
        ));
        let err = |text: &str| Location::parse(text).unwrap_err();
        assert!(err("mysql://a@b/c").contains("not a mysql:// URL"));
        assert!(err("").contains("empty"));
        // A build without PostgreSQL says so of any postgres:// URL, and shows none of it.
        #[cfg(not(feature = "postgres"))]
        {
            let e = err("postgres://gh:hunter2@127.0.0.1:5432/gatehouse");
            assert!(
                e.contains("built with PostgreSQL") && !e.contains("hunter2"),
                "{e}"
            );
        }
        #[cfg(feature = "postgres")]
        postgres_urls(err);
    }

    #[cfg(feature = "postgres")]
    fn postgres_urls(err: impl Fn(&str) -> String) {
        for good in [
            "postgres://gh@127.0.0.1:5432/gatehouse",
            "postgresql://gh:pw@db.internal/gatehouse",
            "POSTGRES://gh@127.0.0.1/gatehouse?host=/run/postgresql",
        ] {
            assert!(
                matches!(Location::parse(good), Ok(Location::Postgres(_))),
                "{good}"
            );
        }
        assert!(err("postgres://gh@127.0.0.1:notaport/db").contains("--state"));
        assert!(err("postgres://127.0.0.1/db").contains("no user"));
        assert!(err("postgres://gh@127.0.0.1").contains("no database"));
        assert!(
            matches!(
                Location::parse("postgres://gh@127.0.0.1/db?sslmode=require"),
                Ok(Location::Postgres(_))
            ),
            "TLS without verifying, as libpq's require"
        );
        assert!(err("postgres://gh@127.0.0.1/db?sslmode=verify-full").contains("sslrootcert"));
        assert!(err("postgres://gh@h/db?host=/run/postgresql&sslmode=require").contains("socket"));
        assert!(err("postgres://gh@127.0.0.1/db?bogus=1").contains("--state"));
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn a_postgres_urls_password_is_never_shown() {
        let secret = "hunter2-hunter2";
        let url = format!("postgres://gh:{secret}@127.0.0.1:5432/gatehouse");
        let location = Location::parse(&url).unwrap();
        assert!(!location.to_string().contains(secret), "{location}");
        assert!(!format!("{location:?}").contains(secret));
        assert!(location.to_string().contains("127.0.0.1:5432/gatehouse"));
        let bad = format!("postgres://gh:{secret}@127.0.0.1:x/gatehouse");
        let e = Location::parse(&bad).unwrap_err();
        assert!(!e.contains(secret), "{e}");
    }
}
