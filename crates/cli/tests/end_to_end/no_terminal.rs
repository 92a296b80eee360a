//! Answers come only from a terminal (issue 27, M4): with stdin a pipe or a file and no
//! controlling terminal (`setsid`), "Run it?" is answered no without reading a line, so
//! `echo A | setsid gatehouse ask …` neither runs the call nor writes a project approval,
//! and `gatehouse chat < file` hands none of its lines to the prompts.

use std::{
    path::Path,
    process::{Command, Stdio},
};

use serde_json::{Value, json};

use crate::common::{Ran, builtin_server, exe, in_fresh_world, playback, servers_file};

/// What the host says when nobody can answer "Run it?".
const NOBODY: &str = "Run it? no: nobody at a terminal to answer";

/// `setsid gatehouse ARGS` in `dir`, stdin from `input` (a file's path or text for a
/// pipe), with its own state folder: no controlling terminal, as a script or a CI job runs
/// it.
fn without_terminal(dir: &Path, args: &[&str], input: Input) -> Ran {
    let mut cmd = Command::new("setsid");
    cmd.arg("--wait")
        .arg(exe())
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let state = dir.join("state");
    let mut cmd = in_fresh_world(cmd, &[("XDG_STATE_HOME", state.to_str().unwrap())]);
    match input {
        Input::File(path) => {
            cmd.stdin(std::fs::File::open(path).unwrap());
        }
        Input::Pipe(_) => {
            cmd.stdin(Stdio::piped());
        }
    }
    let mut child = cmd.spawn().expect("setsid (util-linux) runs gatehouse");
    if let Input::Pipe(text) = input {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(text.as_bytes()).unwrap();
    }
    Ran::from(child.wait_with_output().unwrap())
}

/// Where stdin comes from.
enum Input<'a> {
    /// Text piped in (`echo A | …`).
    Pipe(&'a str),
    /// A file (`… < file`).
    File(&'a Path),
}

/// A project folder, a servers file whose testbed's tools are all asked about, and a model
/// that calls `testbed__echo` once, then answers each question.
fn project(answers: usize) -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("project")).unwrap();
    let config = servers_file(
        dir.path(),
        json!({"testbed": builtin_server("testbed", json!({}))}),
        json!({"allow": []}),
    );
    let mut decisions =
        vec![json!({"tool_calls": [{"name": "testbed__echo", "arguments": {"text": "one"}}]})];
    decisions.extend((0..answers).map(|i| json!({"answer": format!("answer {i}")})));
    let model = playback(dir.path(), Value::Array(decisions));
    (dir, config, model)
}

#[test]
fn a_pipe_answers_no_to_run_it_and_writes_no_project_approval() {
    let (dir, config, model) = project(1);
    let project = dir.path().join("project");
    let ask = [
        "ask", "go", "--config", &config, "--model", &model, "--json",
    ];
    for typed in ["A\n", "a\n", "y\n", "yes\n"] {
        let ran = without_terminal(&project, &ask, Input::Pipe(typed));
        assert_eq!(ran.status, 0, "{}", ran.stderr);
        assert_eq!(ran.outcomes(), ["declined"], "{typed:?}: {}", ran.stderr);
        assert!(ran.stderr.contains(NOBODY), "{}", ran.stderr);
        assert!(
            !project.join(".gatehouse/approvals.json").exists(),
            "{typed:?} wrote a project approval"
        );
    }
    let ledger =
        std::fs::read_to_string(dir.path().join("project/state/gatehouse/ledger.jsonl")).unwrap();
    for line in ledger.lines() {
        let line: Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            (
                line["decision"].as_str(),
                line["answer"].as_str(),
                line["by"].as_str()
            ),
            (Some("asked"), Some("no"), Some("nobody")),
            "{line}"
        );
    }
}

#[test]
fn a_chat_read_from_a_file_hands_none_of_its_lines_to_run_it() {
    let (dir, config, model) = project(3);
    let project = dir.path().join("project");
    let input = dir.path().join("input.txt");
    std::fs::write(&input, "go\nA\ny\n/quit\n").unwrap();
    let chat = ["chat", "--config", &config, "--model", &model];
    let ran = without_terminal(&project, &chat, Input::File(&input));
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert_eq!(ran.outcomes(), ["declined"], "{}", ran.stderr);
    assert!(ran.stderr.contains(NOBODY), "{}", ran.stderr);
    // Every line was a question of the chat's: `A` and `y` were asked, not answers.
    assert_eq!(ran.stdout.matches("you> ").count(), 4, "{}", ran.stdout);
    assert_eq!(
        ran.stdout.matches("assistant> ").count(),
        3,
        "{}",
        ran.stdout
    );
    assert!(!project.join(".gatehouse/approvals.json").exists());
}
