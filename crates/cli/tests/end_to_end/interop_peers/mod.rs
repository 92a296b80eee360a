//! What the interop tests share: where the foreign peers are installed
//! (`scripts/install-test-peers.sh`, under `target/peers/` unless `GATEHOUSE_PEERS` says
//! otherwise), a loud failure naming the install command when one is missing,
//! processes run with a time limit, so a stuck peer fails its test instead of hanging it,
//! and for Streamable HTTP: peers served on 127.0.0.1 and killed when dropped
//! ([`HttpPeer`]), a tokens file, and the HTTP wire tap.
#![allow(dead_code)]

use std::{
    io::Read,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use rmcp::model::{CallToolRequestParams, InputResponses};
use serde_json::{Value, json};

use crate::common::{Ran, playback};

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
// Streamable HTTP: peers that serve on 127.0.0.1, tokens, and the HTTP wire tap
// ------------------------------------------------------------------------------------

/// A process serving Streamable HTTP on 127.0.0.1, started with port 0; its address read
/// from the line `listening on http://…` it prints on stderr (as `gatehouse serve --http`,
/// the Python servers' `--http 0`, `http_tap.py` and `loopback_listen.cjs` do), its stderr
/// kept, and killed when dropped.
pub struct HttpPeer {
    child: Child,
    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    stderr: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Drop for HttpPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl HttpPeer {
    /// Start `cmd` (stdin and stdout closed, stderr read) and wait, at most
    /// [`PEER_LIMIT`], for its address. `path` is added to an address printed without one.
    pub fn start(mut cmd: Command, what: &str, path: &str) -> HttpPeer {
        use std::io::BufRead;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = stderr.clone();
        let lines = std::io::BufReader::new(child.stderr.take().expect("stderr is piped")).lines();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("listening on http://") {
                    let _ = tx.send(format!("http://{}", url.trim()));
                }
                sink.lock().unwrap_or_else(|e| e.into_inner()).push(line);
            }
        });
        let mut peer = HttpPeer {
            child,
            url: String::new(),
            stderr,
        };
        match rx.recv_timeout(PEER_LIMIT) {
            Ok(url) => {
                let bare = url.trim_start_matches("http://");
                peer.url = if bare.contains('/') {
                    url
                } else {
                    format!("{url}{path}")
                };
            }
            Err(_) => panic!(
                "{what} printed no `listening on http://…` line within {PEER_LIMIT:?}; stderr:\n{}",
                peer.stderr_lines().join("\n")
            ),
        }
        assert!(
            peer.url.starts_with("http://127.0.0.1:"),
            "{what} is not on loopback: {}",
            peer.url
        );
        peer
    }

    /// Every line the process wrote on stderr so far.
    pub fn stderr_lines(&self) -> Vec<String> {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The JSON lines of its stderr (the servers' `mcp.request` records, say).
    pub fn records(&self) -> Vec<Value> {
        self.stderr_lines()
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The process id, for signals.
    pub fn id(&self) -> u32 {
        self.child.id()
    }
}

/// Sam's bearer token in [`tokens_file`]: `usr-sam` of `larkfield`.
pub const SAM_TOKEN: &str = "tok-sam-larkfield-interop-5d0e7c1a93b2";

/// A tokens file for `gatehouse serve --http --tokens` with [`SAM_TOKEN`] (hashed).
pub fn tokens_file(dir: &Path) -> PathBuf {
    let path = dir.join("tokens.json");
    std::fs::write(
        &path,
        serde_json::json!([{
            "user": "usr-sam", "tenant": "larkfield",
            "sha256": gatehouse_servers::auth::hash_token(SAM_TOKEN), "client": "interop"
        }])
        .to_string(),
    )
    .expect("the tokens file is written");
    path
}

/// `gatehouse serve NAME --http 127.0.0.1:0 --tokens FILE`, with the tickets store at `db`
/// and no caller in its environment (over HTTP the token says who calls).
pub fn gatehouse_http(name: &str, tokens: &Path, db: &Path) -> HttpPeer {
    let mut cmd = Command::new(crate::common::exe());
    cmd.args(["serve", name, "--http", "127.0.0.1:0", "--tokens"])
        .arg(tokens)
        .env("GATEHOUSE_TICKETS_DB", db)
        .env_remove("GATEHOUSE_TICKETS_KEY")
        .env_remove("MCP_USER")
        .env_remove("MCP_TENANT");
    HttpPeer::start(cmd, &format!("gatehouse serve {name} --http"), "/mcp")
}

/// server-everything in its `streamableHttp` mode (stateful sessions, revisions up to
/// 2025-11-25), kept on 127.0.0.1 with a free port by `loopback_listen.cjs`.
pub fn everything_http() -> HttpPeer {
    let mut cmd = Command::new(node());
    cmd.arg("--require")
        .arg(script("loopback_listen.cjs"))
        .arg(npm_server("everything"))
        .arg("streamableHttp")
        .env("PORT", "0");
    HttpPeer::start(cmd, "server-everything streamableHttp", "/mcp")
}

/// One of the Python SDK test servers of `tests/peers/` on Streamable HTTP (`--http 0`).
pub fn python_http(script_name: &str) -> HttpPeer {
    let mut cmd = Command::new(python());
    cmd.arg(script(script_name)).args(["--http", "0"]);
    HttpPeer::start(cmd, &format!("{script_name} --http"), "/mcp")
}

/// `http_tap.py LOG UPSTREAM`: a logging proxy in front of `upstream`. Its URL goes to the
/// client; [`tapped`] reads the log (`>>`, `<<`, and `HTTP` lines with each exchange's
/// method, MCP headers and status), and [`negotiated`] works on it as on a stdio tap.
pub fn http_tap(upstream: &str, log: &Path) -> HttpPeer {
    let mut cmd = Command::new(python());
    cmd.arg(script("http_tap.py")).arg(log).arg(upstream);
    HttpPeer::start(cmd, &format!("http_tap.py in front of {upstream}"), "/mcp")
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

/// A servers-file entry for a server on Streamable HTTP.
pub fn http_server(url: &str, headers: Value) -> Value {
    serde_json::json!({"type": "http", "url": url, "headers": headers})
}

// What the foreign-server tests (stdio and HTTP) share.

/// `gatehouse ask x --config FILE --model playback:… --json --record FILE ARGS…`.
pub fn ask(
    dir: &Path,
    config: &str,
    decisions: Value,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Ran {
    let model = playback(dir, decisions);
    let record = dir.join("record.jsonl");
    let _ = std::fs::remove_file(&record);
    let record = record.to_string_lossy().into_owned();
    let mut args = vec![
        "ask", "x", "--config", config, "--model", &model, "--json", "--record", &record,
    ];
    args.extend_from_slice(extra);
    let ran = gatehouse(&args, env);
    assert_eq!(ran.status, 0, "gatehouse failed:\n{}", ran.stderr);
    ran
}

/// The data of the "discovered … on SERVER" step.
pub fn discovered(ran: &Ran, server: &str) -> Value {
    ran.json()["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            let t = s["text"].as_str().unwrap();
            t.starts_with("discovered ") && t.contains(&format!(" on {server}: "))
        })
        .unwrap_or_else(|| panic!("no discovery of {server}: {:?}", ran.step_texts()))["data"]
        .clone()
}

pub fn outcomes(ran: &Ran) -> Vec<String> {
    ran.tool_events()
        .iter()
        .map(|e| e["outcome"].as_str().unwrap().to_owned())
        .collect()
}

pub fn texts(result: &Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

// What the stdio and HTTP suites of one direction share.

pub fn open_ticket(host: &str, summary: &str) -> CallToolRequestParams {
    CallToolRequestParams::new("open_ticket").with_arguments(
        json!({"host": host, "summary": summary})
            .as_object()
            .unwrap()
            .clone(),
    )
}

pub fn with_answer(
    params: CallToolRequestParams,
    priority: &str,
    state: &str,
) -> CallToolRequestParams {
    let mut responses = InputResponses::new();
    responses.insert(
        "confirm".into(),
        json!({"action": "accept", "content": {"priority": priority}}),
    );
    params
        .with_input_responses(responses)
        .with_request_state(state.to_owned())
}

/// Every reference server, with the tools it must list.
pub const SERVERS: &[(&str, &str, &[&str])] = &[
    (
        "support",
        "support-mcp",
        &["search_knowledge", "get_ticket"],
    ),
    ("cmdb", "cmdb", &["get_asset", "find_assets"]),
    ("tickets", "tickets", &["open_ticket", "list_tickets"]),
    ("orders", "orders", &["get_order_status", "export_report"]),
];

pub const POLICY: &str = "policy://larkfield/refunds-and-payments";

/// One ordinary call per server, and what its structured result must hold.
pub fn sample_call(server: &str) -> (&'static str, Value, &'static str, Value) {
    match server {
        "support" => (
            "search_knowledge",
            json!({"query": "charged twice", "limit": 2}),
            "/results/0/uri",
            json!(POLICY),
        ),
        "cmdb" => (
            "get_asset",
            json!({"hostname": "jump-prod-02"}),
            "/owner_name",
            json!("Camille Michel"),
        ),
        "tickets" => ("list_tickets", json!({}), "/total", json!(0)),
        "orders" => (
            "get_order_status",
            json!({"order_id": "A-1002"}),
            "/eta",
            json!("2026-10-18"),
        ),
        other => panic!("no sample call for {other}"),
    }
}
