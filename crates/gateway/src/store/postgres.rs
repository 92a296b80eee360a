//! The gateway's shared state in PostgreSQL (`--state postgres://…`), for replicas on
//! several machines: callers' approvals, used confirmations, the
//! approval page's confirmations and sessions (`postgres/page.rs`), and the ledger
//! itself as a table of lines chained by the ledger file's rules.
//!
//! Appends made at the same time on a replica are one transaction (`postgres/append.rs`,
//! group commit): each confirmation's nonce inserted under its unique key, the chain's
//! head row read `FOR UPDATE` (every replica's appends wait their turn on it), the lines
//! after it inserted and the head moved; a replica killed mid-way leaves nothing of it.
//! Every use of the database is bounded by [`STORE_TIMEOUT`]: past it, or with the
//! database down, the operation fails with an error naming the store (the call is
//! refused), and the next one connects again. One connection per replica,
//! no pool: the appends of all replicas take turns on the head row anyway.

use std::{str::FromStr, time::Duration};

use futures::future::BoxFuture;
use tokio::sync::Mutex;
use tokio_postgres::{Client, Config, config::Host};

use super::{
    STORE_TIMEOUT, StoreError,
    version::{self, Found, Migrated},
};

mod append;
mod page;
mod tls;

use crate::caller::CallerName;
use gatehouse::{
    approvals::{Remembered, Scope},
    ledger::{self, Bad, Chain, GENESIS, MAX_LINE_BYTES, Verified},
    redact::{self, Secrets},
};

/// How long `gatehouse ledger verify --state` may take to read the whole ledger table.
pub const VERIFY_TIMEOUT: Duration = Duration::from_secs(600);
/// How long the database keeps a transaction that its replica left open (a replica
/// stopped mid-append) before it ends it and frees the head row: a backstop, as a lost
/// connection ends it at once.
const IDLE_IN_TRANSACTION: &str = "30s";
/// Held while a replica makes the tables, so two starting at once do not race.
const SCHEMA_LOCK: i64 = 0x6761_7465_686f;

/// Step `i` takes the schema from version `i` to `i + 1` (`version.rs`). Step 0 is the
/// schema stores had before versions, made where missing, less a sealing key an earlier
/// version kept in the store (dropped, so it is never used again).
fn steps() -> [String; version::SCHEMA_VERSION as usize] {
    [format!(
        "DROP TABLE IF EXISTS gatehouse_key;
         CREATE TABLE IF NOT EXISTS gatehouse_approvals (caller TEXT NOT NULL, tool TEXT NOT NULL,
             fingerprint TEXT NOT NULL, approved_at TEXT NOT NULL, PRIMARY KEY (caller, tool));
         CREATE TABLE IF NOT EXISTS gatehouse_used_confirmations (nonce TEXT PRIMARY KEY,
             used_at TEXT NOT NULL);
         CREATE TABLE IF NOT EXISTS gatehouse_ledger (seq BIGINT PRIMARY KEY, line TEXT NOT NULL);
         CREATE TABLE IF NOT EXISTS gatehouse_ledger_head (id INTEGER PRIMARY KEY CHECK (id = 1),
             seq BIGINT NOT NULL, hash TEXT NOT NULL);
         INSERT INTO gatehouse_ledger_head (id, seq, hash) VALUES (1, 0, '{GENESIS}')
             ON CONFLICT (id) DO NOTHING;
         {page}
         {tasks}
         {sessions}
         {held}",
        page = page::SCHEMA,
        tasks = super::tasks::POSTGRES_SCHEMA,
        sessions = super::sessions::POSTGRES_SCHEMA,
        held = super::held::POSTGRES_SCHEMA
    )]
}

/// What the database's schema is, read under the schema lock in the transaction that may
/// change it.
async fn found(tx: &tokio_postgres::Transaction<'_>) -> Result<Found, tokio_postgres::Error> {
    let table = version::VERSION_TABLE;
    let versioned = "SELECT to_regclass($1::text) IS NOT NULL";
    if tx.query_one(versioned, &[&table]).await?.get::<_, bool>(0) {
        let sql = format!("SELECT version FROM {table} WHERE id = 1");
        return Ok(Found::Version(tx.query_one(&sql, &[]).await?.get(0)));
    }
    let ours = "SELECT count(*) FROM pg_tables
                WHERE schemaname = current_schema() AND tablename LIKE 'gatehouse\\_%'";
    Ok(match tx.query_one(ours, &[]).await?.get::<_, i64>(0) {
        0 => Found::Empty,
        _ => Found::Version(0),
    })
}

/// Run `steps` and say the version, in `tx`.
async fn migrate_in(
    tx: &tokio_postgres::Transaction<'_>,
    steps: &[String],
) -> Result<(), tokio_postgres::Error> {
    for step in steps {
        tx.batch_execute(step).await?;
    }
    tx.batch_execute(&version::record("BIGINT")).await
}

/// A PostgreSQL database as `--state` names it: checked when read, shown without its
/// user-info and query values.
#[derive(Clone)]
pub struct Database {
    config: Config,
    tls: tls::Tls,
    shown: String,
    secrets: Secrets,
}

impl Database {
    /// Read a `postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?…]` URL: it must name a user, a
    /// host and a database; `sslmode` and `sslrootcert` are libpq's (`tls.rs`).
    pub fn parse(url: &str) -> Result<Database, String> {
        let shown = gatehouse::text::visible_line(&redact::url(url)).into_owned();
        let secrets = Secrets::default();
        for secret in redact::url_secrets(url) {
            secrets.add(&secret);
        }
        let bad = |why: &str| format!("--state {shown}: {why}");
        let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
        let url = format!("{}://{rest}", scheme.to_ascii_lowercase());
        let (url, tls) = tls::split(&url).map_err(|e| bad(&e))?;
        let mut config = Config::from_str(&url).map_err(|e| {
            bad(&format!(
                "not a PostgreSQL URL ({})",
                secrets.text(&e.to_string())
            ))
        })?;
        if config.get_user().is_none() {
            return Err(bad("it names no user (postgres://USER@HOST:PORT/DB)"));
        }
        if config.get_hosts().is_empty() {
            return Err(bad("it names no host (postgres://USER@HOST:PORT/DB)"));
        }
        if config.get_dbname().is_none() {
            return Err(bad("it names no database (postgres://USER@HOST:PORT/DB)"));
        }
        if tls.mode.requires_tls()
            && config
                .get_hosts()
                .iter()
                .any(|h| matches!(h, Host::Unix(_)))
        {
            return Err(bad(
                "this sslmode asks for TLS, which PostgreSQL does not speak on a local \
                 socket; name a TCP host, or leave sslmode out",
            ));
        }
        config.ssl_mode(tls.wire_mode());
        config.connect_timeout(STORE_TIMEOUT);
        config.application_name("gatehouse-gateway");
        Ok(Database {
            config,
            tls,
            shown,
            secrets,
        })
    }
}

impl std::fmt::Display for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// An operation on the connection.
type Op<'c, T> = BoxFuture<'c, Result<T, tokio_postgres::Error>>;

/// One replica's connection to the shared database, made again when it is lost.
pub struct Postgres {
    db: Database,
    ledger: bool,
    client: Mutex<Option<Client>>,
    /// Appends waiting to be written together (`append.rs`).
    waiting: append::Waiting,
}

impl Postgres {
    /// Connect to `db` and make the tables (the first replica does; the others find
    /// them), keeping a ledger table when `ledger`.
    pub async fn open(db: Database, ledger: bool) -> Result<Postgres, StoreError> {
        let store = Postgres {
            ledger,
            ..Postgres::connect_only(db)
        };
        // A replica makes an empty store (and takes one made before versions to version
        // 1); any other it opens only at this version.
        let (found, _) = store.schema(false).await?;
        version::check(found, &store.db.to_string())?;
        Ok(store)
    }

    /// Take the database's store to this build's schema version, or make it (`gatehouse
    /// gateway migrate`), in one transaction under the schema lock.
    pub async fn migrate(db: Database) -> Result<Migrated, StoreError> {
        let store = Postgres::connect_only(db);
        match store.schema(true).await? {
            (_, Some(why)) => Err(StoreError::Unusable {
                store: store.db.to_string(),
                why,
            }),
            (found, None) => Ok(version::migrated(found)),
        }
    }

    /// Under the schema lock, in one transaction, read the store's version and run the
    /// steps that take it to this build's: all of an empty store's, and with `migrate`
    /// those from any older version. What was found, and why no step ran if they could
    /// not (a newer store).
    async fn schema(&self, migrate: bool) -> Result<(Found, Option<String>), StoreError> {
        self.run(STORE_TIMEOUT, |c| {
            Box::pin(async move {
                let tx = c.transaction().await?;
                tx.batch_execute(&format!("SELECT pg_advisory_xact_lock({SCHEMA_LOCK})"))
                    .await?;
                let found = found(&tx).await?;
                let mut refused = None;
                if migrate || version::opens_itself(found) {
                    match version::first_step(found) {
                        Ok(first) => migrate_in(&tx, &steps()[first..]).await?,
                        Err(e) => refused = Some(e),
                    }
                }
                tx.commit().await?;
                Ok((found, refused))
            })
        })
        .await
    }

    /// A connection to `db` that makes nothing (for reading the ledger back).
    pub fn connect_only(db: Database) -> Postgres {
        Postgres {
            db,
            ledger: false,
            client: Mutex::new(None),
            waiting: append::Waiting::default(),
        }
    }

    /// Run `op` on the connection (made first if there is none), within `limit`.
    async fn run<T>(
        &self,
        limit: Duration,
        op: impl for<'c> FnOnce(&'c mut Client) -> Op<'c, T>,
    ) -> Result<T, StoreError> {
        let attempt = async {
            let mut held = self.client.lock().await;
            self.run_held(&mut held, limit, op).await
        };
        // The lock's wait counts against the limit too.
        match tokio::time::timeout(limit, attempt).await {
            Ok(done) => done,
            Err(_) => {
                // Whatever the connection was in the middle of is unknown: start anew.
                if let Ok(mut held) = self.client.try_lock() {
                    *held = None;
                }
                Err(self.late(limit))
            }
        }
    }

    /// [`Postgres::run`] on the connection its caller already holds.
    async fn run_held<T>(
        &self,
        held: &mut Option<Client>,
        limit: Duration,
        op: impl for<'c> FnOnce(&'c mut Client) -> Op<'c, T>,
    ) -> Result<T, StoreError> {
        let attempt = async {
            if held.as_ref().is_none_or(Client::is_closed) {
                *held = Some(self.connect().await?);
            }
            let client = held.as_mut().expect("connected just now");
            let done = op(client).await;
            done.map_err(|e| self.error(&e))
        };
        let done = tokio::time::timeout(limit, attempt).await;
        // Whatever the connection was in the middle of is unknown after a time-out, and a
        // closed one is no use: start anew (a transaction left open ends with it).
        if done.is_err() || held.as_ref().is_some_and(Client::is_closed) {
            *held = None;
        }
        done.unwrap_or_else(|_| Err(self.late(limit)))
    }

    /// What a store that did not answer in time says.
    fn late(&self, limit: Duration) -> StoreError {
        StoreError::Late {
            store: self.db.to_string(),
            limit,
        }
    }

    async fn connect(&self) -> Result<Client, StoreError> {
        let (client, connection) = self
            .db
            .config
            .connect(self.db.tls.connector.clone())
            .await
            .map_err(|e| self.error(&e))?;
        tokio::spawn(async move {
            // Ends when the database goes away or the client is dropped; the next
            // operation sees the client closed and connects again.
            let _ = connection.await;
        });
        client
            .batch_execute(&format!(
                "SET idle_in_transaction_session_timeout = '{IDLE_IN_TRANSACTION}'"
            ))
            .await
            .map_err(|e| self.error(&e))?;
        Ok(client)
    }

    fn error(&self, e: &tokio_postgres::Error) -> StoreError {
        let mut text = e.to_string();
        if let Some(db) = e.as_db_error() {
            text = format!("{text}: {}", db.message());
        } else if let Some(cause) = std::error::Error::source(e) {
            text = format!("{text}: {cause}");
        }
        StoreError::Unavailable {
            store: self.db.to_string(),
            cause: gatehouse::text::visible_line(&self.db.secrets.text(&text)).into_owned(),
        }
    }

    /// Does the database answer a trivial query within [`STORE_TIMEOUT`]?
    pub async fn ping(&self) -> Result<(), StoreError> {
        self.run(STORE_TIMEOUT, |c| {
            Box::pin(async move { c.simple_query("SELECT 1").await.map(|_| ()) })
        })
        .await
    }

    /// Ledger lines waiting on this replica to be written.
    pub fn ledger_waiting(&self) -> usize {
        self.waiting.len()
    }

    /// A caller's approvals.
    pub async fn remembered(&self, who: &CallerName) -> Result<Remembered, StoreError> {
        let who = who.to_string();
        let rows = self
            .run(STORE_TIMEOUT, |c| {
                Box::pin(async move {
                    c.query(
                        "SELECT tool, fingerprint FROM gatehouse_approvals WHERE caller = $1",
                        &[&who],
                    )
                    .await
                })
            })
            .await?;
        let mut remembered = Remembered::default();
        for row in rows {
            let (tool, fingerprint): (String, String) = (row.get(0), row.get(1));
            remembered.remember(Scope::Project, &tool, &fingerprint);
        }
        Ok(remembered)
    }

    /// Remember that `who` approved `tool` at this definition.
    pub async fn remember(&self, who: &CallerName, tool: &str, fp: &str) -> Result<(), StoreError> {
        let params = [who.as_str(), tool, fp].map(str::to_owned);
        self.run(STORE_TIMEOUT, |c| {
            Box::pin(async move {
                let [who, tool, fingerprint] = &params;
                c.execute(
                    "INSERT INTO gatehouse_approvals (caller, tool, fingerprint, approved_at)
                     VALUES ($1, $2, $3, $4)
                     ON CONFLICT (caller, tool) DO UPDATE
                     SET fingerprint = EXCLUDED.fingerprint, approved_at = EXCLUDED.approved_at",
                    &[who, tool, fingerprint, &ledger::now()],
                )
                .await
                .map(drop)
            })
        })
        .await
    }

    /// The ledger table's lines, in order, and its head row: one snapshot, so appends
    /// going on meanwhile are not half seen.
    pub async fn read_ledger(&self) -> Result<(Vec<String>, Option<(i64, String)>), StoreError> {
        self.run(VERIFY_TIMEOUT, |c| {
            Box::pin(async move {
                let tx = c
                    .build_transaction()
                    .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                    .read_only(true)
                    .start()
                    .await?;
                let lines = tx
                    .query("SELECT line FROM gatehouse_ledger ORDER BY seq", &[])
                    .await?
                    .iter()
                    .map(|r| r.try_get::<_, String>(0))
                    .collect::<Result<Vec<_>, _>>()?;
                let head = match tx
                    .query_opt(
                        "SELECT seq, hash FROM gatehouse_ledger_head WHERE id = 1",
                        &[],
                    )
                    .await?
                {
                    Some(h) => Some((h.try_get::<_, i64>(0)?, h.try_get::<_, String>(1)?)),
                    None => None,
                };
                tx.commit().await?;
                Ok((lines, head))
            })
        })
        .await
    }
}

/// The chain of the ledger table's `lines` against its `head` row (`seq`, `hash`), by the
/// ledger file's rules.
pub(super) fn walk(lines: &[String], head: Option<(i64, String)>) -> Result<Verified, Bad> {
    let mut chain = Chain::default();
    for (i, text) in lines.iter().enumerate() {
        if text.len() > MAX_LINE_BYTES {
            return Err(Bad {
                line: i as u64 + 1,
                problem: format!("is longer than {MAX_LINE_BYTES} bytes"),
            });
        }
        chain.next(text)?;
    }
    let Some((seq, hash)) = head else {
        return Err(Bad {
            line: lines.len() as u64 + 1,
            problem: "the head row is missing, so the ledger's end cannot be checked".into(),
        });
    };
    let note = chain.against_head(u64::try_from(seq).unwrap_or(u64::MAX), &hash)?;
    Ok(chain.verified(note))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse::ledger::Entry;

    fn entry(step: u64) -> Entry {
        Entry {
            session: "s1".into(),
            step,
            tool: "tickets__list_tickets".into(),
            decision: gatehouse::ledger::Decision::Run,
            ..Entry::default()
        }
    }

    fn lines(n: u64) -> (Vec<String>, (i64, String)) {
        let mut prev = GENESIS.to_owned();
        let mut out = Vec::new();
        for seq in 1..=n {
            let (line, hash) = ledger::line_after(seq, &prev, &entry(seq));
            out.push(line);
            prev = hash;
        }
        (out, (n as i64, prev))
    }

    #[test]
    fn a_table_of_lines_walks_by_the_files_rules() {
        let (good, head) = lines(3);
        assert_eq!(walk(&good, Some(head.clone())).unwrap().lines, 3);
        assert_eq!(walk(&[], Some((0, GENESIS.into()))).unwrap().lines, 0);

        let mut edited = good.clone();
        edited[1] = edited[1].replace("\"run\"", "\"denied\"");
        let bad = walk(&edited, Some(head.clone())).unwrap_err();
        assert_eq!(bad.line, 2, "{bad}");
        assert!(bad.problem.contains("edited"), "{bad}");

        let mut removed = good.clone();
        removed.remove(0);
        assert_eq!(walk(&removed, Some(head.clone())).unwrap_err().line, 1);

        let cut = good[..2].to_vec();
        let bad = walk(&cut, Some(head.clone())).unwrap_err();
        assert!(bad.problem.contains("cut from the end"), "{bad}");

        let bad = walk(&good, None).unwrap_err();
        assert!(bad.problem.contains("head row is missing"), "{bad}");
        let bad = walk(&good, Some((3, GENESIS.into()))).unwrap_err();
        assert!(bad.problem.contains("head"), "{bad}");
    }
}
