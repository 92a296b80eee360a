//! A real PostgreSQL (Debian's package) for the tests: a cluster of the test's own, made
//! with `initdb` in a temporary folder owned by the `postgres` user (PostgreSQL refuses to
//! run as root, and the tests run as root here and in CI), listening on a free loopback
//! port and a socket in that folder, trusted local connections; stopped (and removed)
//! when dropped, and stoppable and startable again to play a database that goes away.

use std::{
    io::{BufRead, BufReader, Write},
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::{Child, ChildStdin, Command, Output, Stdio},
};

use super::nginx::free_port;

/// Where Debian's PostgreSQL keeps its server programs.
fn bin_dir() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").is_file() && b.join("pg_ctl").is_file())
        .collect();
    found.sort();
    found.pop().unwrap_or_else(|| {
        panic!(
            "PostgreSQL is missing: these tests run gateway replicas on a real database. \
             Install it with `scripts/install-test-peers.sh postgres` (Debian's postgresql package)."
        )
    })
}

/// The uid and gid of the `postgres` system user, when we are root (PostgreSQL will not
/// run as root); `None` when we are not, and run it as ourselves.
fn run_as() -> Option<(u32, u32)> {
    let id = |args: &[&str]| -> Option<u32> {
        let out = Command::new("id").args(args).output().ok()?;
        String::from_utf8(out.stdout).ok()?.trim().parse().ok()
    };
    if id(&["-u"])? != 0 {
        return None;
    }
    let uid = id(&["-u", "postgres"]).expect(
        "there is no `postgres` user: install Debian's postgresql package \
         (`scripts/install-test-peers.sh postgres`)",
    );
    Some((
        uid,
        id(&["-g", "postgres"]).expect("the postgres user's group"),
    ))
}

/// A PostgreSQL cluster of one test's own.
pub struct Cluster {
    bin: PathBuf,
    data: PathBuf,
    /// Its loopback port.
    pub port: u16,
    owner: Option<(u32, u32)>,
    // Removed after the cluster stops (dropped last).
    dir: tempfile::TempDir,
}

impl Cluster {
    /// Make a cluster and start it.
    pub fn start() -> Cluster {
        let bin = bin_dir();
        let owner = run_as();
        let dir = tempfile::Builder::new()
            .prefix("gatehouse-pg-")
            .tempdir()
            .unwrap();
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).unwrap();
        }
        let data = dir.path().join("data");
        let cluster = Cluster {
            bin,
            data,
            port: free_port(),
            owner,
            dir,
        };
        let data = cluster.data.to_str().unwrap().to_owned();
        cluster.must(
            "initdb",
            &[
                "-D",
                &data,
                "-U",
                "postgres",
                "-A",
                "trust",
                "--no-sync",
                "-E",
                "UTF8",
            ],
        );
        cluster.up();
        cluster
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres`, with `password` in it if given (the
    /// cluster trusts loopback connections, so any password is let in).
    pub fn url(&self, password: Option<&str>) -> String {
        let user = match password {
            Some(pw) => format!("postgres:{pw}"),
            None => "postgres".into(),
        };
        format!("postgres://{user}@127.0.0.1:{}/postgres", self.port)
    }

    /// Start the server (again), and wait until it takes connections.
    pub fn up(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=40",
            self.port,
            self.dir.path().display()
        );
        let data = self.data.to_str().unwrap();
        let log = self.dir.path().join("server.log");
        let log = log.to_str().unwrap();
        self.must(
            "pg_ctl",
            &[
                "start", "-w", "-t", "60", "-D", data, "-l", log, "-o", &options,
            ],
        );
    }

    /// Stop the server at once (its clients see their connections end).
    pub fn down(&self) {
        let data = self.data.to_str().unwrap();
        self.must("pg_ctl", &["stop", "-w", "-m", "immediate", "-D", data]);
    }

    fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut command = Command::new(self.bin.join(program));
        command
            .args(args)
            .current_dir(self.dir.path())
            .stdin(Stdio::null());
        if let Some((uid, gid)) = self.owner {
            command.uid(uid).gid(gid);
        }
        command
    }

    fn must(&self, program: &str, args: &[&str]) -> Output {
        let out = self
            .command(program, args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
        assert!(
            out.status.success(),
            "{program} {args:?} failed:\n{}\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
        );
        out
    }

    /// What `sql` returns, as psql prints it unaligned and without headers.
    pub fn query(&self, sql: &str) -> String {
        let out = self.psql(&["-A", "-t", "-c", sql]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "psql -c {sql} failed: {stderr}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// psql as `postgres` on this cluster's database, stopping at the first error, with
    /// `extra` arguments.
    fn psql(&self, extra: &[&str]) -> Command {
        let port = self.port.to_string();
        let mut args = vec!["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p"];
        args.extend([port.as_str(), "-U", "postgres"]);
        args.extend_from_slice(extra);
        args.push("postgres");
        self.command("psql", &args)
    }

    /// Its folder (data, socket, log).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A session that runs `sql` in a transaction and holds it open (and its locks) until
    /// the returned [`Held`] is dropped.
    pub fn hold(&self, sql: &str) -> Held {
        let mut child = self
            .psql(&[])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run psql: {e}"));
        let mut stdin = child.stdin.take().expect("psql's stdin");
        writeln!(stdin, "BEGIN;\n{sql};\n\\echo held").unwrap();
        // Wait until psql says the statement ran (it holds the lock from then on).
        let mut out = BufReader::new(child.stdout.take().expect("psql's stdout"));
        let mut line = String::new();
        while out.read_line(&mut line).unwrap_or(0) > 0 && !line.contains("held") {
            line.clear();
        }
        assert!(line.contains("held"), "psql did not run {sql}");
        Held {
            child,
            stdin: Some(stdin),
        }
    }
}

/// A psql session holding a transaction open; rolled back and ended when dropped.
pub struct Held {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = writeln!(stdin, "ROLLBACK;");
        }
        let _ = self.child.wait();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.data.to_str().unwrap_or_default().to_owned();
        let _ = self
            .command("pg_ctl", &["stop", "-w", "-m", "immediate", "-D", &data])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
