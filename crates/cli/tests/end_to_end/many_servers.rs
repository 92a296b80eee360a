//! Many servers, one host: the seed's security-operations run, namespacing, `--tools`,
//! the person's answers to a server's form, joinable traces, `tools` and `chat`.

use crate::common;

use common::*;
use serde_json::{Value, json};

#[test]
fn the_seed_run_names_the_owner_and_opens_inc_4100_then_inc_4101() {
    let store = scratch_dir().join("tickets.db");
    let store = store.to_str().unwrap();
    let env = [("GATEHOUSE_TICKETS_DB", store)];
    let ran = seed_run("priority=P1", &[], &env);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let answer = ran.answer();
    assert!(answer.contains("owned by Camille Michel"), "{answer}");
    assert!(
        answer.contains(
            "I opened INC-4100 (P1) for jump-prod-02: brute force then a login from 203.0.113.77"
        ),
        "{answer}"
    );
    let steps = ran.steps_after_discovery();
    assert_eq!(steps[0], "model: wants cmdb__get_asset");
    assert_eq!(steps[3], "model: wants tickets__open_ticket");
    assert_eq!(steps[4], "host: not on the allow-list: ask the person");
    assert!(steps.contains(&"person: said yes".to_string()));
    assert!(
        steps
            .iter()
            .any(|s| s
                .starts_with("server: tickets asks: Open an incident ticket for jump-prod-02?")),
        "{steps:?}"
    );
    assert!(steps.contains(&"person: answered accept".to_string()));

    let again = seed_run("priority=P1", &[], &env);
    again.assert_answer("I opened INC-4101 (P1)");
    let listed = ask("list tickets", &[], &env);
    listed.assert_answer_starting("2 incident tickets:");
}

#[test]
fn declining_the_form_opens_nothing() {
    let store = scratch_dir().join("tickets.db");
    let env = [("GATEHOUSE_TICKETS_DB", store.to_str().unwrap())];
    let ran = run(
        &["ask", SEED_QUESTION, "--yes", "--decline", "--json"],
        &env,
    );
    let answer = ran.answer();
    assert!(
        answer.contains("I could not use open_ticket: the user declined: no ticket was opened"),
        "{answer}"
    );
    ran.assert_steps(&["person: answered decline"]);
    let listed = ask("list tickets", &[], &env);
    assert_eq!(
        listed.answer(),
        "There are no incident tickets for that yet."
    );
}

#[test]
fn refusing_the_call_means_the_server_is_never_asked() {
    let ran = ask(SEED_QUESTION, &["--no", "--answer", "priority=P1"], &[]);
    assert!(
        ran.answer()
            .contains("I could not use open_ticket: the person declined this call")
    );
    assert!(!ran.step_texts().iter().any(|s| s.contains("asks:")));
    assert!(expect::find(&ran.mcp_requests("tickets"), "method", "tools/call").is_none());
}

#[test]
fn a_form_answer_that_does_not_fit_is_declined_not_guessed() {
    let ran = seed_run("priority=urgent", &[], &[]);
    ran.assert_answer("no ticket was opened");
}

#[test]
fn tools_offers_only_the_named_tools_and_everything_else_is_unknown() {
    let ran = ask(
        SEED_QUESTION,
        &["--tools", "cmdb__get_asset,cmdb__find_assets", "--yes"],
        &[],
    );
    let answer = ran.answer();
    assert!(answer.contains("owned by Camille Michel"), "{answer}");
    assert!(
        answer.contains("I cannot open a ticket: none of the tools offered to me does that."),
        "{answer}"
    );

    let model = play_model(
        json!([{"tool_calls": [{"name": "tickets__open_ticket", "arguments": {"host": "jump-prod-02", "summary": "x"}}]}, {"answer": "ok"}]),
    );
    let ran = ask(
        "x",
        &["--model", &model, "--tools", "cmdb__get_asset", "--yes"],
        &[],
    );
    ran.assert_steps(&["host: refused: tickets__open_ticket is not a tool of this host"]);
    let events = ran.tool_events();
    assert_eq!(events[0]["outcome"], "unknown_tool");
    assert_eq!(events[0]["server"], "-");
}

#[test]
fn host_and_server_records_join_on_trace_id_and_step() {
    let ran = seed_run("priority=P2", &[], &[]);
    let events = ran.tool_events();
    assert_eq!(events.len(), 2, "{}", ran.stderr);
    let trace_id = events[0]["trace_id"].as_str().unwrap().to_owned();
    assert_eq!(trace_id.len(), 32);
    assert!(events.iter().all(|e| e["trace_id"] == trace_id.as_str()));
    assert_eq!(events[0]["step"], 1);
    assert_eq!(events[0]["server"], "cmdb");
    assert_eq!(events[0]["arg_keys"], json!(["hostname"]));
    assert_eq!(events[0]["asked_user"], false);
    assert_eq!(events[1]["step"], 2);
    assert_eq!(events[1]["outcome"], "ok");
    assert_eq!(events[1]["asked_user"], true);
    assert!(events[1]["result_bytes"].as_u64().unwrap() > 0);

    let joined = |server: &str, step: u64| -> Vec<Value> {
        ran.mcp_requests(server)
            .into_iter()
            .filter(|r| r["trace_id"] == trace_id.as_str() && r["step"] == step)
            .collect()
    };
    let cmdb = joined("cmdb", 1);
    assert_eq!(cmdb.len(), 1);
    assert_eq!(cmdb[0]["name"], "get_asset");
    assert_eq!(cmdb[0]["session_id"], events[0]["session_id"]);
    let tickets = joined("tickets", 2);
    let outcomes: Vec<&str> = tickets
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        vec!["input_required", "ok"],
        "two server rounds under one host event"
    );
}

#[test]
fn a_name_collision_keeps_both_tools_under_distinct_stable_names() {
    let bed = Bed::new(
        json!({
            "test.bed": builtin_server("testbed", json!({})),
            "test_bed": builtin_server("testbed", json!({}))
        }),
        json!({"allow": ["test_bed__echo", "test_bed__echo_2"]}),
    );
    let ran = bed.play(
        json!([{"tool_calls": [
            {"name": "test_bed__echo", "arguments": {"text": "one"}},
            {"name": "test_bed__echo_2", "arguments": {"text": "two"}}
        ]}, {"answer": "ok"}]),
        &[],
    );
    let steps = ran.step_texts().join("\n");
    // The server whose name needed no change keeps the plain name, though listed second:
    // no server can take another's tool name by sanitising into it.
    assert!(steps.contains("renamed a tool: test.bed's tool \"echo\" is offered as test_bed__echo_2: its safe name test_bed__echo is taken (test_bed's tool \"echo\")"), "{steps}");
    let events = ran.tool_events();
    assert_eq!(events[0]["server"], "test_bed");
    assert_eq!(events[1]["server"], "test.bed");
    assert!(events.iter().all(|e| e["outcome"] == "ok"));

    let names = bed.run(&["tools", "--json"]).row_names();
    assert!(
        names.contains(&"test_bed__echo".to_string())
            && names.contains(&"test_bed__echo_2".to_string()),
        "{names:?}"
    );
}

#[test]
fn the_tools_command_prints_the_namespaced_table() {
    let ran = run(&["tools"], &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let lines: Vec<&str> = ran.stdout.lines().collect();
    assert!(
        lines[0].starts_with("TOOL") && lines[0].contains("SERVER") && lines[0].contains("HINTS")
    );
    for name in [
        "support__search_knowledge",
        "support__get_ticket",
        "cmdb__get_asset",
        "cmdb__find_assets",
        "tickets__open_ticket",
        "tickets__list_tickets",
    ] {
        assert!(ran.stdout.contains(name), "{name} missing:\n{}", ran.stdout);
    }
    let open = lines
        .iter()
        .find(|l| l.starts_with("tickets__open_ticket"))
        .unwrap();
    assert!(
        open.contains(" tickets ") && open.contains("writes"),
        "{open}"
    );
    let limited = run(&["tools", "--tools", "cmdb__get_asset", "--json"], &[]);
    let rows: Vec<Value> = serde_json::from_str(&limited.stdout).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["server"], "cmdb");
}

#[test]
fn chat_keeps_one_session_across_turns_until_quit() {
    let store = scratch_dir().join("tickets.db");
    let env = [("GATEHOUSE_TICKETS_DB", store.to_str().unwrap())];
    let ran = run_with_stdin(
        &["chat", "--yes", "--answer", "priority=P3"],
        &env,
        Some(
            "who owns jump-prod-02?\nOpen a ticket for customer-db-prod-01: disk almost full\n/quit\nnever asked\n",
        ),
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let answers: Vec<&str> = ran
        .stdout
        .lines()
        .filter(|l| l.starts_with("assistant> "))
        .collect();
    assert_eq!(answers.len(), 2, "{}", ran.stdout);
    assert!(answers[0].contains("Camille Michel"));
    crate::common::expect::says(
        &ran.stdout,
        "I opened INC-4100 (P3) for customer-db-prod-01: disk almost full",
    );
    assert!(ran.stdout.matches("you> ").count() == 3);
    let events = ran.tool_events();
    assert!(events.len() >= 3);
    assert!(
        events
            .iter()
            .all(|e| e["session_id"] == events[0]["session_id"]),
        "one session"
    );
    assert_ne!(
        events[0]["trace_id"],
        events.last().unwrap()["trace_id"],
        "one trace per turn"
    );
}
