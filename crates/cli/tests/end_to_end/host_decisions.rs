//! The host's decisions on proposals: the allow-list, the person's answer, and every
//! refusal, proposed through the playback model so anything can be proposed.

use crate::common;

use common::*;
use serde_json::{Value, json};

/// A servers file with the support server and an empty allow-list.
fn empty_allow_list(dir: &std::path::Path) -> String {
    write(
        dir,
        "servers.json",
        &json!({"mcpServers": {"support": builtin_server("support", json!({}))},
                "gatehouse": {"allow": []}}),
    )
}

#[test]
fn an_empty_allow_list_asks_and_no_sends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = empty_allow_list(dir.path());
    let ran = run(
        &[
            "ask",
            "What is the return window?",
            "--config",
            &config,
            "--no",
            "--json",
        ],
        &[],
    );
    assert_eq!(
        ran.step_texts(),
        vec![
            "host: discovered 2 tools on support: search_knowledge, get_ticket",
            "model: wants support__search_knowledge",
            "host: not on the allow-list: ask the person",
            r#"host: The assistant wants to run support__search_knowledge with {"query":"What is the return window?"}"#,
            "host: Answer given by option: no",
            "person: said no",
            "model: final answer",
        ]
    );
    let data = ran.step_data();
    assert_eq!(data[2]["decision"], "ask");
    assert_eq!(
        data[2]["annotations"],
        json!({"read_only_hint": true, "destructive_hint": false, "idempotent_hint": true, "open_world_hint": false})
    );
    assert_eq!(data[5], json!({"decision": "declined"}));
    assert_eq!(
        ran.answer(),
        "I could not use search_knowledge: the person declined this call"
    );
    assert!(
        ran.server_logs("support").is_empty(),
        "nothing was sent: {}",
        ran.stderr
    );
}

#[test]
fn an_empty_allow_list_with_yes_runs_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let config = empty_allow_list(dir.path());
    let ran = run(
        &[
            "ask",
            "What is the return window?",
            "--config",
            &config,
            "--yes",
            "--json",
        ],
        &[],
    );
    let steps = ran.step_texts();
    assert_eq!(steps[4], "host: Answer given by option: yes");
    assert_eq!(steps[5], "person: said yes");
    assert_eq!(ran.step_data()[5], json!({"decision": "approved"}));
    assert!(steps[6].starts_with("server: result: "));
    assert!(ran.answer().contains("policy://larkfield/returns-policy"));
    assert_eq!(ran.server_logs("support").len(), 1);
}

#[test]
fn without_an_answer_the_default_is_no() {
    let dir = tempfile::tempdir().unwrap();
    let config = empty_allow_list(dir.path());
    // stdin is closed: nobody can type y.
    let ran = run(
        &[
            "ask",
            "What is the return window?",
            "--config",
            &config,
            "--json",
        ],
        &[],
    );
    assert!(
        ran.step_texts().contains(&"person: said no".to_string()),
        "{:?}",
        ran.step_texts()
    );
    assert!(ran.server_logs("support").is_empty());
}

#[test]
fn every_refusal_goes_back_to_the_model_and_nothing_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let config = empty_allow_list(dir.path());
    let model = playback(
        dir.path(),
        json!([
            {"tool_calls": [{"name": "support__delete_everything", "arguments": {}}]},
            {"tool_calls": [{"name": "support__search_knowledge", "arguments": {"query": "x".repeat(50_000)}}]},
            {"tool_calls": [{"name": "support__search_knowledge", "arguments": "{\"query\": \"returns\""}]},
            {"tool_calls": [{"name": "support__search_knowledge", "arguments": "[\"returns\"]"}]},
            {"tool_calls": [{"name": "support__get_ticket", "arguments": {"ticket_id": "T-30002"}}]},
            {"answer": "done"}
        ]),
    );
    let ran = run(
        &[
            "ask", "anything", "--config", &config, "--model", &model, "--no", "--json",
        ],
        &[],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let refusals: Vec<(String, Value)> = ran.json()["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["who"] == "host" && s["text"].as_str().unwrap().starts_with("refused"))
        .map(|s| {
            (
                s["text"].as_str().unwrap().to_owned(),
                s["data"]["decision"].clone(),
            )
        })
        .collect();
    assert_eq!(refusals.len(), 4, "{:?}", ran.step_texts());
    assert_eq!(
        refusals[0].0,
        "refused: support__delete_everything is not a tool of this host"
    );
    assert_eq!(refusals[0].1, "unknown_tool");
    assert!(
        refusals[1]
            .0
            .starts_with("refused: arguments too large (50012 characters, at most 2000)"),
        "{}",
        refusals[1].0
    );
    assert_eq!(refusals[1].1, "too_large");
    assert_eq!(refusals[2].0, "refused: the arguments are not valid JSON");
    assert_eq!(
        refusals[3].0,
        "refused: the arguments are an array, not a JSON object"
    );
    assert!(ran.step_texts().contains(&"person: said no".to_string()));
    assert_eq!(ran.answer(), "done");
    assert!(
        ran.server_logs("support").is_empty(),
        "no call reached the server: {}",
        ran.stderr
    );
}

#[test]
fn two_calls_in_one_decision_run_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let model = playback(
        dir.path(),
        json!([
            {"tool_calls": [
                {"name": "support__get_ticket", "arguments": {"ticket_id": "T-30002"}},
                {"name": "support__search_knowledge", "arguments": {"query": "duplicate charge refund"}}
            ]},
            {"answer": "both done"}
        ]),
    );
    let ran = run(&["ask", "x", "--model", &model, "--json"], &[]);
    let logs = ran.server_logs("support");
    assert_eq!(logs.len(), 2);
    assert_eq!(logs[0]["tool"], "get_ticket");
    assert_eq!(logs[1]["tool"], "search_knowledge");
    let wants: Vec<String> = ran
        .step_texts()
        .into_iter()
        .filter(|s| s.starts_with("model: wants"))
        .collect();
    assert_eq!(
        wants,
        vec![
            "model: wants support__get_ticket",
            "model: wants support__search_knowledge"
        ]
    );
    assert_eq!(ran.answer(), "both done");
}

#[test]
fn the_step_limit_ends_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let call = json!({"tool_calls": [{"name": "support__search_knowledge", "arguments": {"query": "returns"}}]});
    let model = playback(dir.path(), json!(vec![call; 10]));
    let ran = run(
        &["ask", "x", "--model", &model, "--max-steps", "3", "--json"],
        &[],
    );
    let steps = ran.step_texts();
    assert_eq!(
        steps.last().unwrap(),
        "host: stopped: reached the step limit (3)"
    );
    assert_eq!(ran.server_logs("support").len(), 3);
    assert!(ran.answer().contains("stopped after 3 steps"));
    // The default limit is 6.
    let ran = run(&["ask", "x", "--model", &model, "--json"], &[]);
    assert_eq!(ran.server_logs("support").len(), 6);
}

#[test]
fn a_result_larger_than_the_bound_is_cut_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "servers.json",
        &json!({"mcpServers": {"testbed": builtin_server("testbed", json!({}))},
                "gatehouse": {"allow": ["testbed__repeat"]}}),
    );
    let model = playback(
        dir.path(),
        json!([{"tool_calls": [{"name": "testbed__repeat", "arguments": {"text": "abc ", "times": 5000}}]}, {"answer": "ok"}]),
    );
    let ran = run(
        &["ask", "x", "--config", &config, "--model", &model, "--json"],
        &[],
    );
    let step = ran.json()["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["who"] == "server")
        .unwrap()
        .clone();
    assert_eq!(step["data"]["clipped"], true, "{step}");
    assert_eq!(step["text"], "result: 4000 characters");
}

#[test]
fn in_a_chat_the_answers_to_approvals_are_read_from_the_same_input_as_the_questions() {
    let dir = tempfile::tempdir().unwrap();
    let config = empty_allow_list(dir.path());
    // Piped all at once: the chat's reader must not take the approvals' lines.
    let ran = run_with_stdin(
        &["chat", "--config", &config],
        &[],
        Some("What is the return window?\ny\nWhat is the return window?\nn\n/quit\n"),
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let outcomes: Vec<String> = ran
        .tool_events()
        .iter()
        .map(|e| e["outcome"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(outcomes, vec!["ok", "declined"], "{}", ran.stderr);
    assert_eq!(ran.server_logs("support").len(), 1, "{}", ran.stderr);
    assert!(
        ran.stdout.contains("policy://larkfield/returns-policy"),
        "the first answer cites the policy it read: {}",
        ran.stdout
    );
}
