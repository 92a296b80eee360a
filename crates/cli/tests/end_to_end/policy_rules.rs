//! The person's rules at work through the real binary: a deny without conditions hides a
//! tool, a conditional deny refuses with its reason and sends nothing, an allow rule runs
//! without asking, an ask rule's reason reaches the person, a traversal is not "inside",
//! a bad rule stops the host with its index, and `policy explain` names the rule.

use serde_json::{Value, json};

use crate::common::expect;
use crate::common::{Ran, ask_args, builtin_server, playback, run, servers_file};

fn config(dir: &std::path::Path, rules: Value) -> String {
    servers_file(
        dir,
        json!({"testbed": builtin_server("testbed", json!({}))}),
        json!({"rules": rules, "ledger": {"path": dir.join("ledger.jsonl")}}),
    )
}

/// A scratch folder and a servers file in it with these rules.
fn with_rules(rules: Value) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), rules);
    (dir, config)
}

/// `ask --no` with a model that proposes two echoes at once, of these texts, then answers.
fn two_echoes(dir: &std::path::Path, config: &str, texts: [&str; 2]) -> Ran {
    let calls: Vec<Value> = texts
        .iter()
        .map(|text| json!({"name": "testbed__echo", "arguments": {"text": text}}))
        .collect();
    let model = playback(dir, json!([{"tool_calls": calls}, {"answer": "ok"}]));
    run(&ask_args(config, &model, &["--no"]), &[])
}

/// The calls that reached the testbed (the host's records of calls that ran), by tool.
pub fn calls_sent(ran: &Ran) -> Vec<String> {
    ran.tool_events()
        .iter()
        .filter(|e| {
            ["ok", "tool_error", "error", "timeout"].contains(&e["outcome"].as_str().unwrap_or(""))
        })
        .filter_map(|e| {
            e["tool"]
                .as_str()?
                .strip_prefix("testbed__")
                .map(str::to_owned)
        })
        .collect()
}

#[test]
fn a_deny_without_conditions_hides_the_tool_and_a_proposal_of_it_is_unknown() {
    let (dir, config) = with_rules(json!([{"tool": "testbed__sl*", "decision": "deny"}]));
    let listed = run(&["tools", "--config", &config, "--json"], &[]);
    let names: Vec<String> = expect::names_listed(&listed.stdout);
    assert!(
        names.contains(&"testbed__echo".to_string())
            && !names.contains(&"testbed__sleep".to_string()),
        "{names:?}"
    );
    let model = playback(
        dir.path(),
        json!([
        {"tool_calls": [{"name": "testbed__sleep", "arguments": {"seconds": 0}}]}, {"answer": "ok"}]),
    );
    let ran = run(&ask_args(&config, &model, &["--yes"]), &[]);
    // The record says refused; the model reads what it reads for an unknown tool (unit test).
    assert_eq!(ran.tool_events()[0]["outcome"], "refused");
    assert!(
        ran.step_texts()
            .contains(&"host: denied by rules[0], a tool hidden from the model".to_string()),
        "{:?}",
        ran.step_texts()
    );
    assert!(
        calls_sent(&ran).is_empty(),
        "nothing is sent: {:?}",
        calls_sent(&ran)
    );
}

#[test]
fn a_conditional_deny_refuses_with_its_reason_and_sends_nothing() {
    let (dir, config) = with_rules(json!([
        {"tool": "testbed__*", "decision": "allow"},
        {"tool": "testbed__echo", "decision": "deny", "reason": "no secrets in echoes",
         "when": {"pointer": "/text", "regex": "(?i)password"}}
    ]));
    let ran = two_echoes(dir.path(), &config, ["my PASSWORD is x", "hello"]);
    let texts = ran.steps_after_discovery();
    expect::assert_has(&texts, "host: denied by rules[1]: no secrets in echoes");
    expect::assert_has(&texts, "host: allowed by rules[0]: run it");
    assert_eq!(calls_sent(&ran), ["echo"], "only the allowed call is sent");
    let events = ran.tool_events();
    assert_eq!(events[0]["outcome"], "refused");
    assert_eq!(events[1]["outcome"], "ok");
}

#[test]
fn an_ask_rule_gives_the_person_its_reason_and_a_traversal_is_not_inside() {
    let (dir, config) = with_rules(json!([
        {"tool": "testbed__echo", "decision": "allow", "when": {"pointer": "/text", "inside": "/srv/project"}},
        {"tool": "testbed__echo", "decision": "ask", "reason": "echoes outside the project are read by a person"}
    ]));
    let ran = two_echoes(
        dir.path(),
        &config,
        ["/srv/project/notes.txt", "/srv/project/../../etc/passwd"],
    );
    let texts = ran.steps_after_discovery();
    let asked =
        "host: rules[1] says ask the person: echoes outside the project are read by a person";
    expect::assert_has(&texts, "host: allowed by rules[0]: run it");
    expect::assert_has(&texts, asked);
    assert_eq!(
        calls_sent(&ran),
        ["echo"],
        "the traversal was asked about and declined"
    );
}

#[test]
fn annotations_never_grant_anything() {
    let dir = tempfile::tempdir().unwrap();
    // read_resource is read-only by its annotations; cmdb's tools too. No rule: ask.
    let config = config(dir.path(), json!([]));
    let model = playback(
        dir.path(),
        json!([
        {"tool_calls": [{"name": "testbed__echo", "arguments": {"text": "hi"}}]}, {"answer": "ok"}]),
    );
    let ran = run(&ask_args(&config, &model, &["--no"]), &[]);
    assert!(
        ran.step_texts()
            .contains(&"host: not on the allow-list: ask the person".to_string())
    );
    assert!(calls_sent(&ran).is_empty());
}

#[test]
fn a_bad_rule_stops_the_host_with_its_index_and_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    for (rules, says) in [
        (
            json!([{"tool": "a", "decision": "allow"}, {"tool": "x[", "decision": "deny"}]),
            "rules[1]: \"tool\" \"x[\"",
        ),
        (
            json!([{"tool": "*", "decision": "ask", "when": {"pointer": "/q", "regex": "("}}]),
            "rules[0]: when[0]: \"regex\" does not compile",
        ),
        (
            json!([{"tool": "*", "decision": "ask", "when": {"pointer": "q", "equals": 1}}]),
            "rules[0]: when[0]: \"pointer\"",
        ),
    ] {
        let config = config(dir.path(), rules);
        let ran = run(&["tools", "--config", &config], &[]);
        assert_eq!(ran.status, 2, "{}", ran.stderr);
        assert!(ran.stderr.contains(says), "{says}: {}", ran.stderr);
    }
}

#[test]
fn policy_explain_names_the_rule_that_decides_and_each_condition() {
    let (dir, config) = with_rules(json!([
        {"tool": "testbed__*", "decision": "allow", "when": {"pointer": "/text", "glob": "safe*"}},
        {"tool": "testbed__echo", "decision": "deny", "reason": "never", "when": {"pointer": "/text", "glob": "*rm -rf*"}}
    ]));
    let explain = |args: &str| {
        run(
            &[
                "policy",
                "explain",
                "testbed__echo",
                args,
                "--config",
                &config,
            ],
            &[],
        )
    };
    let denied = explain(r#"{"text": "safe; rm -rf /"}"#);
    assert_eq!(denied.status, 0, "{}", denied.stderr);
    assert!(
        denied.stdout.contains("refuse (by rules[1])"),
        "{}",
        denied.stdout
    );
    assert!(
        denied
            .stdout
            .contains("rules[0] (tool testbed__*, allow): applies"),
        "{}",
        denied.stdout
    );
    assert!(
        denied
            .stdout
            .contains("/text matches the glob *rm -rf*: yes"),
        "{}",
        denied.stdout
    );
    let allowed = explain(r#"{"text": "safe words"}"#);
    assert!(
        allowed.stdout.contains("run (by rules[0])"),
        "{}",
        allowed.stdout
    );
    let asked = run(
        &[
            "policy",
            "explain",
            "testbed__echo",
            r#"{"text": "hi"}"#,
            "--config",
            &config,
            "--json",
        ],
        &[],
    );
    let v: Value = serde_json::from_str(&asked.stdout).unwrap();
    assert_eq!(v["verdict"], "ask");
    assert_eq!(v["by"], "default");
    // Explaining decides nothing and sends nothing: no ledger line.
    let ledger = std::fs::read_to_string(dir.path().join("ledger.jsonl")).unwrap_or_default();
    assert_eq!(ledger.lines().count(), 0, "{ledger}");
}

/// The red team's probes of `inside`: a percent-encoded `..`, a NUL, a look-alike dot each
/// ran under an allow rule; none does now, and a plain path inside still does.
#[test]
fn inside_never_allows_an_escaped_a_nul_or_a_look_alike_path() {
    let (_dir, config) = with_rules(json!([
        {"tool": "testbed__echo", "decision": "allow", "when": {"pointer": "/text", "inside": "/srv/proj"}}
    ]));
    let verdict = |text: &str| {
        let args = json!({ "text": text }).to_string();
        let ran = run(
            &[
                "policy",
                "explain",
                "testbed__echo",
                &args,
                "--config",
                &config,
                "--json",
            ],
            &[],
        );
        assert_eq!(ran.status, 0, "{}", ran.stderr);
        let v: Value = serde_json::from_str(&ran.stdout).unwrap();
        v["verdict"].as_str().unwrap().to_owned()
    };
    for probe in [
        "/srv/proj/%2e%2e/%2e%2e/etc/passwd",
        "/srv/proj/x\u{0}",
        "/srv/proj/\u{2025}/etc",
        "/srv/proj/%2E%2e/etc",
        "/srv/proj/\u{FF0E}\u{FF0E}/etc",
    ] {
        assert_eq!(verdict(probe), "ask", "{probe:?}");
    }
    assert_eq!(verdict("/srv/proj/a.txt"), "run");
}

/// `policy explain` starts the servers once: the next explains from the catalog that start
/// kept (and says so), and starts nothing (the server writes a line at each start); a
/// changed entry or `--fresh` starts them again; a corrupt catalog is ignored with a word.
#[test]
fn policy_explain_uses_the_catalog_of_the_last_start_until_an_entry_changes() {
    let dir = crate::common::scratch_dir();
    let state = dir.join("state");
    let starts = dir.join("starts");
    let exe = crate::common::exe();
    let config_marked = |mark: &str| {
        let counted = json!({"command": "/bin/sh",
            "args": ["-c", "echo started >> \"$1\" && exec \"$0\" serve testbed", exe, starts],
            "env": {"MARK": mark}});
        servers_file(
            &dir,
            json!({"testbed": counted}),
            json!({"rules": [{"tool": "testbed__echo", "decision": "deny", "reason": "never"}]}),
        )
    };
    let explain = |config: &str, extra: &[&str]| {
        let mut args = vec![
            "policy",
            "explain",
            "testbed__echo",
            r#"{"text": "x"}"#,
            "--config",
            config,
        ];
        args.extend_from_slice(extra);
        let ran = run(&args, &[("XDG_STATE_HOME", state.to_str().unwrap())]);
        assert_eq!(ran.status, 0, "{}", ran.stderr);
        ran
    };
    let started = || {
        std::fs::read_to_string(&starts)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let cached = "(the tools from the catalog cached at ";
    let config = config_marked("1");
    let first = explain(&config, &[]);
    assert!(
        first.stdout.contains("refuse (by rules[0])"),
        "{}",
        first.stdout
    );
    assert!(!first.stdout.contains(cached), "{}", first.stdout);
    assert_eq!(started(), 1);
    let second = explain(&config, &[]);
    assert!(
        second.stdout.contains("refuse (by rules[0])"),
        "{}",
        second.stdout
    );
    assert!(
        second.stdout.contains(cached) && second.stdout.contains("`--fresh` starts the servers"),
        "{}",
        second.stdout
    );
    let json = explain(&config, &["--json"]);
    let v: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        (&v["verdict"], &v["catalog"]["from"]),
        (&json!("refuse"), &json!("cache"))
    );
    assert_eq!(started(), 1, "explained from the cache, nothing started");
    let fresh = explain(&config, &["--fresh"]);
    assert!(!fresh.stdout.contains(cached), "{}", fresh.stdout);
    assert_eq!(started(), 2);
    // The same file with the entry changed: its servers are started again, then cached.
    let changed = config_marked("2");
    assert!(!explain(&changed, &[]).stdout.contains(cached));
    assert_eq!(started(), 3);
    assert!(explain(&changed, &[]).stdout.contains(cached));
    assert_eq!(started(), 3);
    // A catalog that is not what the host wrote is ignored, with a word.
    let catalogs = state.join("gatehouse/catalogs");
    for file in std::fs::read_dir(&catalogs).unwrap().flatten() {
        std::fs::write(file.path(), r#"{"format": 1, "granted": true}"#).unwrap();
    }
    let corrupt = explain(&changed, &[]);
    assert!(
        corrupt.stderr.contains("the cached catalog is ignored: ")
            && corrupt.stderr.contains(": starting the servers"),
        "{}",
        corrupt.stderr
    );
    assert!(
        corrupt.stdout.contains("refuse (by rules[0])"),
        "{}",
        corrupt.stdout
    );
    assert_eq!(started(), 4);
}
