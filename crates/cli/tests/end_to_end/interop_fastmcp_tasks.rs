//! A foreign server that speaks the tasks extension under the host: FastMCP 4.1.4 with
//! fastmcp-tasks 4.1.4 (`tests/peers/fastmcp_tasks_server.py`, Streamable HTTP). The host
//! follows its task to the result (and to a tool error), answers a question inside a task
//! through the person, and cancels one on Ctrl-C with `tasks/cancel`. See docs/interop.md.

use serde_json::{Value, json};

use crate::common::*;
use crate::interop_peers::{http_peer, json_lines, require, script};

/// The FastMCP server on 127.0.0.1 with a free port, and a servers file naming it.
fn fastmcp() -> (crate::common::process::Process, Bed) {
    let python = require("fastmcp/bin/python", "fastmcp");
    let mut cmd = std::process::Command::new(python);
    cmd.arg(script("fastmcp_tasks_server.py"))
        .args(["--http", "0"]);
    let peer = http_peer(cmd, "fastmcp_tasks_server.py --http");
    let bed = Bed::new(
        json!({"fm": http_server(&peer.url, json!({}))}),
        json!({"allow": ["fm__slow_compute", "fm__failing_job", "fm__confirm_delete"]}),
    );
    (peer, bed)
}

fn call(tool: &str, arguments: Value) -> Value {
    json!({"tool_calls": [{"name": tool, "arguments": arguments}]})
}

/// The server's own JSON lines on stderr with this `event`.
fn server_events(peer: &crate::common::process::Process, event: &str) -> Vec<Value> {
    peer.lines()
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == event)
        .collect()
}

#[test]
fn the_host_follows_a_fastmcp_task_to_its_result_and_to_its_tool_error() {
    let (_peer, bed) = fastmcp();
    let ran = bed.play(
        json!([call("fm__slow_compute", json!({"seconds": 1, "label": "x"})),
               call("fm__failing_job", json!({})), {"answer": "done"}]),
        &[],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    ran.assert_step_starting("server: runs the call as task ");
    ran.assert_step_starting("server: result: ");
    assert_eq!(ran.outcomes(), ["ok", "tool_error"]);
    let events = ran.tool_events();
    assert!(
        events
            .iter()
            .all(|e| e["task_id"].as_str().is_some_and(|id| !id.is_empty())),
        "{events:?}"
    );
    let texts = ran.step_texts().join("\n");
    assert!(texts.contains("failing_job always fails"), "{texts}");
}

#[test]
fn a_question_inside_a_fastmcp_task_goes_to_the_person() {
    let (peer, bed) = fastmcp();
    let decisions =
        json!([call("fm__confirm_delete", json!({"filename": "b.txt"})), {"answer": "ok"}]);
    let ran = bed.play(decisions.clone(), &["--answer", "confirm=true"]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    ran.assert_steps(&["server: fm asks: Delete b.txt?", "person: answered accept"]);
    assert_eq!(
        ran.outcomes(),
        ["ok"],
        "{:#?}\n{:?}",
        ran.step_texts(),
        peer.lines()
    );
    let answered = server_events(&peer, "answered");
    assert_eq!(answered.len(), 1, "{:?}", peer.lines());
    assert_eq!(
        answered[0]["answer"],
        json!({"action": "accept", "content": {"confirm": true}})
    );
    // With no answer given and no terminal, the question is declined: never the model's.
    let ran = bed.play(decisions, &[]);
    ran.assert_steps(&["person: answered decline"]);
    let answered = server_events(&peer, "answered");
    assert_eq!(answered.len(), 2, "{:?}", peer.lines());
    assert_eq!(answered[1]["answer"]["action"], "decline");
}

#[test]
fn ctrl_c_cancels_a_fastmcp_task_with_tasks_cancel() {
    let (peer, bed) = fastmcp();
    let record = bed.path().join("record.jsonl");
    let model =
        bed.model(json!([call("fm__slow_compute", json!({"seconds": 60})), {"answer": "ok"}]));
    let args = ask_args(&bed.config, &model, &["--record", record.to_str().unwrap()]);
    let ran = crate::tasks::interrupted_once_polled(&args, &record);
    ran.assert_step_starting("host: asked fm to cancel task ");
    // FastMCP's task reached `cancelled`: the host saw it so before it ended the call.
    ran.assert_steps(&["person: stopped the call: it was cancelled on the server"]);
    assert_eq!(ran.outcomes(), ["stopped"]);
    assert!(
        json_lines(&record)
            .iter()
            .any(|l| l["method"] == "tasks/cancel"),
        "tasks/cancel was sent"
    );
    assert!(
        server_events(&peer, "finished").is_empty(),
        "{:?}",
        peer.lines()
    );
}
