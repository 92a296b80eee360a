//! The host's secrets, out of its servers' reach (issue 27, H3): a stdio server running as
//! the same ordinary user as the host reads none of the host's `/proc` files (`environ`,
//! `maps`, `mem`) and cannot `ptrace` it, since the host is not dumpable; and the model's
//! key leaves the host's environment at start, kept in memory for the model client, unless
//! a servers file passes it on by name.
//!
//! The server is `tests/peers/proc_probe_server.py`, which writes what each attempt gave
//! before it answers anything.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use serde_json::{Value, json};

use crate::common::{Ran, exe, in_fresh_world, repo_root, run, servers_file, stdio_server};
use crate::openai_endpoint::Fake;

/// The ordinary user the host runs as: `nobody`.
const ORDINARY_USER: u32 = 65534;

/// A servers file in `dir` with the probing server, its entry's `extra` fields added; the
/// path of the file and of the report the server writes.
fn probed(dir: &Path, extra: Value) -> (String, PathBuf) {
    let script = dir.join("proc_probe_server.py");
    std::fs::copy(
        repo_root().join("tests/peers/proc_probe_server.py"),
        &script,
    )
    .unwrap();
    let report = dir.join("report.json");
    let mut entry = stdio_server(
        "python3",
        &[script.to_str().unwrap(), report.to_str().unwrap()],
    );
    entry
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let config = servers_file(dir, json!({ "probe": entry }), json!({}));
    (config, report)
}

/// The probe's report, and each attempt's outcome by name.
fn report(path: &Path, ran: &Ran) -> (Value, Vec<(String, String)>) {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("the probe wrote no report ({e}): {}", ran.stderr));
    let report: Value = serde_json::from_str(&text).unwrap();
    let outcomes = report["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let what = a["what"].as_str().unwrap().to_owned();
            (what, a["outcome"].as_str().unwrap().to_owned())
        })
        .collect();
    (report, outcomes)
}

/// The text an attempt read, if it read anything.
fn read_text<'a>(report: &'a Value, what: &str) -> Option<&'a str> {
    report["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["what"] == what)
        .and_then(|a| a["text"].as_str())
}

/// Give `dir` and everything in it to the ordinary user.
fn give_to_ordinary_user(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        std::os::unix::fs::chown(&path, Some(ORDINARY_USER), Some(ORDINARY_USER)).unwrap();
    }
    std::os::unix::fs::chown(dir, Some(ORDINARY_USER), Some(ORDINARY_USER)).unwrap();
}

#[test]
fn a_server_of_the_same_ordinary_user_reads_nothing_of_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (config, report_path) = probed(home, json!({}));
    // A copy of the binary the ordinary user can reach wherever the clone is (a clone in
    // root's 0700 home is not theirs to run).
    let host_exe = home.join("gatehouse");
    std::fs::copy(exe(), &host_exe).unwrap();
    give_to_ordinary_user(home);
    let secret = format!("sk-test-h3-{}", std::process::id());
    let at = |p: &str| home.join(p).to_str().unwrap().to_owned();
    let (state, tasks) = (at("state"), at("tasks.db"));
    // The host run as an ordinary user, as a person runs it: `setpriv` execs it, so the
    // host's pid is the child's. This test needs root to drop to that user (CI runs as
    // root): if it cannot, it fails, it never passes without having run.
    let mut cmd = Command::new("setpriv");
    cmd.args([
        &format!("--reuid={ORDINARY_USER}"),
        &format!("--regid={ORDINARY_USER}"),
        "--clear-groups",
        "--",
    ])
    .arg(&host_exe)
    .args(["tools", "--config", &config, "--json"])
    .current_dir(home)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let env = [
        ("HOME", home.to_str().unwrap()),
        ("XDG_STATE_HOME", &state),
        ("XDG_CONFIG_HOME", home.to_str().unwrap()),
        ("GATEHOUSE_TASKS_FILE", &tasks),
        ("OPENAI_API_KEY", &secret),
    ];
    let child = in_fresh_world(cmd, &env)
        .spawn()
        .expect("setpriv (util-linux) runs: this test needs it to drop to an ordinary user");
    let host = child.id();
    let ran = Ran::from(child.wait_with_output().unwrap());
    assert_eq!(
        ran.status, 0,
        "the host did not run as uid {ORDINARY_USER} (setpriv needs root): {}",
        ran.stderr
    );
    let (report, outcomes) = report(&report_path, &ran);
    assert_eq!(report["uid"], ORDINARY_USER, "{report}");
    assert_eq!(report["host"], host, "the server probed its host: {report}");
    let refused: Vec<(String, String)> = ["environ", "maps", "mem", "ptrace"]
        .iter()
        .map(|w| (w.to_string(), "refused".to_string()))
        .collect();
    assert_eq!(outcomes, refused, "{report}");
    let text = std::fs::read_to_string(&report_path).unwrap();
    assert!(
        !text.contains(&secret),
        "the host's secret reached the server: {text}"
    );
}

/// A chat-completions answer with no tool call.
fn answer(text: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    })
}

/// `gatehouse ask` with an OpenAI-compatible model and the probing server (with `extra` in
/// its entry), the key and a marker in the host's environment; the report.
fn ask_with_key(extra: Value, key: &str) -> (Value, Fake) {
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "the probe reads the host's environ as root: run this test as root, as CI does"
    );
    let dir = tempfile::tempdir().unwrap();
    let (config, report_path) = probed(dir.path(), extra);
    let fake = Fake::start(vec![answer("Hello.")]);
    let ran = run(
        &[
            "ask", "hi", "--config", &config, "--model", "openai:m", "--json",
        ],
        &[
            ("OPENAI_BASE_URL", &fake.base),
            ("OPENAI_API_KEY", key),
            ("GATEHOUSE_PROBE_MARK", "still-here"),
        ],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert_eq!(ran.answer(), "Hello.");
    (report(&report_path, &ran).0, fake)
}

#[test]
fn the_models_key_leaves_the_hosts_environment_and_still_reaches_the_endpoint() {
    let key = format!("sk-test-dropped-{}", std::process::id());
    let (report, fake) = ask_with_key(json!({}), &key);
    // Root reads what the environment block holds now: the other variables, not the key.
    let environ = read_text(&report, "environ").expect("root reads the host's environ");
    assert!(
        environ.contains("GATEHOUSE_PROBE_MARK=still-here"),
        "{environ}"
    );
    assert!(
        !environ.contains(&key),
        "the key is still in the host's environment"
    );
    assert!(report["own_environment"].get("OPENAI_API_KEY").is_none());
    let requests = fake.chat_requests();
    assert!(!requests.is_empty());
    for r in requests {
        assert_eq!(r.authorization, Some(format!("Bearer {key}")));
    }
}

#[test]
fn a_key_a_servers_file_passes_on_stays_for_that_server() {
    let key = format!("sk-test-passed-{}", std::process::id());
    let (report, fake) = ask_with_key(json!({"passEnv": ["OPENAI_API_KEY"]}), &key);
    assert_eq!(report["own_environment"]["OPENAI_API_KEY"], key.as_str());
    assert!(!fake.chat_requests().is_empty());
}
