//! `gatehouse call TOOL [ARGS-JSON]` and chat's `/call`, through the real binary: one call
//! the person makes with no model, through the same gate as a model's proposal. An allowed
//! tool runs and its result is printed; a tool that asks is refused without a terminal and
//! runs with `--yes`; a deny rule refuses it and nothing reaches the server; hooks apply;
//! the ledger names the person; the result keeps within `maxResultChars`; a mistake in the
//! command is a clear error before anything starts. `--config builtin` brings the README's
//! demo back where a servers file would be found.

use serde_json::{Value, json};

use crate::common::{
    Bed, Ran, at_terminal_in, builtin_server, expect, run, run_in, scratch_dir, servers_file,
    time_limits,
};

/// The `Run it?` prompt of a tool the policy asks about.
const PROMPT: &str = "Run it? [y/N]";

/// The support desk (which records every request it gets) and the testbed, with these
/// settings and a ledger in the folder.
fn bed(settings: Value) -> Bed {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = settings;
    settings["ledger"] = json!({"path": dir.path().join("ledger.jsonl")});
    let servers = json!({"support": builtin_server("support", json!({})),
                         "testbed": builtin_server("testbed", json!({}))});
    let config = servers_file(dir.path(), servers, settings);
    Bed { dir, config }
}

/// The ledger's lines.
fn ledger(bed: &Bed) -> Vec<Value> {
    std::fs::read_to_string(bed.path().join("ledger.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `tools/call` requests the support desk itself recorded, by tool name.
fn calls_received(ran: &Ran) -> Vec<String> {
    ran.mcp_requests("support")
        .iter()
        .filter(|r| r["method"] == "tools/call")
        .map(|r| r["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The last ledger line's decision, answer, who answered, and who proposed.
fn last_line(bed: &Bed) -> [Option<String>; 4] {
    let lines = ledger(bed);
    let last = lines.last().expect("a ledger line");
    ["decision", "answer", "by", "caller"].map(|k| last[k].as_str().map(str::to_owned))
}

fn words(items: [Option<&str>; 4]) -> [Option<String>; 4] {
    items.map(|w| w.map(str::to_owned))
}

/// The ticket the calls read.
const TICKET: &str = r#"{"ticket_id": "T-30002"}"#;

#[test]
fn an_allowed_tool_runs_its_result_is_printed_and_the_ledger_names_the_person() {
    let bed = bed(json!({"allow": ["support__get_ticket"]}));
    let ran = bed.run(&["call", "support__get_ticket", TICKET]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let printed: Value = serde_json::from_str(&ran.stdout).expect("the result, as JSON");
    assert_eq!(printed["customer_name"], "Hugo");
    expect::says(&ran.stderr, "[person] calls support__get_ticket");
    expect::says(&ran.stderr, "[host] on the allow-list: run it");
    assert_eq!(calls_received(&ran), ["get_ticket"]);
    assert_eq!(
        last_line(&bed),
        words([Some("run"), None, None, Some("person")])
    );
    let json = bed.run(&["call", "support__get_ticket", TICKET, "--json"]);
    let out = json.json();
    assert_eq!(out["outcome"], "ok");
    assert_eq!(out["result"]["result"]["ticket_id"], "T-30002");
    assert_eq!(out["clipped"], false);
    expect::assert_has(&json.step_texts(), "person: calls support__get_ticket");
}

#[test]
fn a_tool_that_asks_is_refused_without_a_terminal_and_runs_with_yes() {
    let bed = bed(json!({}));
    let args = ["call", "support__get_ticket", TICKET];
    let refused = bed.run(&args);
    assert_eq!(refused.status, 1, "{}", refused.stderr);
    assert_eq!(refused.stdout, "");
    expect::says(
        &refused.stderr,
        "gatehouse: support__get_ticket: the person declined",
    );
    assert!(calls_received(&refused).is_empty(), "{}", refused.stderr);
    assert_eq!(
        last_line(&bed),
        words([Some("asked"), Some("no"), Some("nobody"), Some("person")])
    );
    let ran = bed.run(&[&args[..], &["--yes"]].concat());
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert_eq!(calls_received(&ran), ["get_ticket"]);
    assert_eq!(
        last_line(&bed),
        words([Some("asked"), Some("yes"), Some("option"), Some("person")])
    );
}

#[test]
fn a_deny_rule_refuses_the_persons_call_and_nothing_is_sent() {
    let rule = json!({"tool": "support__get_ticket", "decision": "deny", "reason": "not the T-3 tickets",
                      "when": {"pointer": "/ticket_id", "glob": "T-3*"}});
    let bed = bed(json!({"allow": ["support__get_ticket"], "rules": [rule]}));
    let ran = bed.run(&["call", "support__get_ticket", TICKET, "--yes"]);
    assert_eq!(ran.status, 1, "{}", ran.stderr);
    expect::says(&ran.stderr, "not the T-3 tickets");
    assert!(calls_received(&ran).is_empty(), "{}", ran.stderr);
    assert_eq!(
        last_line(&bed),
        words([Some("denied"), None, None, Some("person")])
    );
}

#[test]
fn the_hooks_apply_to_the_persons_call() {
    // `beforeCall` rewrites the arguments: the ticket sent is the hook's.
    let rewrite =
        r#"cat >/dev/null; echo '{"decision": "allow", "arguments": {"ticket_id": "T-30001"}}'"#;
    let hook = json!({"command": "sh", "args": ["-c", rewrite], "timeoutMs": 2000});
    let bed = bed(json!({"allow": ["support__get_ticket"], "hooks": {"beforeCall": hook}}));
    let ran = bed.run(&["call", "support__get_ticket", TICKET]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let printed: Value = serde_json::from_str(&ran.stdout).expect("the result, as JSON");
    assert_eq!(printed["ticket_id"], "T-30001");
    assert_eq!(calls_received(&ran), ["get_ticket"]);
    let line = ledger(&bed).pop().unwrap();
    assert_eq!(line["reason"], "arguments rewritten by the beforeCall hook");
}

#[test]
fn the_result_keeps_within_max_result_chars() {
    let bed = bed(json!({"allow": ["testbed__repeat"], "maxResultChars": 400}));
    let args = [
        "call",
        "testbed__repeat",
        r#"{"text": "0123456789", "times": 1000}"#,
    ];
    let ran = bed.run(&args);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(ran.stdout.chars().count() <= 400, "{}", ran.stdout);
    assert!(ran.stdout.contains("0123456789"), "{}", ran.stdout);
    expect::says(&ran.stderr, "[host] cut: the result had");
    let out = bed.run(&[&args[..], &["--json"]].concat()).json();
    assert_eq!(out["clipped"], true);
    assert!(out["chars"].as_u64().unwrap() <= 400, "{out}");
    assert!(
        out["result"]["note"]
            .as_str()
            .unwrap()
            .contains("ask for less")
    );
}

#[test]
fn the_time_limit_applies_to_the_persons_call() {
    let bed = bed(json!({"allow": ["testbed__sleep"]}));
    let args = [
        "call",
        "testbed__sleep",
        r#"{"seconds": 30, "quiet": true}"#,
        "--config",
        &bed.config,
    ];
    let started = std::time::Instant::now();
    let ran = run(&args, &time_limits("0.3", "0.9"));
    assert!(started.elapsed().as_secs() < 20, "{}", ran.stderr);
    assert_eq!(ran.status, 1, "{}", ran.stderr);
    expect::says(
        &ran.stderr,
        "gatehouse: testbed__sleep: the call timed out after",
    );
    assert!(ran.server_saw("testbed", "cancelled"), "{}", ran.stderr);
}

#[test]
fn bad_arguments_and_unknown_tools_are_clear_errors() {
    let bed = bed(json!({"allow": ["testbed__echo"]}));
    // The shell ate the quotes: nothing starts.
    let ran = bed.run(&["call", "testbed__echo", "{text: hi}"]);
    assert_eq!(ran.status, 2, "{}", ran.stderr);
    expect::says(
        &ran.stderr,
        "gatehouse: ARGS-JSON is not valid JSON: key must be a string at line 1, column 2\n    {text: hi}\n     ^",
    );
    assert!(!ran.stderr.contains("discovered"), "{}", ran.stderr);
    let ran = bed.run(&["call", "testbed__echo", r#"["hi"]"#]);
    assert_eq!(ran.status, 2);
    expect::says(&ran.stderr, "ARGS-JSON must be a JSON object");
    // A bare name, and Claude Code's prefix: the real name is offered.
    for typed in ["echo", "mcp__testbed__echo", "testbed__ecoh"] {
        let ran = bed.run(&["call", typed, r#"{"text": "hi"}"#]);
        assert_eq!(ran.status, 2, "{}", ran.stderr);
        expect::says(
            &ran.stderr,
            &format!("gatehouse: no tool named {typed}; did you mean testbed__echo"),
        );
        assert!(calls_received(&ran).is_empty());
    }
    let line = ledger(&bed).pop().unwrap();
    assert_eq!(
        (&line["decision"], &line["rule"], &line["caller"]),
        (&json!("refused"), &json!("unknown_tool"), &json!("person"))
    );
    let out = bed.run(&["call", "echo", "--json"]).json();
    assert_eq!(out["outcome"], "unknown_tool");
    assert!(
        out["unknown_tool"]
            .as_str()
            .unwrap()
            .contains("did you mean testbed__echo")
    );
}

#[test]
fn slash_call_in_chat_asks_at_the_terminal_and_prints_the_result() {
    let bed = bed(json!({}));
    let state = scratch_dir();
    let screen = at_terminal_in(
        bed.path(),
        &["chat", "--config", &bed.config],
        &[
            (
                "you> ",
                r#"/call testbed__echo {"text":"typed in the chat"}"#,
            ),
            (PROMPT, "y"),
            ("you> ", "/call tesbed__echo"),
            ("you> ", "/quit"),
        ],
        &[("XDG_STATE_HOME", state.to_str().unwrap())],
    );
    assert!(
        screen.contains("call> {\r\n  \"text\": \"typed in the chat\"\r\n}"),
        "{screen}"
    );
    assert!(
        screen.contains("call> no tool named tesbed__echo; did you mean testbed__echo?"),
        "{screen}"
    );
    let lines = ledger(&bed);
    let asked = &lines[0];
    assert_eq!(
        (&asked["answer"], &asked["by"], &asked["caller"]),
        (&json!("yes"), &json!("person"), &json!("person"))
    );
}

#[test]
fn config_builtin_runs_the_readme_demo_where_a_servers_file_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let testbed = json!({"mcpServers": {"testbed": builtin_server("testbed", json!({}))}});
    crate::common::write(dir.path(), ".mcp.json", &testbed);
    let demo = "Draft a reply to ticket T-30002";
    let ran = run_in(
        dir.path(),
        &["ask", demo, "--config", "builtin", "--json"],
        &[],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    ran.assert_answer("Hi Hugo");
    expect::assert_has(&ran.step_texts(), "model: wants support__get_ticket");
    // A file named builtin is still reachable, as ./builtin.
    crate::common::write(dir.path(), "builtin", &testbed);
    let args = [
        "call",
        "testbed__echo",
        r#"{"text": "x"}"#,
        "--config",
        "./builtin",
        "--yes",
    ];
    let ran = run_in(dir.path(), &args, &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
}

/// `call SERVER__TOOL` starts SERVER alone: the file's other server, which writes its name
/// to a file at each start as SERVER does, is never started, and the rules naming its tools
/// are not warned about; the ledger line is the one a start of every server writes (chat's
/// `/call`). A bare name still starts every server, to find the nearest names.
#[test]
fn a_call_that_names_its_server_starts_only_that_server() {
    let dir = scratch_dir();
    let starts = dir.join("starts");
    let started = || std::fs::read_to_string(&starts).unwrap_or_default();
    let exe = crate::common::exe();
    let counted = |name: &str| {
        json!({"command": "/bin/sh",
               "args": ["-c", "echo \"$2\" >> \"$1\" && exec \"$0\" serve testbed", exe, starts, name]})
    };
    let ledger_path = dir.join("ledger.jsonl");
    let settings = json!({"allow": ["first__echo", "second__echo"],
                          "rules": [{"tool": "second__sleep", "decision": "deny"}],
                          "ledger": {"path": ledger_path}});
    let servers = json!({"first": counted("first"), "second": counted("second")});
    let config = servers_file(&dir, servers, settings);
    let args = [
        "call",
        "first__echo",
        r#"{"text": "hi"}"#,
        "--config",
        &config,
    ];
    let ran = run(&args, &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert_eq!(
        ran.stdout.trim(),
        "{\n  \"text\": \"hi\"\n}",
        "{}",
        ran.stderr
    );
    assert_eq!(started(), "first\n", "{}", ran.stderr);
    assert!(!ran.stderr.contains("no server offers"), "{}", ran.stderr);
    // The same call where every server is started: the same ledger line.
    let chat = crate::common::run_with_stdin(
        &["chat", "--config", &config],
        &[],
        Some("/call first__echo {\"text\": \"hi\"}\n/quit\n"),
    );
    assert_eq!(chat.status, 0, "{}", chat.stderr);
    // chat starts both at once: in whichever order they come up.
    let mut all: Vec<String> = started().lines().map(str::to_owned).collect();
    all.sort();
    assert_eq!(all, ["first", "first", "second"], "{}", chat.stderr);
    let lines: Vec<Value> = std::fs::read_to_string(&ledger_path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:#?}");
    let lasting = |line: &Value| {
        let mut line = line.clone();
        for key in VARYING_LEDGER_KEYS {
            line.as_object_mut().unwrap().remove(key);
        }
        line
    };
    assert_eq!(lasting(&lines[0]), lasting(&lines[1]));
    // A bare name starts every server: the nearest names are found among all their tools.
    std::fs::remove_file(&starts).unwrap();
    let bare = run(&["call", "echo", "--config", &config], &[]);
    assert_eq!(bare.status, 2, "{}", bare.stderr);
    expect::says(
        &bare.stderr,
        "no tool named echo; did you mean first__echo, second__echo?",
    );
    let mut both: Vec<String> = started().lines().map(str::to_owned).collect();
    both.sort();
    assert_eq!(both, ["first", "second"], "{}", bare.stderr);
}

/// The keys of a ledger line that differ from one line to the next: its place in the chain,
/// its time, and the ids of its session and question.
const VARYING_LEDGER_KEYS: [&str; 6] = ["seq", "prev", "hash", "time", "session", "trace_id"];
