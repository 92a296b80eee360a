//! server-everything under the host, with the other servers listed beside it: what it
//! offers, its content blocks and its forms (its long operation: `cancellation.rs`).

use std::path::Path;

use serde_json::{Value, json};

use super::*;
use crate::common::{Ran, servers_file};

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
        // Five servers start at once (two Python, three Node): under a loaded CI machine the
        // slowest has taken more than the default 20 s; this test is about what they offer.
        json!({"connectTimeoutMs": 90000}),
    );
    let secret = "interop-secret-3f9a1c";
    let ran = crate::common::run_within(
        &["tools", "--config", &config, "--json"],
        &[("EVERYTHING_TOKEN", secret)],
        std::time::Duration::from_secs(120),
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
