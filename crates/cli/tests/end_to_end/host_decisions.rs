//! The host's decisions on proposals: the allow-list, the person's answer, and every
//! refusal, proposed through the playback model so anything can be proposed.

use crate::common;

use common::*;
use serde_json::{Value, json};

/// A servers file with the support server and an empty allow-list.
fn empty_allow_list() -> Bed {
    Bed::new(
        json!({"support": builtin_server("support", json!({}))}),
        json!({"allow": []}),
    )
}

/// "What is the return window?" with an empty allow-list, and the person's `answer`
/// options.
fn return_window(answer: &[&str]) -> Ran {
    let mut args = vec!["ask", "What is the return window?", "--json"];
    args.extend_from_slice(answer);
    empty_allow_list().run(&args)
}

#[test]
fn an_empty_allow_list_asks_and_no_sends_nothing() {
    let ran = return_window(&["--no"]);
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
    ran.assert_quiet("support", "nothing was sent");
}

#[test]
fn an_empty_allow_list_with_yes_runs_the_call() {
    let ran = return_window(&["--yes"]);
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
    // stdin is closed: nobody can type y.
    let ran = return_window(&[]);
    ran.assert_steps(&["person: said no"]);
    assert!(ran.server_logs("support").is_empty());
}

#[test]
fn every_refusal_goes_back_to_the_model_and_nothing_is_sent() {
    let bed = empty_allow_list();
    let model = bed.model(json!([
            {"tool_calls": [{"name": "support__delete_everything", "arguments": {}}]},
            {"tool_calls": [{"name": "support__search_knowledge", "arguments": {"query": "x".repeat(50_000)}}]},
            {"tool_calls": [{"name": "support__search_knowledge", "arguments": "{\"query\": \"returns\""}]},
            {"tool_calls": [{"name": "support__search_knowledge", "arguments": "[\"returns\"]"}]},
            {"tool_calls": [{"name": "support__get_ticket", "arguments": {"ticket_id": "T-30002"}}]},
            {"answer": "done"}
    ]));
    let ran = bed.run(&["ask", "anything", "--model", &model, "--no", "--json"]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let refusals: Vec<(String, Value)> = ran
        .steps()
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
    ran.assert_steps(&["person: said no"]);
    assert_eq!(ran.answer(), "done");
    ran.assert_quiet("support", "no call reached the server");
}

#[test]
fn two_calls_in_one_decision_run_in_order() {
    let model = play_model(json!([
        {"tool_calls": [
            {"name": "support__get_ticket", "arguments": {"ticket_id": "T-30002"}},
            {"name": "support__search_knowledge", "arguments": {"query": "duplicate charge refund"}}
        ]},
        {"answer": "both done"}
    ]));
    let ran = run(&["ask", "x", "--model", &model, "--json"], &[]);
    let logs = ran.server_logs("support");
    assert_eq!(logs.len(), 2);
    assert_eq!(logs[0]["tool"], "get_ticket");
    assert_eq!(logs[1]["tool"], "search_knowledge");
    let wants = ran.steps_starting("model: wants");
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
    let call = json!({"tool_calls": [{"name": "support__search_knowledge", "arguments": {"query": "returns"}}]});
    let model = play_model(json!(vec![call; 10]));
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
    let bed = Bed::testbed(json!({}), json!({"allow": ["testbed__repeat"]}));
    let ran = bed.play(
        json!([{"tool_calls": [{"name": "testbed__repeat", "arguments": {"text": "abc ", "times": 5000}}]}, {"answer": "ok"}]),
        &[],
    );
    let step = ran
        .steps()
        .into_iter()
        .find(|s| s["who"] == "server")
        .unwrap();
    assert_eq!(step["data"]["clipped"], true, "{step}");
    assert_eq!(step["text"], "result: 4000 characters");
}

#[test]
fn in_a_chat_at_a_terminal_the_answers_to_approvals_are_read_from_the_same_terminal() {
    let bed = empty_allow_list();
    let question = "What is the return window?";
    // Each line typed when its prompt shows: the chat's reader must not take the
    // approvals' lines (a pipe answers no approval at all: no_terminal.rs).
    let screen = crate::common::at_terminal_in(
        bed.path(),
        &["chat", "--config", &bed.config],
        &[
            ("you> ", question),
            ("Run it? [y/N]", "y"),
            ("you> ", question),
            ("Run it? [y/N]", "n"),
            ("you> ", "/quit"),
        ],
        &[],
    );
    let outcomes: Vec<&str> = screen
        .lines()
        .filter(|l| l.contains("[person] said "))
        .collect();
    assert_eq!(outcomes.len(), 2, "{screen}");
    assert!(outcomes[0].contains("said yes"), "{screen}");
    assert!(outcomes[1].contains("said no"), "{screen}");
    let first_answer = &screen[..screen.find("said no").unwrap()];
    assert!(
        first_answer.contains("policy://larkfield/returns-policy"),
        "the first answer cites the policy it read: {screen}"
    );
}

/// The `host.tool_call` record says who let a call run: the person who said yes at the
/// terminal (asked, though the server asked nothing), `--yes`, or the allow-list (nobody
/// asked); a call the person refused was approved by nobody, and they were asked.
#[test]
fn the_tool_call_record_says_who_approved_the_call() {
    let bed = empty_allow_list();
    let records = |log: &std::path::Path| -> Vec<Value> {
        std::fs::read_to_string(log)
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|r| r["operation"] == "host.tool_call")
            .collect()
    };
    let question = "What is the return window?";
    let log = bed.path().join("person.jsonl");
    let log_arg = log.to_str().unwrap();
    crate::common::at_terminal_in(
        bed.path(),
        &["ask", question, "--config", &bed.config, "--log", log_arg],
        &[("Run it? [y/N]", "y")],
        &[],
    );
    let said_yes = records(&log);
    assert_eq!(
        (
            &said_yes[0]["approved_by"],
            &said_yes[0]["asked_user"],
            &said_yes[0]["server_asked"]
        ),
        (&json!("person"), &json!(true), &json!(false)),
        "{said_yes:#?}"
    );
    let by_option = return_window(&["--yes"]).tool_events();
    assert_eq!(by_option[0]["approved_by"], "option", "{by_option:#?}");
    assert_eq!(by_option[0]["asked_user"], true);
    let refused = return_window(&["--no"]).tool_events();
    assert_eq!(refused[0]["outcome"], "declined", "{refused:#?}");
    assert_eq!(refused[0]["approved_by"], Value::Null);
    assert_eq!(refused[0]["asked_user"], true);
    let allowed = Bed::new(
        json!({"support": builtin_server("support", json!({}))}),
        json!({"allow": ["support__search_knowledge"]}),
    )
    .run(&["ask", question, "--json"])
    .tool_events();
    assert_eq!(allowed[0]["approved_by"], "allow_list", "{allowed:#?}");
    assert_eq!(allowed[0]["asked_user"], false);
}
