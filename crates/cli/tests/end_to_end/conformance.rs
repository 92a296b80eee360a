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
    path::{Path, PathBuf},
    process::Command,
    sync::{Mutex, OnceLock},
    time::Duration,
};

use crate::common::{
    process::{LIMIT, Process, Spawn, Stream},
    repo_root,
};
use crate::interop_peers::{node22, require, run_peer, script};

/// The longest one leg may take (a full client suite takes well under a minute).
const LEG_LIMIT: Duration = Duration::from_secs(240);
/// The client suites' time limit per scenario, in ms (as the Python SDK's CI).
const CLIENT_TIMEOUT_MS: &str = "60000";

/// Node 22 and the harness, or a failure that says how to install them.
fn harness() -> (String, String) {
    let node = node22();
    let index = require(
        "conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js",
        "conformance",
    );
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

/// Run the harness with `args` (in a process group of its own: it starts clients and
/// mocks, all stopped with it); its exit status and its output without colours.
fn run_harness(args: &[&str]) -> (i32, String) {
    let (node, index) = harness();
    let node_dir = Path::new(&node).parent().expect("node's folder");
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
        .env("PATH", path);
    let ran = Spawn::new(command, "the conformance harness")
        .group()
        .run()
        .wait(LEG_LIMIT);
    (
        ran.status,
        strip_ansi(&format!("{}{}", ran.stdout, ran.stderr)),
    )
}

fn baseline(rev: &str) -> String {
    repo_root()
        .join(format!("tests/conformance/expected-failures.{rev}.yml"))
        .to_string_lossy()
        .into_owned()
}

/// Print the leg's summary and assert it passed against its baseline.
fn check_leg(leg: &str, code: i32, output: &str) {
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
        code, 0,
        "{leg}: the harness exited {code} (a scored scenario failed outside the baseline, or a baseline entry is stale); {total}"
    );
}

/// The fixture on a free loopback port (its address read from its `listening on …`
/// line); stopped, with its group, when dropped.
pub(crate) fn start_fixture() -> Process {
    let (fixture, _) = binaries();
    let mut command = Command::new(fixture);
    command.args(["--listen", "127.0.0.1:0"]);
    Spawn::new(command, "conformance-fixture").group().serving(
        Stream::Stderr,
        "listening on ",
        LIMIT,
    )
}

fn server_leg(rev: &str) {
    let _one = LEGS.lock().unwrap_or_else(|e| e.into_inner());
    harness();
    let fixture = start_fixture();
    let (code, output) = run_harness(&[
        "server",
        "--url",
        &fixture.url,
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

/// The client extension scenarios the host passes (run one by one: the harness skips an
/// extension scenario unless forced): client credentials with a private-key JWT (RFC
/// 7523), a workload's token (the JWT-bearer grant), enterprise-managed authorization
/// (ID-JAG), and tokens bound to a key with a fresh proof on each request (DPoP, RFC 9449),
/// with the servers' nonces.
const CLIENT_EXTENSIONS: &[&str] = &[
    "auth/client-credentials-jwt",
    "auth/wif-jwt-bearer",
    "auth/enterprise-managed-authorization",
    "auth/dpop",
    "auth/dpop-nonce",
];

/// Each of [`CLIENT_EXTENSIONS`] at `rev`, every check passed.
fn client_extensions(rev: &str) {
    let _one = LEGS.lock().unwrap_or_else(|e| e.into_inner());
    harness();
    let (_, client) = binaries();
    let client = client.to_string_lossy().into_owned();
    for scenario in CLIENT_EXTENSIONS {
        let (code, output) = run_harness(&[
            "client",
            "--command",
            &client,
            "--scenario",
            scenario,
            "--spec-version",
            rev,
            "--force",
            "--timeout",
            CLIENT_TIMEOUT_MS,
        ]);
        let passed = output.lines().find(|l| l.starts_with("Passed: "));
        println!(
            "{scenario} at {rev}: {}",
            passed.unwrap_or("(no Passed line)")
        );
        assert!(
            code == 0 && passed.is_some_and(|l| l.contains(", 0 failed")),
            "{scenario} at {rev} (exit {code}):\n{output}"
        );
    }
}

/// The baseline of the server leg through the gateway: the direct leg's entries and the
/// scenarios the gateway cannot pass on yet, each with its reason.
fn gateway_baseline(rev: &str) -> String {
    repo_root()
        .join(format!(
            "tests/conformance/expected-failures.gateway.{rev}.yml"
        ))
        .to_string_lossy()
        .into_owned()
}

/// `gatehouse gateway --http` in front of `fixture`, with its own names
/// (`gatewayNames: unprefixed`) and every fixture tool allowed, its state and ledger in
/// `dir`; stopped, with its group, when dropped.
fn start_gateway_before(fixture: &Process, dir: &Path) -> Process {
    let config = crate::common::write(
        dir,
        "servers.json",
        &serde_json::json!({
            "mcpServers": {"fixture": {"url": fixture.url}},
            "gatehouse": {
                "gatewayNames": "unprefixed",
                "rules": [{"tool": "fixture__*", "decision": "allow"}],
                "ledger": {"path": dir.join("ledger.jsonl")}
            }
        }),
    );
    let state = dir.join("state.db");
    let state = state.to_str().expect("a UTF-8 path");
    let mut args = crate::gateway::http_args(&config, "127.0.0.1:0", state);
    args.push("--no-auth");
    Spawn::new(
        crate::common::gatehouse_command(&args, &[]),
        "gatehouse gateway --http",
    )
    .group()
    .serving(Stream::Stderr, "listening on ", LIMIT)
}

/// The server leg against the gateway in front of the fixture: every scenario that
/// passes direct must pass through it, less the gateway baseline's.
fn gateway_server_leg(rev: &str) {
    let _one = LEGS.lock().unwrap_or_else(|e| e.into_inner());
    harness();
    let fixture = start_fixture();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let gateway = start_gateway_before(&fixture, dir.path());
    let (code, output) = run_harness(&[
        "server",
        "--url",
        &gateway.url,
        "--requirements",
        rev,
        "--expected-failures",
        &gateway_baseline(rev),
    ]);
    check_leg(
        &format!("server leg {rev} through the gateway"),
        code,
        &output,
    );
    // The tasks extension is not scored, but the gateway offers it: each `tasks-*`
    // scenario the harness runs must pass through it.
    let failed: Vec<&str> = output
        .lines()
        .filter(|l| l.starts_with("✗ tasks-"))
        .collect();
    assert!(failed.is_empty(), "through the gateway: {failed:?}");
}

#[test]
fn server_leg_through_the_gateway_2026_07_28() {
    gateway_server_leg("2026-07-28");
}

#[test]
fn server_leg_through_the_gateway_2025_11_25() {
    gateway_server_leg("2025-11-25");
}

/// The gateway's baseline holds every entry of the direct leg's: a scenario the fixture
/// fails direct is not expected to pass through the gateway.
#[test]
fn the_gateway_baseline_holds_the_direct_one() {
    for rev in ["2026-07-28", "2025-11-25"] {
        let entries = |path: String| -> Vec<String> {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let server = text.split("\nserver:").nth(1).unwrap_or_default();
            server
                .lines()
                .filter_map(|l| l.trim().strip_prefix("- "))
                .map(|l| l.split('#').next().unwrap_or_default().trim().to_owned())
                .collect()
        };
        let gateway = entries(gateway_baseline(rev));
        for entry in entries(baseline(rev)) {
            assert!(
                gateway.contains(&entry),
                "{rev}: {entry} is missing from the gateway baseline"
            );
        }
    }
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

#[test]
fn client_extensions_2026_07_28() {
    client_extensions("2026-07-28");
}

#[test]
fn client_extensions_2025_11_25() {
    client_extensions("2025-11-25");
}

/// `tests/peers/conformance.sh` (the wrapper docs/interop.md uses by hand) finds the
/// harness and Node 22, and the harness knows the 2026-07-28 scenarios.
#[test]
fn the_conformance_harness_is_installed_and_lists_its_2026_07_28_scenarios() {
    harness();
    let ran = run_peer(&script("conformance.sh"), &["list"], &[], None);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    for scenario in [
        "server-stateless [2026-07-28]",
        "tools-call-simple-text [2025-06-18,2025-11-25,2026-07-28]",
        "server-initialize [2025-06-18,2025-11-25]",
    ] {
        assert!(ran.stdout.contains(scenario), "{scenario}:\n{}", ran.stdout);
    }
}
