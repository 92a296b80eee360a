//! The server's questions that no round of the caller's carries: an older server's
//! `elicitation/create` in the middle of a call (server-everything, on 2025-11-25), and
//! the question inside a task the gateway follows itself (the testbed's `task_job` with
//! `ask`). An older client is asked them inside its call, as `elicitation/create` of the
//! gateway's, and its answer goes back to the server; a 2026-07-28 client has no such
//! request to be asked with, so they are declined, and the gateway says so.

use serde_json::{Value, json};

use super::*;

/// The servers file: server-everything on stdio and the testbed, both tools allowed.
fn config(dir: &Path) -> String {
    let exe = exe().to_string_lossy().into_owned();
    write(
        dir,
        "servers.json",
        &json!({
            "mcpServers": {
                "everything": {"command": node(), "args": [npm_server("everything"), "stdio"]},
                "testbed": {"command": exe, "args": ["serve", "testbed"],
                            "env": {"MCP_USER": "usr-sam", "MCP_TENANT": "larkfield",
                                    "GATEHOUSE_SERVER_TASKS_DB": dir.join("server-tasks.db")}}
            },
            "gatehouse": {
                "rules": [{"tool": "everything__trigger-elicitation-request", "decision": "allow"},
                          {"tool": "testbed__task_job", "decision": "allow"}],
                "ledger": {"path": dir.join("ledger.jsonl")}
            }
        }),
    )
}

/// The forms the client was shown, and the text of its one call's result.
fn asked_and_result(out: &Value) -> (Vec<String>, String) {
    let forms = out["elicitations"].as_array().cloned().unwrap_or_default();
    let messages = forms
        .iter()
        .map(|f| f["message"].as_str().unwrap_or_default().to_owned())
        .collect();
    let result = &out["calls"][0]["result"];
    let text = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    (messages, format!("{text}{}", result["structuredContent"]))
}

pub fn an_older_servers_question_reaches_an_older_client_inside_its_call(t: Transport) {
    let gw = Gw::with_config(t, config);
    let call = [
        "--no-list",
        "--call",
        "everything__trigger-elicitation-request",
    ];
    let mut older = call.to_vec();
    older.extend(["--answer", "name=Sam Lee", "--answer", "check=true"]);
    let out = gw.client("legacy", &older);
    let (asked, result) = asked_and_result(&out);
    assert_eq!(out["protocolVersion"], "2025-11-25", "{out}");
    assert_eq!(
        asked.len(),
        1,
        "the older client was asked the server's form: {out}"
    );
    assert!(asked[0].contains("Please provide inputs"), "{out}");
    assert!(
        result.contains("- Name: Sam Lee"),
        "the answer reached the server: {out}"
    );

    // A 2026-07-28 client has no request to be asked with: declined, nobody's answer.
    let out = gw.client("auto", &call);
    let (asked, result) = asked_and_result(&out);
    assert_eq!(out["protocolVersion"], "2026-07-28", "{out}");
    assert!(asked.is_empty(), "{out}");
    assert!(result.contains("declined"), "{out}");
}

pub fn a_tasks_question_reaches_an_older_client_inside_its_call(t: Transport) {
    let gw = Gw::with_config(t, config);
    let job = json!({"seconds": 0.2, "ask": true}).to_string();
    let call = ["--no-list", "--call", "testbed__task_job", "--args", &job];
    let mut older = call.to_vec();
    older.extend(["--answer", "go=true"]);
    let out = gw.client("legacy", &older);
    let (asked, result) = asked_and_result(&out);
    assert_eq!(asked, vec!["Go on with the long job?"], "{out}");
    assert_eq!(out["calls"][0]["result"]["isError"], false, "{out}");
    assert!(
        result.contains("accept"),
        "the answer reached the task: {out}"
    );
    let ledger = ledger_lines(&gw.ledger);
    assert_eq!(ledger.len(), 1, "one decision, one line: {ledger:?}");
}
