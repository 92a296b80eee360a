//! Foreign MCP servers under the Gatehouse host, over stdio: the npm reference servers
//! (`server-everything`, `server-filesystem`, `server-memory` 2026.8.31, TS SDK 1.32.2,
//! revisions up to 2025-11-25) and two servers on the official Python SDK 2.3.0
//! (`tests/peers/py_confirm_server.py` on 2026-07-28 with `input_required`, and
//! `tests/peers/py_legacy_only_server.py`, which speaks 2025-11-25 only).
//!
//! Each test writes a servers file, starts the real `gatehouse` binary with a playback
//! model, and reads its `--json` run, its stderr and, where the wire matters, its
//! `--record` file. The peers come from `scripts/install-test-peers.sh`; a missing one
//! fails the test and names the command. See docs/interop.md.

use crate::common;
use crate::interop_peers;

use std::{
    path::Path,
    time::{Duration, Instant},
};

use common::{Ran, playback, write};
use interop_peers::*;
use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, RoleClient, ServiceError,
    model::*,
    service::{ClientInitializeError, RequestContext, RunningService},
    transport::TokioChildProcess,
};
use serde_json::{Value, json};

// ------------------------------------------------------------------------------------
// Helpers
// ------------------------------------------------------------------------------------

/// A servers file with these servers and host settings.
fn servers_file(dir: &Path, servers: Value, settings: Value) -> String {
    write(
        dir,
        "servers.json",
        &json!({"mcpServers": servers, "gatehouse": settings}),
    )
}

/// server-everything on stdio.
fn everything() -> Value {
    stdio_server(&node(), &[&npm_server("everything"), "stdio"])
}

/// The tools every server-everything test may run without asking.
const EVERYTHING_ALLOWED: &[&str] = &[
    "everything__get-tiny-image",
    "everything__get-resource-links",
    "everything__get-resource-reference",
    "everything__get-structured-content",
    "everything__get-annotated-message",
    "everything__trigger-long-running-operation",
    "everything__get-sum",
];

fn everything_file(dir: &Path) -> String {
    servers_file(
        dir,
        json!({"everything": everything()}),
        json!({"allow": EVERYTHING_ALLOWED, "saveDir": dir.join("saved")}),
    )
}

/// The steps of a run.
fn steps(ran: &Ran) -> Vec<Value> {
    ran.json()["steps"].as_array().unwrap().clone()
}

/// The messages of a `--record` file between the host and one server, as sent.
fn wire(dir: &Path, server: &str) -> Vec<(String, Value)> {
    json_lines(&dir.join("record.jsonl"))
        .into_iter()
        .filter(|l| l["server"] == server && l["kind"] != "stderr")
        .map(|l| {
            (
                l["direction"].as_str().unwrap().to_owned(),
                l["message"].clone(),
            )
        })
        .collect()
}

/// The result the server sent for the host's `tools/call` of `tool` (the n-th such call).
fn tool_result(wire: &[(String, Value)], tool: &str, n: usize) -> Value {
    let id = wire
        .iter()
        .filter(|(d, m)| {
            d == "to_server" && m["method"] == "tools/call" && m["params"]["name"] == tool
        })
        .nth(n)
        .unwrap_or_else(|| panic!("no tools/call of {tool}"))
        .1["id"]
        .clone();
    wire.iter()
        .find(|(d, m)| d == "from_server" && m["id"] == id && m.get("method").is_none())
        .unwrap_or_else(|| panic!("no answer to the tools/call of {tool}"))
        .1["result"]
        .clone()
}

// ------------------------------------------------------------------------------------
// server-everything
// ------------------------------------------------------------------------------------

#[test]
fn every_foreign_server_is_started_and_listed_by_one_host() {
    let dir = tempfile::tempdir().unwrap();
    let mut memory = stdio_server(&node(), &[&npm_server("memory")]);
    memory["env"] = json!({"MEMORY_FILE_PATH": dir.path().join("memory.jsonl")});
    let config = servers_file(
        dir.path(),
        json!({
            "everything": everything(),
            "files": stdio_server(&node(), &[&npm_server("filesystem"), dir.path().to_str().unwrap()]),
            "memory": memory,
            "confirm": confirm_server(),
            "legacy": stdio_server(&python(), &[&script("py_legacy_only_server.py")]),
        }),
        json!({}),
    );
    let ran = gatehouse(&["tools", "--config", &config, "--json"], &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let rows: Vec<Value> = serde_json::from_str(&ran.stdout).unwrap();
    let row = |name: &str| -> Value {
        rows.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name} is not offered: {rows:?}"))
            .clone()
    };
    for name in [
        "everything__get-tiny-image",
        "files__read_text_file",
        "files__list_allowed_directories",
        "memory__search_nodes",
        "confirm__open_ticket",
        "confirm__list_tickets",
        "legacy__pick_color",
        "read_resource",
    ] {
        row(name);
    }
    // The servers' own hints are shown as they gave them.
    assert_eq!(
        row("files__write_file")["annotations"]["destructive_hint"],
        true
    );
    assert_eq!(
        row("memory__read_graph")["annotations"]["read_only_hint"],
        true
    );
    assert_eq!(row("files__write_file")["server"], "files");
    // The revision each one agreed on, as the discovery lines say.
    for (server, count, protocol) in [
        ("everything", 15, "2025-11-25"),
        ("files", 14, "2025-11-25"),
        ("memory", 9, "2025-11-25"),
        ("confirm", 2, "2026-07-28"),
        ("legacy", 4, "2025-11-25"),
    ] {
        let line = ran
            .stderr
            .lines()
            .find(|l| l.starts_with(&format!("[host] discovered {count} tools on {server}: ")))
            .unwrap_or_else(|| panic!("{server}: {}", ran.stderr));
        assert!(
            line.contains(&format!("{{\"protocol\": \"{protocol}\"")),
            "{line}"
        );
    }
}

#[test]
fn server_everything_offers_every_tool_it_lists_after_falling_back_to_initialize() {
    let dir = tempfile::tempdir().unwrap();
    let tap = dir.path().join("tap.log");
    let tapped_everything = stdio_server(
        &python(),
        &[
            &script("stdio_tap.py"),
            tap.to_str().unwrap(),
            "--",
            &node(),
            &npm_server("everything"),
            "stdio",
        ],
    );
    let config = servers_file(
        dir.path(),
        json!({"everything": tapped_everything}),
        json!({}),
    );
    let ran = gatehouse(&["tools", "--config", &config, "--json"], &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let rows: Vec<Value> = serde_json::from_str(&ran.stdout).unwrap();

    // What the server listed on that very connection (it lists more tools to clients that
    // declare sampling or roots; the host declares elicitation only).
    let tap = tapped(&tap);
    assert_eq!(
        negotiated(&tap),
        ("initialize".to_string(), "2025-11-25".to_string())
    );
    let probe = &tap[0].1;
    assert_eq!(probe["method"], "server/discover", "the host probes first");
    assert!(
        tap.iter()
            .any(|(d, m)| d == "<<" && m["id"] == probe["id"] && m["error"]["code"] == -32601),
        "server-everything answers the probe with -32601"
    );
    let list_ids: Vec<&Value> = tap
        .iter()
        .filter(|(d, m)| d == ">>" && m["method"] == "tools/list")
        .map(|(_, m)| &m["id"])
        .collect();
    let listed: Vec<Value> = tap
        .iter()
        .rfind(|(d, m)| d == "<<" && list_ids.contains(&&m["id"]))
        .expect("a tools/list answer")
        .1["result"]["tools"]
        .as_array()
        .unwrap()
        .clone();
    assert!(listed.len() >= 15, "{}", listed.len());
    for tool in &listed {
        let name = format!("everything__{}", tool["name"].as_str().unwrap());
        let row = rows
            .iter()
            .find(|r| r["name"] == name.as_str())
            .unwrap_or_else(|| panic!("{name} is not offered: {rows:?}"));
        assert_eq!(row["server"], "everything");
        let a = &tool["annotations"];
        assert_eq!(
            row["annotations"]["read_only_hint"], a["readOnlyHint"],
            "{name}"
        );
        assert_eq!(
            row["annotations"]["destructive_hint"], a["destructiveHint"],
            "{name}"
        );
    }
    // Every server tool, and the host's own read_resource (the server has resources).
    assert_eq!(rows.len(), listed.len() + 1, "{rows:?}");
    assert!(rows.iter().any(|r| r["name"] == "read_resource"));
    assert!(
        ran.stderr
            .contains(&format!("discovered {} tools on everything:", listed.len()))
            && ran.stderr.contains("\"protocol\": \"2025-11-25\""),
        "{}",
        ran.stderr
    );
}

#[test]
fn server_everything_images_links_embedded_resources_structured_and_annotated_results() {
    let dir = tempfile::tempdir().unwrap();
    let config = everything_file(dir.path());
    let ran = ask(
        dir.path(),
        &config,
        json!([
            {"tool_calls": [{"name": "everything__get-tiny-image", "arguments": {}}]},
            {"tool_calls": [{"name": "everything__get-resource-links", "arguments": {"count": 2}}]},
            {"tool_calls": [
                {"name": "read_resource", "arguments": {"uri": "demo://resource/dynamic/text/2"}},
                {"name": "read_resource", "arguments": {"uri": "demo://resource/dynamic/blob/1"}}
            ]},
            {"tool_calls": [{"name": "everything__get-resource-reference", "arguments": {"resourceType": "Blob", "resourceId": 4}}]},
            {"tool_calls": [{"name": "everything__get-structured-content", "arguments": {"location": "Chicago"}}]},
            {"tool_calls": [{"name": "everything__get-annotated-message", "arguments": {"messageType": "error", "includeImage": true}}]},
            {"answer": "ok"}
        ]),
        // read_resource is not on the allow-list: the person says yes.
        &["--yes", "--max-steps", "10"],
        &[],
    );
    let found = discovered(&ran, "everything");
    assert_eq!(found["protocol"], "2025-11-25");
    assert_eq!(found["server"], "mcp-servers/everything");
    assert_eq!(found["version"], "2.0.0");
    assert_eq!(outcomes(&ran), vec!["ok"; 7], "{:#?}", ran.step_texts());
    assert_eq!(ran.answer(), "ok");

    // Binary blocks are saved for the person: the image, the blob read through the link,
    // the embedded blob, the annotated message's image.
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
        vec!["image", "resource", "resource", "image"],
        "{:#?}",
        ran.step_texts()
    );
    for s in &saved {
        let path = Path::new(s["data"]["path"].as_str().unwrap());
        assert!(path.starts_with(dir.path().join("saved")), "{path:?}");
        assert_eq!(
            std::fs::metadata(path).unwrap().len(),
            s["data"]["bytes"].as_u64().unwrap()
        );
        assert_eq!(s["data"]["server"], "everything");
    }
    let png = std::fs::read(saved[0]["data"]["path"].as_str().unwrap()).unwrap();
    assert_eq!(&png[..4], b"\x89PNG");
    assert_eq!(saved[0]["data"]["mime"], "image/png");
    let blob = std::fs::read_to_string(saved[1]["data"]["path"].as_str().unwrap()).unwrap();
    assert!(
        blob.starts_with("Resource 1: This is a base64 blob"),
        "{blob}"
    );

    let wire = wire(dir.path(), "everything");
    // The links were followed: only the two URIs the result linked, read from that server.
    let reads: Vec<&Value> = wire
        .iter()
        .filter(|(d, m)| d == "to_server" && m["method"] == "resources/read")
        .map(|(_, m)| &m["params"]["uri"])
        .collect();
    assert_eq!(
        reads,
        vec![
            "demo://resource/dynamic/text/2",
            "demo://resource/dynamic/blob/1"
        ]
    );
    let links = tool_result(&wire, "get-resource-links", 0);
    assert_eq!(
        links["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "resource_link")
            .count(),
        2
    );
    // The structured result was checked against the tool's outputSchema and accepted.
    let structured = tool_result(&wire, "get-structured-content", 0);
    assert_eq!(
        structured["structuredContent"]["temperature"], 36,
        "{structured}"
    );
    assert!(
        !ran.step_texts().iter().any(|t| t.contains("output schema")),
        "{:?}",
        ran.step_texts()
    );
    let annotated = tool_result(&wire, "get-annotated-message", 0);
    assert_eq!(annotated["content"][0]["annotations"]["priority"], 1.0);
    assert_eq!(annotated["content"][1]["type"], "image");
}

#[test]
fn server_everything_long_operation_shows_progress_and_a_short_limit_cancels_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = everything_file(dir.path());
    let started = Instant::now();
    // Each round may go 0.8 s without news, progress extends that to at most 1.5 s: the
    // first operation (1 s, progress every 0.25 s) finishes, the second (3 s) is cancelled.
    let ran = ask(
        dir.path(),
        &config,
        json!([
            {"tool_calls": [{"name": "everything__trigger-long-running-operation", "arguments": {"duration": 1, "steps": 4}}]},
            {"tool_calls": [{"name": "everything__trigger-long-running-operation", "arguments": {"duration": 3, "steps": 6}}]},
            // One more call, so the connection is still open when the cancellation is
            // written (see `ctrl_c_stops_…` below).
            {"tool_calls": [{"name": "everything__get-sum", "arguments": {"a": 2, "b": 3}}]},
            {"answer": "ok"}
        ]),
        &[],
        &[
            ("HOST_TOOL_TIMEOUT", "0.8"),
            ("HOST_TOOL_MAX_TIMEOUT", "1.5"),
        ],
    );
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(
        outcomes(&ran),
        vec!["ok", "timeout", "ok"],
        "{:#?}",
        ran.step_texts()
    );
    let all = steps(&ran);
    let timed_out = all
        .iter()
        .position(|s| {
            let t = s["text"].as_str().unwrap();
            t.starts_with("timed out after ")
                && t.ends_with(": the call was cancelled on the server")
        })
        .unwrap_or_else(|| panic!("{:#?}", ran.step_texts()));
    // Cut at the hard maximum, after progress had extended the 0.8 s limit.
    let limit_ms = all[timed_out]["data"]["timeout_ms"].as_u64().unwrap();
    assert!((1_450..3_000).contains(&limit_ms), "{limit_ms}");
    let progress: Vec<(usize, &Value)> = all
        .iter()
        .enumerate()
        .filter(|(_, s)| s["text"].as_str().unwrap().starts_with("progress "))
        .collect();
    // The first call: at least 3 of its 4 notifications are steps (the last one may come
    // in after the result), in order, with their total.
    let first: Vec<f64> = progress
        .iter()
        .filter(|(_, s)| s["data"]["total"] == 4.0)
        .map(|(_, s)| s["data"]["progress"].as_f64().unwrap())
        .collect();
    assert!(
        first.len() >= 3 && first.windows(2).all(|w| w[0] < w[1]),
        "{first:?}"
    );
    assert_eq!(progress[0].1["who"], "server");
    assert_eq!(
        progress[0].1["data"]["tool"],
        "trigger-long-running-operation"
    );
    // The second: progress before the limit, which it extended past 0.8 s.
    assert!(
        progress
            .iter()
            .filter(|(i, s)| s["data"]["total"] == 6.0 && *i < timed_out)
            .count()
            >= 2,
        "{:#?}",
        ran.step_texts()
    );
    // The server was told: notifications/cancelled for that request, before the next call.
    let wire = wire(dir.path(), "everything");
    assert_cancelled_before_the_next_call(&wire, 1);
}

/// The host sent `notifications/cancelled` for its `n`-th `tools/call`, and before its
/// next request.
fn assert_cancelled_before_the_next_call(wire: &[(String, Value)], n: usize) {
    let sent: Vec<&Value> = wire
        .iter()
        .filter(|(d, _)| d == "to_server")
        .map(|(_, m)| m)
        .collect();
    let call = sent
        .iter()
        .filter(|m| m["method"] == "tools/call")
        .nth(n)
        .expect("the call")["id"]
        .clone();
    let cancelled = sent
        .iter()
        .position(|m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == call)
        .unwrap_or_else(|| panic!("no notifications/cancelled for request {call}: {sent:#?}"));
    let next = sent
        .iter()
        .rposition(|m| m["method"] == "tools/call")
        .unwrap();
    assert!(cancelled < next, "{sent:#?}");
    assert!(
        !wire
            .iter()
            .any(|(d, m)| d == "from_server" && m["id"] == call && m.get("result").is_some()),
        "the cancelled call never got its result"
    );
}

/// Ctrl-C stops the call in flight. The turn goes on with one more call: when the stopped
/// call is the turn's last, the host may close the connection before rmcp writes the
/// best-effort `notifications/cancelled` (a host problem, see docs/interop.md).
#[test]
fn ctrl_c_stops_server_everythings_long_operation_and_the_turn_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let config = everything_file(dir.path());
    let model = playback(
        dir.path(),
        json!([
            {"tool_calls": [{"name": "everything__trigger-long-running-operation", "arguments": {"duration": 4, "steps": 8}}]},
            {"tool_calls": [{"name": "everything__get-sum", "arguments": {"a": 2, "b": 3}}]},
            {"answer": "ok"}
        ]),
    );
    let record = dir.path().join("record.jsonl");
    let child = gatehouse_command(
        &[
            "ask",
            "x",
            "--config",
            &config,
            "--model",
            &model,
            "--json",
            "--record",
            record.to_str().unwrap(),
        ],
        &[],
    )
    .spawn()
    .unwrap();
    let pid = child.id();
    // Wait until the call is in flight (its first progress is on the record).
    let deadline = Instant::now() + Duration::from_secs(15);
    while !json_lines(&record)
        .iter()
        .any(|l| l["method"] == "notifications/progress")
    {
        assert!(
            Instant::now() < deadline,
            "the operation never reported progress"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let ran = wait_bounded(child, "gatehouse (after Ctrl-C)", PEER_LIMIT);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains("[host] stopping the call in flight; press Ctrl-C again to quit"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.step_texts()
            .contains(&"person: stopped the call: it was cancelled on the server".to_string()),
        "{:#?}",
        ran.step_texts()
    );
    assert_eq!(outcomes(&ran), vec!["stopped", "ok"]);
    assert_eq!(ran.answer(), "ok", "the model heard it and went on");
    assert_cancelled_before_the_next_call(&wire(dir.path(), "everything"), 0);
}

/// The form server-everything sends, as the host answered it on the wire.
fn everything_form_answer(dir: &Path) -> Value {
    let wire = wire(dir, "everything");
    let asked = wire
        .iter()
        .find(|(d, m)| d == "from_server" && m["method"] == "elicitation/create")
        .expect("server-everything asked with elicitation/create")
        .1
        .clone();
    assert_eq!(
        asked["params"]["requestedSchema"]["required"],
        json!(["name"])
    );
    wire.iter()
        .find(|(d, m)| d == "to_server" && m["id"] == asked["id"] && m.get("method").is_none())
        .expect("the host answered the form")
        .1["result"]
        .clone()
}

#[test]
fn server_everythings_form_is_answered_by_answer_options_and_declined_by_default() {
    let decisions = json!([
        {"tool_calls": [{"name": "everything__trigger-elicitation-request", "arguments": {}}]},
        {"answer": "ok"}
    ]);
    // Accepted with the person's --answer values, typed by the form's schema.
    let dir = tempfile::tempdir().unwrap();
    let config = everything_file(dir.path());
    let ran = ask(
        dir.path(),
        &config,
        decisions.clone(),
        &[
            "--yes",
            "--answer",
            "name=Sam Lee",
            "--answer",
            "check=true",
            "--answer",
            "integer=7",
            "--answer",
            "untitledSingleSelectEnum=Joey",
        ],
        &[],
    );
    // The tool is not on the allow-list (it is not read-only): the person approved it.
    assert!(ran.step_texts().contains(&"person: said yes".to_string()));
    assert_eq!(outcomes(&ran), vec!["ok"]);
    assert_eq!(
        everything_form_answer(dir.path()),
        json!({"action": "accept", "content": {"name": "Sam Lee", "check": true, "integer": 7, "untitledSingleSelectEnum": "Joey"}})
    );
    let result = texts(&tool_result(
        &wire(dir.path(), "everything"),
        "trigger-elicitation-request",
        0,
    ));
    assert!(
        result.contains("- Name: Sam Lee")
            && result.contains("- Agreed to terms: true")
            && result.contains("- Favorite Integer: 7"),
        "{result}"
    );

    // --decline declines it.
    let dir = tempfile::tempdir().unwrap();
    let config = everything_file(dir.path());
    ask(
        dir.path(),
        &config,
        decisions.clone(),
        &["--yes", "--decline"],
        &[],
    );
    assert_eq!(
        everything_form_answer(dir.path()),
        json!({"action": "decline"})
    );
    let result = texts(&tool_result(
        &wire(dir.path(), "everything"),
        "trigger-elicitation-request",
        0,
    ));
    assert!(result.contains("User declined"), "{result}");

    // No options and no terminal: nobody can answer, so the answer is no.
    let dir = tempfile::tempdir().unwrap();
    let config = everything_file(dir.path());
    ask(dir.path(), &config, decisions, &["--yes"], &[]);
    assert_eq!(
        everything_form_answer(dir.path()),
        json!({"action": "decline"})
    );
}

/// Host problem (see docs/interop.md, "Problems found"): a form that arrives as
/// `elicitation/create` (every server on revisions up to 2025-11-25) is answered without
/// a step, so `--json` and the terminal never show which server asked what and what the
/// person answered, and the call's `host.tool_call` record says `asked_user: false`.
/// The `input_required` path (dispatch.rs) does show both.
#[test]
fn a_form_from_an_older_server_is_shown_like_an_input_required_one() {
    let dir = tempfile::tempdir().unwrap();
    let config = everything_file(dir.path());
    let ran = ask(
        dir.path(),
        &config,
        json!([
            {"tool_calls": [{"name": "everything__trigger-elicitation-request", "arguments": {}}]},
            {"answer": "ok"}
        ]),
        &["--yes", "--answer", "name=Sam"],
        &[],
    );
    let texts = ran.step_texts();
    assert!(
        texts.contains(
            &"server: everything asks: Please provide inputs for the following fields:".to_string()
        ),
        "{texts:#?}"
    );
    assert!(
        texts.contains(&"person: answered accept".to_string()),
        "{texts:#?}"
    );
    assert_eq!(ran.tool_events()[0]["asked_user"], true);
}

/// Host problem: answers given with --answer are checked against `enum` only. A number
/// above the field's `maximum`, or a choice outside a titled enum (`oneOf`), is sent as
/// given, and a multiple-choice field (`type: array`) is sent as one string. The host
/// declines a form answer that does not fit (as it does for an unknown `enum` value).
#[test]
fn form_answers_are_checked_against_the_whole_field_schema() {
    let decisions = json!([
        {"tool_calls": [{"name": "everything__trigger-elicitation-request", "arguments": {}}]},
        {"answer": "ok"}
    ]);
    let dir = tempfile::tempdir().unwrap();
    let config = everything_file(dir.path());
    ask(
        dir.path(),
        &config,
        decisions.clone(),
        &[
            "--yes",
            "--answer",
            "name=Sam",
            "--answer",
            "untitledMultipleSelectEnum=Piano",
        ],
        &[],
    );
    assert_eq!(
        everything_form_answer(dir.path())["content"]["untitledMultipleSelectEnum"],
        json!(["Piano"])
    );
    for bad in ["integer=500", "titledSingleSelectEnum=Batman"] {
        let dir = tempfile::tempdir().unwrap();
        let config = everything_file(dir.path());
        ask(
            dir.path(),
            &config,
            decisions.clone(),
            &["--yes", "--answer", "name=Sam", "--answer", bad],
            &[],
        );
        assert_eq!(
            everything_form_answer(dir.path()),
            json!({"action": "decline"}),
            "{bad}"
        );
    }
}

/// Host problem: progress is routed to "the call in flight" whatever its
/// `progressToken`. server-everything goes on reporting a cancelled operation, and
/// those notifications are shown as the next call's progress and extend its time limit.
#[test]
fn progress_of_a_cancelled_call_is_not_counted_for_the_next_one() {
    let dir = tempfile::tempdir().unwrap();
    let config = everything_file(dir.path());
    let ran = ask(
        dir.path(),
        &config,
        json!([
            {"tool_calls": [{"name": "everything__trigger-long-running-operation", "arguments": {"duration": 3, "steps": 6}}]},
            {"tool_calls": [{"name": "everything__trigger-long-running-operation", "arguments": {"duration": 1, "steps": 1}}]},
            {"answer": "ok"}
        ]),
        &[],
        // The first call times out at the hard maximum; the second (one step, done
        // after 1 s, with no progress before) ends within the plain limit.
        &[
            ("HOST_TOOL_TIMEOUT", "1.3"),
            ("HOST_TOOL_MAX_TIMEOUT", "1.5"),
        ],
    );
    let all = steps(&ran);
    let second = all
        .iter()
        .rposition(|s| s["text"] == "wants everything__trigger-long-running-operation")
        .unwrap();
    let stale: Vec<&Value> = all[second..]
        .iter()
        .filter(|s| s["data"]["total"] == 6.0)
        .collect();
    assert!(
        stale.is_empty(),
        "the first call's progress shown for the second: {stale:#?}"
    );
    assert_eq!(outcomes(&ran), vec!["timeout", "ok"]);
}

// ------------------------------------------------------------------------------------
// server-filesystem and server-memory: real tasks
// ------------------------------------------------------------------------------------

fn filesystem_file(dir: &Path, root: &Path) -> String {
    servers_file(
        dir,
        json!({"files": stdio_server(&node(), &[&npm_server("filesystem"), root.to_str().unwrap()])}),
        json!({"allow": ["files__read_text_file", "files__list_directory"]}),
    )
}

#[test]
fn server_filesystem_writes_with_the_persons_yes_reads_back_and_lists() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    let notes = root.join("notes.md");
    let content = "# Interop\nwritten through gatehouse\n";
    let config = filesystem_file(dir.path(), &root);
    let decisions = json!([
        {"tool_calls": [{"name": "files__write_file", "arguments": {"path": notes, "content": content}}]},
        {"tool_calls": [{"name": "files__read_text_file", "arguments": {"path": notes}}]},
        {"tool_calls": [{"name": "files__list_directory", "arguments": {"path": root}}]},
        {"tool_calls": [{"name": "files__read_text_file", "arguments": {"path": "/etc/passwd"}}]},
        {"answer": "done"}
    ]);

    // The person says no: nothing is written, the server never sees the call.
    let ran = ask(dir.path(), &config, decisions.clone(), &["--no"], &[]);
    assert_eq!(outcomes(&ran)[0], "declined");
    assert!(!notes.exists());
    assert!(
        !wire(dir.path(), "files")
            .iter()
            .any(|(d, m)| d == "to_server"
                && m["method"] == "tools/call"
                && m["params"]["name"] == "write_file")
    );

    // The person says yes.
    let ran = ask(dir.path(), &config, decisions, &["--yes"], &[]);
    let found = discovered(&ran, "files");
    assert_eq!(found["protocol"], "2025-11-25");
    assert_eq!(found["server"], "secure-filesystem-server");
    let texts_ = ran.step_texts();
    assert_eq!(
        texts_[texts_
            .iter()
            .position(|t| t == "model: wants files__write_file")
            .unwrap()
            + 1],
        "host: not on the allow-list: ask the person"
    );
    assert_eq!(
        outcomes(&ran),
        vec!["ok", "ok", "ok", "tool_error"],
        "{texts_:#?}"
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), content);
    let wire = wire(dir.path(), "files");
    assert_eq!(
        tool_result(&wire, "read_text_file", 0)["structuredContent"]["content"],
        content
    );
    assert_eq!(
        tool_result(&wire, "list_directory", 0)["structuredContent"]["content"],
        "[FILE] notes.md"
    );
    // The server's own check: a path outside its folder is a tool error the model reads.
    assert!(
        texts_.iter().any(|t| t.starts_with(
            "server: tool error: Access denied - path outside allowed directories: /etc/passwd"
        )),
        "{texts_:#?}"
    );
}

#[test]
fn server_memory_keeps_entities_and_relations_and_finds_them() {
    let dir = tempfile::tempdir().unwrap();
    let memory = dir.path().join("memory.jsonl");
    let mut server = stdio_server(&node(), &[&npm_server("memory")]);
    server["env"] = json!({"MEMORY_FILE_PATH": memory});
    let config = servers_file(
        dir.path(),
        json!({"memory": server}),
        json!({"allow": ["memory__search_nodes", "memory__read_graph"]}),
    );
    let ran = ask(
        dir.path(),
        &config,
        json!([
            {"tool_calls": [{"name": "memory__create_entities", "arguments": {"entities": [
                {"name": "jump-prod-02", "entityType": "host", "observations": ["bastion for prod"]},
                {"name": "Camille Michel", "entityType": "person", "observations": ["platform team"]}
            ]}}]},
            {"tool_calls": [{"name": "memory__create_relations", "arguments": {"relations": [
                {"from": "Camille Michel", "to": "jump-prod-02", "relationType": "owns"}
            ]}}]},
            {"tool_calls": [{"name": "memory__search_nodes", "arguments": {"query": "Camille"}}]},
            {"answer": "done"}
        ]),
        &["--yes"],
        &[],
    );
    let found = discovered(&ran, "memory");
    assert_eq!(found["protocol"], "2025-11-25");
    assert_eq!(found["server"], "memory-server");
    assert_eq!(
        outcomes(&ran),
        vec!["ok", "ok", "ok"],
        "{:#?}",
        ran.step_texts()
    );
    // The writes were put to the person; the search was on the allow-list.
    let asked = ran
        .step_texts()
        .iter()
        .filter(|t| *t == "host: not on the allow-list: ask the person")
        .count();
    assert_eq!(asked, 2);
    let stored: Vec<Value> = json_lines(&memory);
    assert_eq!(stored.len(), 3, "{stored:?}");
    assert!(stored.contains(&json!({"type": "relation", "from": "Camille Michel", "to": "jump-prod-02", "relationType": "owns"})));
    let search = tool_result(&wire(dir.path(), "memory"), "search_nodes", 0);
    let names: Vec<&str> = search["structuredContent"]["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"Camille Michel"), "{search}");
    assert_eq!(
        search["structuredContent"]["relations"][0]["relationType"],
        "owns"
    );
}

// ------------------------------------------------------------------------------------
// Python SDK servers
// ------------------------------------------------------------------------------------

fn confirm_server() -> Value {
    stdio_server(&python(), &[&script("py_confirm_server.py")])
}

fn confirm_file(dir: &Path) -> String {
    servers_file(
        dir,
        json!({"confirm": confirm_server()}),
        json!({"allow": ["confirm__list_tickets"]}),
    )
}

fn confirm_decisions() -> Value {
    json!([
        {"tool_calls": [{"name": "confirm__open_ticket", "arguments": {"host": "jump-prod-02", "summary": "brute force then a login"}}]},
        {"tool_calls": [{"name": "confirm__list_tickets", "arguments": {}}]},
        {"answer": "ok"}
    ])
}

#[test]
fn a_python_sdk_server_asks_through_input_required_and_the_person_answers() {
    let dir = tempfile::tempdir().unwrap();
    let config = confirm_file(dir.path());
    let ran = ask(
        dir.path(),
        &config,
        confirm_decisions(),
        &["--yes", "--answer", "priority=P2"],
        &[],
    );
    let found = discovered(&ran, "confirm");
    assert_eq!(found["protocol"], "2026-07-28");
    assert_eq!(found["server"], "py-confirm");
    let texts_ = ran.step_texts();
    for expected in [
        "person: said yes",
        "server: confirm asks: Open an incident ticket for jump-prod-02?",
        "person: answered accept",
    ] {
        assert!(
            texts_.contains(&expected.to_string()),
            "{expected}: {texts_:#?}"
        );
    }
    let events = ran.tool_events();
    assert_eq!(events[0]["outcome"], "ok");
    assert_eq!(events[0]["asked_user"], true);
    // Two server rounds on 2026-07-28, as the Python server logged them.
    let rounds: Vec<(String, String)> = ran
        .server_records("confirm")
        .iter()
        .filter(|r| r["method"] == "tools/call" && r["name"] == "open_ticket")
        .map(|r| {
            (
                r["protocol"].as_str().unwrap().to_owned(),
                r["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        rounds,
        vec![
            ("2026-07-28".to_string(), "input_required".to_string()),
            ("2026-07-28".to_string(), "ok".to_string())
        ]
    );
    // The state is the SDK's AES-GCM token (`v1.…`, no plaintext), echoed byte for byte.
    let wire = wire(dir.path(), "confirm");
    let asked = tool_result(&wire, "open_ticket", 0);
    assert_eq!(asked["resultType"], "input_required");
    let state = asked["requestState"].as_str().unwrap();
    assert!(
        state.starts_with("v1.") && !state.contains("asked"),
        "{state}"
    );
    let retry = wire
        .iter()
        .filter(|(d, m)| d == "to_server" && m["params"]["name"] == "open_ticket")
        .nth(1)
        .unwrap()
        .1
        .clone();
    assert_eq!(retry["params"]["requestState"], state);
    assert_eq!(
        retry["params"]["inputResponses"]["confirm"],
        json!({"action": "accept", "content": {"priority": "P2"}})
    );
    let opened = tool_result(&wire, "open_ticket", 1);
    assert_eq!(opened["structuredContent"]["id"], "INC-7100");
    assert_eq!(opened["structuredContent"]["priority"], "P2");
    assert_eq!(
        tool_result(&wire, "list_tickets", 0)["structuredContent"]["total"],
        1
    );
}

#[test]
fn declining_a_python_sdk_servers_form_opens_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = confirm_file(dir.path());
    let ran = ask(
        dir.path(),
        &config,
        confirm_decisions(),
        &["--yes", "--decline"],
        &[],
    );
    let texts_ = ran.step_texts();
    assert!(
        texts_.contains(&"person: answered decline".to_string()),
        "{texts_:#?}"
    );
    assert!(
        texts_.contains(&"server: tool error: Error executing tool open_ticket: the user answered decline: no ticket was opened".to_string()),
        "{texts_:#?}"
    );
    assert_eq!(outcomes(&ran), vec!["tool_error", "ok"]);
    let wire = wire(dir.path(), "confirm");
    assert_eq!(
        tool_result(&wire, "list_tickets", 0)["structuredContent"]["total"],
        0
    );
}

/// rmcp's client, round by round, as `tickets_confirmation.rs` drives our own server.
struct Asker;

impl ClientHandler for Asker {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("interop-test", "0.1.0"),
        )
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"color": "blue"})))
    }
}

async fn start_python(
    script_name: &str,
    mode: ClientLifecycleMode,
) -> Result<RunningService<RoleClient, Asker>, ClientInitializeError> {
    let mut cmd = tokio::process::Command::new(python());
    cmd.arg(script(script_name));
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the Python server starts");
    tokio::time::timeout(PEER_LIMIT, Asker.serve_with_lifecycle(transport, mode))
        .await
        .expect("the Python server answers in time")
}

async fn once(
    client: &RunningService<RoleClient, Asker>,
    params: CallToolRequestParams,
) -> Result<CallToolResponse, ServiceError> {
    tokio::time::timeout(PEER_LIMIT, client.call_tool_once(params))
        .await
        .expect("the Python server answers in time")
}

fn refused_state(r: Result<CallToolResponse, ServiceError>, what: &str) {
    match r {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(e.code.0, -32602, "{what}");
            assert_eq!(e.message, "Invalid or expired requestState", "{what}");
            assert_eq!(
                e.data,
                Some(json!({"reason": "invalid_request_state"})),
                "{what}"
            );
        }
        other => panic!("{what}: expected -32602 Invalid or expired requestState, got {other:?}"),
    }
}

fn opened(r: Result<CallToolResponse, ServiceError>) -> Value {
    match r.expect("the call answers") {
        CallToolResponse::Complete(result) => {
            assert_eq!(result.is_error, Some(false), "{result:?}");
            result.structured_content.expect("a ticket")
        }
        other => panic!("expected a complete result, got {other:?}"),
    }
}

#[tokio::test]
async fn the_python_sdk_refuses_its_sealed_state_replayed_with_other_arguments() {
    let client = start_python(
        "py_confirm_server.py",
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    )
    .await
    .expect("the confirmation server speaks 2026-07-28");
    assert_eq!(
        client.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2026_07_28
    );
    let params = open_ticket("jump-prod-02", "brute force");
    let state = match once(&client, params.clone()).await.expect("round 1") {
        CallToolResponse::InputRequired(asked) => {
            let form = serde_json::to_value(&asked.input_requests.unwrap()["confirm"]).unwrap();
            assert_eq!(form["method"], "elicitation/create");
            assert_eq!(
                form["params"]["requestedSchema"]["properties"]["priority"]["enum"],
                json!(["P1", "P2", "P3"])
            );
            asked.request_state.expect("a sealed state")
        }
        other => panic!("round 1 must ask first, got {other:?}"),
    };
    assert!(state.starts_with("v1."), "{state}");

    // The state bound to jump-prod-02 / "brute force", replayed for other arguments.
    refused_state(
        once(
            &client,
            with_answer(open_ticket("jump-prod-01", "brute force"), "P1", &state),
        )
        .await,
        "another host",
    );
    refused_state(
        once(
            &client,
            with_answer(open_ticket("jump-prod-02", "all fine"), "P1", &state),
        )
        .await,
        "another summary",
    );
    let mut tampered = state.clone().into_bytes();
    let i = tampered.len() - 3;
    tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
    refused_state(
        once(
            &client,
            with_answer(params.clone(), "P1", &String::from_utf8(tampered).unwrap()),
        )
        .await,
        "a tampered state",
    );
    refused_state(
        once(&client, with_answer(params.clone(), "P1", "asked-the-user")).await,
        "a plaintext state",
    );
    let listed = match once(&client, CallToolRequestParams::new("list_tickets"))
        .await
        .unwrap()
    {
        CallToolResponse::Complete(r) => r.structured_content.unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(listed["total"], 0, "nothing opened by the refused rounds");

    // The honest round still works.
    let ticket = opened(once(&client, with_answer(params.clone(), "P2", &state)).await);
    assert_eq!(ticket["id"], "INC-7100");
    assert_eq!(ticket["priority"], "P2");
    // The SDK binds but does not make a state single-use: the same round again, within
    // its 600 s lifetime, opens a second ticket. (Ours answers it with the ticket it
    // already opened.)
    let again = opened(once(&client, with_answer(params, "P2", &state)).await);
    assert_eq!(again["id"], "INC-7101");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn rmcp_alone_gives_up_on_a_server_that_lists_only_2025_11_25() {
    let failed = start_python(
        "py_legacy_only_server.py",
        ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::V_2025_11_25),
        },
    )
    .await;
    match failed {
        Err(ClientInitializeError::NoCompatibleProtocolVersion {
            server_supported, ..
        }) => assert_eq!(server_supported, vec![ProtocolVersion::V_2025_11_25]),
        Err(other) => panic!("expected NoCompatibleProtocolVersion, got {other}"),
        Ok(_) => panic!("expected NoCompatibleProtocolVersion, got a connection"),
    }
    // The same server is fine with `initialize`.
    let client = start_python("py_legacy_only_server.py", ClientLifecycleMode::Initialize)
        .await
        .expect("initialize works");
    assert_eq!(
        client.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2025_11_25
    );
    client.cancel().await.unwrap();
}

fn legacy_file(dir: &Path) -> String {
    servers_file(
        dir,
        json!({"legacy": stdio_server(&python(), &[&script("py_legacy_only_server.py")])}),
        json!({"allow": ["legacy__add", "legacy__whoami"]}),
    )
}

fn legacy_decisions() -> Value {
    json!([
        {"tool_calls": [{"name": "legacy__add", "arguments": {"a": 2, "b": 40}}]},
        {"tool_calls": [{"name": "legacy__whoami", "arguments": {}}]},
        {"tool_calls": [{"name": "legacy__pick_color", "arguments": {}}]},
        {"answer": "ok"}
    ])
}

#[test]
fn the_host_connects_to_a_python_server_that_lists_only_2025_11_25_through_initialize() {
    let dir = tempfile::tempdir().unwrap();
    let config = legacy_file(dir.path());
    let ran = ask(
        dir.path(),
        &config,
        legacy_decisions(),
        &["--yes", "--answer", "color=green"],
        &[],
    );
    let found = discovered(&ran, "legacy");
    assert_eq!(found["protocol"], "2025-11-25");
    assert_eq!(found["server"], "py-legacy-only");
    assert!(
        ran.step_texts()[0].contains("add, echo, whoami, pick_color"),
        "{:?}",
        ran.step_texts()
    );
    assert_eq!(
        outcomes(&ran),
        vec!["ok", "ok", "ok"],
        "{:#?}",
        ran.step_texts()
    );
    // The server's view: the probe refused with -32022, then the handshake, then every
    // request on 2025-11-25.
    let seen: Vec<(String, String)> = ran
        .server_records("legacy")
        .iter()
        .map(|r| {
            (
                r["method"].as_str().unwrap().to_owned(),
                r["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        seen[0],
        ("server/discover".to_string(), "error -32022".to_string())
    );
    assert_eq!(seen[1], ("initialize".to_string(), "ok".to_string()));
    assert!(
        ran.server_records("legacy")
            .iter()
            .filter(|r| r["method"] == "tools/call")
            .all(|r| r["protocol"] == "2025-11-25")
    );
    let wire = wire(dir.path(), "legacy");
    assert_eq!(
        tool_result(&wire, "add", 0)["structuredContent"],
        json!({"sum": 42})
    );
    let whoami: Value = serde_json::from_str(&texts(&tool_result(&wire, "whoami", 0))).unwrap();
    assert_eq!(whoami["protocolVersion"], "2025-11-25");
    assert_eq!(
        whoami["clientCapabilities"]["elicitation"],
        json!({"form": {}, "url": {}})
    );
    // The handshake revisions' form: elicitation/create, answered with --answer.
    assert_eq!(
        texts(&tool_result(&wire, "pick_color", 0)),
        "the user picked green"
    );
}

/// Host problem: after the respawn, the host's `initialize` offers "2026-07-28", a
/// revision that has no `initialize`; rmcp's own fallback (the -32601 path, as with
/// server-everything) offers 2025-11-25. A server that refuses unknown versions in
/// `initialize` rather than answering with its own would not start.
#[test]
fn the_fallback_initialize_offers_2025_11_25() {
    let dir = tempfile::tempdir().unwrap();
    let config = legacy_file(dir.path());
    ask(dir.path(), &config, json!([{"answer": "ok"}]), &[], &[]);
    let wire = wire(dir.path(), "legacy");
    let init = wire
        .iter()
        .find(|(d, m)| d == "to_server" && m["method"] == "initialize")
        .unwrap();
    assert_eq!(init.1["params"]["protocolVersion"], "2025-11-25");
}
