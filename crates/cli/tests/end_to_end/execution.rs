//! Every kind of result and every way a call ends: schemas, content blocks, structured
//! results, resource links, progress, time limits, long and changing tool lists.

use crate::common;

use common::*;
use serde_json::{Value, json};

fn testbed_config(dir: &std::path::Path, env: Value, allow: &[&str]) -> String {
    write(
        dir,
        "servers.json",
        &json!({"mcpServers": {"testbed": builtin_server("testbed", env)}, "gatehouse": {"allow": allow}}),
    )
}

fn steps(ran: &Ran) -> Vec<Value> {
    ran.json()["steps"].as_array().unwrap().clone()
}

#[test]
fn maya_asks_when_her_order_arrives() {
    let ran = run(&["ask", "When will A-1002 arrive?", "--json"], &[]);
    assert_eq!(
        ran.answer(),
        "Order A-1002 (Air purifier) is being prepared and should arrive on 18 October 2026."
    );
    assert!(
        ran.steps_after_discovery()
            .contains(&"model: wants orders__get_order_status".to_string())
    );
}

#[test]
fn arguments_that_break_the_schema_go_back_to_the_model_with_every_problem() {
    let dir = tempfile::tempdir().unwrap();
    let model = playback(
        dir.path(),
        json!([
            {"tool_calls": [{"name": "orders__export_report", "arguments": {"rows": 0}}]},
            {"tool_calls": [{"name": "support__get_ticket", "arguments": {"ticket": "T-30002"}}]},
            {"tool_calls": [{"name": "tickets__open_ticket", "arguments": {"host": "jump-prod-02"}}]},
            {"answer": "ok"}
        ]),
    );
    let ran = run(&["ask", "x", "--model", &model, "--yes", "--json"], &[]);
    let refused: Vec<Value> = steps(&ran)
        .into_iter()
        .filter(|s| {
            s["text"]
                .as_str()
                .unwrap()
                .starts_with("refused: the arguments do not fit")
        })
        .collect();
    assert_eq!(refused.len(), 3, "{:?}", ran.step_texts());
    assert_eq!(
        refused[0]["data"]["problems"],
        json!(["\"rows\" must be at least 1"])
    );
    let problems = refused[1]["data"]["problems"].as_array().unwrap();
    assert!(
        problems.contains(&json!("missing required property \"ticket_id\"")),
        "{problems:?}"
    );
    assert_eq!(
        refused[2]["data"]["problems"],
        json!(["missing required property \"summary\""])
    );
    // Nothing reached a server, and not even the person was asked for open_ticket.
    for server in ["orders", "support", "tickets"] {
        assert!(
            ran.mcp_requests(server)
                .iter()
                .all(|r| r["method"] != "tools/call"),
            "{server}"
        );
    }
    assert!(
        !ran.step_texts()
            .iter()
            .any(|s| s.contains("ask the person"))
    );
    assert!(ran.tool_events().iter().all(|e| e["outcome"] == "refused"));
}

#[test]
fn a_tool_with_a_broken_schema_is_left_out_and_said_so() {
    let dir = tempfile::tempdir().unwrap();
    let config = testbed_config(dir.path(), json!({}), &[]);
    let tools = run(&["tools", "--config", &config, "--json"], &[]);
    let names: Vec<String> = serde_json::from_str::<Vec<Value>>(&tools.stdout)
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(!names.contains(&"testbed__broken_schema".to_string()));
    assert!(names.contains(&"testbed__echo".to_string()));
    assert!(
        tools.stderr.contains(
            "testbed's tool \"broken_schema\" is left out: its input schema does not compile"
        ),
        "{}",
        tools.stderr
    );
}

#[test]
fn every_content_block_is_kept_for_the_model_and_binaries_saved_for_the_person() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("saved");
    let config = write(
        dir.path(),
        "servers.json",
        &json!({"mcpServers": {"testbed": builtin_server("testbed", json!({}))},
                "gatehouse": {"allow": ["testbed__content"], "saveDir": save}}),
    );
    let model = playback(
        dir.path(),
        json!([{"tool_calls": [{"name": "testbed__content", "arguments": {"kind": "all"}}]}, {"answer": "ok"}]),
    );
    let ran = run(
        &["ask", "x", "--config", &config, "--model", &model, "--json"],
        &[],
    );
    let saved: Vec<Value> = steps(&ran)
        .into_iter()
        .filter(|s| s["text"].as_str().unwrap().contains(" saved to "))
        .collect();
    let kinds: Vec<&str> = saved
        .iter()
        .map(|s| s["data"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        vec!["image", "audio", "resource"],
        "{:?}",
        ran.step_texts()
    );
    for s in &saved {
        let path = std::path::Path::new(s["data"]["path"].as_str().unwrap());
        assert!(path.starts_with(&save));
        assert_eq!(
            std::fs::metadata(path).unwrap().len(),
            s["data"]["bytes"].as_u64().unwrap()
        );
    }
    assert!(
        ran.step_texts().contains(
            &"server: for the person only: Shown to the person only: the export finished at 14:02."
                .to_string()
        ),
        "{:?}",
        ran.step_texts()
    );
    let png = std::fs::read(saved[0]["data"]["path"].as_str().unwrap()).unwrap();
    assert_eq!(&png[..4], b"\x89PNG");
    let result = steps(&ran)
        .into_iter()
        .find(|s| s["text"].as_str().unwrap().starts_with("result: "))
        .unwrap();
    assert_eq!(result["data"]["clipped"], false);
}

#[test]
fn a_result_that_breaks_its_own_output_schema_is_a_tool_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = testbed_config(dir.path(), json!({}), &["testbed__bad_output"]);
    let model = playback(
        dir.path(),
        json!([{"tool_calls": [{"name": "testbed__bad_output", "arguments": {}}]}, {"answer": "ok"}]),
    );
    let ran = run(
        &["ask", "x", "--config", &config, "--model", &model, "--json"],
        &[],
    );
    assert!(ran.step_texts().contains(&"server: tool error: the result does not match the tool's output schema: \"count\" must be of type integer".to_string()), "{:?}", ran.step_texts());
    assert_eq!(ran.tool_events()[0]["outcome"], "tool_error");
}

#[test]
fn an_unknown_tool_is_handled_in_both_forms() {
    let dir = tempfile::tempdir().unwrap();
    let config = testbed_config(
        dir.path(),
        json!({}),
        &["testbed__ghost_rpc", "testbed__ghost_result"],
    );
    let model = playback(
        dir.path(),
        json!([{"tool_calls": [{"name": "testbed__ghost_rpc", "arguments": {}}, {"name": "testbed__ghost_result", "arguments": {}}]}, {"answer": "ok"}]),
    );
    let ran = run(
        &["ask", "x", "--config", &config, "--model", &model, "--json"],
        &[],
    );
    let texts = ran.step_texts();
    assert!(
        texts.contains(&"server: protocol error -32602: tool not found: ghost_rpc".to_string()),
        "{texts:?}"
    );
    assert!(
        texts.contains(&"server: tool error: Unknown tool: ghost_result".to_string()),
        "{texts:?}"
    );
    let outcomes: Vec<&str> = ran
        .tool_events()
        .iter()
        .map(|e| e["outcome"].as_str().unwrap().to_owned())
        .collect::<Vec<_>>()
        .leak()
        .iter()
        .map(|s| s.as_str())
        .collect();
    assert_eq!(outcomes, vec!["error", "tool_error"]);
    assert_eq!(ran.answer(), "ok");
}

#[test]
fn linked_resources_can_be_read_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let model = playback(
        dir.path(),
        json!([
            {"tool_calls": [{"name": "read_resource", "arguments": {"uri": "orders://A-1002"}}]},
            {"tool_calls": [{"name": "orders__get_order_status", "arguments": {"order_id": "A-1002"}}]},
            {"tool_calls": [{"name": "read_resource", "arguments": {"uri": "orders://A-1002"}}]},
            {"tool_calls": [{"name": "read_resource", "arguments": {"uri": "orders://A-1001"}}]},
            {"tool_calls": [{"name": "support__search_knowledge", "arguments": {"query": "double charge"}}]},
            {"tool_calls": [{"name": "read_resource", "arguments": {"uri": "policy://larkfield/refunds-and-payments"}}]},
            {"answer": "ok"}
        ]),
    );
    let ran = run(&["ask", "x", "--model", &model, "--json"], &[]);
    let events = ran.tool_events();
    let outcomes: Vec<&str> = events
        .iter()
        .map(|e| e["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        vec!["refused", "ok", "ok", "refused", "ok", "ok"],
        "{:?}",
        ran.step_texts()
    );
    assert!(ran.step_texts().contains(&"host: refused: orders://A-1001 did not appear in this turn's results; only linked resources can be read".to_string()));
    let reads: Vec<Value> = ran
        .mcp_requests("orders")
        .into_iter()
        .filter(|r| r["method"] == "resources/read")
        .collect();
    assert_eq!(reads.len(), 1);
    assert_eq!(reads[0]["name"], "orders://A-1002");
    assert_eq!(
        reads[0]["step"], 3,
        "the read carries the trace like any call"
    );
    assert!(
        ran.mcp_requests("support")
            .iter()
            .any(|r| r["method"] == "resources/read"
                && r["name"] == "policy://larkfield/refunds-and-payments")
    );
}

#[test]
fn progress_is_recorded_and_extends_the_time_limit_up_to_the_hard_maximum() {
    let dir = tempfile::tempdir().unwrap();
    let model = playback(
        dir.path(),
        json!([{"tool_calls": [{"name": "orders__export_report", "arguments": {"rows": 20000}}]}, {"answer": "ok"}]),
    );
    // Each server round may go 0.4 s without news; the report takes about a second.
    let ran = run(
        &["ask", "x", "--model", &model, "--json"],
        &[("HOST_TOOL_TIMEOUT", "0.4")],
    );
    let progress: Vec<Value> = steps(&ran)
        .into_iter()
        .filter(|s| s["text"].as_str().unwrap().starts_with("progress "))
        .collect();
    // Every chunk of 500 rows (`orders::EXPORT_CHUNK_ROWS`), and all of them: the server
    // sends its last progress before its answer, and the host shows it before the result,
    // whichever task reads what first.
    let amounts: Vec<f64> = progress
        .iter()
        .map(|p| p["data"]["progress"].as_f64().unwrap())
        .collect();
    let every_chunk: Vec<f64> = (1..=40).map(|k| f64::from(k) * 500.0).collect();
    assert_eq!(amounts, every_chunk);
    let texts = ran.step_texts();
    let last_progress = texts
        .iter()
        .rposition(|t| t.starts_with("server: progress "))
        .unwrap();
    let result = texts
        .iter()
        .position(|t| t.starts_with("server: result: "))
        .unwrap();
    assert!(last_progress < result, "{texts:?}");
    assert_eq!(progress[0]["who"], "server");
    assert_eq!(ran.tool_events()[0]["outcome"], "ok");

    // With a hard maximum below the call's length, progress no longer saves it.
    let dir = tempfile::tempdir().unwrap();
    let config = testbed_config(dir.path(), json!({}), &["testbed__sleep"]);
    let model = playback(
        dir.path(),
        json!([{"tool_calls": [{"name": "testbed__sleep", "arguments": {"seconds": 5}}]}, {"answer": "ok"}]),
    );
    let started = std::time::Instant::now();
    let ran = run(
        &["ask", "x", "--config", &config, "--model", &model, "--json"],
        &[
            ("HOST_TOOL_TIMEOUT", "0.3"),
            ("HOST_TOOL_MAX_TIMEOUT", "0.9"),
        ],
    );
    assert!(started.elapsed().as_secs_f64() < 4.5);
    assert_eq!(ran.tool_events()[0]["outcome"], "timeout");
    assert!(
        steps(&ran)
            .iter()
            .filter(|s| s["text"].as_str().unwrap().starts_with("progress "))
            .count()
            >= 3
    );
    assert!(
        ran.server_logs("testbed")
            .iter()
            .any(|l| l["event"] == "cancelled"),
        "{}",
        ran.stderr
    );
}

#[test]
fn a_long_paged_list_is_read_to_the_end_and_the_page_count_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let config = testbed_config(
        dir.path(),
        json!({"TESTBED_TOOLS": "250", "TESTBED_PAGE_SIZE": "40"}),
        &["testbed__gen_0250"],
    );
    let model = playback(
        dir.path(),
        json!([{"tool_calls": [{"name": "testbed__gen_0250", "arguments": {"query": "last"}}]}, {"answer": "ok"}]),
    );
    let ran = run(
        &["ask", "x", "--config", &config, "--model", &model, "--json"],
        &[],
    );
    assert!(
        ran.step_texts()[0].starts_with("host: discovered 263 tools on testbed"),
        "{:?}",
        &ran.step_texts()[0][..80]
    );
    assert_eq!(ran.tool_events()[0]["outcome"], "ok");

    let config = testbed_config(
        dir.path(),
        json!({"TESTBED_TOOLS": "250", "TESTBED_PAGE_SIZE": "1"}),
        &[],
    );
    let ran = run(&["ask", "x", "--config", &config, "--json"], &[]);
    assert!(
        ran.step_texts()[0].contains("tools/list did not end after 100 pages"),
        "{:?}",
        ran.step_texts()
    );
}

fn list_change_flow(env: Value) {
    let dir = tempfile::tempdir().unwrap();
    let config = testbed_config(dir.path(), env, &["testbed__add_tool"]);
    let model = playback(
        dir.path(),
        json!([
            {"tool_calls": [{"name": "testbed__add_tool", "arguments": {"name": "fresh"}}]},
            {"tool_calls": [{"name": "testbed__fresh", "arguments": {}}]},
            {"answer": "ok"}
        ]),
    );
    let ran = run(
        &[
            "ask", "x", "--config", &config, "--model", &model, "--yes", "--json",
        ],
        &[],
    );
    let changed = steps(&ran)
        .into_iter()
        .find(|s| s["text"] == "the tool list of testbed changed")
        .unwrap_or_else(|| panic!("{:?}", ran.step_texts()));
    assert_eq!(changed["data"]["added"], json!(["fresh"]));
    let events = ran.tool_events();
    assert_eq!(events[1]["tool"], "testbed__fresh");
    assert_eq!(events[1]["outcome"], "ok", "{:?}", ran.step_texts());
}

#[test]
fn a_changed_list_is_read_again_on_2026_07_28_through_listen() {
    list_change_flow(json!({}));
}

#[test]
fn a_changed_list_is_read_again_on_older_revisions_through_the_notification() {
    list_change_flow(json!({"TESTBED_MAX_VERSION": "2025-11-25"}));
}

#[test]
fn a_tool_that_changes_after_it_was_allowed_is_asked_about_again() {
    let dir = tempfile::tempdir().unwrap();
    let config = testbed_config(
        dir.path(),
        json!({}),
        &["testbed__echo", "testbed__change_echo"],
    );
    let model = playback(
        dir.path(),
        json!([
            {"tool_calls": [{"name": "testbed__echo", "arguments": {"text": "one"}}]},
            {"tool_calls": [{"name": "testbed__change_echo", "arguments": {"description": "Return the text, and also e-mail it to everyone."}}]},
            {"tool_calls": [{"name": "testbed__echo", "arguments": {"text": "two"}}]},
            {"answer": "ok"}
        ]),
    );
    let ran = run(
        &[
            "ask", "x", "--config", &config, "--model", &model, "--no", "--json",
        ],
        &[],
    );
    let texts = ran.step_texts();
    assert!(texts.contains(&"host: testbed__echo changed since it was put on the allow-list: the person will be asked before its next call".to_string()), "{texts:?}");
    assert!(
        texts.contains(
            &"host: changed since it was put on the allow-list: ask the person".to_string()
        ),
        "{texts:?}"
    );
    let outcomes: Vec<String> = ran
        .tool_events()
        .iter()
        .map(|e| e["outcome"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(outcomes, vec!["ok", "ok", "declined"]);
}

#[test]
fn a_chat_rereads_lists_whose_ttl_ran_out_between_turns() {
    let ran = run_with_stdin(
        &["chat"],
        &[],
        Some("What is the return window?\nWhat is the return window?\n/quit\n"),
    );
    let lists = ran
        .mcp_requests("support")
        .into_iter()
        .filter(|r| r["method"] == "tools/list")
        .count();
    assert_eq!(
        lists, 2,
        "ttlMs is 0: one list at start, one more before the second turn"
    );
}
