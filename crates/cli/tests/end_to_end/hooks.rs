//! Hooks through the real binary: a `beforeCall` that denies, hangs, crashes, prints
//! garbage, or rewrites the arguments into something the schema refuses is a deny, and
//! nothing is sent; rewritten arguments that fit are shown to the person with the model's
//! own; `afterCall` replaces a result before the model reads it, and a failing one
//! withholds it; a hook gets none of the host's secrets.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::expect;
use crate::common::{ask_args, builtin_server, playback, run, servers_file};
use crate::policy_rules::calls_sent;

/// A servers file whose hooks are these shell scripts.
fn config(dir: &Path, before: Option<&str>, after: Option<&str>, allow: &[&str]) -> String {
    let hook = |script: &str| json!({"command": "sh", "args": ["-c", script], "timeoutMs": 2000});
    let mut hooks = serde_json::Map::new();
    if let Some(s) = before {
        hooks.insert("beforeCall".into(), hook(s));
    }
    if let Some(s) = after {
        hooks.insert("afterCall".into(), hook(s));
    }
    servers_file(
        dir,
        json!({"testbed": builtin_server("testbed", json!({}))}),
        json!({"allow": allow, "hooks": hooks, "ledger": {"path": dir.join("ledger.jsonl")}}),
    )
}

fn echo_once(dir: &Path) -> String {
    playback(
        dir,
        json!([{"tool_calls": [{"name": "testbed__echo", "arguments": {"text": "hello"}}]}, {"answer": "ok"}]),
    )
}

/// `gatehouse ask` with the one-echo model, these flags and this environment.
fn ask_echo(config: &str, dir: &Path, flags: &[&str], env: &[(&str, &str)]) -> crate::common::Ran {
    let model = echo_once(dir);
    run(&ask_args(config, &model, flags), env)
}

/// A `beforeCall` script that writes what `command` prints into `file`, then allows.
fn allowing_after(command: &str, file: &Path) -> String {
    format!(
        r#"{command} > {}; echo '{{"decision": "allow"}}'"#,
        file.display()
    )
}

fn denied_by_hook(dir: &Path, script: &str, says: &str) {
    let config = config(dir, Some(script), None, &["testbed__echo"]);
    let started = std::time::Instant::now();
    let ran = ask_echo(&config, dir, &["--yes"], &[]);
    let texts = ran.steps_after_discovery();
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("host: denied by the beforeCall hook") && t.contains(says)),
        "{script}: {texts:?}"
    );
    assert!(calls_sent(&ran).is_empty(), "{script}: nothing is sent");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let ledger = std::fs::read_to_string(dir.join("ledger.jsonl")).unwrap();
    let last: Value = serde_json::from_str(ledger.lines().last().unwrap()).unwrap();
    assert_eq!(
        (last["decision"].as_str(), last["rule"].as_str()),
        (Some("denied"), Some("hook"))
    );
}

#[test]
fn a_hook_that_denies_hangs_crashes_or_prints_garbage_is_a_deny() {
    let dir = tempfile::tempdir().unwrap();
    for (script, says) in [
        (
            r#"cat >/dev/null; echo '{"decision": "deny", "reason": "not today"}'"#,
            "not today",
        ),
        ("sleep 30", "gave no answer within 2 s"),
        ("echo boom >&2; exit 7", "failed (exit status: 7): boom"),
        ("echo 'yes please'", "not JSON"),
        (
            r#"echo '{"decision": "allow", "sudo": true}'"#,
            "unknown key",
        ),
    ] {
        denied_by_hook(dir.path(), script, says);
    }
}

#[test]
fn arguments_the_schema_refuses_are_a_deny() {
    let dir = tempfile::tempdir().unwrap();
    denied_by_hook(
        dir.path(),
        r#"cat >/dev/null; echo '{"decision": "allow", "arguments": {"text": 42}}'"#,
        "the tool's schema refuses: \"text\" must be of type string",
    );
}

#[test]
fn rewritten_arguments_are_sent_and_shown_to_the_person_with_the_models_own() {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"cat >/dev/null; echo '{"decision": "ask", "reason": "rewritten", "arguments": {"text": "HELLO"}}'"#;
    let config = config(dir.path(), Some(script), None, &["testbed__echo"]);
    let model = echo_once(dir.path());
    let asked = run(&ask_args(&config, &model, &["--no"]), &[]);
    let texts = asked.steps_after_discovery();
    expect::assert_has(
        &texts,
        "host: the beforeCall hook asks the person: rewritten",
    );
    assert!(texts.contains(&"host: The assistant wants to run testbed__echo with {\"text\":\"HELLO\"} (rewritten by the beforeCall hook; the assistant proposed {\"text\":\"hello\"})".to_string()), "{texts:?}");
    let ran = run(&ask_args(&config, &model, &["--yes"]), &[]);
    assert_eq!(calls_sent(&ran), ["echo"]);
    let result = ran
        .step_data()
        .into_iter()
        .find(|d| d.get("clipped").is_some())
        .unwrap();
    assert!(result.to_string().contains("\"ms\""), "{result}");
    let ledger = std::fs::read_to_string(dir.path().join("ledger.jsonl")).unwrap();
    let last: Value = serde_json::from_str(ledger.lines().last().unwrap()).unwrap();
    assert_eq!(last["rule"], "hook");
    assert_eq!(last["reason"], "arguments rewritten by the beforeCall hook");
}

#[test]
fn the_hook_is_given_the_proposed_call_and_the_policys_decision() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen.json");
    let config = config(dir.path(), Some(&allowing_after("cat", &seen)), None, &[]);
    let ran = ask_echo(&config, dir.path(), &[], &[]);
    expect::assert_has(
        &ran.step_texts(),
        "host: the beforeCall hook allows it: run it",
    );
    let given: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(given["tool"], "testbed__echo");
    assert_eq!(given["server"], "testbed");
    assert_eq!(given["arguments"], json!({"text": "hello"}));
    assert_eq!(given["annotations"]["read_only_hint"], true);
    assert_eq!(
        given["policy"],
        json!({"decision": "ask", "rule": "default"})
    );
}

#[test]
fn after_call_replaces_the_result_and_a_failing_one_withholds_it() {
    let dir = tempfile::tempdir().unwrap();
    let redact = r#"cat >/dev/null; echo '{"result": {"content": [{"type": "text", "text": "[redacted by hook]"}]}}'"#;
    let redacting = config(dir.path(), None, Some(redact), &["testbed__echo"]);
    let ran = ask_echo(&redacting, dir.path(), &[], &[]);
    let texts = ran.steps_after_discovery();
    expect::assert_has(&texts, "host: the afterCall hook replaced the result");
    assert!(ran.tool_events()[0]["result_bytes"].as_u64().unwrap() < 80);
    let failing = config(dir.path(), None, Some("exit 1"), &["testbed__echo"]);
    let ran = ask_echo(&failing, dir.path(), &[], &[]);
    let texts = ran.steps_after_discovery();
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("host: the result is withheld: the afterCall hook failed")),
        "{texts:?}"
    );
    assert_eq!(ran.tool_events()[0]["outcome"], "error");
}

#[test]
fn a_hook_gets_none_of_the_hosts_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let env_file = dir.path().join("env.txt");
    let config = config(
        dir.path(),
        Some(&allowing_after("env", &env_file)),
        None,
        &[],
    );
    ask_echo(
        &config,
        dir.path(),
        &[],
        &[
            ("OPENAI_API_KEY", "sk-host-secret-4242"),
            ("LANG", "C.UTF-8"),
        ],
    );
    let env = std::fs::read_to_string(&env_file).unwrap();
    assert!(!env.contains("sk-host-secret-4242"), "{env}");
    assert!(
        env.contains("LANG=C.UTF-8"),
        "the base environment is passed: {env}"
    );
}
