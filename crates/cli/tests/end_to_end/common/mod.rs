//! Helpers for the end-to-end tests: run the real `gatehouse` binary, which starts real
//! server processes, and read what it printed. Child processes (runs with a time limit,
//! servers whose address is read and which are stopped when dropped) are in [`process`],
//! the binary as an HTTP server in [`serve`], the rmcp test client in [`client`].
#![allow(dead_code)]

pub mod anthropic;
pub mod browser;
pub mod client;
pub mod expect;
pub mod http_server;
pub mod nginx;
pub mod ports;
pub mod postgres;
pub mod process;
pub mod serve;

use std::{
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    time::Duration,
};

use serde_json::{Value, json};

use process::Spawn;

/// The repository's root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

/// The binary under test.
pub fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_gatehouse"))
}

/// What one run printed.
pub struct Ran {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Ran {
    /// A finished process's exit code (-1 for a signal) and its output as text.
    fn from(out: Output) -> Ran {
        Ran {
            status: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl Ran {
    /// The `--json` object on stdout.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON object ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// Every step as "who: text".
    pub fn step_texts(&self) -> Vec<String> {
        self.json()["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                format!(
                    "{}: {}",
                    s["who"].as_str().unwrap(),
                    s["text"].as_str().unwrap()
                )
            })
            .collect()
    }

    /// Every step but the discovery lines ("host: discovered …"), which depend on how
    /// many servers are configured.
    pub fn steps_after_discovery(&self) -> Vec<String> {
        self.step_texts()
            .into_iter()
            .filter(|s| !s.starts_with("host: discovered"))
            .collect()
    }

    /// The host's `host.tool_call` records from stderr.
    pub fn tool_events(&self) -> Vec<Value> {
        self.stderr
            .lines()
            .filter(|l| l.starts_with("{\"operation\":\"host.tool_call\""))
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The steps' data, in order.
    pub fn step_data(&self) -> Vec<Value> {
        self.json()["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["data"].clone())
            .collect()
    }

    /// Every JSON line a server wrote on its stderr (as the host marks it).
    pub fn server_records(&self, server: &str) -> Vec<Value> {
        let prefix = format!("[{server} stderr] ");
        self.stderr
            .lines()
            .filter_map(|l| l.strip_prefix(&prefix))
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// A server's log lines about tools that ran (and the testbed's own events): every
    /// record but the per-request `mcp.request` ones.
    pub fn server_logs(&self, server: &str) -> Vec<Value> {
        self.server_records(server)
            .into_iter()
            .filter(|r| r["operation"] != "mcp.request")
            .collect()
    }

    /// A server's `mcp.request` records.
    pub fn mcp_requests(&self, server: &str) -> Vec<Value> {
        self.server_records(server)
            .into_iter()
            .filter(|r| r["operation"] == "mcp.request")
            .collect()
    }

    pub fn answer(&self) -> String {
        self.json()["answer"].as_str().unwrap().to_owned()
    }

    /// The steps of an `ask --json` run, whole.
    pub fn steps(&self) -> Vec<Value> {
        self.json()["steps"].as_array().unwrap().clone()
    }

    /// The outcome of every tool call, from the host's `host.tool_call` records.
    pub fn outcomes(&self) -> Vec<String> {
        self.tool_events()
            .iter()
            .map(|e| e["outcome"].as_str().unwrap().to_owned())
            .collect()
    }

    /// The steps that say a binary block was saved for the person (`… saved to …`).
    pub fn saved(&self) -> Vec<Value> {
        self.steps()
            .into_iter()
            .filter(|s| s["text"].as_str().unwrap().contains(" saved to "))
            .collect()
    }

    /// The kind of each binary block saved, in order (`image`, `audio`, `resource`).
    pub fn saved_kinds(&self) -> Vec<String> {
        self.saved()
            .iter()
            .map(|s| s["data"]["kind"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Every one of `expected` is among the steps ("who: text").
    pub fn assert_steps(&self, expected: &[&str]) {
        let texts = self.step_texts();
        for step in expected {
            assert!(texts.iter().any(|t| t == step), "{step}: {texts:#?}");
        }
    }

    /// The steps ("who: text") that start with `prefix`, in order.
    pub fn steps_starting(&self, prefix: &str) -> Vec<String> {
        let mut steps = self.step_texts();
        steps.retain(|s| s.starts_with(prefix));
        steps
    }

    /// A step ("who: text") starts with `prefix`.
    pub fn assert_step_starting(&self, prefix: &str) {
        let texts = self.step_texts();
        assert!(
            texts.iter().any(|t| t.starts_with(prefix)),
            "{prefix}: {texts:#?}"
        );
    }

    /// The answer holds `part`.
    pub fn assert_answer(&self, part: &str) {
        let answer = self.answer();
        assert!(answer.contains(part), "{part}: {answer}");
    }

    /// The answer starts with `prefix`.
    pub fn assert_answer_starting(&self, prefix: &str) {
        let answer = self.answer();
        assert!(answer.starts_with(prefix), "{prefix}: {answer}");
    }

    /// Stderr holds `part`.
    pub fn assert_stderr(&self, part: &str) {
        assert!(self.stderr.contains(part), "{part}: {}", self.stderr);
    }

    /// `server` logged nothing about tools (`why` says why it should not have).
    pub fn assert_quiet(&self, server: &str, why: &str) {
        assert!(
            self.server_logs(server).is_empty(),
            "{why}: {}",
            self.stderr
        );
    }

    /// Whether `server` logged the event `event` (`cancelled`, …).
    pub fn server_saw(&self, server: &str, event: &str) -> bool {
        self.server_logs(server).iter().any(|l| l["event"] == event)
    }

    /// The rows of a `tools --json` run.
    pub fn rows(&self) -> Vec<Value> {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not a JSON list of tools ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// The tool names of a `tools --json` run.
    pub fn row_names(&self) -> Vec<String> {
        self.rows()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }
}

/// A fresh folder for one run's ticket store, so tests never share or touch a real one.
/// All of a test process's folders are under one root, `gatehouse-test-PID`; the first
/// call removes the roots of test processes that are gone, so runs do not pile up in the
/// temporary folder (a whole run leaves about 100 MB there).
pub fn scratch_dir() -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let root = ROOT.get_or_init(|| {
        let tmp = std::env::temp_dir();
        for entry in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let pid = name
                .to_str()
                .and_then(|n| n.strip_prefix("gatehouse-test-"));
            if let Some(pid) = pid.filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
                && !Path::new("/proc").join(pid).exists()
            {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        tmp.join(format!("gatehouse-test-{}", std::process::id()))
    });
    let dir = root.join(N.fetch_add(1, Ordering::SeqCst).to_string());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The text blocks of a tool result (as JSON), one per line.
pub fn texts(result: &Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `gatehouse ARGS` with extra environment, its output piped, in a fresh world (see
/// [`in_fresh_world`]).
pub fn gatehouse_command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(exe());
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    in_fresh_world(cmd, env)
}

/// `cmd` in a fresh world, then with `env`: its own ticket store, task records and servers'
/// task store, no servers file of the machine's user found by accident, and none of the
/// variables that change a host's time limits or task waits, a server's caller or its
/// confirmations.
pub fn in_fresh_world(mut cmd: Command, env: &[(&str, &str)]) -> Command {
    for name in [
        "HOST_TOOL_TIMEOUT",
        "HOST_TOOL_MAX_TIMEOUT",
        "HOST_TASK_WAIT",
        "GATEHOUSE_TASK_STALE_MS",
        "GATEHOUSE_TICKETS_KEY",
        "GATEHOUSE_TICKETS_CONFIRM_TTL_MS",
        "GATEHOUSE_CONFIG",
        "MCP_USER",
        "MCP_TENANT",
    ] {
        cmd.env_remove(name);
    }
    // No test sends spans to a collector of the machine's user; `gateway/telemetry.rs`
    // names its own.
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("OTEL_") {
            cmd.env_remove(name);
        }
    }
    cmd.env("XDG_CONFIG_HOME", scratch_dir())
        .env("XDG_STATE_HOME", scratch_dir())
        .env("GATEHOUSE_TICKETS_DB", scratch_dir().join("tickets.db"))
        .env("GATEHOUSE_TASKS_FILE", scratch_dir().join("tasks.db"))
        .env(
            "GATEHOUSE_SERVER_TASKS_DB",
            scratch_dir().join("server-tasks.db"),
        );
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Run `gatehouse ARGS` with extra environment, no stdin. The tickets server gets a store
/// of its own unless the environment names one.
pub fn run(args: &[&str], env: &[(&str, &str)]) -> Ran {
    run_with_stdin(args, env, None)
}

/// As [`run`], with text on stdin.
pub fn run_with_stdin(args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Ran {
    use std::io::Write;
    let mut cmd = gatehouse_command(args, env);
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut child = cmd.spawn().expect("the gatehouse binary runs");
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    Ran::from(child.wait_with_output().expect("the gatehouse binary runs"))
}

/// The seed's question: who owns a host, and a ticket for it.
pub const SEED_QUESTION: &str =
    "who owns jump-prod-02? Open a ticket for it: brute force then a login from 203.0.113.77";

/// The seed run: [`SEED_QUESTION`] with `--yes --answer ANSWER` (the ticket's priority,
/// `priority=P1`) and these options.
pub fn seed_run(answer: &str, extra: &[&str], env: &[(&str, &str)]) -> Ran {
    let mut args = vec!["--yes", "--answer", answer];
    args.extend_from_slice(extra);
    ask(SEED_QUESTION, &args, env)
}

/// `gatehouse ask QUESTION --json ARGS…` with extra environment.
pub fn ask(question: &str, extra: &[&str], env: &[(&str, &str)]) -> Ran {
    let mut args = vec!["ask", question, "--json"];
    args.extend_from_slice(extra);
    run(&args, env)
}

/// The words of `gatehouse ask x --config FILE --model MODEL --json ARGS…`.
pub fn ask_args<'a>(config: &'a str, model: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["ask", "x", "--config", config, "--model", model, "--json"];
    args.extend_from_slice(extra);
    args
}

/// One test's folder, with a servers file in it.
pub struct Bed {
    pub dir: tempfile::TempDir,
    /// The servers file's path.
    pub config: String,
}

impl Bed {
    /// A servers file with these servers and host settings ([`servers_file`]).
    pub fn new(servers: Value, settings: Value) -> Bed {
        let dir = tempfile::tempdir().unwrap();
        let config = servers_file(dir.path(), servers, settings);
        Bed { dir, config }
    }

    /// The binary's testbed server alone, with `env` for it, and these host settings.
    pub fn testbed(env: Value, settings: Value) -> Bed {
        Bed::new(json!({"testbed": builtin_server("testbed", env)}), settings)
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A playback model of these decisions, in the folder.
    pub fn model(&self, decisions: Value) -> String {
        playback(self.path(), decisions)
    }

    /// `gatehouse ask x --config FILE --model playback:… --json ARGS…`, the model's
    /// `decisions` played back.
    pub fn play(&self, decisions: Value, extra: &[&str]) -> Ran {
        self.play_with(decisions, extra, &[])
    }

    /// As [`Bed::play`], with extra environment.
    pub fn play_with(&self, decisions: Value, extra: &[&str], env: &[(&str, &str)]) -> Ran {
        let model = self.model(decisions);
        run(&ask_args(&self.config, &model, extra), env)
    }

    /// `gatehouse ARGS… --config FILE`.
    pub fn run(&self, args: &[&str]) -> Ran {
        let mut args = args.to_vec();
        args.extend(["--config", self.config.as_str()]);
        run(&args, &[])
    }
}

/// The time limits of every tool call (`HOST_TOOL_TIMEOUT`, `HOST_TOOL_MAX_TIMEOUT`, in
/// seconds), as the host's environment.
pub fn time_limits(timeout: &'static str, max: &'static str) -> [(&'static str, &'static str); 2] {
    [
        ("HOST_TOOL_TIMEOUT", timeout),
        ("HOST_TOOL_MAX_TIMEOUT", max),
    ]
}

/// Run `gatehouse ARGS` as [`run`] does, within [`process::LIMIT`] (a run that would hang
/// fails instead, and the process is killed).
pub fn run_bounded(args: &[&str], env: &[(&str, &str)]) -> Ran {
    run_within(args, env, process::LIMIT)
}

/// As [`run_bounded`], killed after `limit`.
pub fn run_within(args: &[&str], env: &[(&str, &str)], limit: std::time::Duration) -> Ran {
    Spawn::new(
        gatehouse_command(args, env),
        format!("gatehouse {}", args.join(" ")),
    )
    .run()
    .wait(limit)
}

/// As [`run`], in the folder `dir`: a person at work in their project, with one state
/// folder of theirs across runs (beside `dir`, so what they trusted and approved there
/// holds) unless `env` names another.
pub fn run_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Ran {
    let state = project_state(dir);
    let mut all = vec![("XDG_STATE_HOME", state.to_str().unwrap())];
    all.extend_from_slice(env);
    let out = gatehouse_command(args, &all)
        .current_dir(dir)
        .output()
        .expect("the gatehouse binary runs");
    Ran::from(out)
}

/// The state folder of the person at work in `dir` ([`run_in`]): beside it.
pub fn project_state(dir: &Path) -> PathBuf {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
    dir.with_file_name(format!("{}.state", name.unwrap_or_default()))
}

/// A servers entry that starts one of the binary's own servers, passing it the test's
/// ticket store and task store (a server gets only the environment its entry names).
pub fn builtin_server(name: &str, env: Value) -> Value {
    let mut e = json!({"MCP_USER": "${GATEHOUSE_USER}", "MCP_TENANT": "${GATEHOUSE_TENANT}"});
    if let (Some(m), Value::Object(more)) = (e.as_object_mut(), env) {
        m.extend(more);
    }
    json!({"command": exe().to_string_lossy(), "args": ["serve", name], "env": e,
           "passEnv": ["GATEHOUSE_TICKETS_*", "GATEHOUSE_SERVER_TASKS_DB", "GATEHOUSE_TASK_STALE_MS"]})
}

/// A servers entry that starts a stdio server.
pub fn stdio_server(command: &str, args: &[&str]) -> Value {
    json!({"command": command, "args": args})
}

/// A servers entry for a server on Streamable HTTP.
pub fn http_server(url: &str, headers: Value) -> Value {
    json!({"type": "http", "url": url, "headers": headers})
}

/// `servers.json` in `dir`, with these servers and host settings (the `gatehouse` key);
/// its path.
pub fn servers_file(dir: &Path, servers: Value, settings: Value) -> String {
    write(
        dir,
        "servers.json",
        &json!({"mcpServers": servers, "gatehouse": settings}),
    )
}

/// Write a file in `dir` and return its path as a string.
pub fn write(dir: &Path, name: &str, value: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(value).unwrap()).unwrap();
    path.to_string_lossy().into_owned()
}

/// A playback model file from a list of decisions.
pub fn playback(dir: &Path, decisions: Value) -> String {
    format!(
        "playback:{}",
        write(dir, "playback.json", &json!({"decisions": decisions}))
    )
}

/// A playback model of these decisions, in a scratch folder of its own.
pub fn play_model(decisions: Value) -> String {
    playback(&scratch_dir(), decisions)
}

/// What a watched run printed, and the host process's own peak memory.
pub struct Watched {
    pub ran: Ran,
    /// The host's peak resident set (VmHWM), in KiB, read from /proc while it ran.
    pub peak_kib: u64,
    pub elapsed: std::time::Duration,
}

/// The peak resident set of a live process, in KiB (Linux's VmHWM).
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Run `gatehouse ARGS` as [`run`] does, watching its memory; it must exit by itself
/// within `limit` (a test that would hang fails instead, and the process is killed).
pub fn run_watched(args: &[&str], env: &[(&str, &str)], limit: Duration) -> Watched {
    let started = std::time::Instant::now();
    let mut peak = 0;
    let ran = Spawn::new(gatehouse_command(args, env), format!("gatehouse {args:?}"))
        .run()
        .wait_watching(limit, |pid| {
            if let Some(kib) = peak_rss_kib(pid) {
                peak = peak.max(kib);
            }
        });
    Watched {
        ran,
        peak_kib: peak,
        elapsed: started.elapsed(),
    }
}

/// Does `text` hold a character a terminal would act on (C0 but newline and tab, DEL, C1,
/// bidi controls)?
pub fn has_terminal_controls(text: &str) -> bool {
    gatehouse::text::visible(text).len() != text.len()
}

/// The (id, host) of every ticket in a `list_tickets` result, checked against its `total`.
pub fn ids_and_hosts(listed: &Value) -> Vec<(String, String)> {
    let tickets = listed["tickets"]
        .as_array()
        .unwrap_or_else(|| panic!("not a ticket list: {listed}"));
    assert_eq!(
        listed["total"].as_u64(),
        Some(tickets.len() as u64),
        "{listed}"
    );
    tickets
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap().to_owned(),
                t["host"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Run `gatehouse ARGS` at a real terminal (`tests/peers/pty_run.py`) in folder `dir`,
/// typing each answer when its prompt shows, with extra environment: what the screen
/// showed, byte for byte.
pub fn at_terminal_in(
    dir: &Path,
    args: &[&str],
    answers: &[(&str, &str)],
    env: &[(&str, &str)],
) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/peers/pty_run.py");
    let mut cmd = Command::new("python3");
    cmd.arg(script).arg("60");
    for (prompt, answer) in answers {
        cmd.arg(format!("{prompt}={answer}"));
    }
    cmd.arg("--").arg(exe()).args(args).current_dir(dir);
    cmd.env("GATEHOUSE_TICKETS_DB", scratch_dir().join("tickets.db"))
        .env("XDG_CONFIG_HOME", scratch_dir())
        .env_remove("GATEHOUSE_CONFIG")
        .env("NO_COLOR", "1")
        .envs(env.iter().copied());
    let out = cmd.output().expect("python3 runs the pseudo-terminal");
    let screen = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{screen}");
    screen
}
