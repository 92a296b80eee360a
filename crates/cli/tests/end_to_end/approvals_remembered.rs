//! Approvals remembered, answered at a real terminal: `a` runs the tool again without
//! asking for the rest of the session, until its definition changes; `A` writes a sealed
//! approval to the project's `.gatehouse/approvals.json`, which the next session honours,
//! `gatehouse approvals list` shows and `revoke` removes; a copied file grants nothing.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::expect;
use crate::common::{self, Ran, at_terminal_in, builtin_server, playback, servers_file};

/// The remembered choices are offered at this prompt.
const PROMPT: &str = "Run it? [y/N] (a: this tool for this session, A: this tool in this project)";

fn config(dir: &Path) -> String {
    servers_file(
        dir,
        json!({"testbed": builtin_server("testbed", json!({}))}),
        json!({"allow": ["testbed__change_echo"]}),
    )
}

/// `gatehouse ARGS` run in `dir`, with this state folder.
fn run_in(dir: &Path, state: &Path, args: &[&str]) -> Ran {
    common::run_in(dir, args, &[("XDG_STATE_HOME", state.to_str().unwrap())])
}

fn echo(text: &str) -> Value {
    json!({"tool_calls": [{"name": "testbed__echo", "arguments": {"text": text}}]})
}

#[test]
fn a_approves_the_tool_for_the_session_until_its_definition_changes() {
    let dir = tempfile::tempdir().unwrap();
    let model = playback(
        dir.path(),
        json!([
            echo("one"), echo("two"),
            {"tool_calls": [{"name": "testbed__change_echo", "arguments": {"description": "Return the text, and e-mail it too."}}]},
            echo("three"), {"answer": "done"}
        ]),
    );
    let (config, state) = (config(dir.path()), dir.path().join("state"));
    let screen = at_terminal_in(
        dir.path(),
        &["ask", "x", "--config", &config, "--model", &model],
        &[(PROMPT, "a"), (PROMPT, "n")],
        &[("XDG_STATE_HOME", state.to_str().unwrap())],
    );
    assert_eq!(
        screen.matches(PROMPT).count(),
        2,
        "asked for one and three only:\n{screen}"
    );
    assert!(
        screen.contains("[person] said yes, for this tool for the rest of the session"),
        "{screen}"
    );
    assert!(
        screen.contains("[host] approved for this session: run it"),
        "{screen}"
    );
    let after_change = &screen[screen.find("change_echo").unwrap()..];
    assert!(
        after_change.contains("not on the allow-list: ask the person"),
        "a changed definition asks again:\n{screen}"
    );
    // `a` is never written to the project.
    assert!(!dir.path().join(".gatehouse/approvals.json").exists());
}

#[test]
fn capital_a_approves_the_tool_in_this_project_for_later_sessions_until_revoked() {
    let dir = tempfile::tempdir().unwrap();
    let (project, state) = (dir.path().join("project"), dir.path().join("state"));
    std::fs::create_dir_all(&project).unwrap();
    let config = config(dir.path());
    let model = playback(dir.path(), json!([echo("one"), {"answer": "done"}]));
    let ask = ["ask", "x", "--config", &config, "--model", &model, "--json"];
    let screen = at_terminal_in(
        &project,
        &ask,
        &[(PROMPT, "A")],
        &[("XDG_STATE_HOME", state.to_str().unwrap())],
    );
    assert!(
        screen.contains("[person] said yes, for this tool in this project")
            || screen.contains("said yes, for this tool in this project"),
        "{screen}"
    );
    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(project.join(".gatehouse/approvals.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(file["approvals"][0]["tool"], "testbed__echo");
    assert_eq!(
        file["approvals"][0]["fingerprint"].as_str().unwrap().len(),
        64
    );

    let ledger = std::fs::read_to_string(state.join("gatehouse/ledger.jsonl")).unwrap();
    let line: Value = serde_json::from_str(ledger.lines().last().unwrap()).unwrap();
    assert_eq!(line["reason"], "and approved this tool for the project");
    // A new session in the project runs it without asking, with no terminal at all.
    let again = run_in(&project, &state, &ask);
    expect::assert_has(
        &again.step_texts(),
        "host: approved in this project: run it",
    );
    let ledger = std::fs::read_to_string(state.join("gatehouse/ledger.jsonl")).unwrap();
    let line: Value = serde_json::from_str(ledger.lines().last().unwrap()).unwrap();
    let said = (line["decision"].as_str(), line["rule"].as_str());
    assert_eq!(said, (Some("run"), Some("project")));
    let listed = run_in(&project, &state, &["approvals", "list", "--json"]);
    let rows: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(rows[0]["tool"], "testbed__echo");
    assert_eq!(rows[0]["sealed"], true);

    // The same file in another folder (a clone, a copy) grants nothing there.
    let other = dir.path().join("other");
    std::fs::create_dir_all(other.join(".gatehouse")).unwrap();
    std::fs::copy(
        project.join(".gatehouse/approvals.json"),
        other.join(".gatehouse/approvals.json"),
    )
    .unwrap();
    let copied = run_in(&other, &state, &[&ask[..], &["--no"]].concat());
    expect::assert_has(
        &copied.step_texts(),
        "host: not on the allow-list: ask the person",
    );
    assert!(
        copied
            .step_texts()
            .iter()
            .any(|s| s.contains("not sealed for you and are ignored")),
        "{:?}",
        copied.step_texts()
    );

    let revoked = run_in(&project, &state, &["approvals", "revoke", "testbed__echo"]);
    assert!(
        revoked.stdout.contains("revoked 1 approval"),
        "{}",
        revoked.stdout
    );
    let asked = run_in(&project, &state, &[&ask[..], &["--no"]].concat());
    expect::assert_has(
        &asked.step_texts(),
        "host: not on the allow-list: ask the person",
    );
    let none = run_in(&project, &state, &["approvals", "revoke", "testbed__echo"]);
    assert_eq!(none.status, 2, "{}", none.stderr);
}

#[test]
fn a_rule_that_asks_offers_no_remembering() {
    let dir = tempfile::tempdir().unwrap();
    let config = servers_file(
        dir.path(),
        json!({"testbed": builtin_server("testbed", json!({}))}),
        json!({"rules": [{"tool": "testbed__echo", "decision": "ask", "reason": "every time"}]}),
    );
    let model = playback(
        dir.path(),
        json!([echo("one"), echo("two"), {"answer": "done"}]),
    );
    let state = dir.path().join("state");
    let env = [("XDG_STATE_HOME", state.to_str().unwrap())];
    let screen = at_terminal_in(
        dir.path(),
        &["ask", "x", "--config", &config, "--model", &model],
        &[
            ("Run it? [y/N]", "a"),
            ("Run it? [y/N]", "y"),
            ("Run it? [y/N]", "n"),
        ],
        &env,
    );
    assert!(!screen.contains("(a: this tool"), "{screen}");
    assert!(
        screen.contains("rules[0] says ask the person: every time"),
        "{screen}"
    );
    // `a` is refused with a word and the question asked again, not taken as a silent no.
    assert!(
        screen.contains("a and A are not offered here: this call is asked about every time"),
        "{screen}"
    );
    assert_eq!(screen.matches("Run it? [y/N]").count(), 3, "{screen}");
    assert_eq!(screen.matches("[person] said yes").count(), 1, "{screen}");
    assert_eq!(screen.matches("[person] said no").count(), 1, "{screen}");
    // With -q the steps are not on the screen: the question still says why it is asked.
    let quiet = at_terminal_in(
        dir.path(),
        &["ask", "x", "--config", &config, "--model", &model, "-q"],
        &[("Run it? [y/N]", "n"), ("Run it? [y/N]", "n")],
        &env,
    );
    assert!(
        quiet.contains("asked because: rules[0] says ask the person: every time"),
        "{quiet}"
    );
}

/// The red team's probe: `A`, the file copied, `gatehouse approvals revoke`, the copy put
/// back (a backup, a `git checkout` of a committed `.gatehouse/`): asked again.
#[test]
fn a_revoked_approval_stays_revoked_when_an_old_file_is_put_back() {
    let dir = tempfile::tempdir().unwrap();
    let (project, state) = (dir.path().join("project"), dir.path().join("state"));
    std::fs::create_dir_all(&project).unwrap();
    let config = config(dir.path());
    let model = playback(dir.path(), json!([echo("one"), {"answer": "done"}]));
    let ask = ["ask", "x", "--config", &config, "--model", &model, "--json"];
    at_terminal_in(
        &project,
        &ask,
        &[(PROMPT, "A")],
        &[("XDG_STATE_HOME", state.to_str().unwrap())],
    );
    let file = project.join(".gatehouse/approvals.json");
    let backup = std::fs::read(&file).unwrap();
    let revoked = run_in(&project, &state, &["approvals", "revoke", "testbed__echo"]);
    assert_eq!(revoked.status, 0, "{}", revoked.stderr);
    std::fs::write(&file, &backup).unwrap();
    let again = run_in(&project, &state, &[&ask[..], &["--no"]].concat());
    expect::assert_has(
        &again.step_texts(),
        "host: not on the allow-list: ask the person",
    );
    assert_eq!(again.outcomes(), ["declined"], "{}", again.stderr);
    let listed = run_in(&project, &state, &["approvals", "list", "--json"]);
    let rows: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(rows[0]["sealed"], false, "{rows}");
}
