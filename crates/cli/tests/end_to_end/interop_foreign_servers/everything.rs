//! server-everything under the host, with the other servers listed beside it: what it
//! offers, its content blocks, progress and cancellation, Ctrl-C, and its forms.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

use super::*;
use crate::common::{
    Ran, gatehouse_command,
    process::{Process, Spawn},
    servers_file, time_limits,
};

// ------------------------------------------------------------------------------------
// What the servers offer
// ------------------------------------------------------------------------------------

/// Every foreign server in one servers file: server-everything (behind the tap), the two
/// Python servers over `t`, and server-filesystem and server-memory on stdio (they speak
/// nothing else) beside them. Each is listed with the revision it agreed on; of
/// server-everything, which refuses the probe and is reached with `initialize`, every
/// tool of that connection's `tools/list` is offered with its hints.
pub fn every_foreign_server_is_listed_by_one_host_with_the_revision_it_speaks(t: Transport) {
    let dir = tempfile::tempdir().unwrap();
    let tap_log = dir.path().join("everything.tap");
    // A credential for server-everything (which ignores it), from the environment: sent,
    // never shown.
    let everything = serve(Peer::Everything, t, Some(&tap_log)).with_secret("EVERYTHING_TOKEN");
    let confirm = serve(Peer::Confirm, t, None);
    let legacy = serve(Peer::Legacy, t, None);
    let mut memory = stdio_server(&node(), &[&npm_server("memory")]);
    memory["env"] = json!({"MEMORY_FILE_PATH": dir.path().join("memory.jsonl")});
    let config = servers_file(
        dir.path(),
        json!({
            "everything": everything.entry,
            "files": stdio_server(&node(), &[&npm_server("filesystem"), dir.path().to_str().unwrap()]),
            "memory": memory,
            "confirm": confirm.entry,
            "legacy": legacy.entry,
        }),
        json!({}),
    );
    let secret = "interop-secret-3f9a1c";
    let ran = run_bounded(
        &["tools", "--config", &config, "--json"],
        &[("EVERYTHING_TOKEN", secret)],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let rows = ran.rows();
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
        "legacy__add",
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
    for (server, count, protocol, name) in [
        ("everything", 15, "2025-11-25", "mcp-servers/everything"),
        ("files", 14, "2025-11-25", "secure-filesystem-server"),
        ("memory", 9, "2025-11-25", "memory-server"),
        ("confirm", 2, "2026-07-28", "py-confirm"),
        ("legacy", 4, "2025-11-25", "py-legacy-only"),
    ] {
        let line = ran
            .stderr
            .lines()
            .find(|l| l.starts_with(&format!("[host] discovered {count} tools on {server}: ")))
            .unwrap_or_else(|| panic!("{server}: {}", ran.stderr));
        assert!(
            line.contains(&format!(
                "{{\"protocol\": \"{protocol}\", \"server\": \"{name}\""
            )),
            "{line}"
        );
    }

    // server-everything, as the tap saw it: the probe refused, then `initialize` at
    // 2025-11-25.
    let tap = tapped(&tap_log);
    assert_eq!(
        negotiated(&tap),
        ("initialize".to_string(), "2025-11-25".to_string())
    );
    let probe = first_request(&tap);
    assert_eq!(probe["method"], "server/discover", "the host probes first");
    match t {
        Transport::Stdio => assert!(
            tap.iter()
                .any(|(d, m)| d == "<<" && m["id"] == probe["id"] && m["error"]["code"] == -32601),
            "server-everything answers the probe with -32601"
        ),
        Transport::Http => {
            // HTTP 400, -32000, no session.
            let refused = exchange_of(&tap, &probe);
            assert_eq!(refused["status"], 400, "{refused}");
            assert_eq!(refused["headers"]["mcp-protocol-version"], "2026-07-28");
            assert!(
                tap.iter()
                    .any(|(d, m)| d == "<<" && m["error"]["code"] == -32000),
                "{tap:#?}"
            );
        }
    }
    let init = sent(&tap, "initialize");
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
    if t == Transport::Http {
        // `initialize` opened a session that every later request carried, with the header
        // from the servers file.
        let session = exchange_of(&tap, &init)["session"].clone();
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
    }
    // What the server listed on that very connection (it lists more tools to clients that
    // declare sampling or roots; the host declares elicitation only): every tool is
    // offered with its hints, plus the host's read_resource (the server has resources).
    let list_ids: Vec<Value> = tap
        .iter()
        .filter(|(d, m)| d == ">>" && m["method"] == "tools/list")
        .map(|(_, m)| m["id"].clone())
        .collect();
    let listed = tap
        .iter()
        .rfind(|(d, m)| d == "<<" && list_ids.contains(&m["id"]) && m.get("result").is_some())
        .expect("a tools/list answer")
        .1["result"]["tools"]
        .as_array()
        .unwrap()
        .clone();
    assert!(listed.len() >= 15, "{}", listed.len());
    for tool in &listed {
        let name = format!("everything__{}", tool["name"].as_str().unwrap());
        let row = row(&name);
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
    let everything_rows = rows.iter().filter(|r| r["server"] == "everything").count();
    assert_eq!(everything_rows, listed.len(), "{rows:?}");
    assert!(
        ran.stderr
            .contains(&format!("discovered {} tools on everything:", listed.len())),
        "{}",
        ran.stderr
    );
    assert!(!ran.stdout.contains(secret) && !ran.stderr.contains(secret));
}

// ------------------------------------------------------------------------------------
// Content
// ------------------------------------------------------------------------------------

pub fn server_everything_images_links_embedded_resources_structured_and_annotated_results(
    t: Transport,
) {
    let world = World::new(Peer::Everything, t);
    let ran = world.ask(
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
    let found = discovered(&ran, "everything", "2025-11-25", "mcp-servers/everything");
    assert_eq!(found["version"], "2.0.0");
    assert_eq!(ran.outcomes(), vec!["ok"; 7], "{:#?}", ran.step_texts());
    assert_eq!(ran.answer(), "ok");

    // Binary blocks are saved for the person: the image, the blob read through the link,
    // the embedded blob, the annotated message's image.
    let saved = ran.saved();
    assert_eq!(
        ran.saved_kinds(),
        vec!["image", "resource", "resource", "image"],
        "{:#?}",
        ran.step_texts()
    );
    for s in &saved {
        let path = Path::new(s["data"]["path"].as_str().unwrap());
        assert!(path.starts_with(world.path().join("saved")), "{path:?}");
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

    let wire = world.wire();
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
    assert_eq!(blocks(&links, "resource_link").len(), 2, "{links}");
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

// ------------------------------------------------------------------------------------
// Progress, time limits and Ctrl-C
// ------------------------------------------------------------------------------------

/// Each round may go 0.8 s without news, progress extends that to at most 1.5 s: the first
/// operation (1 s, progress every 0.25 s) finishes, the second (3 s) is cancelled, and the
/// turn goes on with one more call (so the connection is still open when the cancellation
/// is written).
pub fn server_everything_long_operation_shows_progress_and_a_short_limit_cancels_it(t: Transport) {
    let world = World::tapped(Peer::Everything, t);
    let started = Instant::now();
    let ran = world.ask(
        json!([
            {"tool_calls": [{"name": "everything__trigger-long-running-operation", "arguments": {"duration": 1, "steps": 4}}]},
            {"tool_calls": [{"name": "everything__trigger-long-running-operation", "arguments": {"duration": 3, "steps": 6}}]},
            {"tool_calls": [{"name": "everything__get-sum", "arguments": {"a": 2, "b": 3}}]},
            {"answer": "ok"}
        ]),
        &[],
        &time_limits("0.8", "1.5"),
    );
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(
        ran.outcomes(),
        vec!["ok", "timeout", "ok"],
        "{:#?}",
        ran.step_texts()
    );
    assert_eq!(ran.answer(), "ok");
    let all = ran.steps();
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
    // No progress of the cancelled operation (server-everything goes on sending it) is
    // counted for the next call.
    assert!(
        !progress.iter().any(|(i, _)| *i > timed_out),
        "{:#?}",
        ran.step_texts()
    );
    // The host sent notifications/cancelled for that request, before the next call.
    assert_cancelled_before_the_next_call(&world.wire(), 1);

    // On the wire, as the server got it: the cancellation before the next call, and no
    // result for the cancelled one.
    let tap = world.tap();
    let calls: Vec<Value> = tap
        .iter()
        .filter(|(d, m)| d == ">>" && m["method"] == "tools/call")
        .map(|(_, m)| m.clone())
        .collect();
    assert_eq!(calls.len(), 3, "{tap:#?}");
    let cancelled = tap
        .iter()
        .position(|(d, m)| {
            d == ">>"
                && m["method"] == "notifications/cancelled"
                && m["params"]["requestId"] == calls[1]["id"]
        })
        .unwrap_or_else(|| panic!("no notifications/cancelled reached the server: {tap:#?}"));
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
    if t == Transport::Http {
        // The progress came on the call's own event stream; the cancellation was POSTed
        // in the call's session (202).
        let stream = exchange_of(&tap, &calls[0]);
        assert_eq!(stream["content_type"], "text/event-stream", "{stream}");
        let posted = exchange_of(&tap, &tap[cancelled].1);
        assert_eq!(posted["status"], 202, "{posted}");
        assert!(posted["headers"]["mcp-session-id"].is_string(), "{posted}");
    }
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

/// server-everything goes on reporting a cancelled operation: those notifications are
/// not shown as the next call's progress, nor do they extend its time limit.
pub fn progress_of_a_cancelled_call_is_not_counted_for_the_next_one(t: Transport) {
    let world = World::new(Peer::Everything, t);
    let ran = world.ask(
        json!([
            {"tool_calls": [{"name": "everything__trigger-long-running-operation", "arguments": {"duration": 3, "steps": 6}}]},
            {"tool_calls": [{"name": "everything__trigger-long-running-operation", "arguments": {"duration": 1, "steps": 1}}]},
            {"answer": "ok"}
        ]),
        &[],
        // The first call times out at the hard maximum; the second (one step, done
        // after 1 s, with no progress before) ends within the plain limit.
        &time_limits("1.3", "1.5"),
    );
    let all = ran.steps();
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
    assert_eq!(ran.outcomes(), vec!["timeout", "ok"]);
}

/// `gatehouse ask` calling a 4 s operation, then the calls of `more`, then answering "ok";
/// sent SIGINT once the operation has reported progress (it is in flight). What it printed,
/// which must say the call was stopped and the model went on.
fn interrupted(world: &World, more: &[Value]) -> Ran {
    let mut decisions = vec![
        json!({"tool_calls": [{"name": "everything__trigger-long-running-operation", "arguments": {"duration": 4, "steps": 8}}]}),
    ];
    decisions.extend_from_slice(more);
    decisions.push(json!({"answer": "ok"}));
    let model = playback(world.path(), Value::from(decisions));
    let record = world.path().join("record.jsonl");
    let config = world.config();
    let args = ask_args(&config, &model, &["--record", record.to_str().unwrap()]);
    let host: Process = Spawn::new(gatehouse_command(&args, &[]), "gatehouse ask").run();
    let deadline = Instant::now() + Duration::from_secs(15);
    while !json_lines(&record)
        .iter()
        .any(|l| l["method"] == "notifications/progress")
    {
        if Instant::now() > deadline {
            let ran = host.wait(Duration::from_secs(1));
            panic!("the operation never reported progress:\n{}", ran.stderr);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(host.signal("INT"));
    let ran = host.wait(PEER_LIMIT);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains("[host] stopping the call in flight; press Ctrl-C again to quit"),
        "{}",
        ran.stderr
    );
    ran.assert_steps(&["person: stopped the call: it was cancelled on the server"]);
    assert_eq!(ran.answer(), "ok", "the model heard it and went on");
    ran
}

/// Ctrl-C stops the call in flight, and the turn goes on with one more call.
pub fn ctrl_c_stops_server_everythings_long_operation_and_the_turn_goes_on(t: Transport) {
    let world = World::new(Peer::Everything, t);
    let ran = interrupted(
        &world,
        &[json!({"tool_calls": [{"name": "everything__get-sum", "arguments": {"a": 2, "b": 3}}]})],
    );
    assert_eq!(ran.outcomes(), vec!["stopped", "ok"]);
    assert_cancelled_before_the_next_call(&world.wire(), 0);
}

/// Ctrl-C on the turn's last call: the server still gets `notifications/cancelled` (the
/// host awaits the cancellation before it closes the connection), and over HTTP the
/// session is closed after it.
pub fn ctrl_c_on_the_turns_last_call_still_tells_the_server(t: Transport) {
    let world = World::tapped(Peer::Everything, t);
    let ran = interrupted(&world, &[]);
    assert_eq!(ran.outcomes(), vec!["stopped"]);
    let tap = world.tap();
    let call = sent(&tap, "tools/call")["id"].clone();
    let cancelled = tap
        .iter()
        .position(|(d, m)| {
            d == ">>"
                && m["method"] == "notifications/cancelled"
                && m["params"]["requestId"] == call
        })
        .unwrap_or_else(|| panic!("no notifications/cancelled reached the server: {tap:#?}"));
    if t == Transport::Http {
        assert_eq!(exchange_of(&tap, &tap[cancelled].1)["status"], 202);
        // Then the session was closed.
        assert!(
            http_exchanges(&tap[cancelled..])
                .iter()
                .any(|e| e["method"] == "DELETE"),
            "{tap:#?}"
        );
    }
}

// ------------------------------------------------------------------------------------
// Forms (`elicitation/create`, the handshake revisions' way)
// ------------------------------------------------------------------------------------

fn elicitation_decisions() -> Value {
    json!([
        {"tool_calls": [{"name": "everything__trigger-elicitation-request", "arguments": {}}]},
        {"answer": "ok"}
    ])
}

/// A run of `trigger-elicitation-request` with these options, and the form's answer as the
/// host sent it on the wire (the form itself checked: it requires `name`).
fn answer_form(t: Transport, options: &[&str]) -> (Ran, Value, String) {
    let world = World::new(Peer::Everything, t);
    let ran = world.ask(elicitation_decisions(), options, &[]);
    let wire = world.wire();
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
    let answer = wire
        .iter()
        .find(|(d, m)| d == "to_server" && m["id"] == asked["id"] && m.get("method").is_none())
        .expect("the host answered the form")
        .1["result"]
        .clone();
    let result = texts(&tool_result(&wire, "trigger-elicitation-request", 0));
    (ran, answer, result)
}

pub fn server_everythings_form_is_answered_by_answer_options_and_declined_by_default(t: Transport) {
    // Accepted with the person's --answer values, typed by the form's schema.
    let (ran, answer, result) = answer_form(
        t,
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
    );
    // The tool is not on the allow-list (it is not read-only): the person approved it.
    ran.assert_steps(&[
        "person: said yes",
        "server: everything asks: Please provide inputs for the following fields:",
        "person: answered accept",
    ]);
    assert_eq!(ran.outcomes(), vec!["ok"]);
    assert_eq!(ran.tool_events()[0]["asked_user"], true);
    assert_eq!(
        answer,
        json!({"action": "accept", "content": {"name": "Sam Lee", "check": true, "integer": 7, "untitledSingleSelectEnum": "Joey"}})
    );
    assert!(
        result.contains("- Name: Sam Lee")
            && result.contains("- Agreed to terms: true")
            && result.contains("- Favorite Integer: 7"),
        "{result}"
    );

    // --decline declines it.
    let (ran, answer, result) = answer_form(t, &["--yes", "--decline"]);
    ran.assert_steps(&["person: answered decline"]);
    assert_eq!(answer, json!({"action": "decline"}));
    assert!(result.contains("User declined"), "{result}");

    // No options and no terminal: nobody can answer, so the answer is no.
    let (_, answer, _) = answer_form(t, &["--yes"]);
    assert_eq!(answer, json!({"action": "decline"}));
}

/// A form that arrives as `elicitation/create` (every server on revisions up to
/// 2025-11-25) is a step like an `input_required` one: which server asked what, and what
/// the person answered; the call's record says `asked_user: true`.
pub fn a_form_from_an_older_server_is_shown_like_an_input_required_one(t: Transport) {
    let (ran, _, _) = answer_form(t, &["--yes", "--answer", "name=Sam"]);
    ran.assert_steps(&[
        "server: everything asks: Please provide inputs for the following fields:",
        "person: answered accept",
    ]);
    assert_eq!(ran.tool_events()[0]["asked_user"], true);
}

/// Answers given with --answer are checked against the field's whole schema, not its
/// `enum` only: a multiple-choice field (`type: array`) is sent as a list, and a number
/// above the field's `maximum` or a choice outside a titled enum (`oneOf`) declines the
/// form.
pub fn form_answers_are_checked_against_the_whole_field_schema(t: Transport) {
    let (_, answer, _) = answer_form(
        t,
        &[
            "--yes",
            "--answer",
            "name=Sam",
            "--answer",
            "untitledMultipleSelectEnum=Piano",
        ],
    );
    assert_eq!(
        answer["content"]["untitledMultipleSelectEnum"],
        json!(["Piano"])
    );
    for bad in ["integer=500", "titledSingleSelectEnum=Batman"] {
        let (_, answer, _) = answer_form(t, &["--yes", "--answer", "name=Sam", "--answer", bad]);
        assert_eq!(answer, json!({"action": "decline"}), "{bad}");
    }
}
