//! Time limits, crashes, older servers, and configurations that are wrong: the host says
//! clearly what happened, keeps the other servers, and never panics.

use std::time::Instant;

use serde_json::{Value, json};

use crate::common::{
    process::{LIMIT, Spawn, Stream},
    *,
};

/// The testbed with `env`, its sleep, echo and crash allowed.
fn testbed(env: Value) -> Bed {
    Bed::testbed(
        env,
        json!({"allow": ["testbed__sleep", "testbed__echo", "testbed__crash"]}),
    )
}

/// The testbed with `env`, asked to echo `text`.
fn echo(env: Value, text: &str) -> Ran {
    testbed(env).play(
        json!([{"tool_calls": [{"name": "testbed__echo", "arguments": {"text": text}}]}, {"answer": "ok"}]),
        &[],
    )
}

#[test]
fn a_call_past_the_time_limit_is_cancelled_on_the_server_and_the_loop_goes_on() {
    let started = Instant::now();
    let ran = testbed(json!({})).play_with(
        json!([
            {"tool_calls": [{"name": "testbed__sleep", "arguments": {"seconds": 30, "quiet": true}}]},
            {"tool_calls": [{"name": "testbed__echo", "arguments": {"text": "still here"}}]},
            {"answer": "went on"}
        ]),
        &[],
        &[("HOST_TOOL_TIMEOUT", "0.5")],
    );
    assert!(
        started.elapsed().as_secs() < 20,
        "the host did not wait for the sleeping tool"
    );
    ran.assert_steps(&[
        "host: timed out after 0.5 s: the call was cancelled on the server (a longer limit: toolTimeoutMs in the servers file, or HOST_TOOL_TIMEOUT; progress from the server extends it up to toolMaxTimeoutMs)",
    ]);
    let steps = ran.step_texts();
    assert_eq!(ran.answer(), "went on");
    let logs = ran.server_logs("testbed");
    assert!(
        logs.iter()
            .any(|l| l["event"] == "cancelled" && l["tool"] == "sleep"),
        "the server saw the cancellation: {}",
        ran.stderr
    );
    assert!(
        steps
            .iter()
            .filter(|s| s.starts_with("server: result"))
            .count()
            == 1,
        "echo ran after the timeout"
    );
}

#[test]
fn a_bad_time_limit_in_the_environment_is_a_clear_error() {
    let ran = run(&["ask", "x"], &[("HOST_TOOL_TIMEOUT", "soon")]);
    assert_eq!(ran.status, 2);
    ran.assert_stderr("HOST_TOOL_TIMEOUT=\"soon\" is not a number of seconds");
}

#[test]
fn a_server_that_crashes_mid_call_is_reported_and_the_turn_goes_on() {
    let ran = testbed(json!({})).play(
        json!([{"tool_calls": [{"name": "testbed__crash", "arguments": {}}]}, {"answer": "after the crash"}]),
        &[],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    ran.assert_step_starting("host: the call failed:");
    assert_eq!(ran.answer(), "after the crash");
}

#[test]
fn a_server_of_an_older_revision_is_reached_through_initialize() {
    let ran = echo(json!({"TESTBED_MAX_VERSION": "2025-11-25"}), "old");
    assert_eq!(
        ran.step_data()[0]["protocol"],
        "2025-11-25",
        "{}",
        ran.stdout
    );
    ran.assert_step_starting("server: result: ");
}

#[test]
fn a_config_that_is_not_json_names_the_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.json");
    std::fs::write(
        &path,
        "{\n  \"mcpServers\": {\n    \"x\": {\"command\": \"a\",}\n  }\n}\n",
    )
    .unwrap();
    let ran = run(&["ask", "x", "--config", path.to_str().unwrap()], &[]);
    assert_eq!(ran.status, 2);
    ran.assert_stderr("is not valid JSON");
    ran.assert_stderr("line 3");
}

#[test]
fn broken_servers_are_named_with_their_cause_and_the_others_keep_working() {
    let bed = Bed::new(
        json!({
            "ghost": {"command": "/nonexistent/mcp-server"},
            "quitter": builtin_server("testbed", json!({"TESTBED_START": "exit"})),
            "babbler": builtin_server("testbed", json!({"TESTBED_START": "garbage-exit"})),
            "nocommand": {"args": ["x"]},
            "support": builtin_server("support", json!({}))
        }),
        json!({"allow": ["support__search_knowledge"]}),
    );
    let ran = bed.run(&["ask", "What is the return window?", "--json"]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let steps = ran.step_texts().join("\n");
    assert!(
        steps.contains("server nocommand is not used: no \"command\" to start the server with"),
        "{steps}"
    );
    assert!(steps.contains("server unavailable: server ghost: cannot start `/nonexistent/mcp-server`: no such command"), "{steps}");
    assert!(
        steps.contains("server unavailable: server quitter: the server exited"),
        "{steps}"
    );
    assert!(
        steps.contains("refusing to start"),
        "the server's own words are kept: {steps}"
    );
    assert!(
        steps.contains("server unavailable: server babbler: the server exited"),
        "{steps}"
    );
    assert!(steps.contains("discovered 2 tools on support"), "{steps}");
    assert!(ran.answer().contains("policy://larkfield/returns-policy"));
}

#[test]
fn a_server_that_never_answers_times_out_at_start() {
    let bed = Bed::new(
        json!({"mute": {"command": "sleep", "args": ["30"]},
               "support": builtin_server("support", json!({}))}),
        json!({"connectTimeoutMs": 700, "allow": ["support__search_knowledge"]}),
    );
    let started = Instant::now();
    let ran = bed.run(&["ask", "What is the return window?", "--json"]);
    assert!(started.elapsed().as_secs() < 15);
    let steps = ran.step_texts().join("\n");
    assert!(
        steps.contains("server unavailable: server mute: no answer within 0.7 s of starting"),
        "{steps}"
    );
    assert!(ran.answer().contains("Returns policy"));
}

#[test]
fn garbage_lines_before_real_messages_are_skipped() {
    let ran = echo(json!({"TESTBED_START": "garbage"}), "fine");
    assert!(
        ran.step_texts()[0].starts_with("host: discovered 14 tools on testbed"),
        "{:?}",
        ran.step_texts()
    );
}

#[test]
fn an_unknown_model_is_a_clear_error() {
    let ran = run(&["ask", "x", "--model", "oracle"], &[]);
    assert_eq!(ran.status, 2);
    ran.assert_stderr("unknown model \"oracle\"");
}

#[test]
fn a_server_that_keeps_asking_is_stopped_at_the_round_cap() {
    let bed = Bed::testbed(
        json!({}),
        json!({"allow": ["testbed__ask_forever"], "maxInputRounds": 3}),
    );
    let ran = bed.play(
        json!([{"tool_calls": [{"name": "testbed__ask_forever", "arguments": {}}]}, {"answer": "stopped"}]),
        &["--answer", "again=true"],
    );
    let steps = ran.step_texts();
    assert_eq!(
        steps
            .iter()
            .filter(|s| s.starts_with("server: testbed asks: Round"))
            .count(),
        3,
        "{steps:?}"
    );
    ran.assert_steps(&["host: the call failed: the server asked for input more than 3 times in one call; the host stopped"]);
    assert_eq!(ran.answer(), "stopped");
    assert_eq!(ran.tool_events()[0]["asked_user"], true);
}

#[test]
fn a_url_question_shows_the_whole_url_and_without_a_person_is_declined() {
    let bed = Bed::testbed(json!({}), json!({"allow": ["testbed__ask_url"]}));
    let ran = bed.play(
        json!([{"tool_calls": [{"name": "testbed__ask_url", "arguments": {}}]}, {"answer": "ok"}]),
        &[],
    );
    let steps = ran.steps();
    let asked = steps
        .iter()
        .find(|s| s["text"].as_str().unwrap().starts_with("testbed asks:"))
        .unwrap();
    assert_eq!(asked["data"]["mode"], "url");
    assert_eq!(
        asked["data"]["url"],
        "https://changes.example.com/approve?change=CHG-2291"
    );
    let answered = steps.iter().find(|s| s["who"] == "person").unwrap();
    assert_eq!(answered["text"], "answered decline");
    assert_eq!(
        answered["data"]["answered"],
        "by default: nobody could answer"
    );
}

#[test]
fn ctrl_c_stops_the_call_in_flight_and_the_turn_goes_on() {
    let bed = testbed(json!({}));
    let model = bed.model(json!([
        {"tool_calls": [{"name": "testbed__sleep", "arguments": {"seconds": 60}}]},
        {"answer": "after the stop"}
    ]));
    let host = Spawn::new(
        gatehouse_command(&ask_args(&bed.config, &model, &[]), &[]),
        "gatehouse ask",
    )
    .watched(Stream::Stderr);
    // The call is in flight once the server says it sleeps (its stderr, relayed).
    host.wait_for_line(r#"[testbed stderr] {"event":"sleeping""#, LIMIT);
    assert!(host.signal("INT"));
    let ran = host.wait(LIMIT);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    ran.assert_steps(&["person: stopped the call: it was cancelled on the server"]);
    assert_eq!(ran.answer(), "after the stop");
    assert_eq!(ran.tool_events()[0]["outcome"], "stopped");
    assert!(ran.server_saw("testbed", "cancelled"), "{}", ran.stderr);
}
