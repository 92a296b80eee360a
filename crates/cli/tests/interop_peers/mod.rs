//! What the interop tests share: where the foreign peers are installed
//! (`scripts/install-test-peers.sh`, under `target/peers/` unless `GATEHOUSE_PEERS` says
//! otherwise), a loud failure naming the install command when one is missing, and
//! processes run with a time limit, so a stuck peer fails its test instead of hanging it.
#![allow(dead_code)]

use std::{
    io::Read,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;

use crate::common::Ran;

/// The longest one peer process (a client run, or `gatehouse` with foreign servers) may take.
pub const PEER_LIMIT: Duration = Duration::from_secs(30);

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

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

/// The machine's `node`, which runs the reference servers and inspector-cli 1.0.3.
pub fn node() -> String {
    let ok = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "node is missing: run `scripts/install-test-peers.sh mcp_servers` (it installs Debian's nodejs)"
    );
    "node".into()
}

/// The entry point of one of the npm reference servers (`everything`, `filesystem`, `memory`).
pub fn npm_server(name: &str) -> String {
    require(
        &format!("servers/node_modules/@modelcontextprotocol/server-{name}/dist/index.js"),
        "mcp_servers",
    )
}

/// A servers-file entry that starts a stdio server.
pub fn stdio_server(command: &str, args: &[&str]) -> Value {
    serde_json::json!({"command": command, "args": args})
}

/// Wait for `child` at most `limit`; kill it past that and fail, saying what it printed.
pub fn wait_bounded(mut child: Child, what: &str, limit: Duration) -> Ran {
    let mut out = child.stdout.take().expect("stdout is piped");
    let mut err = child.stderr.take().expect("stderr is piped");
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("the child can be waited for") {
            break Some(status);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = String::from_utf8_lossy(&out_reader.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
    let Some(status) = status else {
        panic!(
            "{what} took longer than {limit:?} and was killed\nstdout:\n{stdout}\nstderr:\n{stderr}"
        );
    };
    Ran {
        status: status.code().unwrap_or(-1),
        stdout,
        stderr,
    }
}

/// Run a command with extra environment, no stdin, within [`PEER_LIMIT`].
pub fn run_peer(program: &str, args: &[&str], env: &[(&str, &str)], cwd: Option<&Path>) -> Ran {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
    wait_bounded(child, &format!("{program} {}", args.join(" ")), PEER_LIMIT)
}

/// The `gatehouse` command as the host tests run it (no inherited time limits, no key),
/// not started yet.
pub fn gatehouse_command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let scratch = crate::common::scratch_dir();
    let mut cmd = Command::new(crate::common::exe());
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("HOST_TOOL_TIMEOUT")
        .env_remove("HOST_TOOL_MAX_TIMEOUT")
        .env_remove("GATEHOUSE_TICKETS_KEY")
        .env_remove("GATEHOUSE_CONFIG")
        // No servers file of the machine's user is found by accident.
        .env("XDG_CONFIG_HOME", &scratch)
        .env("GATEHOUSE_TICKETS_DB", scratch.join("tickets.db"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Run `gatehouse ARGS` within [`PEER_LIMIT`].
pub fn gatehouse(args: &[&str], env: &[(&str, &str)]) -> Ran {
    let child = gatehouse_command(args, env)
        .spawn()
        .expect("the gatehouse binary runs");
    wait_bounded(child, &format!("gatehouse {}", args.join(" ")), PEER_LIMIT)
}

/// The JSON lines of a file (a `--record` file, say).
pub fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
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

/// How a stdio connection agreed on its revision, from a tap log: `("initialize",
/// version the server answered)` or `("server/discover", version the client then used)`.
pub fn negotiated(tap: &[(String, Value)]) -> (String, String) {
    let first = tap
        .iter()
        .find(|(dir, m)| dir == ">>" && m.get("method").is_some())
        .map(|(_, m)| m.clone())
        .expect("the client sent a request");
    let answer_to = |id: &Value| -> Option<Value> {
        tap.iter()
            .find(|(dir, m)| dir == "<<" && m.get("id") == Some(id) && m.get("method").is_none())
            .map(|(_, m)| m.clone())
    };
    let initialize = tap
        .iter()
        .find(|(dir, m)| dir == ">>" && m["method"] == "initialize");
    let discover_ok = tap.iter().any(|(dir, m)| {
        dir == ">>"
            && m["method"] == "server/discover"
            && answer_to(&m["id"]).is_some_and(|a| a.get("result").is_some())
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
    let answer = answer_to(&init.1["id"]).expect("initialize was answered");
    (
        "initialize".into(),
        answer["result"]["protocolVersion"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}
