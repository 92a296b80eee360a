//! The server's questions that no round of the caller's carries: an older server's
//! `elicitation/create` in the middle of a call (server-everything, on 2025-11-25), and
//! the question inside a task the gateway follows itself (the testbed's `task_job` with
//! `ask`). An older client is asked them inside its call, as `elicitation/create` of the
//! gateway's, and its answer goes back to the server. A 2026-07-28 client is asked an
//! older server's question in its next round, the call held on the replica that runs it:
//! its answer (or decline) reaches the server, behind nginx's round robin from the other
//! replica through the store (SQLite and PostgreSQL); another caller is refused, and a
//! holder killed between the rounds is said to the client, never waited on.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;
use crate::common::{
    http_server::call,
    nginx::start_nginx,
    serve::{OMAR_TOKEN, SAM_TOKEN},
};

/// The older server's tool that asks in the middle of its call.
const ASKS: &str = "everything__trigger-elicitation-request";

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

    // A 2026-07-28 client is asked in its next round, and its decline reaches the server.
    let mut declining = call.to_vec();
    declining.push("--decline");
    let out = gw.client("auto", &declining);
    let (asked, result) = asked_and_result(&out);
    let form = "Please provide inputs for the following fields:";
    assert_eq!(
        (asked, &out["protocolVersion"]),
        (vec![form.into()], &json!("2026-07-28"))
    );
    assert!(result.contains("User declined"), "{out}");
}

pub fn an_older_servers_question_reaches_a_2026_client_in_its_next_round(t: Transport) {
    let gw = Gw::with_config(t, config);
    let call = [
        "--no-list",
        "--call",
        ASKS,
        "--answer",
        "name=Sam Lee",
        "--answer",
        "check=true",
    ];
    let out = gw.client("auto", &call);
    let (asked, result) = asked_and_result(&out);
    assert_eq!(out["protocolVersion"], "2026-07-28", "{out}");
    assert_eq!(asked.len(), 1, "{out}");
    assert!(asked[0].contains("Please provide inputs"), "{out}");
    assert_ne!(out["calls"][0]["result"]["isError"], true, "{out}");
    assert!(
        result.contains("- Name: Sam Lee") && result.contains("- Agreed to terms: true"),
        "the answer reached the server: {out}"
    );
    let ledger = ledger_lines(&gw.ledger);
    assert_eq!(
        ledger.len(),
        2,
        "each round judged, a line each: {ledger:?}"
    );
    if let Some(gateway) = gw.gateway() {
        assert!(
            said(gateway, "the call is held here"),
            "{:?}",
            gateway.lines()
        );
        assert!(
            said(gateway, "for the call held here"),
            "{:?}",
            gateway.lines()
        );
        assert!(said(gateway, "answered accept"), "{:?}", gateway.lines());
    }
}

/// The servers file of the replicas: server-everything alone, its asking tool allowed.
fn everything(dir: &Path) -> String {
    write(
        dir,
        "servers.json",
        &json!({
            "mcpServers": {
                "everything": {"command": node(), "args": [npm_server("everything"), "stdio"]}
            },
            "gatehouse": {
                "rules": [{"tool": ASKS, "decision": "allow"}],
                "ledger": {"path": dir.join("ledger.jsonl")}
            }
        }),
    )
}

pub fn behind_nginx_a_held_calls_answer_lands_on_the_other_replica(backing: Backing) {
    let dir = tempfile::tempdir().unwrap();
    let (shared, a, b) = two_replicas(dir.path(), backing, everything(dir.path()));
    let proxy = start_nginx(dir.path(), &[port_of(&a), port_of(&b)]);
    let mut argv = vec![script("py_mcp_client.py")];
    argv.extend(
        [
            "--mode",
            "auto",
            "--no-list",
            "--call",
            ASKS,
            "--answer",
            "name=Sam Lee",
        ]
        .map(String::from),
    );
    argv.extend([
        "--header".into(),
        bearer(),
        "--url".into(),
        proxy.url.clone(),
    ]);
    let out = py_client(&argv, dir.path());
    let (asked, result) = asked_and_result(&out);
    assert_eq!(out["protocolVersion"], "2026-07-28", "{out}");
    assert_eq!(asked.len(), 1, "{out}");
    assert!(result.contains("- Name: Sam Lee"), "{out}");
    // nginx's round robin sent the first round to one replica, which held the call, and
    // the answer to the other, which carried it there through the store.
    let held = [&a, &b].map(|p| said(p, "the call is held here"));
    let carried = [&a, &b].map(|p| said(p, "for the call held on another replica"));
    assert!(
        held.iter().filter(|x| **x).count() == 1 && carried == held.map(|h| !h),
        "held on {held:?}, answered on {carried:?}"
    );
    let holder = if held[0] { &a } else { &b };
    let told = holder.lines();
    let answers = told.iter().filter(|l| l.contains("answered accept"));
    assert_eq!(answers.count(), 1, "the server got one answer: {told:?}");
    let lines = shared.ledger();
    assert_eq!(
        lines.len(),
        2,
        "one call of two rounds, each judged: {lines:#?}"
    );
    shared.assert_ledger_verifies();
}

/// The next round of a held call: its state, and the answer to the server's form.
fn answering(state: &str) -> Value {
    json!({"name": ASKS, "arguments": {}, "requestState": state,
           "inputResponses": {"gatehouse.question":
               {"action": "accept", "content": {"name": "Sam Lee", "check": true}}}})
}

/// The first round of the asking call on `url`: the held call's state.
async fn held_on(url: &str, id: i64) -> String {
    let first = call(url, SAM_TOKEN, id, json!({"name": ASKS, "arguments": {}})).await;
    let asked = first.result(id);
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let form = &asked["inputRequests"]["gatehouse.question"];
    assert_eq!(form["method"], "elicitation/create", "{asked}");
    let message = form["params"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("Please provide inputs"), "{asked}");
    asked["requestState"].as_str().expect("a state").to_owned()
}

fn text_of(result: &Value) -> String {
    result["content"].to_string()
}

pub async fn a_held_call_answers_only_its_caller_once_and_a_dead_holder_is_said(backing: Backing) {
    let dir = tempfile::tempdir().unwrap();
    let (shared, a, b) = two_replicas(dir.path(), backing, everything(dir.path()));
    let state = held_on(&a.url, 1).await;
    // Another caller with the state: refused as any sealed state is.
    let stolen = call(&b.url, OMAR_TOKEN, 2, answering(&state)).await;
    assert_eq!(stolen.error_code(2), -32602, "{}", stolen.text);
    // The caller answers on the other replica: carried to the holder, and back.
    let done = call(&b.url, SAM_TOKEN, 3, answering(&state)).await;
    let done = done.result(3);
    assert_ne!(done["isError"], true, "{done}");
    assert!(text_of(done).contains("- Name: Sam Lee"), "{done}");
    // Used once: again on either replica, nothing reaches the server.
    for (url, id) in [(&a.url, 4), (&b.url, 5)] {
        let again = call(url, SAM_TOKEN, id, answering(&state)).await;
        let again = again.result(id);
        assert_eq!(again["isError"], true, "{again}");
        assert!(text_of(again).contains("used once"), "{again}");
    }
    assert_eq!(
        a.lines()
            .iter()
            .filter(|l| l.contains("answered accept"))
            .count(),
        1,
        "{:?}",
        a.lines()
    );

    // The holder killed between the rounds: the other replica says so, within its bound.
    let state = held_on(&a.url, 6).await;
    assert!(a.signal("KILL"), "replica A could not be killed");
    let began = Instant::now();
    let orphan = call(&b.url, SAM_TOKEN, 7, answering(&state)).await;
    let orphan = orphan.result(7);
    assert!(
        began.elapsed() < Duration::from_secs(30),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(orphan["isError"], true, "{orphan}");
    let said_why = text_of(orphan);
    assert!(said_why.contains("did not take the answer"), "{orphan}");
    assert!(said_why.contains("may or may not have run"), "{orphan}");
    // That round's state was used with its ledger line, though its answer was not taken.
    let again = call(&b.url, SAM_TOKEN, 8, answering(&state)).await;
    assert!(
        text_of(again.result(8)).contains("used already"),
        "{}",
        again.text
    );
    // Each round is judged before its answer is carried, a line each: the two calls'
    // first rounds, the answered round and the round for the killed holder; a state
    // used again writes none.
    let lines = shared.ledger();
    assert_eq!(
        lines.len(),
        4,
        "every round judged, a line each: {lines:#?}"
    );
    shared.assert_ledger_verifies();
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
