//! Helpers for the end-to-end tests: run the real `gatehouse` binary, which starts real
//! server processes, and read what it printed.
#![allow(dead_code)]

pub mod http_server;

use std::{
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
};

use serde_json::{Value, json};

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
}

/// A fresh folder for one run's ticket store, so tests never share or touch a real one.
pub fn scratch_dir() -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "gatehouse-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `gatehouse ARGS` with extra environment, its output piped, in a fresh world: its own
/// ticket store, and no servers file of the machine's user found by accident.
pub fn gatehouse_command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(exe());
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("HOST_TOOL_TIMEOUT")
        .env_remove("GATEHOUSE_TICKETS_KEY")
        .env_remove("GATEHOUSE_CONFIG")
        .env("XDG_CONFIG_HOME", scratch_dir())
        .env("XDG_STATE_HOME", scratch_dir())
        .env("GATEHOUSE_TICKETS_DB", scratch_dir().join("tickets.db"));
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
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().expect("the gatehouse binary runs");
    Ran {
        status: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// A servers entry that starts one of the binary's own servers, passing it the test's
/// ticket store (a server gets only the environment its entry names).
pub fn builtin_server(name: &str, env: Value) -> Value {
    let mut e = json!({"MCP_USER": "${GATEHOUSE_USER}", "MCP_TENANT": "${GATEHOUSE_TENANT}"});
    if let (Some(m), Value::Object(more)) = (e.as_object_mut(), env) {
        m.extend(more);
    }
    json!({"command": exe().to_string_lossy(), "args": ["serve", name], "env": e,
           "passEnv": ["GATEHOUSE_TICKETS_*"]})
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
pub fn run_watched(args: &[&str], env: &[(&str, &str)], limit: std::time::Duration) -> Watched {
    use std::io::Read;
    let started = std::time::Instant::now();
    let mut child = gatehouse_command(args, env)
        .spawn()
        .expect("the gatehouse binary runs");
    let pid = child.id();
    // Read both pipes as the host writes them, so a chatty host never blocks on a full pipe.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b);
        b
    });
    let err = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    let mut peak = 0;
    let status = loop {
        if let Some(kib) = peak_rss_kib(pid) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("gatehouse {args:?} did not exit within {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Watched {
        ran: Ran {
            status: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.join().unwrap()).into_owned(),
            stderr: String::from_utf8_lossy(&err.join().unwrap()).into_owned(),
        },
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
        .envs(env.iter().copied());
    let out = cmd.output().expect("python3 runs the pseudo-terminal");
    let screen = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{screen}");
    screen
}
