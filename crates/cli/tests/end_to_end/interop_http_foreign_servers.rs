//! Foreign MCP servers under the Gatehouse host, over Streamable HTTP: the npm
//! `server-everything` 2026.8.31 in its `streamableHttp` mode (TS SDK 1.32.2, sessions,
//! revisions up to 2025-11-25) and the two Python SDK 2.3.0 test servers with `--http`:
//! `tests/peers/py_confirm_server.py` (stateless, 2026-07-28, `input_required`) and
//! `tests/peers/py_legacy_only_server.py` (sessions, 2025-11-25 only).
//!
//! Every server runs on 127.0.0.1 with a port the system picked, and is killed when its
//! test ends. Each test writes a servers file with `{"type": "http", "url": …}` entries,
//! runs the real `gatehouse` binary with a playback model, and reads its `--json` run,
//! its `--record` file and, where the server's view matters, `tests/peers/http_tap.py`'s
//! log of every exchange (status, MCP headers, session) and message. See docs/interop.md.

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
    service::{RequestContext, RunningService},
    transport::StreamableHttpClientTransport,
};
use serde_json::{Value, json};

// ------------------------------------------------------------------------------------
// Helpers
// ------------------------------------------------------------------------------------

fn servers_file(dir: &Path, servers: Value, settings: Value) -> String {
    write(
        dir,
        "servers.json",
        &json!({"mcpServers": servers, "gatehouse": settings}),
    )
}

/// The tools the server-everything tests may run without asking.
const EVERYTHING_ALLOWED: &[&str] = &[
    "everything__get-tiny-image",
    "everything__get-resource-links",
    "everything__get-structured-content",
    "everything__trigger-long-running-operation",
    "everything__get-sum",
];

fn everything_file(dir: &Path, url: &str) -> String {
    servers_file(
        dir,
        json!({"everything": http_server(url, json!({}))}),
        json!({"allow": EVERYTHING_ALLOWED, "saveDir": dir.join("saved")}),
    )
}

fn steps(ran: &Ran) -> Vec<Value> {
    ran.json()["steps"].as_array().unwrap().clone()
}

/// The messages of the `--record` file between the host and one server.
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

/// The result the server sent for the host's n-th `tools/call` of `tool`.
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
// All three, listed by one host
// ------------------------------------------------------------------------------------

#[test]
fn every_foreign_http_server_is_listed_by_one_host_with_the_revision_it_speaks() {
    let dir = tempfile::tempdir().unwrap();
    let everything = everything_http();
    let tap_log = dir.path().join("everything.tap");
    let tap = http_tap(&everything.url, &tap_log);
    let confirm = python_http("py_confirm_server.py");
    let legacy = python_http("py_legacy_only_server.py");
    // A header for server-everything (which ignores it), from the environment: sent,
    // never shown.
    let config = servers_file(
        dir.path(),
        json!({
            "everything": http_server(&tap.url, json!({"Authorization": "Bearer ${EVERYTHING_TOKEN}"})),
            "confirm": http_server(&confirm.url, json!({})),
            "legacy": http_server(&legacy.url, json!({})),
        }),
        json!({}),
    );
    let secret = "interop-secret-3f9a1c";
    let ran = gatehouse(
        &["tools", "--config", &config, "--json"],
        &[("EVERYTHING_TOKEN", secret)],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let rows: Vec<Value> = serde_json::from_str(&ran.stdout).unwrap();
    for (server, protocol, name) in [
        ("everything", "2025-11-25", "mcp-servers/everything"),
        ("confirm", "2026-07-28", "py-confirm"),
        ("legacy", "2025-11-25", "py-legacy-only"),
    ] {
        let line = ran
            .stderr
            .lines()
            .find(|l| l.starts_with("[host] discovered ") && l.contains(&format!(" on {server}: ")))
            .unwrap_or_else(|| panic!("{server}: {}", ran.stderr));
        assert!(
            line.contains(&format!(
                "{{\"protocol\": \"{protocol}\", \"server\": \"{name}\""
            )),
            "{line}"
        );
    }
    for name in [
        "confirm__open_ticket",
        "confirm__list_tickets",
        "legacy__add",
        "legacy__pick_color",
        "read_resource",
    ] {
        assert!(rows.iter().any(|r| r["name"] == name), "{name}: {rows:?}");
    }

    // server-everything, as the tap saw it: the probe refused (HTTP 400, -32000, no
    // session), then `initialize` at 2025-11-25, which opened a session that every
    // later request carried, with the header from the servers file.
    let tap = tapped(&tap_log);
    assert_eq!(
        negotiated(&tap),
        ("initialize".to_string(), "2025-11-25".to_string())
    );
    let probe = &tap[0].1;
    assert_eq!(probe["method"], "server/discover", "the host probes first");
    let refused = exchange_of(&tap, probe);
    assert_eq!(refused["status"], 400, "{refused}");
    assert_eq!(refused["headers"]["mcp-protocol-version"], "2026-07-28");
    assert!(
        tap.iter()
            .any(|(d, m)| d == "<<" && m["error"]["code"] == -32000),
        "{tap:#?}"
    );
    let init = tap
        .iter()
        .find(|(d, m)| d == ">>" && m["method"] == "initialize")
        .unwrap();
    assert_eq!(init.1["params"]["protocolVersion"], "2025-11-25");
    let session = exchange_of(&tap, &init.1)["session"].clone();
    assert!(session.is_string(), "{tap:#?}");
    let later: Vec<Value> = http_exchanges(&tap)
        .into_iter()
        .skip_while(|e| e["session"] != session)
        .skip(1)
        .collect();
    assert!(!later.is_empty());
    for e in &later {
        assert_eq!(e["headers"]["mcp-session-id"], session, "{e}");
        assert_eq!(e["headers"]["mcp-protocol-version"], "2025-11-25", "{e}");
        assert_eq!(e["authorization"], true, "{e}");
    }
    // Every tool of that session's tools/list is offered, with its hints, plus the
    // host's read_resource.
    let list = tap
        .iter()
        .filter(|(d, m)| d == ">>" && m["method"] == "tools/list")
        .map(|(_, m)| m["id"].clone())
        .collect::<Vec<_>>();
    let listed = tap
        .iter()
        .rfind(|(d, m)| d == "<<" && list.contains(&m["id"]) && m.get("result").is_some())
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
        assert_eq!(
            row["annotations"]["read_only_hint"], tool["annotations"]["readOnlyHint"],
            "{name}"
        );
        assert_eq!(
            row["annotations"]["destructive_hint"], tool["annotations"]["destructiveHint"],
            "{name}"
        );
    }
    let everything_rows = rows.iter().filter(|r| r["server"] == "everything").count();
    assert_eq!(everything_rows, listed.len(), "{rows:?}");
    assert!(
        ran.stderr
            .contains(&format!("discovered {} tools on everything:", listed.len()))
    );
    assert!(!ran.stdout.contains(secret) && !ran.stderr.contains(secret));
}

// ------------------------------------------------------------------------------------
// server-everything over HTTP
// ------------------------------------------------------------------------------------

#[test]
fn server_everything_over_http_images_links_and_structured_results() {
    let dir = tempfile::tempdir().unwrap();
    let everything = everything_http();
    let config = everything_file(dir.path(), &everything.url);
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
            {"tool_calls": [{"name": "everything__get-structured-content", "arguments": {"location": "Chicago"}}]},
            {"answer": "ok"}
        ]),
        // read_resource is not on the allow-list: the person says yes.
        &["--yes", "--max-steps", "8"],
        &[],
    );
    let found = discovered(&ran, "everything");
    assert_eq!(found["protocol"], "2025-11-25");
    assert_eq!(found["server"], "mcp-servers/everything");
    assert_eq!(outcomes(&ran), vec!["ok"; 5], "{:#?}", ran.step_texts());
    assert_eq!(ran.answer(), "ok");

    // The image, and the blob read through the link, saved for the person.
    let saved: Vec<Value> = steps(&ran)
        .into_iter()
        .filter(|s| s["text"].as_str().unwrap().contains(" saved to "))
        .collect();
    let kinds: Vec<&str> = saved
        .iter()
        .map(|s| s["data"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["image", "resource"], "{:#?}", ran.step_texts());
    for s in &saved {
        let path = Path::new(s["data"]["path"].as_str().unwrap());
        assert!(path.starts_with(dir.path().join("saved")), "{path:?}");
        assert_eq!(
            std::fs::metadata(path).unwrap().len(),
            s["data"]["bytes"].as_u64().unwrap()
        );
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
    let links = tool_result(&wire, "get-resource-links", 0);
    let linked: Vec<&Value> = links["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "resource_link")
        .map(|b| &b["uri"])
        .collect();
    assert_eq!(linked.len(), 2, "{links}");
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
    // The structured result was checked against its outputSchema and accepted.
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
}

#[test]
fn server_everything_over_http_reports_progress_and_a_short_limit_cancels_the_operation() {
    let dir = tempfile::tempdir().unwrap();
    let everything = everything_http();
    let tap_log = dir.path().join("everything.tap");
    let tap = http_tap(&everything.url, &tap_log);
    let config = everything_file(dir.path(), &tap.url);
    let started = Instant::now();
    // 0.8 s without news per round, extended by progress to at most 1.5 s: the first
    // operation (1 s, progress every 0.25 s) finishes, the second (3 s) is cancelled, and
    // the turn goes on with one more call.
    let ran = ask(
        dir.path(),
        &config,
        json!([
            {"tool_calls": [{"name": "everything__trigger-long-running-operation", "arguments": {"duration": 1, "steps": 4}}]},
            {"tool_calls": [{"name": "everything__trigger-long-running-operation", "arguments": {"duration": 3, "steps": 6}}]},
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
    assert_eq!(ran.answer(), "ok");
    let all = steps(&ran);
    let timed_out = all
        .iter()
        .position(|s| {
            let t = s["text"].as_str().unwrap();
            t.starts_with("timed out after ")
                && t.ends_with(": the call was cancelled on the server")
        })
        .unwrap_or_else(|| panic!("{:#?}", ran.step_texts()));
    let limit_ms = all[timed_out]["data"]["timeout_ms"].as_u64().unwrap();
    assert!((1_450..3_000).contains(&limit_ms), "{limit_ms}");
    let progress: Vec<(usize, &Value)> = all
        .iter()
        .enumerate()
        .filter(|(_, s)| s["text"].as_str().unwrap().starts_with("progress "))
        .collect();
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
    assert!(
        progress
            .iter()
            .filter(|(i, s)| s["data"]["total"] == 6.0 && *i < timed_out)
            .count()
            >= 2,
        "{:#?}",
        ran.step_texts()
    );
    // No progress of the cancelled operation (server-everything goes on sending it) is
    // counted for the next call.
    assert!(
        !progress.iter().any(|(i, _)| *i > timed_out),
        "{:#?}",
        ran.step_texts()
    );

    // On the wire, as the server got it: the progress came on the call's own event
    // stream; the cancellation was POSTed in the call's session (202) before the next call.
    let tap = tapped(&tap_log);
    let calls: Vec<Value> = tap
        .iter()
        .filter(|(d, m)| d == ">>" && m["method"] == "tools/call")
        .map(|(_, m)| m.clone())
        .collect();
    assert_eq!(calls.len(), 3, "{tap:#?}");
    let stream = exchange_of(&tap, &calls[0]);
    assert_eq!(stream["content_type"], "text/event-stream", "{stream}");
    let cancelled = tap
        .iter()
        .position(|(d, m)| {
            d == ">>"
                && m["method"] == "notifications/cancelled"
                && m["params"]["requestId"] == calls[1]["id"]
        })
        .unwrap_or_else(|| panic!("no notifications/cancelled reached the server: {tap:#?}"));
    let sent = exchange_of(&tap, &tap[cancelled].1);
    assert_eq!(sent["status"], 202, "{sent}");
    assert!(sent["headers"]["mcp-session-id"].is_string(), "{sent}");
    let next = tap
        .iter()
        .position(|(d, m)| d == ">>" && m["id"] == calls[2]["id"] && m["method"] == "tools/call")
        .unwrap();
    assert!(cancelled < next);
    assert!(
        !tap.iter()
            .any(|(d, m)| d == "<<" && m["id"] == calls[1]["id"] && m.get("result").is_some()),
        "the cancelled call never got its result"
    );
}

/// Ctrl-C stops the call in flight: its POST is dropped and the server gets
/// `notifications/cancelled` in the session, even when the stopped call is the turn's
/// last (the host awaits the cancellation before it closes the session).
#[test]
fn ctrl_c_stops_server_everythings_operation_over_http_and_the_server_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let everything = everything_http();
    let tap_log = dir.path().join("everything.tap");
    let tap = http_tap(&everything.url, &tap_log);
    let config = everything_file(dir.path(), &tap.url);
    let model = playback(
        dir.path(),
        json!([
            {"tool_calls": [{"name": "everything__trigger-long-running-operation", "arguments": {"duration": 4, "steps": 8}}]},
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
        if Instant::now() > deadline {
            let ran = wait_bounded(child, "gatehouse", Duration::from_secs(1));
            panic!("the operation never reported progress:\n{}", ran.stderr);
        }
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
        ran.step_texts()
            .contains(&"person: stopped the call: it was cancelled on the server".to_string()),
        "{:#?}",
        ran.step_texts()
    );
    assert_eq!(outcomes(&ran), vec!["stopped"]);
    assert_eq!(ran.answer(), "ok", "the model heard it and went on");
    let tap = tapped(&tap_log);
    let call = tap
        .iter()
        .find(|(d, m)| d == ">>" && m["method"] == "tools/call")
        .unwrap()
        .1["id"]
        .clone();
    let cancelled = tap
        .iter()
        .position(|(d, m)| {
            d == ">>"
                && m["method"] == "notifications/cancelled"
                && m["params"]["requestId"] == call
        })
        .unwrap_or_else(|| panic!("no notifications/cancelled reached the server: {tap:#?}"));
    assert_eq!(exchange_of(&tap, &tap[cancelled].1)["status"], 202);
    // Then the session was closed.
    assert!(
        http_exchanges(&tap[cancelled..])
            .iter()
            .any(|e| e["method"] == "DELETE"),
        "{tap:#?}"
    );
}

/// The form server-everything sent, and the host's answer, from the record.
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
fn server_everythings_form_over_http_is_answered_by_answer_options_and_declined() {
    let everything = everything_http();
    let decisions = json!([
        {"tool_calls": [{"name": "everything__trigger-elicitation-request", "arguments": {}}]},
        {"answer": "ok"}
    ]);
    // Accepted with the person's --answer values, typed by the form's schema.
    let dir = tempfile::tempdir().unwrap();
    let config = everything_file(dir.path(), &everything.url);
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
    let texts_ = ran.step_texts();
    for expected in [
        "person: said yes",
        "server: everything asks: Please provide inputs for the following fields:",
        "person: answered accept",
    ] {
        assert!(
            texts_.contains(&expected.to_string()),
            "{expected}: {texts_:#?}"
        );
    }
    assert_eq!(outcomes(&ran), vec!["ok"]);
    assert_eq!(ran.tool_events()[0]["asked_user"], true);
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
    let config = everything_file(dir.path(), &everything.url);
    let ran = ask(dir.path(), &config, decisions, &["--yes", "--decline"], &[]);
    assert!(
        ran.step_texts()
            .contains(&"person: answered decline".to_string()),
        "{:#?}",
        ran.step_texts()
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
}

// ------------------------------------------------------------------------------------
// The Python SDK servers over HTTP
// ------------------------------------------------------------------------------------

fn confirm_file(dir: &Path, url: &str) -> String {
    servers_file(
        dir,
        json!({"confirm": http_server(url, json!({}))}),
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

/// (protocol, outcome) of each `tools/call` of `tool` a Python test server logged.
fn python_rounds(server: &HttpPeer, tool: &str) -> Vec<(String, String)> {
    server
        .records()
        .iter()
        .filter(|r| r["method"] == "tools/call" && r["name"] == tool)
        .map(|r| {
            (
                r["protocol"].as_str().unwrap_or_default().to_owned(),
                r["outcome"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_python_sdk_server_over_http_asks_through_input_required_and_the_person_answers() {
    let dir = tempfile::tempdir().unwrap();
    let confirm = python_http("py_confirm_server.py");
    let config = confirm_file(dir.path(), &confirm.url);
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
    // Two stateless rounds on 2026-07-28, as the server logged them; no handshake.
    assert_eq!(
        python_rounds(&confirm, "open_ticket"),
        vec![
            ("2026-07-28".to_string(), "input_required".to_string()),
            ("2026-07-28".to_string(), "ok".to_string())
        ]
    );
    assert!(
        !confirm
            .records()
            .iter()
            .any(|r| r["method"] == "initialize")
    );
    // The state is the SDK's AES-GCM token, echoed byte for byte with the answer.
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
fn declining_a_python_sdk_servers_form_over_http_opens_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let confirm = python_http("py_confirm_server.py");
    let config = confirm_file(dir.path(), &confirm.url);
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
    assert_eq!(
        python_rounds(&confirm, "open_ticket"),
        vec![
            ("2026-07-28".to_string(), "input_required".to_string()),
            ("2026-07-28".to_string(), "tool_error".to_string())
        ]
    );
    let wire = wire(dir.path(), "confirm");
    assert_eq!(
        tool_result(&wire, "list_tickets", 0)["structuredContent"]["total"],
        0
    );
}

/// rmcp's client, round by round, over rmcp's Streamable HTTP client transport.
struct Asker;

impl ClientHandler for Asker {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("interop-http-test", "0.1.0"),
        )
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"priority": "P2"})))
    }
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
async fn the_python_sdk_over_http_refuses_its_sealed_state_replayed_with_other_arguments() {
    let confirm = python_http("py_confirm_server.py");
    let transport = StreamableHttpClientTransport::from_uri(confirm.url.clone());
    let client = tokio::time::timeout(
        PEER_LIMIT,
        Asker.serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        ),
    )
    .await
    .expect("the Python server answers in time")
    .expect("the confirmation server speaks 2026-07-28 over HTTP");
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

    // The state bound to jump-prod-02 / "brute force", replayed for other arguments, in
    // requests that stand alone (the server keeps no session).
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

    // The honest round opens the ticket.
    let ticket = opened(once(&client, with_answer(params, "P2", &state)).await);
    assert_eq!(ticket["id"], "INC-7100");
    assert_eq!(ticket["priority"], "P2");
    let _ = tokio::time::timeout(Duration::from_secs(5), client.cancel()).await;
    // The server's own view: the SDK refused those rounds before its middleware and the
    // tool ran, so only the two honest rounds are logged.
    assert_eq!(
        python_rounds(&confirm, "open_ticket"),
        vec![
            ("2026-07-28".to_string(), "input_required".to_string()),
            ("2026-07-28".to_string(), "ok".to_string())
        ]
    );
}

#[test]
fn the_host_connects_over_http_to_a_python_server_that_lists_only_2025_11_25() {
    let dir = tempfile::tempdir().unwrap();
    let legacy = python_http("py_legacy_only_server.py");
    let tap_log = dir.path().join("legacy.tap");
    let tap = http_tap(&legacy.url, &tap_log);
    let config = servers_file(
        dir.path(),
        json!({"legacy": http_server(&tap.url, json!({}))}),
        json!({"allow": ["legacy__add", "legacy__whoami"]}),
    );
    let ran = ask(
        dir.path(),
        &config,
        json!([
            {"tool_calls": [{"name": "legacy__add", "arguments": {"a": 2, "b": 40}}]},
            {"tool_calls": [{"name": "legacy__whoami", "arguments": {}}]},
            {"tool_calls": [{"name": "legacy__pick_color", "arguments": {}}]},
            {"answer": "ok"}
        ]),
        &["--yes", "--answer", "color=green"],
        &[],
    );
    let found = discovered(&ran, "legacy");
    assert_eq!(found["protocol"], "2025-11-25");
    assert_eq!(found["server"], "py-legacy-only");
    assert_eq!(
        outcomes(&ran),
        vec!["ok", "ok", "ok"],
        "{:#?}",
        ran.step_texts()
    );
    assert!(
        ran.step_texts()
            .contains(&"server: legacy asks: Which color?".to_string()),
        "{:#?}",
        ran.step_texts()
    );
    // The probe: -32022 naming 2025-11-25, with HTTP 400; then the handshake at
    // 2025-11-25 opened a session, and the form came on the call's own event stream.
    let tap = tapped(&tap_log);
    assert_eq!(
        negotiated(&tap),
        ("initialize".to_string(), "2025-11-25".to_string())
    );
    let probe = tap
        .iter()
        .find(|(d, m)| d == ">>" && m["method"] == "server/discover")
        .unwrap()
        .1
        .clone();
    assert_eq!(exchange_of(&tap, &probe)["status"], 400);
    let refusal = tap
        .iter()
        .find(|(d, m)| d == "<<" && m["error"]["code"] == -32022)
        .expect("-32022 for the probe")
        .1
        .clone();
    assert_eq!(refusal["error"]["data"]["supported"], json!(["2025-11-25"]));
    let init = tap
        .iter()
        .find(|(d, m)| d == ">>" && m["method"] == "initialize")
        .unwrap()
        .1
        .clone();
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
    assert!(exchange_of(&tap, &init)["session"].is_string());
    assert!(
        tap.iter()
            .any(|(d, m)| d == "<<" && m["method"] == "elicitation/create")
    );
    let seen: Vec<(String, String)> = legacy
        .records()
        .iter()
        .map(|r| {
            (
                r["method"].as_str().unwrap_or_default().to_owned(),
                r["outcome"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        seen[0],
        ("server/discover".to_string(), "error -32022".to_string())
    );
    assert_eq!(seen[1], ("initialize".to_string(), "ok".to_string()));
    let wire = wire(dir.path(), "legacy");
    assert_eq!(
        tool_result(&wire, "add", 0)["structuredContent"],
        json!({"sum": 42})
    );
    let whoami: Value = serde_json::from_str(&texts(&tool_result(&wire, "whoami", 0))).unwrap();
    assert_eq!(whoami["protocolVersion"], "2025-11-25");
    assert_eq!(
        texts(&tool_result(&wire, "pick_color", 0)),
        "the user picked green"
    );
}
