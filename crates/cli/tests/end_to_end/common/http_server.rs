//! A reference server on Streamable HTTP as the tests start it (`gatehouse serve NAME
//! --http 127.0.0.1:0 …`, its stderr collected, killed when dropped), the tokens they use,
//! and raw requests as a 2026-07-28 client sends them.

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use serde_json::{Value, json};

pub const SAM: &str = "tok-sam-larkfield-6c1f0e9a2b7d4f38";
pub const OMAR: &str = "tok-omar-larkfield-0b8e5d2c9a14e7f6";
/// Staff at Larkfield, like Sam.
pub const JUN: &str = "tok-jun-larkfield-5d7a1c3e9b2f4086";
/// Staff at Bramble Books.
pub const CAMILLE: &str = "tok-camille-bramble-8f2b6d0e4a1c3957";
/// A member of Bramble Books, with a token that acts in Larkfield.
pub const CAMILLE_IN_LARKFIELD: &str = "tok-camille-larkfield-e3a9c07d51b2";
/// Tomás Herrera, a user with no membership anywhere.
pub const TOMAS: &str = "tok-tomas-larkfield-2c8e0a6f4b1d9e73";
/// Longest wait for a server to print its address, or to exit.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
pub const PROTOCOL: &str = "2026-07-28";

/// The one tokens file of the tests ([`super::serve::tokens_file`]), which holds these
/// tokens beside the interop ones.
pub fn tokens_file(dir: &Path) -> PathBuf {
    super::serve::tokens_file(dir)
}

// ---------------------------------------------------------------------------------------
// A server process on HTTP.
// ---------------------------------------------------------------------------------------

/// `gatehouse serve NAME --http 127.0.0.1:0 …`, its stderr collected; killed when dropped.
pub struct Served {
    pub child: Child,
    pub url: String,
    pub stderr: Arc<Mutex<Vec<String>>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A bare `gatehouse serve …` command with a clean environment.
pub fn serve_command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(super::exe());
    cmd.arg("serve").args(args);
    with_clean_env(cmd, env)
}

/// `gatehouse serve …` under an open-file limit: `sh -c 'ulimit -n N && exec …'`, so the
/// child's pid is the server's own.
pub fn serve_command_with_open_files(
    open_files: u32,
    args: &[&str],
    env: &[(&str, &str)],
) -> Command {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!(
            "ulimit -n {open_files} && exec \"$0\" serve \"$@\""
        ))
        .arg(super::exe())
        .args(args);
    with_clean_env(cmd, env)
}

fn with_clean_env(mut cmd: Command, env: &[(&str, &str)]) -> Command {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    super::in_fresh_world(cmd, env)
}

pub fn serve(name: &str, extra: &[&str], env: &[(&str, &str)]) -> Served {
    serve_on(name, "127.0.0.1:0", extra, env)
}

/// As [`serve`], listening on `addr` (a port a server ran on before, to start it again).
pub fn serve_on(name: &str, addr: &str, extra: &[&str], env: &[(&str, &str)]) -> Served {
    let mut args = vec![name, "--http", addr];
    args.extend_from_slice(extra);
    started(name, serve_command(&args, env))
}

/// As [`serve`], with the `gatehouse-servers` binary (`gatehouse-servers NAME …`), the one
/// the built-in configuration starts: the system's allocator, where `gatehouse` has
/// mimalloc.
pub fn serve_servers_binary(name: &str, extra: &[&str], env: &[(&str, &str)]) -> Served {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gatehouse-servers"));
    cmd.args([name, "--http", "127.0.0.1:0"]).args(extra);
    started(name, with_clean_env(cmd, env))
}

/// As [`serve`], under an open-file limit (`ulimit -n`).
pub fn serve_with_open_files(
    open_files: u32,
    name: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Served {
    let mut args = vec![name, "--http", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    started(name, serve_command_with_open_files(open_files, &args, env))
}

/// Spawn `command` and wait (bounded) for the address it prints.
fn started(name: &str, mut command: Command) -> Served {
    let mut child = command.spawn().expect("the gatehouse binary runs");
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let sink = stderr.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("listening on ") {
                let _ = tx.send(url.trim().to_owned());
            }
            sink.lock().unwrap().push(line);
        }
    });
    let url = match rx.recv_timeout(START_TIMEOUT) {
        Ok(url) => url,
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`gatehouse serve {name}` printed no address; stderr:\n{}",
                stderr.lock().unwrap().join("\n")
            );
        }
    };
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    Served { child, url, stderr }
}

impl Served {
    pub fn stderr(&self) -> Vec<String> {
        self.stderr.lock().unwrap().clone()
    }

    /// The server's JSON log records.
    pub fn records(&self) -> Vec<Value> {
        self.stderr()
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// How many `tools/call` requests for `tool` this instance has logged.
    pub fn calls_of(&self, tool: &str) -> usize {
        self.records()
            .iter()
            .filter(|r| {
                r["operation"] == "mcp.request" && r["method"] == "tools/call" && r["name"] == tool
            })
            .count()
    }

    /// Wait (bounded) until this instance has logged `n` calls of `tool`.
    pub async fn wait_calls(&self, tool: &str, n: usize) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if self.calls_of(tool) >= n {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    pub fn port(&self) -> u16 {
        self.url
            .trim_start_matches("http://127.0.0.1:")
            .trim_end_matches("/mcp")
            .parse()
            .unwrap()
    }

    pub fn sigterm(&self) {
        let ok = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -TERM failed");
    }

    /// The server process's resident set (VmRSS in /proc/PID/status), in KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("the server process is running");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc/PID/status")
    }

    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Wait (bounded) for the process to exit; its exit code.
    pub fn wait_exit(&mut self, within: Duration) -> Option<i32> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status.code().unwrap_or(-1));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

// ---------------------------------------------------------------------------------------
// Raw Streamable HTTP requests, as a 2026-07-28 client sends them.
// ---------------------------------------------------------------------------------------

/// What one POST got back.
pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    /// The body as text.
    pub text: String,
    /// Every JSON-RPC message in the body (plain JSON, or the `data:` lines of SSE).
    pub messages: Vec<Value>,
}

impl Answer {
    /// The response (or error) to request `id`.
    pub fn reply(&self, id: i64) -> &Value {
        self.messages
            .iter()
            .find(|m| m["id"] == id && (m.get("result").is_some() || m.get("error").is_some()))
            .unwrap_or_else(|| {
                panic!(
                    "no reply to request {id}: HTTP {}\n{}",
                    self.status, self.text
                )
            })
    }

    pub fn result(&self, id: i64) -> &Value {
        let reply = self.reply(id);
        assert!(reply.get("error").is_none(), "an error: {reply}");
        &reply["result"]
    }

    pub fn error_code(&self, id: i64) -> i64 {
        self.reply(id)["error"]["code"].as_i64().unwrap_or_else(|| {
            panic!("expected an error, got {}", self.reply(id));
        })
    }
}

pub fn parse_messages(text: &str) -> Vec<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return vec![v];
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

/// A 2026-07-28 request body: `params` plus the per-request `_meta`.
pub fn request(id: i64, method: &str, params: Value) -> Value {
    let mut params = params;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "http-servers-test", "version": "0.1.0"},
    });
    match params.get_mut("_meta").and_then(Value::as_object_mut) {
        Some(m) => m.extend(meta.as_object().unwrap().clone()),
        None => params["_meta"] = meta,
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// As [`request`], from a client that declares the tasks extension.
pub fn tasks_request(id: i64, method: &str, params: Value) -> Value {
    let mut body = request(id, method, params);
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
    body
}

/// The headers the revision requires for `body`: version, method, and the name when the
/// method has one.
pub fn standard_headers(body: &Value) -> Vec<(String, String)> {
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    let mut headers = vec![
        ("MCP-Protocol-Version".to_owned(), PROTOCOL.to_owned()),
        ("Mcp-Method".to_owned(), method.clone()),
    ];
    let name = match method.as_str() {
        "tools/call" | "prompts/get" => body["params"]["name"].as_str(),
        "resources/read" => body["params"]["uri"].as_str(),
        "tasks/get" | "tasks/update" | "tasks/cancel" => body["params"]["taskId"].as_str(),
        _ => None,
    };
    if let Some(name) = name {
        headers.push(("Mcp-Name".to_owned(), name.to_owned()));
    }
    headers
}

/// POST exactly these headers and this body.
pub async fn post_raw(
    url: &str,
    token: Option<&str>,
    headers: &[(String, String)],
    body: String,
) -> Answer {
    let mut req = reqwest::Client::new()
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .timeout(Duration::from_secs(60));
    if let Some(token) = token {
        req = req.header("Authorization", format!("Bearer {token}"));
    }
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let response = req.body(body).send().await.expect("the server answers");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap_or_default();
    let messages = parse_messages(&text);
    Answer {
        status,
        headers,
        text,
        messages,
    }
}

/// POST a request with the standard headers.
pub async fn post(url: &str, token: Option<&str>, body: &Value) -> Answer {
    post_raw(url, token, &standard_headers(body), body.to_string()).await
}

pub async fn call_tool(url: &str, token: &str, id: i64, tool: &str, arguments: Value) -> Answer {
    call(
        url,
        token,
        id,
        json!({"name": tool, "arguments": arguments}),
    )
    .await
}

/// A `tools/call` with these params (name, arguments, and anything else).
pub async fn call(url: &str, token: &str, id: i64, params: Value) -> Answer {
    post(url, Some(token), &request(id, "tools/call", params)).await
}

/// Start the testbed's `sleep` for `seconds` as Sam, reporting progress, and return its
/// answer stream once the first progress event has come: the call is running.
pub async fn sleeping(url: &str, id: i64, seconds: u64) -> reqwest::Response {
    let body = request(
        id,
        "tools/call",
        json!({"name": "sleep", "arguments": {"seconds": seconds},
               "_meta": {"progressToken": format!("p{id}")}}),
    );
    let mut req = reqwest::Client::new()
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("Authorization", format!("Bearer {SAM}"))
        .timeout(Duration::from_secs(60));
    for (k, v) in standard_headers(&body) {
        req = req.header(k, v);
    }
    let mut response = req.body(body.to_string()).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let mut text = String::new();
    while !text.contains("notifications/progress") {
        let chunk = response.chunk().await.unwrap().expect("the stream goes on");
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    response
}

/// The rest of a `sleep` call's stream, as JSON-RPC messages.
pub async fn rest_of(mut response: reqwest::Response) -> Vec<Value> {
    let mut text = String::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    parse_messages(&text)
}
