//! Where the reference servers keep what must outlive a process (the tickets, the tasks):
//! the data folder, and SQLite files that are private to this user and shared by every
//! instance of a server (WAL, a busy timeout).

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use rusqlite::{Connection, params};

/// How long a write waits for another instance's transaction before it gives up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The folder the servers' stores live in: `$XDG_DATA_HOME/gatehouse`, else
/// `~/.local/share/gatehouse`, else the system's temporary folder.
pub fn data_dir() -> PathBuf {
    std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(std::env::temp_dir)
        .join("gatehouse")
}

/// A store's path: the environment variable `var` when it is set and not empty, else
/// `file` in [`data_dir`].
pub fn path_from_env(var: &str, file: &str) -> PathBuf {
    match std::env::var(var) {
        Ok(p) if !p.is_empty() => PathBuf::from(p),
        _ => data_dir().join(file),
    }
}

/// Create `path` readable and writable by this user only (0600); `None` when it exists
/// already (another instance may have just made it), which is left as it is.
pub fn create_private(path: &Path) -> std::io::Result<Option<std::fs::File>> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    match options.open(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(None),
        Err(e) => Err(e),
    }
}

/// Create a folder and any missing parents, each one usable by this user only (0700).
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Open (or create) a store: WAL, so several instances can share it, with
/// [`BUSY_TIMEOUT`].
///
/// A store is private: a folder it creates is 0700, and the database file is created 0600
/// before SQLite opens it, since SQLite gives its `-wal` and `-shm` files the database
/// file's mode (a file that exists already keeps its mode).
pub fn open(path: &Path) -> anyhow::Result<Connection> {
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
    {
        create_private_dir(dir)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    }
    create_private(path).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", path.display()))?;
    let db = Connection::open(path)
        .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", path.display()))?;
    db.busy_timeout(BUSY_TIMEOUT)?;
    // Switching a new file to WAL while another instance is doing the same can get
    // SQLITE_BUSY at once, without the busy handler (SQLite's deadlock avoidance): wait
    // and try again, within the busy timeout.
    retry_busy(|| db.pragma_update(None, "journal_mode", "WAL"))?;
    Ok(db)
}

/// Open a store and make sure of its tables (`init`), one process at a time: instances
/// starting at once on a new file otherwise meet SQLite's busy answers that its busy
/// handler does not wait on (the switch to WAL, the schema), and a slow start keeps a
/// client's first request waiting. The lock is an exclusive `flock` on `PATH.lock`,
/// waited for at most twice [`BUSY_TIMEOUT`], and released when the store is ready.
pub fn open_with(
    path: &Path,
    init: impl FnOnce(&Connection) -> anyhow::Result<()>,
) -> anyhow::Result<Connection> {
    let _starting = StartLock::take(path)?;
    let db = open(path)?;
    init(&db)?;
    Ok(db)
}

/// The exclusive lock of a store's start, held while it lives.
struct StartLock(#[allow(dead_code)] std::fs::File);

impl StartLock {
    fn take(path: &Path) -> anyhow::Result<StartLock> {
        let mut name = path.as_os_str().to_owned();
        name.push(".lock");
        let lock_path = std::path::PathBuf::from(name);
        if let Some(dir) = lock_path.parent()
            && !dir.as_os_str().is_empty()
        {
            create_private_dir(dir)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
        }
        create_private(&lock_path)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", lock_path.display()))?;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&lock_path)
            .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", lock_path.display()))?;
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            let deadline = std::time::Instant::now() + 2 * BUSY_TIMEOUT;
            // SAFETY: flock on a descriptor this function owns; no memory is shared.
            while unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                if std::time::Instant::now() >= deadline {
                    anyhow::bail!(
                        "{} is being opened by another instance for longer than {} s",
                        path.display(),
                        (2 * BUSY_TIMEOUT).as_secs()
                    );
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        Ok(StartLock(file))
    }
}

/// Run `f` again while SQLite says the store is busy, for up to [`BUSY_TIMEOUT`] in all,
/// for the statements the busy handler does not cover (a change of journal mode, a
/// schema made by several instances starting at once).
pub fn retry_busy<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match f() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            other => return other,
        }
    }
}

/// Add a column to a table of an older store, once (SQLite has no ADD COLUMN IF NOT EXISTS).
pub fn add_column(
    db: &Connection,
    table: &str,
    column: &str,
    declaration: &str,
) -> anyhow::Result<()> {
    let present = db
        .prepare(&format!(
            "SELECT 1 FROM pragma_table_info('{table}') WHERE name = ?1"
        ))?
        .exists(params![column])?;
    if !present {
        db.execute_batch(&format!(
            "ALTER TABLE {table} ADD COLUMN {column} {declaration}"
        ))?;
    }
    Ok(())
}
