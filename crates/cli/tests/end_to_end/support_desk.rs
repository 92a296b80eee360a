//! The support desk end to end, as the seed records it: through the real binary, the real
//! support-mcp process, and the scripted model.

use crate::common;

use common::*;
use serde_json::json;

#[test]
fn sam_drafts_a_reply_to_t30002_citing_the_refunds_policy() {
    let ran = ask("Draft a reply to ticket T-30002", &[], &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let answer = ran.answer();
    assert!(answer.contains("Hi Hugo"), "{answer}");
    assert!(
        answer.contains("policy://larkfield/refunds-and-payments"),
        "{answer}"
    );
    assert!(answer.contains("Double charges"), "{answer}");
    ran.assert_steps(&["host: discovered 2 tools on support: search_knowledge, get_ticket"]);
    let steps = ran.steps_after_discovery();
    assert_eq!(
        steps,
        vec![
            "model: wants support__get_ticket",
            "host: on the allow-list: run it",
            steps[2].as_str(),
            "model: wants support__search_knowledge",
            "host: on the allow-list: run it",
            steps[5].as_str(),
            "model: final answer",
        ]
    );
    assert!(steps[2].starts_with("server: result: ") && steps[5].starts_with("server: result: "));
    let data = ran.step_data();
    assert_eq!(data[0]["protocol"], "2026-07-28");
    assert_eq!(data[0]["server"], "support-mcp");
    let n = ran.step_texts().len() - steps.len();
    assert_eq!(data[n]["arguments"], json!({"ticket_id": "T-30002"}));
    assert_eq!(
        data[n + 3]["arguments"],
        json!({"query": "Charged twice for order LK-182074"})
    );
    assert_eq!(ran.json()["usage"], json!({}));
    let logs = ran.server_logs("support");
    assert_eq!(logs.len(), 2, "{}", ran.stderr);
    assert_eq!(logs[0]["tool"], "get_ticket");
    assert_eq!(logs[0]["user"], "usr-sam");
    assert_eq!(logs[0]["role"], "staff");
    assert_eq!(logs[0]["client"], "local");
    assert_eq!(logs[1]["results"], 3);
}

#[test]
fn omar_finds_the_return_window() {
    let ran = ask("What is the return window?", &["--user", "usr-omar"], &[]);
    let answer = ran.answer();
    assert!(
        answer.starts_with("From \"Returns policy\" (policy://larkfield/returns-policy):"),
        "{answer}"
    );
    assert!(
        answer.contains("## Return window You can return an unused item"),
        "{answer}"
    );
    assert!(
        answer.contains("the one in force on the date your order was delivered"),
        "{answer}"
    );
    let logs = ran.server_logs("support");
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0]["user"], "usr-omar");
    assert_eq!(logs[0]["role"], "read_only");
    assert_eq!(logs[0]["outcome"], "ok");
}

#[test]
fn omar_may_search_but_not_read_tickets() {
    let ran = ask(
        "Draft a reply to ticket T-30002",
        &["--user", "usr-omar"],
        &[],
    );
    ran.assert_answer(
        "I could not use get_ticket: forbidden: your role (read_only) does not allow tickets:read",
    );
    assert_eq!(ran.server_logs("support")[0]["outcome"], "forbidden");
}

#[test]
fn tomas_sees_the_tools_but_every_call_is_refused_by_the_server() {
    let ran = ask("What is the return window?", &["--user", "usr-tomas"], &[]);
    assert_eq!(
        ran.steps_after_discovery(),
        vec![
            "model: wants support__search_knowledge",
            "host: on the allow-list: run it",
            "server: protocol error -32003: forbidden: you have no access to this organization",
            "model: final answer",
        ]
    );
    let n = ran.step_texts().len() - 4;
    assert_eq!(ran.step_data()[n + 2], json!({"code": -32003}));
    assert_eq!(
        ran.answer(),
        "I could not use search_knowledge: forbidden: you have no access to this organization"
    );
    ran.assert_quiet("support", "no tool ran, so no log line");
}

#[test]
fn an_organization_that_does_not_exist_gets_the_same_answer() {
    let ran = ask("What is the return window?", &["--tenant", "lark"], &[]);
    assert_eq!(
        ran.answer(),
        "I could not use search_knowledge: forbidden: you have no access to this organization"
    );
}

#[test]
fn another_organizations_ticket_is_not_found_here() {
    let ran = ask("Draft a reply to ticket T-40003", &[], &[]);
    let answer = ran.answer();
    assert!(
        answer.contains(
            "I could not use get_ticket: not_found: there is no ticket T-40003 in this organization"
        ),
        "{answer}"
    );
    assert!(
        answer.ends_with("I found no policy about this."),
        "{answer}"
    );
    assert_eq!(ran.server_logs("support")[0]["outcome"], "not_found");
    // Camille, a member of Bramble Books, reads the same ticket.
    let ran = ask(
        "Draft a reply to ticket T-40003",
        &["--user", "usr-camille", "--tenant", "bramble"],
        &[],
    );
    ran.assert_answer("Hi Ingrid");
}

#[test]
fn human_output_shows_the_seed_lines_and_the_answer() {
    let ran = run(
        &["ask", "What is the return window?", "--user", "usr-omar"],
        &[],
    );
    assert_eq!(ran.status, 0);
    assert!(ran.stdout.starts_with("[host] discovered 2 tools on support: search_knowledge, get_ticket {\"protocol\": \"2026-07-28\""), "{}", ran.stdout);
    let lines: Vec<&str> = ran
        .stdout
        .lines()
        .filter(|l| !l.starts_with("[host] discovered"))
        .collect();
    assert_eq!(
        lines[0],
        r#"[model] wants support__search_knowledge {"arguments": {"query": "What is the return window?"}}"#
    );
    assert_eq!(
        lines[1],
        r#"[host] on the allow-list: run it {"decision": "auto"}"#
    );
    assert!(lines[2].starts_with("[server] result: ") && lines[2].contains("\"clipped\": false"));
    assert_eq!(lines[3], "[model] final answer");
    assert!(ran.stdout.contains("From \"Returns policy\""));
    assert!(
        ran.stderr.contains("[support stderr] {"),
        "server lines are marked as theirs"
    );
}
