//! The official Python SDK 2.3.0 client (`tests/peers/py_mcp_client.py`) against the
//! reference servers, in auto mode (`server/discover`, 2026-07-28) and legacy mode
//! (`initialize`, 2025-11-25).

use serde_json::{Value, json};

use super::*;
use crate::common::Ran;
use crate::common::expect;

/// Run `py_mcp_client.py --mode MODE ARGS…` against `server` (over stdio `-- COMMAND…`,
/// over HTTP `--header "Authorization: Bearer …" … --url URL`); what it printed, which
/// must be a connection, and the tap's log of this run.
fn py_client(
    desk: &Desk,
    mode: &str,
    server: &str,
    args: &[String],
) -> (Value, Vec<(String, Value)>, Ran) {
    let mark = desk.tap(server).len();
    let mut argv: Vec<String> = vec![script("py_mcp_client.py"), "--mode".into(), mode.into()];
    if desk.transport == Transport::Http {
        argv.extend(["--header".into(), bearer()]);
    }
    argv.extend(args.iter().cloned());
    match desk.transport {
        Transport::Stdio => {
            argv.push("--".into());
            argv.extend(desk.command(server));
        }
        Transport::Http => argv.extend(["--url".into(), desk.url(server)]),
    }
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let ran = run_peer(&python(), &argv, &desk.vars(), None);
    let out: Value = serde_json::from_str(&ran.stdout).unwrap_or_else(|e| {
        panic!(
            "the Python client printed no JSON ({e}):\n{}\n{}",
            ran.stdout, ran.stderr
        )
    });
    assert!(
        out.get("error").is_none(),
        "the Python client could not connect to {server}: {}\n{}",
        out["error"],
        ran.stderr
    );
    let run = desk.tap(server).split_off(mark);
    (out, run, ran)
}

pub fn call_args(name: &str, args: &Value) -> Vec<String> {
    vec![
        "--call".into(),
        name.into(),
        "--args".into(),
        args.to_string(),
    ]
}

/// Every server listed (schemas, annotations), called once, on the support desk its
/// resources listed and the refunds policy read, and on the orders desk a call that
/// reports progress: what both of the Python client's modes must manage, on `protocol`,
/// reached as `how` says.
fn python_client_uses_every_server(t: Transport, mode: &str, protocol: &str, how: &str) {
    let desk = Desk::all(t);
    for (server, info, tools) in SERVERS {
        let (name, args, pointer, expected) = sample_call(server);
        let mut argv = call_args(name, &args);
        if *server == "support" {
            argv.extend(["--read".to_string(), POLICY.to_string()]);
        }
        if *server == "orders" {
            // A call that reports progress (over HTTP its answer comes as an event stream).
            argv.extend(call_args("export_report", &json!({"rows": 2000})));
        }
        let (out, run, ran) = py_client(&desk, mode, server, &argv);
        assert_eq!(ran.status, 0, "{server}: {}\n{}", ran.stdout, ran.stderr);
        assert_eq!(out["protocolVersion"], protocol, "{server}");
        assert_eq!(
            negotiated(&run),
            (how.to_string(), protocol.to_string()),
            "{server}"
        );
        assert_exchanges(t, &run, protocol, server);
        assert_eq!(out["serverInfo"]["name"], *info, "{server}");
        assert_eq!(tool_names(&out["tools"]), *tools, "{server}");
        // Each tool as the server defines it, annotations and schemas included.
        for tool in out["tools"].as_array().unwrap() {
            assert_eq!(tool["inputSchema"]["type"], "object");
            assert!(tool["annotations"].is_object(), "{tool}");
        }
        let result = &out["calls"][0]["result"];
        assert_eq!(result["isError"], false, "{server}: {}", out["calls"][0]);
        assert_eq!(
            result["structuredContent"].pointer(pointer),
            Some(&expected),
            "{server}: {result}"
        );
        if *server == "support" {
            assert_eq!(out["resources"].as_array().map(Vec::len), Some(10));
            let read = &out["read"]["contents"][0];
            assert_eq!(read["uri"], POLICY, "{}", out["read"]);
            assert_eq!(read["mimeType"], "text/markdown");
            let text = read["text"].as_str().unwrap_or_default();
            assert!(text.starts_with("# Refunds and payments policy"), "{read}");
        }
        if *server == "orders" {
            let link = expect::item_with(&result["content"], "type", "resource_link").unwrap();
            assert_eq!(link["uri"], "orders://A-1002");
            let report = &out["calls"][1]["result"];
            assert_eq!(report["isError"], false, "{}", out["calls"][1]);
            assert_eq!(report["structuredContent"]["rows"], 2000, "{report}");
            let progress = out["progress"].as_array().unwrap();
            assert!(
                !progress.is_empty() && progress.iter().all(|p| p["total"] == 2000.0),
                "{progress:?}"
            );
            let call = run
                .iter()
                .position(|(d, m)| d == ">>" && m["params"]["name"] == "export_report")
                .unwrap();
            assert!(
                run[call..]
                    .iter()
                    .any(|(d, m)| d == "<<" && m["method"] == "notifications/progress")
            );
            if t == Transport::Http {
                let stream = exchange_of(&run, &run[call].1);
                assert_eq!(stream["content_type"], "text/event-stream", "{stream}");
            }
        }
        // The server saw Sam's requests, and no refusal.
        assert!(
            desk.records(server)
                .iter()
                .all(|r| r["event"] != "http_unauthorized"),
            "{server}"
        );
    }
}

pub fn the_python_sdk_client_in_auto_mode_lists_calls_and_reads_every_server_on_2026_07_28(
    t: Transport,
) {
    python_client_uses_every_server(t, "auto", "2026-07-28", "server/discover");
}

pub fn the_python_sdk_client_in_legacy_mode_lists_calls_and_reads_every_server_on_2025_11_25(
    t: Transport,
) {
    python_client_uses_every_server(t, "legacy", "2025-11-25", "initialize");
}

/// No `Authorization`: every exchange is refused with 401 and no MCP body, each refusal is
/// logged by the server, no request reaches it, and the client exits 2.
pub fn the_python_sdk_client_without_the_token_is_refused(t: Transport) {
    let desk = Desk::new(t, &["support"]);
    let argv = [
        script("py_mcp_client.py"),
        "--url".into(),
        desk.url("support"),
    ];
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let ran = run_peer(&python(), &argv, &[], None);
    assert_eq!(ran.status, 2, "{}\n{}", ran.stdout, ran.stderr);
    let run = desk.tap("support");
    let exchanges = http_exchanges(&run);
    assert!(!exchanges.is_empty());
    for e in &exchanges {
        assert_eq!(e["status"], 401, "{e}");
        assert_eq!(e["authorization"], false, "{e}");
    }
    assert!(
        !run.iter().any(|(d, _)| d == "<<"),
        "no MCP body for a refused request: {run:#?}"
    );
    let refusals = desk
        .records("support")
        .into_iter()
        .filter(|r| r["event"] == "http_unauthorized")
        .count();
    assert_eq!(refusals, exchanges.len());
    assert!(desk.requests("support").is_empty());
}

/// `open_ticket` on 2026-07-28: round 1 comes back `input_required`; the SDK takes the form
/// to its elicitation callback and sends round 2 with the answer and the sealed state,
/// byte for byte. Declined, the retry carries the decline and nothing opens.
pub fn the_python_sdk_client_in_auto_mode_answers_open_tickets_input_required_form(t: Transport) {
    let desk = Desk::new(t, &["tickets"]);
    let (out, run) = open_then_list(&desk, "auto", &["--answer", "priority=P1"]);
    assert_eq!(out["protocolVersion"], "2026-07-28");
    assert_exchanges(t, &run, "2026-07-28", "tickets");
    the_form(&out);
    let calls: Vec<&Value> = run
        .iter()
        .filter(|(d, m)| d == ">>" && m["method"] == "tools/call")
        .map(|(_, m)| m)
        .collect();
    assert_eq!(calls.len(), 3, "{run:#?}");
    let asked = run
        .iter()
        .find(|(d, m)| d == "<<" && m["id"] == calls[0]["id"])
        .unwrap()
        .1["result"]
        .clone();
    assert_eq!(asked["resultType"], "input_required");
    assert!(asked["requestState"].is_string(), "{asked}");
    assert_eq!(calls[1]["params"]["requestState"], asked["requestState"]);
    assert_eq!(
        calls[1]["params"]["inputResponses"]["confirm"],
        json!({"action": "accept", "content": {"priority": "P1"}})
    );
    let ticket = &out["calls"][0]["result"]["structuredContent"];
    assert_eq!(ticket["id"], "INC-4100", "{}", out["calls"][0]);
    assert_eq!(ticket["priority"], "P1");
    // The ticket is in the store.
    let listed = &out["calls"][1]["result"]["structuredContent"];
    assert_eq!(listed["total"], 1);
    assert_eq!(listed["tickets"][0]["priority"], "P1");

    // Declined: the retry carries the decline, and nothing opens.
    declined_opens_nothing(&desk, "auto");
}

/// `open_ticket` in `mode`, its form answered as `answer` says (`--answer priority=P1`,
/// `--decline`), then `list_tickets`: what the client printed, and the tap's log.
fn open_then_list(desk: &Desk, mode: &str, answer: &[&str]) -> (Value, Vec<(String, Value)>) {
    let mut argv = call_args("open_ticket", &open_ticket_args());
    argv.extend(strings(answer));
    argv.extend(call_args("list_tickets", &json!({})));
    let (out, run, _) = py_client(desk, mode, "tickets", &argv);
    (out, run)
}

/// The form the SDK took to its elicitation callback: the tickets server's question.
fn the_form(out: &Value) -> &Value {
    let form = &out["elicitations"][0];
    let message = form["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("Open an incident ticket for jump-prod-02?"),
        "{out}"
    );
    form
}

/// `open_ticket` declined in `mode`, then `list_tickets`: the server's refusal, and still
/// the one ticket opened before.
fn declined_opens_nothing(desk: &Desk, mode: &str) {
    let (out, _) = open_then_list(desk, mode, &["--decline"]);
    let refused = &out["calls"][0]["result"];
    assert_eq!(refused["isError"], true, "{}", out["calls"][0]);
    assert!(
        refused["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("the user declined: no ticket was opened"),
        "{refused}"
    );
    assert_eq!(out["calls"][1]["result"]["structuredContent"]["total"], 1);
}

/// `open_ticket` on 2025-11-25: the server asks mid-call with `elicitation/create` (over
/// HTTP on the call's own event stream, the answer POSTed in the same session).
pub fn the_python_sdk_client_in_legacy_mode_confirms_open_ticket_through_elicitation_create(
    t: Transport,
) {
    let desk = Desk::new(t, &["tickets"]);
    let (out, run) = open_then_list(&desk, "legacy", &["--answer", "priority=P2"]);
    assert_eq!(out["protocolVersion"], "2025-11-25");
    assert_eq!(
        negotiated(&run),
        ("initialize".to_string(), "2025-11-25".to_string())
    );
    assert_exchanges(t, &run, "2025-11-25", "tickets");
    let call = run
        .iter()
        .position(|(d, m)| d == ">>" && m["method"] == "tools/call")
        .unwrap();
    let asked = run
        .iter()
        .find(|(d, m)| d == "<<" && m["method"] == "elicitation/create")
        .expect("elicitation/create")
        .1
        .clone();
    let answer = run
        .iter()
        .position(|(d, m)| d == ">>" && m["id"] == asked["id"] && m.get("result").is_some())
        .expect("the answer to the form");
    assert_eq!(
        run[answer].1["result"],
        json!({"action": "accept", "content": {"priority": "P2"}})
    );
    if t == Transport::Http {
        let stream = exchange_of(&run, &run[call].1);
        assert_eq!(stream["content_type"], "text/event-stream", "{stream}");
        assert_eq!(exchange_of(&run, &run[answer].1)["status"], 202);
    }
    let form = the_form(&out);
    assert_eq!(
        form["requestedSchema"]["properties"]["priority"]["enum"],
        json!(["P1", "P2", "P3"])
    );
    let ticket = &out["calls"][0]["result"]["structuredContent"];
    assert_eq!(ticket["id"], "INC-4100");
    assert_eq!(ticket["priority"], "P2");
    assert_eq!(ticket["status"], "open");
    assert_eq!(out["calls"][1]["result"]["structuredContent"]["total"], 1);

    // Declined: nothing opens.
    declined_opens_nothing(&desk, "legacy");
}
