//! The FastMCP 4.1.4 client with fastmcp-tasks 4.1.4 (`tests/peers/fastmcp_tasks_client.py`)
//! on the reference servers' tasks (the tasks extension of 2026-07-28): the orders server's
//! `export_report` followed to its result, the testbed's `task_job` asking inside its task
//! (answered with `tasks/update`) and cancelled with `tasks/cancel`, and a task id read by
//! another user and by its owner in another organization, which must read as unknown.
//!
//! Over HTTP this is where the servers' `Mcp-Name` workaround (`http/task_route.rs`) is
//! exercised: the FastMCP client sends no `Mcp-Name` on `tasks/*`, and every such exchange
//! must still be answered 200.

use serde_json::{Value, json};

use super::*;

/// What the client printed, and the tap's log of this run.
type Run = (Value, Vec<(String, Value)>);

/// Run `fastmcp_tasks_client.py --plan PLAN ARGS…` against `server` as `caller`.
fn fastmcp_client(desk: &Desk, caller: Caller, server: &str, plan: Value, args: &[&str]) -> Run {
    let python = require("fastmcp/bin/python", "fastmcp");
    let mark = desk.tap(server).len();
    let mut argv = vec![
        script("fastmcp_tasks_client.py"),
        "--plan".into(),
        plan.to_string(),
    ];
    argv.extend(strings(args));
    match desk.transport {
        Transport::Stdio => {
            argv.push("--".into());
            argv.extend(desk.command(server));
        }
        Transport::Http => argv.extend([
            "--header".into(),
            caller.bearer(),
            "--url".into(),
            desk.url(server),
        ]),
    }
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let ran = run_peer(&python, &argv, &desk.vars_as(caller), None);
    let out: Value = serde_json::from_str(&ran.stdout).unwrap_or_else(|e| {
        panic!(
            "the FastMCP client printed no JSON ({e}):\n{}\n{}",
            ran.stdout, ran.stderr
        )
    });
    assert_eq!(ran.status, 0, "{out}\n{}", ran.stderr);
    assert_eq!(out["protocolVersion"], "2026-07-28", "{out}");
    assert_eq!(out["extensions"], json!(["io.modelcontextprotocol/tasks"]));
    let run = desk.tap(server).split_off(mark);
    assert_exchanges(desk.transport, &run, "2026-07-28", server);
    (out, run)
}

/// The messages of a run the client sent with `method`.
fn sent<'a>(run: &'a [(String, Value)], method: &str) -> Vec<&'a Value> {
    run.iter()
        .filter(|(d, m)| d == ">>" && m["method"] == method)
        .map(|(_, m)| m)
        .collect()
}

/// The answer the server sent to `request` in a run.
fn answer<'a>(run: &'a [(String, Value)], request: &Value) -> &'a Value {
    &run.iter()
        .find(|(d, m)| d == "<<" && m["id"] == request["id"] && m.get("method").is_none())
        .unwrap_or_else(|| panic!("no answer to {request}"))
        .1
}

/// The run's `tasks/*` requests all declared the extension in their own `_meta`; over HTTP
/// the client sent none of them an `Mcp-Name` (the FastMCP client leaves it out), and the
/// server filled it in and answered each one: what `http/task_route.rs` is for.
fn task_requests_answered(t: Transport, run: &[(String, Value)]) -> usize {
    let requests: Vec<&Value> = ["tasks/get", "tasks/update", "tasks/cancel"]
        .iter()
        .flat_map(|m| sent(run, m))
        .collect();
    for r in &requests {
        let caps = &r["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
        assert!(
            caps["extensions"]["io.modelcontextprotocol/tasks"].is_object(),
            "{r}"
        );
        if t == Transport::Http {
            let e = exchange_of(run, r);
            assert!(e["headers"].get("mcp-name").is_none(), "{e}");
            assert_eq!(e["status"], 200, "{e}");
        }
    }
    requests.len()
}

/// The server's task records (`task_created`, `task_leg_ended`, …) of task `id`.
fn task_records(desk: &Desk, server: &str, id: &str) -> Vec<Value> {
    desk.records(server)
        .into_iter()
        .filter(|r| r["task_id"] == id)
        .collect()
}

/// The id of the task the server made for the run's one `tools/call` of `tool`.
fn created_task(run: &[(String, Value)], tool: &str) -> String {
    let calls = sent(run, "tools/call");
    let call = calls
        .iter()
        .find(|c| c["params"]["name"] == tool)
        .unwrap_or_else(|| panic!("no call of {tool}: {run:#?}"));
    let created = &answer(run, call)["result"];
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().unwrap().to_owned()
}

/// `export_report` of 3,000 rows: the server answers with a task, the client polls it with
/// `tasks/get` to its end and gets the report, checked against its output schema by the
/// client as for any call.
pub fn the_fastmcp_client_follows_export_report_as_a_task_to_its_result(t: Transport) {
    let desk = Desk::new(t, &["orders"]);
    let plan = json!([{"call": "export_report", "arguments": {"rows": 3000}}]);
    let (out, run) = fastmcp_client(&desk, Caller::Sam, "orders", plan, &[]);
    let result = &out["steps"][0]["result"];
    assert_eq!(result["isError"], false, "{out}");
    assert_eq!(result["structuredContent"]["rows"], 3000, "{result}");
    assert_eq!(
        result["structuredContent"]["preview"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    let id = created_task(&run, "export_report");
    let polls = sent(&run, "tasks/get");
    assert!(!polls.is_empty(), "{run:#?}");
    assert!(polls.iter().all(|p| p["params"]["taskId"] == id.as_str()));
    let last = &answer(&run, polls.last().unwrap())["result"];
    assert_eq!(last["status"], "completed", "{last}");
    assert_eq!(task_requests_answered(t, &run), polls.len());
    let records = task_records(&desk, "orders", &id);
    assert_eq!(records[0]["event"], "task_created", "{records:?}");
    assert_task_ended(&records, "completed");
}

/// The testbed's `task_job` that asks first: inside its task the question comes as
/// `input_required` on `tasks/get`, the client's elicitation handler answers it, and the
/// answer goes back with `tasks/update` under the server's key; the job then ends with
/// it. A second, long job is cancelled with `tasks/cancel` and ends `cancelled` on the
/// server.
pub fn the_fastmcp_client_answers_a_question_inside_a_task_and_cancels_a_task(t: Transport) {
    let desk = Desk::new(t, &["testbed"]);
    let plan = json!([
        {"call": "task_job", "arguments": {"seconds": 0.5, "ask": true}},
        {"task": "task_job", "arguments": {"seconds": 120}, "then": "cancel"},
    ]);
    let (out, run) = fastmcp_client(
        &desk,
        Caller::Sam,
        "testbed",
        plan,
        &["--answer", "go=true"],
    );
    // The question, as the client's handler saw it.
    assert_eq!(out["elicitations"].as_array().unwrap().len(), 1, "{out}");
    assert_eq!(
        out["elicitations"][0]["message"],
        "Go on with the long job?"
    );
    let result = &out["steps"][0]["result"];
    assert_eq!(result["isError"], false, "{out}");
    assert_eq!(result["structuredContent"]["slept"], 0.5, "{result}");
    assert_eq!(result["structuredContent"]["answer"], "accept", "{result}");
    // On the wire: input_required on a poll, then tasks/update with the answer under the
    // key the server gave, acknowledged empty.
    let asked = sent(&run, "tasks/get")
        .into_iter()
        .map(|p| &answer(&run, p)["result"])
        .find(|r| r["status"] == "input_required")
        .unwrap_or_else(|| panic!("no input_required: {run:#?}"));
    let key = asked["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap();
    let updates = sent(&run, "tasks/update");
    assert_eq!(updates.len(), 1, "{run:#?}");
    assert_eq!(
        updates[0]["params"]["inputResponses"][key],
        json!({"action": "accept", "content": {"go": true}})
    );
    assert_eq!(
        answer(&run, updates[0])["result"],
        json!({"resultType": "complete"})
    );

    // The long job: tasks/cancel, then the task's end as the client waited for it.
    let cancelled = &out["steps"][1];
    let id = cancelled["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(cancelled["created"]["status"], "working", "{cancelled}");
    assert_eq!(cancelled["final"]["status"], "cancelled", "{cancelled}");
    let cancels = sent(&run, "tasks/cancel");
    assert_eq!(cancels.len(), 1);
    assert_eq!(cancels[0]["params"]["taskId"], id);
    assert!(
        sent(&run, "notifications/cancelled").is_empty(),
        "a task is cancelled with tasks/cancel only"
    );
    assert_eq!(
        task_requests_answered(t, &run),
        sent(&run, "tasks/get").len() + 2
    );
    let records = task_records(&desk, "testbed", id);
    assert_task_ended(&records, "cancelled");
}

/// A task Sam starts (`export_report`, 100,000 rows, left running) is "not found" to Omar of
/// the same organization and to Sam acting in another one, for `tasks/get` and
/// `tasks/cancel`, in the very words of an id that never existed; Omar's cancel does not
/// reach it, and Sam still reads it.
pub fn another_callers_task_id_reads_as_unknown_to_the_fastmcp_client(t: Transport) {
    let desk = Desk::new(t, &["orders"]);
    let plan = json!([{"task": "export_report", "arguments": {"rows": 100000}, "then": "keep"}]);
    let (out, _) = fastmcp_client(&desk, Caller::Sam, "orders", plan, &[]);
    let id = out["steps"][0]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{out}"))
        .to_owned();
    let made_up = "0123456789abcdef0123456789abcdef";
    for other in [Caller::Omar, Caller::SamInBramble] {
        let plan = json!([{"get": id}, {"cancel": id}, {"get": made_up}, {"cancel": made_up}]);
        let (out, run) = fastmcp_client(&desk, other, "orders", plan, &[]);
        let steps = out["steps"].as_array().unwrap();
        let unknown = &steps[2]["error"];
        assert_eq!(unknown["code"], -32602, "{other:?}: {out}");
        for s in steps {
            assert_eq!(&s["error"], unknown, "{other:?}: {out}");
        }
        assert_eq!(task_requests_answered(t, &run), 4);
    }
    let (out, _) = fastmcp_client(&desk, Caller::Sam, "orders", json!([{"get": id}]), &[]);
    let task = &out["steps"][0]["task"];
    assert_eq!(task["taskId"], id.as_str(), "{out}");
    assert_ne!(task["status"], "cancelled", "{task}");
    assert!(
        task_records(&desk, "orders", &id)
            .iter()
            .all(|r| r["event"] != "task_cancel"),
        "another caller's cancel reached the task"
    );
}

/// The server's log says a task leg ended with `status`.
fn assert_task_ended(records: &[Value], status: &str) {
    let ended = |r: &&Value| r["event"] == "task_leg_ended" && r["status"] == status;
    assert!(
        records.iter().any(|r| ended(&r)),
        "no task ended {status}: {records:?}"
    );
}
