//! The gateway's own tasks (the tasks extension, SEP-2663) in front of the reference
//! servers' task tools: the orders server's `export_report` and the testbed's `task_job`,
//! whose `ask` goes `input_required` inside its task. The FastMCP 4.1.4 client with
//! fastmcp-tasks (`tests/peers/fastmcp_tasks_client.py`) follows tasks to their ends,
//! answers the question inside one (the gateway passes it on, never answers it), cancels
//! one, and reads another caller's task id as unknown; two replicas share the tasks
//! through their store (SQLite and PostgreSQL): a task started on one is read, answered
//! and finished on the other, and behind nginx it is followed to its end after the
//! replica that started it is killed with SIGKILL.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;
use crate::common::{
    http_server::{Answer, post, tasks_request},
    nginx::start_nginx,
    serve::{OMAR_TOKEN, SAM_TOKEN},
};
use crate::interop_foreign_clients::Caller;

/// The longest a test waits for a task to reach a status.
const WAIT: Duration = Duration::from_secs(60);
/// Where the `afterCall` hook writes down what it is given, one JSON line a call.
const AFTER_CALL_LOG: &str = "after-call.jsonl";
/// An id no task ever had.
const MADE_UP: &str = "0123456789abcdef0123456789abcdef";

/// The servers file of these tests: orders and testbed, their task store shared by every
/// replica's servers (a task outlives the server process that started it: another takes
/// it over after a second's silence), both tools allowed, and an `afterCall` hook that
/// writes down each result it is given ([`AFTER_CALL_LOG`]) and keeps it.
fn task_config(dir: &Path) -> String {
    let log = dir.join(AFTER_CALL_LOG);
    let script = format!("cat >> {0}; echo >> {0}; echo '{{}}'", log.display());
    let exe = exe().to_string_lossy().into_owned();
    let server = |name: &str| {
        json!({"command": exe, "args": ["serve", name],
               "env": {"MCP_USER": "usr-sam", "MCP_TENANT": "larkfield",
                       "GATEHOUSE_SERVER_TASKS_DB": dir.join("server-tasks.db"),
                       "GATEHOUSE_TASK_STALE_MS": "1000"}})
    };
    write(
        dir,
        "servers.json",
        &json!({
            "mcpServers": {"orders": server("orders"), "testbed": server("testbed")},
            "gatehouse": {
                "rules": [{"tool": "orders__export_report", "decision": "allow"},
                          {"tool": "testbed__task_job", "decision": "allow"}],
                "ledger": {"path": dir.join("ledger.jsonl"), "arguments": true},
                "hooks": {"afterCall": {"command": "sh", "args": ["-c", script], "timeoutMs": 5000}}
            }
        }),
    )
}

/// Run the FastMCP tasks client with `plan` against the gateway at `url` as `caller`.
fn fastmcp(url: &str, caller: Caller, plan: Value, extra: &[&str], dir: &Path) -> Value {
    let python = require("fastmcp/bin/python", "fastmcp");
    let mut argv = vec![
        script("fastmcp_tasks_client.py"),
        "--plan".into(),
        plan.to_string(),
    ];
    argv.extend(extra.iter().map(|a| a.to_string()));
    argv.extend([
        "--header".into(),
        caller.bearer(),
        "--url".into(),
        url.into(),
    ]);
    let out = peer_client(&python, &argv, dir);
    assert_eq!(out["protocolVersion"], "2026-07-28", "{out}");
    assert!(
        out["extensions"]
            .as_array()
            .is_some_and(|e| e.contains(&json!("io.modelcontextprotocol/tasks"))),
        "the gateway offers the tasks extension: {out}"
    );
    out
}

/// The gateway task ids a gateway's stderr says it handed out, with the server's own.
fn handed(gateway: &Process) -> Vec<(String, String)> {
    gateway
        .lines()
        .iter()
        .filter_map(|l| {
            let rest = l.split_once(" as task ")?.1;
            let (theirs, rest) = rest.split_once(" for ")?;
            let ours = rest.rsplit_once(" as task ")?.1.split_whitespace().next()?;
            Some((ours.to_owned(), theirs.trim().to_owned()))
        })
        .collect()
}

pub fn the_fastmcp_client_follows_answers_and_cancels_gateway_tasks(_t: Transport) {
    let dir = tempfile::tempdir().unwrap();
    let config = task_config(dir.path());
    let state = dir.path().join("state.db");
    let gw = start_gateway(dir.path(), &config, state.to_str().unwrap());
    let plan = json!([
        {"call": "orders__export_report", "arguments": {"rows": 3000}},
        {"call": "testbed__task_job", "arguments": {"seconds": 0.5, "ask": true}},
        {"task": "testbed__task_job", "arguments": {"seconds": 120}, "then": "cancel"},
        {"task": "orders__export_report", "arguments": {"rows": 100000}, "then": "keep"},
    ]);
    let out = fastmcp(
        &gw.url,
        Caller::Sam,
        plan,
        &["--answer", "go=true"],
        dir.path(),
    );
    let steps = &out["steps"];
    let report = &steps[0]["result"];
    assert_eq!(report["isError"], false, "{out}");
    assert_eq!(report["structuredContent"]["rows"], 3000, "{out}");
    // The question inside the task reached the client, and its answer the server.
    assert_eq!(out["elicitations"].as_array().unwrap().len(), 1, "{out}");
    assert_eq!(
        out["elicitations"][0]["message"],
        "Go on with the long job?"
    );
    let job = &steps[1]["result"];
    assert_eq!(job["structuredContent"]["answer"], "accept", "{out}");
    assert_eq!(job["structuredContent"]["slept"], 0.5, "{out}");
    assert_eq!(steps[2]["final"]["status"], "cancelled", "{out}");

    // The ids the client got are the gateway's, not the servers'.
    let kept = steps[3]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{out}"));
    let ids = handed(&gw);
    assert_eq!(ids.len(), 4, "{:?}", gw.lines());
    for (ours, theirs) in &ids {
        assert_eq!(ours.len(), 32, "{ours}");
        assert_ne!(ours, theirs);
    }
    assert!(ids.iter().any(|(ours, _)| ours == kept), "{ids:?}");

    // Another user, and Sam in another organization, read Sam's task as a made-up id.
    let probe = json!([{"get": kept}, {"cancel": kept}, {"get": MADE_UP}, {"cancel": MADE_UP}]);
    for other in [Caller::Omar, Caller::SamInBramble] {
        let out = fastmcp(&gw.url, other, probe.clone(), &[], dir.path());
        let steps = out["steps"].as_array().unwrap();
        let unknown = &steps[2]["error"];
        assert_eq!(unknown["code"], -32602, "{other:?}: {out}");
        for s in steps {
            assert_eq!(&s["error"], unknown, "{other:?}: {out}");
        }
    }
    let out = fastmcp(
        &gw.url,
        Caller::Sam,
        json!([{"get": kept}]),
        &[],
        dir.path(),
    );
    let task = &out["steps"][0]["task"];
    assert_eq!(task["taskId"], kept, "{out}");
    assert_ne!(
        task["status"], "cancelled",
        "another caller's cancel reached it: {out}"
    );

    // Each call passed the gate first: one ledger line each, the caller named.
    let lines = ledger_lines(&dir.path().join("ledger.jsonl"));
    let runs = lines
        .iter()
        .filter(|l| l["decision"] == "run")
        .filter(|l| l["caller"] == "usr-sam@larkfield")
        .count();
    assert_eq!(runs, 4, "{lines:#?}");
    // The tasks' ends went through the afterCall hook, as any call's through the gateway.
    let hooked = crate::interop_peers::json_lines(&dir.path().join(AFTER_CALL_LOG));
    let rows: Vec<&Value> = hooked
        .iter()
        .filter(|h| h["tool"] == "orders__export_report")
        .map(|h| &h["result"]["structuredContent"]["rows"])
        .collect();
    assert!(rows.contains(&&json!(3000)), "{hooked:#?}");
    let jobs = hooked.iter().filter(|h| h["tool"] == "testbed__task_job");
    assert_eq!(
        jobs.count(),
        1,
        "the cancelled job has no result: {hooked:#?}"
    );
    let job = hooked
        .iter()
        .find(|h| h["tool"] == "testbed__task_job")
        .unwrap();
    assert_eq!(
        job["result"]["structuredContent"]["answer"], "accept",
        "{job}"
    );
}

/// One request to `url` as `token`, from a client that declares the tasks extension.
async fn send(url: &str, token: &str, id: i64, method: &str, params: Value) -> Answer {
    post(url, Some(token), &tasks_request(id, method, params)).await
}

/// Poll `tasks/get` of `task` at `url` until its status is `want` or it ended.
async fn poll_until(url: &str, task: &str, want: &str) -> Value {
    let start = Instant::now();
    for id in 1000.. {
        let got = send(url, SAM_TOKEN, id, "tasks/get", json!({"taskId": task})).await;
        let seen = got.result(id).clone();
        let status = seen["status"].as_str().unwrap_or_default().to_owned();
        let ended = ["completed", "failed", "cancelled"].contains(&status.as_str());
        if status == want || ended || start.elapsed() > WAIT {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    unreachable!()
}

/// Start `task_job` through `url` as Sam: the gateway's task id.
async fn start_job(url: &str, arguments: Value) -> String {
    let params = json!({"name": "testbed__task_job", "arguments": arguments});
    let made = send(url, SAM_TOKEN, 1, "tools/call", params).await;
    let made = made.result(1);
    assert_eq!(made["resultType"], "task", "{made}");
    assert_eq!(made["status"], "working", "{made}");
    made["taskId"].as_str().unwrap().to_owned()
}

pub async fn a_task_started_on_one_replica_is_read_answered_and_finished_on_the_other(
    backing: Backing,
) {
    let dir = tempfile::tempdir().unwrap();
    let (shared, a, b) = two_replicas(dir.path(), backing, task_config(dir.path()));
    let task = start_job(&a.url, json!({"seconds": 1, "ask": true})).await;

    let asking = poll_until(&b.url, &task, "input_required").await;
    assert_eq!(asking["status"], "input_required", "{asking}");
    let (key, question) = asking["inputRequests"]
        .as_object()
        .and_then(|q| q.iter().next())
        .unwrap_or_else(|| panic!("{asking}"));
    assert_eq!(question["method"], "elicitation/create", "{asking}");
    // Another caller cannot answer it, nor see it.
    let answers = json!({key.as_str(): {"action": "accept", "content": {"go": true}}});
    let update = json!({"taskId": task, "inputResponses": answers});
    let refused = send(&b.url, OMAR_TOKEN, 2, "tasks/update", update.clone()).await;
    assert_eq!(refused.error_code(2), -32602, "{}", refused.text);
    let made_up = send(
        &b.url,
        OMAR_TOKEN,
        3,
        "tasks/get",
        json!({"taskId": MADE_UP}),
    )
    .await;
    let other = send(&b.url, OMAR_TOKEN, 4, "tasks/get", json!({"taskId": task})).await;
    assert_eq!(
        other.reply(4)["error"],
        made_up.reply(3)["error"],
        "{}",
        other.text
    );

    let acked = send(&b.url, SAM_TOKEN, 5, "tasks/update", update).await;
    assert_eq!(
        acked.result(5),
        &json!({"resultType": "complete"}),
        "{}",
        acked.text
    );
    let done = poll_until(&b.url, &task, "completed").await;
    assert_eq!(done["status"], "completed", "{done}");
    let result = &done["result"]["structuredContent"];
    assert_eq!(
        (result["slept"].as_f64(), &result["answer"]),
        (Some(1.0), &json!("accept"))
    );
    // Read again on the replica that started it: the same end, from the store.
    let again = poll_until(&a.url, &task, "completed").await;
    assert_eq!(again["result"], done["result"]);

    assert!(
        handed(&a).iter().any(|(ours, _)| *ours == task),
        "{:?}",
        a.lines()
    );
    assert!(handed(&b).is_empty(), "{:?}", b.lines());
    let lines = shared.ledger();
    let line = last_line_of(&lines, "testbed__task_job");
    assert_eq!(line["caller"], "usr-sam@larkfield", "{line}");
    shared.assert_ledger_verifies();
}

pub async fn behind_nginx_a_task_outlives_the_replica_that_started_it(backing: Backing) {
    let dir = tempfile::tempdir().unwrap();
    let (_shared, a, b) = two_replicas(dir.path(), backing, task_config(dir.path()));
    let proxy = start_nginx(dir.path(), &[port_of(&a), port_of(&b)]);
    let task = start_job(&a.url, json!({"seconds": 4})).await;
    let seen = poll_until(&proxy.url, &task, "working").await;
    assert_eq!(seen["status"], "working", "{seen}");
    assert!(a.signal("KILL"), "replica A could not be killed");
    // Its server process went with it; the other replica's takes the task over.
    let done = poll_until(&proxy.url, &task, "completed").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["structuredContent"]["slept"], 4.0, "{done}");
}
