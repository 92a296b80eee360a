//! The ledger through the real binary: every decision a line (run by rule, asked and
//! answered, denied by rule, refused by a check), `ledger verify` finding an edit and a cut,
//! `ledger show --since`, real processes appending at once losing nothing, and a ledger
//! that cannot be written stopping the calls that need it.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::expect;
use crate::common::{ask_args, builtin_server, gatehouse_command, playback, run, servers_file};

fn config(dir: &Path, ledger: Value) -> String {
    servers_file(
        dir,
        json!({"testbed": builtin_server("testbed", json!({}))}),
        json!({"ledger": ledger, "rules": [
            {"tool": "testbed__echo", "decision": "deny", "reason": "no shouting", "when": {"pointer": "/text", "regex": "^[A-Z]+$"}},
            {"tool": "testbed__echo", "decision": "allow"}
        ]}),
    )
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn sha256(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn every_decision_is_a_line_and_verify_finds_an_edit_and_a_cut() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ledger.jsonl");
    let config = config(dir.path(), json!({"path": file}));
    let model = playback(
        dir.path(),
        json!([{"tool_calls": [
        {"name": "testbed__echo", "arguments": {"text": "hello"}},
        {"name": "testbed__echo", "arguments": {"text": "LOUD"}},
        {"name": "testbed__nope", "arguments": {}},
        {"name": "testbed__sleep", "arguments": {"seconds": 0}}
    ]}, {"answer": "ok"}]),
    );
    let ran = run(&ask_args(&config, &model, &["--no"]), &[]);
    let got = lines(&file);
    let said = expect::pairs(&got, "decision", "rule");
    assert_eq!(
        said,
        [
            ("run".into(), "rules[1]".into()),
            ("denied".into(), "rules[0]".into()),
            ("refused".into(), "unknown_tool".into()),
            ("asked".into(), "default".into())
        ]
    );
    assert_eq!(got[3]["answer"], "no");
    assert_eq!(got[3]["by"], "option");
    assert_eq!(got[0]["arguments_sha256"], sha256(r#"{"text":"hello"}"#));
    assert!(
        got[0].get("arguments").is_none(),
        "arguments only when the settings keep them"
    );
    assert_eq!(got[0]["fingerprint"].as_str().unwrap().len(), 64);
    assert_eq!(got[2]["fingerprint"], Value::Null);
    let event = &ran.tool_events()[0];
    assert_eq!(
        (&got[0]["session"], &got[0]["trace_id"], &got[0]["step"]),
        (&event["session_id"], &event["trace_id"], &event["step"])
    );
    assert_eq!(got[1]["prev"], got[0]["hash"]);

    let verify = || run(&["ledger", "verify", "--file", file.to_str().unwrap()], &[]);
    assert_eq!(verify().status, 0, "{}", verify().stderr);
    assert!(
        verify().stdout.contains("4 lines, the chain holds"),
        "{}",
        verify().stdout
    );
    let show = |since: &str| {
        run(
            &[
                "ledger", "show", "--json", "--since", since, "--config", &config,
            ],
            &[],
        )
    };
    assert_eq!(show("1h").stdout.lines().count(), 4);
    assert_eq!(show("2999-01-01").stdout.lines().count(), 0);
    assert_eq!(
        run(
            &[
                "ledger",
                "show",
                "--since",
                "soon",
                "--file",
                file.to_str().unwrap()
            ],
            &[]
        )
        .status,
        2
    );

    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replacen("\"answer\":\"no\"", "\"answer\":\"yes\"", 1),
    )
    .unwrap();
    let edited = verify();
    assert_eq!(edited.status, 2);
    assert!(
        edited.stderr.contains("line 4: was edited"),
        "{}",
        edited.stderr
    );
    let kept: Vec<&str> = text.lines().take(2).collect();
    std::fs::write(&file, format!("{}\n", kept.join("\n"))).unwrap();
    let cut = verify();
    assert!(cut.stderr.contains("line 3: is missing"), "{}", cut.stderr);
    assert!(
        show("1h").stderr.contains("broken at line 3"),
        "show warns too"
    );
}

#[test]
fn arguments_are_kept_when_the_settings_ask_and_secrets_stay_out() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ledger.jsonl");
    let config = servers_file(
        dir.path(),
        json!({"testbed": builtin_server("testbed", json!({"API_TOKEN": "tok-very-secret-123"}))}),
        json!({"ledger": {"path": file, "arguments": true}, "allow": ["testbed__echo"]}),
    );
    let model = playback(
        dir.path(),
        json!([{"tool_calls": [{"name": "testbed__echo", "arguments": {"text": "key tok-very-secret-123"}}]}, {"answer": "ok"}]),
    );
    run(&ask_args(&config, &model, &[]), &[]);
    let got = lines(&file);
    assert_eq!(got[0]["arguments"], json!({"text": "key [redacted]"}));
    assert_eq!(got[0]["rule"], "allow[0]");
}

#[test]
fn processes_appending_at_once_lose_no_line_and_interleave_none() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shared.jsonl");
    let config = config(dir.path(), json!({"path": file}));
    let calls: Vec<Value> = (0..10)
        .map(|i| json!({"name": "testbed__echo", "arguments": {"text": format!("call {i}")}}))
        .collect();
    let model = playback(dir.path(), json!([{"tool_calls": calls}, {"answer": "ok"}]));
    let children: Vec<_> = (0..4)
        .map(|_| {
            gatehouse_command(
                &["ask", "x", "--config", &config, "--model", &model, "--json"],
                &[],
            )
            .spawn()
            .unwrap()
        })
        .collect();
    for child in children {
        assert!(child.wait_with_output().unwrap().status.success());
    }
    let got = lines(&file);
    assert_eq!(got.len(), 40);
    let sessions: std::collections::HashSet<&str> =
        got.iter().map(|l| l["session"].as_str().unwrap()).collect();
    assert_eq!(sessions.len(), 4);
    let verify = run(&["ledger", "verify", "--file", file.to_str().unwrap()], &[]);
    assert!(
        verify.stdout.contains("40 lines, the chain holds"),
        "{} {}",
        verify.stdout,
        verify.stderr
    );
}

#[test]
fn a_ledger_that_cannot_be_written_stops_the_calls_that_need_it() {
    let dir = tempfile::tempdir().unwrap();
    // A folder where the file should be.
    let file = dir.path().join("ledger-is-a-folder");
    std::fs::create_dir_all(&file).unwrap();
    let config = config(dir.path(), json!({"path": file}));
    let model = playback(
        dir.path(),
        json!([{"tool_calls": [{"name": "testbed__echo", "arguments": {"text": "hello"}}]}, {"answer": "ok"}]),
    );
    let ran = run(&ask_args(&config, &model, &[]), &[]);
    let texts = ran.step_texts();
    expect::assert_any(&texts, "the warning", |t| {
        t.starts_with("host: warning: the ledger")
            && t.ends_with("calls will be stopped until it can be written")
    });
    expect::assert_any(&texts, "the stop", |t| {
        t.starts_with("host: stopped: the ledger") && t.contains("a call is never sent unrecorded")
    });
    assert_eq!(
        ran.tool_events()[0]["outcome"],
        "refused",
        "nothing was sent"
    );
}

/// A ledger of `n` lines written by the library, as the host writes it.
fn ledger_of(dir: &Path, n: u64) -> gatehouse::ledger::Ledger {
    let ledger = gatehouse::ledger::Ledger::new(dir.join("ledger.jsonl"));
    for step in 1..=n {
        ledger.append(&forged_entry(step)).unwrap();
    }
    ledger
}

fn forged_entry(step: u64) -> gatehouse::ledger::Entry {
    gatehouse::ledger::Entry {
        session: "s1".into(),
        step,
        tool: "testbed__echo".into(),
        decision: gatehouse::ledger::Decision::Run,
        ..Default::default()
    }
}

/// The red team's probes: five lines appended with a correct chain, the head left alone;
/// three lines cut and the head file deleted. Each exits 0 on the old verify.
#[test]
fn verify_reports_lines_forged_past_the_head_and_a_deleted_head() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger_of(dir.path(), 6);
    let file = ledger.path().to_str().unwrap().to_owned();
    let verify = || run(&["ledger", "verify", "--file", &file], &[]);
    assert_eq!(verify().status, 0, "{}", verify().stderr);

    let text = std::fs::read_to_string(ledger.path()).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let mut prev = last["hash"].as_str().unwrap().to_owned();
    let mut forged = text.clone();
    for seq in 7..=11 {
        let (line, hash) = gatehouse::ledger::line_after(seq, &prev, &forged_entry(seq));
        forged.push_str(&line);
        forged.push('\n');
        prev = hash;
    }
    std::fs::write(ledger.path(), &forged).unwrap();
    let ran = verify();
    assert_eq!(ran.status, 2, "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stderr.contains("line 8: is past the head"),
        "{}",
        ran.stderr
    );

    let kept: Vec<&str> = text.lines().take(3).collect();
    std::fs::write(ledger.path(), format!("{}\n", kept.join("\n"))).unwrap();
    std::fs::remove_file(ledger.head_path()).unwrap();
    let ran = verify();
    assert_eq!(ran.status, 2, "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stderr.contains("is missing") && ran.stderr.contains("cannot be told"),
        "{}",
        ran.stderr
    );
}
