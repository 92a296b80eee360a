//! What a person sees at a real terminal (a pseudo-terminal, `tests/peers/pty_run.py`):
//! the quiet screen (the README's "What you see", line by line), `-v` and `-q`, colour,
//! the questions on the screen the answers are typed at whatever stderr is sent to, and
//! the log that keeps every record.

use std::path::Path;

use crate::common::*;

const QUESTION: &str = "Draft a reply to ticket T-30002";

/// Run `gatehouse ARGS` at a terminal with no colour, typing each answer once its prompt
/// shows, with stderr sent to the file `stderr_to` when given. Returns everything the
/// terminal showed.
fn at_terminal(args: &[&str], answers: &[(&str, &str)], stderr_to: Option<&Path>) -> String {
    at_terminal_with(args, answers, stderr_to, &[("NO_COLOR", "1")])
}

/// As [`at_terminal`], with this environment (and colour unless it says `NO_COLOR`).
fn at_terminal_with(
    args: &[&str],
    answers: &[(&str, &str)],
    stderr_to: Option<&Path>,
    env: &[(&str, &str)],
) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(root.join("tests/peers/pty_run.py")).arg("30");
    cmd.args(
        answers
            .iter()
            .map(|(prompt, answer)| format!("{prompt}={answer}")),
    );
    cmd.arg("--");
    if let Some(file) = stderr_to {
        // The shell sends the host's stderr to the file; stdin and stdout stay the terminal.
        cmd.args(["sh", "-c", "exec \"$0\" \"$@\" 2>\"$STDERR_TO\""])
            .env("STDERR_TO", file);
    }
    cmd.arg(exe()).args(args);
    cmd.current_dir(scratch_dir()).env_remove("NO_COLOR");
    let mut cmd = in_fresh_world(cmd, env);
    let out = cmd.output().expect("python3 runs the pseudo-terminal");
    let screen = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    assert_eq!(out.status.code(), Some(0), "{screen}");
    screen
}

#[test]
fn chat_with_stderr_in_a_log_asks_the_person_on_the_terminal() {
    let log = scratch_dir().join("host.log");
    let screen = at_terminal(
        &["chat"],
        &[
            (
                "you>",
                "who owns jump-prod-02? Open a ticket for it: disk full",
            ),
            ("Run it? [y/N]", "y"),
            ("Accept? [y/N]", "y"),
            ("priority", "P1"),
            ("you>", "/quit"),
        ],
        Some(&log),
    );
    // The call is shown before its question, since the steps that show it are in the log.
    let call = screen
        .find("[host] tickets__open_ticket on tickets wants to run with")
        .unwrap_or_else(|| panic!("the call is not on the screen:\n{screen}"));
    assert!(call < screen.find("Run it? [y/N]").unwrap(), "{screen}");
    for shown in [
        "[tickets asks] Open an incident ticket for jump-prod-02?",
        "priority (string) [P1/P2/P3]",
        "assistant> ",
        "INC-",
    ] {
        assert!(
            screen.contains(shown),
            "{shown} is not on the screen:\n{screen}"
        );
    }
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(log.contains("[person] said yes"), "{log}");
    for question in [
        "Run it?",
        "Accept?",
        "asks] Open an incident",
        "priority (string)",
    ] {
        assert!(
            !log.contains(question),
            "{question} went to the log:\n{log}"
        );
    }
}

/// A screen's line with every decimal number as `N`: times differ from run to run, while
/// counts and sizes (whole numbers) do not.
fn times_as_n(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    let mut number = String::new();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit()
            || (c == '.' && !number.is_empty() && chars.peek().is_some_and(char::is_ascii_digit))
        {
            number.push(c);
            continue;
        }
        out.push_str(if number.contains('.') { "N" } else { &number });
        number.clear();
        out.push(c);
    }
    out.push_str(if number.contains('.') { "N" } else { &number });
    out
}

/// Does `line` fit `pattern`, where `...` stands for any text and a decimal for any decimal?
fn fits(pattern: &str, line: &str) -> bool {
    let (pattern, line) = (times_as_n(pattern), times_as_n(line));
    let parts: Vec<&str> = pattern.split("...").collect();
    let mut rest = line.as_str();
    for (i, part) in parts.iter().enumerate() {
        let found = if i == 0 {
            rest.starts_with(part).then_some(0)
        } else {
            rest.find(part)
        };
        let Some(at) = found else { return false };
        rest = &rest[at + part.len()..];
    }
    parts.len() > 1 && pattern.ends_with("...") || rest.is_empty()
}

/// A server's relayed line, which the host shows as soon as it reads it: its place beside
/// the steps of the same call is the servers' race, not the host's.
fn relayed(line: &str) -> bool {
    line.starts_with('[')
        && line
            .split(']')
            .next()
            .is_some_and(|t| t.ends_with(" stderr"))
}

/// Check a screen line by line against `expected`: its non-empty lines, in order, with
/// `...` for any text inside a line and a line of `...` for any lines. The servers'
/// relayed lines are checked as a set, the rest in order.
fn assert_screen(expected: &[&str], screen: &str) {
    let lines: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
    let expected: Vec<&str> = expected
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty())
        .collect();
    let (mut theirs, ours): (Vec<&str>, Vec<&str>) = lines.iter().partition(|l| relayed(l));
    let (their_patterns, our_patterns): (Vec<&str>, Vec<&str>) =
        expected.iter().partition(|l| relayed(l));
    let mut at = 0;
    for (i, pattern) in our_patterns.iter().enumerate() {
        if *pattern == "..." {
            let next = our_patterns.get(i + 1);
            while at < ours.len() && next.is_none_or(|n| !fits(n, ours[at])) {
                at += 1;
            }
            continue;
        }
        assert!(
            at < ours.len() && fits(pattern, ours[at]),
            "line {} is not {pattern:?}:\n{screen}",
            at + 1
        );
        at += 1;
    }
    assert_eq!(at, ours.len(), "more lines than expected:\n{screen}");
    for pattern in their_patterns {
        let found = theirs.iter().position(|l| fits(pattern, l));
        let found = found.unwrap_or_else(|| panic!("no server line {pattern:?}:\n{screen}"));
        theirs.remove(found);
    }
    assert!(
        theirs.is_empty(),
        "more server lines: {theirs:#?}\n{screen}"
    );
}

/// The README's "What you see": the indented block under that heading.
fn readme_screen() -> Vec<String> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let section = readme.split("## What you see").nth(1).unwrap();
    section
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| l.starts_with("    ") || l.trim().is_empty())
        .map(|l| l.trim_start_matches("    ").to_owned())
        .collect()
}

#[test]
fn the_quiet_screen_is_the_readmes() {
    let screen = at_terminal(&["ask", QUESTION], &[], None);
    let expected = readme_screen();
    assert!(expected.len() > 15, "{expected:#?}");
    assert_screen(
        &expected.iter().map(String::as_str).collect::<Vec<_>>(),
        &screen,
    );
    assert!(
        !screen.contains("mcp.request") && !screen.contains("host.tool_call"),
        "{screen}"
    );
}

#[test]
fn verbose_shows_every_server_line_and_the_hosts_records() {
    let screen = at_terminal(&["ask", QUESTION, "-v"], &[], None);
    let listed = |server: &str| {
        format!(
            r#"[{server} stderr] {{"ts":"...","operation":"mcp.request","server":"{server}","method":"tools/list",...}}"#
        )
    };
    let record = |step: &str, tool: &str| {
        format!(
            r#"{{"operation":"host.tool_call","session_id":"...","trace_id":"...","step":{step},"server":"support","tool":"support__{tool}",...,"outcome":"ok",...}}"#
        )
    };
    let called = |tool: &str| {
        format!(
            r#"[support stderr] {{"ts":"...","operation":"mcp.request","server":"support","method":"tools/call","name":"{tool}","trace_id":"...}}"#
        )
    };
    let (l1, l2, l3, l4) = (
        listed("support"),
        listed("cmdb"),
        listed("tickets"),
        listed("orders"),
    );
    let (r1, r2) = (record("1", "get_ticket"), record("2", "search_knowledge"));
    let (c1, c2) = (called("get_ticket"), called("search_knowledge"));
    let expected = [
        l1.as_str(),
        &l2,
        &l3,
        &l4,
        "[host] discovered 2 tools on support: ...",
        "[host] discovered 2 tools on cmdb: ...",
        "[host] discovered 2 tools on tickets: ...",
        "[host] discovered 2 tools on orders: ...",
        r#"[model] wants support__get_ticket {"arguments": {"ticket_id": "T-30002"}}"#,
        r#"[host] on the allow-list: run it {"decision": "auto"}"#,
        r#"[support stderr] {"ts":"...","event":"tool_call",...,"tool":"get_ticket","outcome":"ok","ms":...}"#,
        &c1,
        r#"[server] result: 524 characters {"ms": 2.3, "clipped": false}"#,
        r#"    {"tool":"support__get_ticket","result":{"ticket_id":"T-30002",...}}"#,
        &r1,
        r#"[model] wants support__search_knowledge ..."#,
        r#"[host] on the allow-list: run it {"decision": "auto"}"#,
        r#"[support stderr] {"ts":"...","event":"tool_call",...,"tool":"search_knowledge",...}"#,
        &c2,
        r#"[server] result: 967 characters {"ms": 3.6, "clipped": false}"#,
        r#"    {"tool":"support__search_knowledge","result":{"query":...}}"#,
        &r2,
        "[model] final answer",
        "Draft reply for ticket T-30002:",
        "...",
        "(Policy used: Refunds and payments policy, policy://larkfield/refunds-and-payments)",
        "[usage] the model reported no token use",
    ];
    assert_screen(&expected, &screen);
}

#[test]
fn quiet_quiet_shows_only_the_answer() {
    let screen = at_terminal(&["ask", QUESTION, "-q"], &[], None);
    assert_screen(
        &[
            "Draft reply for ticket T-30002:",
            "Hi Hugo,",
            "...",
            "(Policy used: Refunds and payments policy, policy://larkfield/refunds-and-payments)",
        ],
        &screen,
    );
    assert!(!screen.contains('['), "{screen}");
}

#[test]
fn colour_on_a_terminal_marks_who_acted_and_refusals_unless_no_color() {
    let ticket = "who owns jump-prod-02? Open a ticket for it: disk full";
    let screen = at_terminal_with(&["ask", ticket, "--no"], &[], None, &[]);
    assert!(
        screen.contains("\u{1b}[1;36m[host]\u{1b}[0m discovered"),
        "{screen:?}"
    );
    assert!(
        screen.contains("\u{1b}[1;35m[model]\u{1b}[0m wants"),
        "{screen:?}"
    );
    assert!(
        screen.contains("\u{1b}[1;33m[person]\u{1b}[0m\u{1b}[31m said no"),
        "{screen:?}"
    );
    let plain = at_terminal(&["ask", ticket, "--no"], &[], None);
    assert!(
        plain.contains("[person] said no") && !plain.contains('\u{1b}'),
        "{plain:?}"
    );
    // Output that is not a terminal gets no colour either.
    let piped = run(&["ask", ticket, "--no"], &[]);
    assert!(piped.stdout.contains("[person] said no") && !piped.stdout.contains('\u{1b}'));
}

#[test]
fn the_log_keeps_every_record_private_and_joinable_by_trace_id() {
    let dir = scratch_dir();
    let log = dir.join("logs/host.log");
    let screen = at_terminal(
        &["ask", QUESTION, "--log", log.to_str().unwrap()],
        &[],
        None,
    );
    assert!(!screen.contains("mcp.request"), "{screen}");
    let text = std::fs::read_to_string(&log).unwrap();
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let tool_calls: Vec<&serde_json::Value> = records
        .iter()
        .filter(|r| r["operation"] == "host.tool_call")
        .collect();
    assert_eq!(tool_calls.len(), 2, "{text}");
    let trace_id = tool_calls[0]["trace_id"].as_str().unwrap();
    let joined: Vec<&str> = text.lines().filter(|l| l.contains(trace_id)).collect();
    let calls_seen_by_support = joined
        .iter()
        .filter(|l| {
            l.contains(r#""from_server":"support""#) && l.contains(r#""method":"tools/call""#)
        })
        .count();
    assert_eq!(calls_seen_by_support, 2, "{joined:#?}");
    assert!(records.iter().all(|r| r["ts"].is_string()), "{text}");
    let steps = records
        .iter()
        .filter(|r| r["operation"] == "host.step")
        .count();
    assert!(steps >= 9, "{text}");
    assert_eq!(
        records
            .iter()
            .filter(|r| r["operation"] == "mcp.request")
            .count(),
        6,
        "{text}"
    );
    assert!(
        records
            .iter()
            .any(|r| r["event"] == "tool_call" && r["from_server"] == "support")
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&log).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}

#[test]
fn the_servers_file_can_name_the_log() {
    let dir = scratch_dir();
    let log = dir.join("host.log");
    let file = serde_json::json!({
        "mcpServers": {"support": builtin_server("support", serde_json::json!({}))},
        "gatehouse": {"logFile": log.to_str().unwrap(), "allow": ["support__get_ticket", "support__search_knowledge"]}
    });
    let config = write(&dir, "servers.json", &file);
    let ran = run(&["ask", QUESTION, "--config", &config, "-q"], &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.starts_with("Draft reply for ticket T-30002:"),
        "{}",
        ran.stdout
    );
    assert!(ran.stderr.is_empty(), "{}", ran.stderr);
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        text.matches(r#""operation":"host.tool_call""#).count(),
        2,
        "{text}"
    );
}

#[test]
fn what_a_tool_returned_shows_with_v_and_is_in_the_json_never_on_the_quiet_screen() {
    let question = "What is the return window?";
    let quiet = at_terminal(&["ask", question], &[], None);
    assert!(quiet.contains("[server] result: "), "{quiet}");
    assert!(!quiet.contains("\"doc_id\":\"returns-policy\""), "{quiet}");
    let verbose = at_terminal(&["ask", question, "-v"], &[], None);
    let below = verbose
        .lines()
        .skip_while(|l| !l.starts_with("[server] result: "))
        .nth(1)
        .unwrap_or_default();
    assert!(
        below.starts_with("    {\"tool\":\"support__search_knowledge\",\"result\":"),
        "{verbose}"
    );
    let ran = run(&["ask", question, "--json"], &[]);
    let result = ran
        .steps()
        .into_iter()
        .find(|s| {
            s["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("result: "))
        })
        .expect("a result step");
    let text = result["data"]["text"].as_str().unwrap();
    assert!(text.contains("policy://larkfield/returns-policy"), "{text}");
    assert_eq!(
        result["text"],
        format!("result: {} characters", text.chars().count())
    );
}

#[test]
fn a_quiet_call_shows_the_time_so_far_after_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let config = servers_file(
        dir.path(),
        serde_json::json!({"testbed": builtin_server("testbed", serde_json::json!({}))}),
        serde_json::json!({"allow": ["testbed__sleep"]}),
    );
    let model = playback(
        dir.path(),
        serde_json::json!([
            {"tool_calls": [{"name": "testbed__sleep", "arguments": {"seconds": 3, "quiet": true}}]},
            {"answer": "slept"}]),
    );
    let screen = at_terminal(
        &["ask", "x", "--config", &config, "--model", &model],
        &[],
        None,
    );
    assert!(screen.contains("[testbed] sleep … 1 s"), "{screen}");
    // Cleared before the next line: the result's line starts on a clean line.
    assert!(screen.contains("\x1b[2K[server] result: "), "{screen:?}");
}
