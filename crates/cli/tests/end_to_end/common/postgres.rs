//! A real PostgreSQL (Debian's package) for the tests: a cluster of the test's own, made
//! with `initdb` in a temporary folder owned by the `postgres` user (PostgreSQL refuses to
//! run as root, and the tests run as root here and in CI), listening on a free loopback
//! port and a socket in that folder, trusted local connections; stopped (and removed)
//! when dropped, and stoppable and startable again to play a database that goes away.
//! With [`Cluster::start_tls`] it speaks TLS too (`ssl = on`), with a certificate that a
//! CA of the test's own signed ([`certificates`], made with the machine's `openssl`).

use std::{
    io::{BufRead, BufReader, Write},
    os::unix::{fs::PermissionsExt, process::CommandExt},
    path::{Path, PathBuf},
    process::{Child, ChildStdin, Command, Output, Stdio},
};

use super::ports::{HeldFirst, Taken, free_port, on_the_first_free, says_taken};

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
    /// `-c` options of its own (TLS's).
    options: String,
    // Removed after the cluster stops (dropped last).
    dir: tempfile::TempDir,
}

/// A CA of a test's own, and a server certificate and key it signed (PEM files).
pub struct Certificates {
    /// The CA's certificate: what `sslrootcert` names.
    pub ca: PathBuf,
    /// The server's certificate, for the host name it was made for.
    pub cert: PathBuf,
    /// The server's private key.
    pub key: PathBuf,
}

/// In `dir`, a new CA (named after `dir`) and a server certificate it signed for the DNS name `host`
/// (P-256 keys, valid two days), made with the machine's `openssl`.
pub fn certificates(dir: &Path, host: &str) -> Certificates {
    let at = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let (ca, ca_key, cert, key, csr, ext) = (
        at("ca.crt"),
        at("ca.key"),
        at("server.crt"),
        at("server.key"),
        at("server.csr"),
        at("server.ext"),
    );
    std::fs::write(
        &ext,
        format!(
            "subjectAltName=DNS:{host}\nbasicConstraints=CA:FALSE\n\
             keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
        ),
    )
    .unwrap();
    let subject = format!("/CN={host}");
    // CAs of different folders have different names, as two real CAs would.
    let folder = dir.file_name().unwrap_or_default().to_string_lossy();
    let ca_subject = format!("/CN=gatehouse test CA {folder}");
    let ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    let words = |fixed: &str, rest: &[&str]| -> Vec<String> {
        fixed
            .split(' ')
            .chain(rest.iter().copied())
            .map(str::to_owned)
            .collect()
    };
    let steps = [
        words(
            &format!("req -x509 -days 2 {ec}"),
            &["-keyout", &ca_key, "-out", &ca, "-subj", &ca_subject],
        ),
        words(
            &format!("req {ec}"),
            &["-keyout", &key, "-out", &csr, "-subj", &subject],
        ),
        words(
            "x509 -req -CAcreateserial -days 2",
            &[
                "-in", &csr, "-CA", &ca, "-CAkey", &ca_key, "-out", &cert, "-extfile", &ext,
            ],
        ),
    ];
    for args in steps {
        let out = Command::new("openssl")
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| {
                panic!("openssl is missing ({e}): install it with `scripts/install-test-peers.sh postgres`")
            });
        assert!(
            out.status.success(),
            "openssl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Certificates {
        ca: ca.into(),
        cert: cert.into(),
        key: key.into(),
    }
}

impl Cluster {
    /// Make a cluster and start it.
    pub fn start() -> Cluster {
        Cluster::make(None)
    }

    /// Make a cluster that speaks TLS (`ssl = on`) with this server certificate, and
    /// start it. Plain connections are still taken: the client's `sslmode` decides.
    pub fn start_tls(certificates: &Certificates) -> Cluster {
        Cluster::make(Some(certificates))
    }

    fn make(tls: Option<&Certificates>) -> Cluster {
        Cluster::make_on(tls, &mut free_port)
    }

    /// Make a cluster and start it on the first port `ports` gives that is still free
    /// when PostgreSQL binds it: a free port is only free until someone binds it, and
    /// another test may take it first.
    fn make_on(tls: Option<&Certificates>, ports: &mut dyn FnMut() -> u16) -> Cluster {
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
        let mut options = String::new();
        if let Some(tls) = tls {
            // The server reads its key only if the postgres user owns it, 0600.
            for (from, to) in [(&tls.cert, "server.crt"), (&tls.key, "server.key")] {
                let to = dir.path().join(to);
                std::fs::copy(from, &to).unwrap();
                std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o600)).unwrap();
                if let Some((uid, gid)) = owner {
                    std::os::unix::fs::chown(&to, Some(uid), Some(gid)).unwrap();
                }
            }
            options = format!(
                " -c ssl=on -c ssl_cert_file={0}/server.crt -c ssl_key_file={0}/server.key",
                dir.path().display()
            );
        }
        let mut cluster = Cluster {
            bin,
            data,
            port: 0,
            owner,
            options,
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
        on_the_first_free("PostgreSQL", ports, |port| {
            cluster.port = port;
            cluster.start_server()
        });
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

    /// As [`Cluster::url`], naming the server `host` (reached at 127.0.0.1 through
    /// libpq's `hostaddr`, so a TLS check has a DNS name to check), with `query` added.
    pub fn url_naming(&self, password: Option<&str>, host: &str, query: &str) -> String {
        self.url(password).replacen("127.0.0.1", host, 1) + "?hostaddr=127.0.0.1&" + query
    }

    /// Start the server again (on its port: its clients name it), and wait until it takes
    /// connections.
    pub fn up(&self) {
        if self.start_server().is_err() {
            panic!(
                "PostgreSQL did not start again: port {} was taken",
                self.port
            );
        }
    }

    /// Start the server, and wait until it takes connections: [`Taken`] when its port was
    /// no longer free (any other failure fails the test).
    fn start_server(&self) -> Result<(), Taken> {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=40{}",
            self.port,
            self.dir.path().display(),
            self.options
        );
        let data = self.data.to_str().unwrap();
        let log = self.dir.path().join("server.log");
        let log = log.to_str().unwrap();
        let args = [
            "start", "-w", "-t", "60", "-D", data, "-l", log, "-o", &options,
        ];
        let out = (self.command("pg_ctl", &args).output())
            .unwrap_or_else(|e| panic!("cannot run pg_ctl: {e}"));
        if out.status.success() {
            return Ok(());
        }
        let log = std::fs::read_to_string(log).unwrap_or_default();
        if log.contains("could not bind") && says_taken(&log) {
            // The next start's log says only its own story.
            let _ = std::fs::remove_file(self.dir.path().join("server.log"));
            return Err(Taken);
        }
        panic!(
            "pg_ctl {args:?} failed:\n{}\n{}\n{log}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        )
    }

    /// Kill the server as a crash would: SIGKILL to the postmaster and every process it
    /// started, nothing flushed or shut down; returns once they are all gone. What a
    /// commit had synced is on disk; [`Cluster::up`] starts it again through recovery.
    pub fn kill(&self) {
        let pid_file = std::fs::read_to_string(self.data.join("postmaster.pid")).unwrap();
        let postmaster: u32 = pid_file.lines().next().unwrap().trim().parse().unwrap();
        let children = |parent: u32| -> Vec<u32> {
            let Ok(entries) = std::fs::read_dir("/proc") else {
                return Vec::new();
            };
            entries
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
                .filter(|pid| {
                    let stat =
                        std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                    // The parent is the second field after the command's closing parenthesis.
                    stat.rsplit_once(')')
                        .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                        == Some(parent)
                })
                .collect()
        };
        let all: Vec<u32> = std::iter::once(postmaster)
            .chain(children(postmaster))
            .collect();
        for pid in &all {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while all.iter().any(|pid| {
            // A zombie (killed, not yet reaped) holds nothing: it counts as gone.
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            !stat.is_empty()
                && !stat
                    .rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        }) {
            assert!(
                std::time::Instant::now() < deadline,
                "PostgreSQL survived SIGKILL"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // Its lock files name a process that is gone, but a zombie nobody reaps (the
        // postmaster's parent, pg_ctl, has exited) still answers kill(pid, 0), which the
        // next start takes for a server running: they go, as a reboot would take them.
        std::fs::remove_file(self.data.join("postmaster.pid")).unwrap();
        let socket = self.dir.path().join(format!(".s.PGSQL.{}", self.port));
        let _ = std::fs::remove_file(format!("{}.lock", socket.display()));
        let _ = std::fs::remove_file(socket);
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

#[test]
fn a_port_taken_before_postgres_binds_it_is_given_up_for_another() {
    let mut ports = HeldFirst::new();
    let cluster = Cluster::make_on(None, &mut || ports.next());
    let (offered, taken) = (&ports.offered, ports.taken());
    assert_eq!(offered.len(), 2, "the held port, then another: {offered:?}");
    assert_ne!(cluster.port, taken);
    assert_eq!(cluster.query("SELECT 1"), "1");
    // A restart keeps the port its clients name.
    cluster.down();
    cluster.up();
    assert_eq!(cluster.query("SELECT 2"), "2");
}
