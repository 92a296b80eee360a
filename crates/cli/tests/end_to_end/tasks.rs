//! Calls the servers run as tasks (the tasks extension of 2026-07-28), end to end: the
//! real binary and the real testbed and orders servers over stdio, each with a task store
//! of its own. The host follows a task to its result, shows its status, puts its
//! questions to the person only, cancels it on Ctrl-C, checks its result against the
//! tool's output schema, and keeps a task that outlives the turn: the model hears its id,
//! the next turn gives the model its end, and `gatehouse tasks` reaches it from another
//! process, after the host and its server have stopped.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{
    common::{process::Spawn, *},
    interop_peers::json_lines,
    openai_endpoint::{Fake, tool_call},
};

/// A folder with a task store for the servers and task records for the host, and a
/// servers file naming one built-in server with `env`, its tools allowed.
struct World {
    bed: Bed,
}

impl World {
    fn new(server: &str, allow: &[&str], settings: Value) -> World {
        let dir = tempfile::tempdir().unwrap();
        let mut gatehouse = json!({
            "allow": allow.iter().map(|t| format!("{server}__{t}")).collect::<Vec<_>>(),
            "tasksFile": dir.path().join("tasks.db"),
        });
        if let (Some(g), Value::Object(more)) = (gatehouse.as_object_mut(), settings) {
            g.extend(more);
        }
        let env = json!({"GATEHOUSE_SERVER_TASKS_DB": dir.path().join("server-tasks.db"),
                         "GATEHOUSE_TASK_STALE_MS": "500"});
        let config = servers_file(
            dir.path(),
            json!({server: builtin_server(server, env)}),
            gatehouse,
        );
        World {
            bed: Bed { dir, config },
        }
    }

    fn play(&self, decisions: Value, extra: &[&str]) -> Ran {
        self.bed.play(decisions, extra)
    }

    /// `gatehouse tasks ARGS… --config FILE`.
    fn tasks(&self, args: &[&str]) -> Ran {
        let mut all = vec!["tasks"];
        all.extend_from_slice(args);
        self.bed.run(&all)
    }

    fn records(&self) -> Vec<Value> {
        self.tasks(&["list", "--json"])
            .json()
            .as_array()
            .unwrap()
            .clone()
    }
}

fn call(tool: &str, arguments: Value) -> Value {
    json!({"tool_calls": [{"name": tool, "arguments": arguments}]})
}

/// The id in "runs the call as task ID".
fn task_id(ran: &Ran) -> String {
    ran.steps()
        .iter()
        .find(|s| {
            s["text"]
                .as_str()
                .unwrap()
                .starts_with("runs the call as task ")
        })
        .map(|s| s["data"]["task_id"].as_str().unwrap().to_owned())
        .unwrap_or_else(|| panic!("no task: {:#?}", ran.step_texts()))
}

#[test]
fn a_call_run_as_a_task_is_followed_to_its_result_and_its_requests_join_the_call() {
    let world = World::new("orders", &["export_report"], json!({}));
    let ran = world.play(
        json!([call("orders__export_report", json!({"rows": 20000})), {"answer": "done"}]),
        &[],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let id = task_id(&ran);
    let texts = ran.step_texts();
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with(&format!("server: task {id}: working: "))
                && t.ends_with(" of 20000 rows")),
        "the status message is shown as it goes: {texts:#?}"
    );
    ran.assert_step_starting(&format!("server: task {id}: completed"));
    ran.assert_step_starting("server: result: ");
    let events = ran.tool_events();
    assert_eq!(events.len(), 1);
    assert_eq!(
        (events[0]["outcome"].as_str(), events[0]["task_id"].as_str()),
        (Some("ok"), Some(id.as_str()))
    );
    // Every tasks/get of the call carries its trace and step: the server's records join.
    let polls: Vec<Value> = ran
        .mcp_requests("orders")
        .into_iter()
        .filter(|r| r["method"] == "tasks/get")
        .collect();
    assert!(!polls.is_empty());
    for p in &polls {
        assert_eq!(
            (&p["trace_id"], &p["step"], &p["name"]),
            (&events[0]["trace_id"], &events[0]["step"], &json!(id))
        );
    }
    assert_eq!(polls.last().unwrap()["outcome"], "completed");
    let call = ran
        .mcp_requests("orders")
        .into_iter()
        .find(|r| r["method"] == "tools/call")
        .unwrap();
    assert_eq!(call["outcome"], "task");
    // The model got the report itself.
    let record = &world.records()[0];
    assert_eq!(
        (record["status"].as_str(), record["reported"].as_bool()),
        (Some("completed"), Some(true))
    );
    assert_eq!(record["end"]["result"]["structuredContent"]["rows"], 20000);
}

#[test]
fn a_question_inside_a_task_is_the_persons_to_answer_and_declined_by_default() {
    let world = World::new("testbed", &["task_job"], json!({}));
    let decisions = json!([call("testbed__task_job", json!({"seconds": 0.2, "ask": true})), {"answer": "done"}]);
    let ran = world.play(decisions.clone(), &["--answer", "go=true"]);
    let id = task_id(&ran);
    ran.assert_steps(&[
        &format!("server: task {id}: input_required: waiting for an answer"),
        "server: testbed asks: Go on with the long job?",
        "person: answered accept",
    ]);
    assert_eq!(ran.tool_events()[0]["asked_user"], true);
    let record = &world.records()[0];
    assert_eq!(
        record["end"]["result"]["structuredContent"]["answer"],
        "accept"
    );
    // No one to ask and no answer given: declined, never answered for the person.
    let ran = world.play(decisions, &[]);
    ran.assert_steps(&["person: answered decline"]);
    let record = &world.records()[0];
    assert_eq!(
        record["end"]["result"]["structuredContent"]["answer"],
        "decline"
    );
}

#[test]
fn a_tasks_result_is_checked_against_the_tools_output_schema() {
    let world = World::new("testbed", &["task_job"], json!({}));
    let ran = world.play(
        json!([call("testbed__task_job", json!({"seconds": 0, "end": "bad_output"})),
               call("testbed__task_job", json!({"seconds": 0, "end": "protocol_error"})),
               call("testbed__task_job", json!({"seconds": 0, "end": "tool_error"})),
               {"answer": "done"}]),
        &[],
    );
    assert_eq!(ran.outcomes(), ["tool_error", "error", "tool_error"]);
    ran.assert_step_starting(
        "server: tool error: the result does not match the tool's output schema",
    );
    ran.assert_step_starting("server: protocol error -32603: the job broke, as asked");
    ran.assert_step_starting("server: tool error: the job failed, as asked");
}

/// `gatehouse ARGS` (which record to `record`), sent Ctrl-C once its task has been polled
/// (at most 30 s), and its run when it has exited 0.
pub fn interrupted_once_polled(args: &[&str], record: &std::path::Path) -> Ran {
    let host = Spawn::new(gatehouse_command(args, &[]), "gatehouse ask").run();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !json_lines(record)
        .iter()
        .any(|l| l["method"] == "tasks/get")
    {
        assert!(Instant::now() < deadline, "the task was never polled");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(host.signal("INT"));
    let ran = host.wait(Duration::from_secs(30));
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    ran
}

#[test]
fn ctrl_c_cancels_the_task_on_its_server_with_tasks_cancel() {
    let world = World::new("testbed", &["task_job"], json!({}));
    let record = world.bed.path().join("record.jsonl");
    let model = world
        .bed
        .model(json!([call("testbed__task_job", json!({"seconds": 30})), {"answer": "ok"}]));
    let args = ask_args(
        &world.bed.config,
        &model,
        &["--record", record.to_str().unwrap()],
    );
    let ran = interrupted_once_polled(&args, &record);
    let id = task_id(&ran);
    ran.assert_steps(&[
        &format!("host: asked testbed to cancel task {id}"),
        "person: stopped the call: it was cancelled on the server",
    ]);
    assert_eq!(ran.outcomes(), ["stopped"]);
    let lines = json_lines(&record);
    assert!(
        lines.iter().any(|l| l["method"] == "tasks/cancel"),
        "tasks/cancel was sent"
    );
    // The call itself was answered (with the task) long before: nothing cancels it.
    let call = lines.iter().find(|l| l["method"] == "tools/call").unwrap()["id"].clone();
    assert!(
        !lines
            .iter()
            .any(|l| l["method"] == "notifications/cancelled"
                && l["message"]["params"]["requestId"] == call),
        "a task is not cancelled with notifications/cancelled"
    );
    assert!(
        ran.server_saw("testbed", "cancelled"),
        "the job stopped: {}",
        ran.stderr
    );
    assert_eq!(world.records()[0]["status"], "cancelled");
}

/// A chat-completions answer with no tool call.
fn final_answer(text: &str) -> Value {
    json!({"id": "chatcmpl-end", "object": "chat.completion", "model": "gpt-oss-120b",
           "choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": text}}],
           "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
}

/// Two turns of `chat` with an OpenAI-compatible model: the first call's task outlives the
/// turn's wait, the second turn waits (a `sleep` call) and the third finds the task ended.
#[test]
fn a_task_that_outlives_the_turn_goes_on_and_a_later_turn_gives_the_model_its_end() {
    let world = World::new(
        "testbed",
        &["task_job", "sleep"],
        json!({"taskWaitMs": 1000}),
    );
    let fake = Fake::start(vec![
        tool_call("c1", "testbed__task_job", json!({"seconds": 2.5}), (10, 5)),
        final_answer("It goes on in the background."),
        tool_call(
            "c2",
            "testbed__sleep",
            json!({"seconds": 2.5, "quiet": true}),
            (10, 5),
        ),
        final_answer("Waited."),
        final_answer("The job has finished."),
    ]);
    let env = [
        ("OPENAI_BASE_URL", fake.base.as_str()),
        ("OPENAI_API_KEY", "sk-test"),
    ];
    let ran = run_with_stdin(
        &[
            "chat",
            "--config",
            &world.bed.config,
            "--model",
            "openai:gpt-oss-120b",
        ],
        &env,
        Some("start the job\nwait a while\nis it done?\n"),
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let id = ran
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("[server] runs the call as task "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("{}", ran.stderr))
        .to_owned();
    assert!(ran.stderr.contains(&format!(
        "[host] task {id} goes on in the background after 1 s; the model is told its id"
    )));
    let seen = fake.chat_requests();
    // Turn 1: the model read the task's id and that it goes on.
    let told = &seen[1].body["messages"].as_array().unwrap().last().unwrap()["content"];
    let told: Value = serde_json::from_str(told.as_str().unwrap()).unwrap();
    assert_eq!(told["result"]["task"]["id"], json!(id));
    assert_eq!(told["result"]["task"]["status"], "working");
    assert!(
        told["result"]["note"]
            .as_str()
            .unwrap()
            .contains("do not call the tool again")
    );
    // Turn 2 looked, and it was still working: nothing for the model.
    let turn2 = seen[2].body["messages"].as_array().unwrap();
    assert!(
        !turn2
            .iter()
            .any(|m| m["tool_calls"][0]["id"] == json!(format!("task_{id}")))
    );
    // Turn 3: the task's end, as the answer to its call, before the question.
    assert!(ran.stderr.contains(&format!("[host] task {id} (testbed__task_job), which went on in the background, has ended: completed")), "{}", ran.stderr);
    let turn3 = seen[4].body["messages"].as_array().unwrap();
    let at = turn3
        .iter()
        .position(|m| m["tool_calls"][0]["id"] == json!(format!("task_{id}")))
        .expect("the task's call is in the conversation");
    assert_eq!(
        turn3[at]["tool_calls"][0]["function"]["name"],
        "testbed__task_job"
    );
    assert_eq!(turn3[at + 1]["role"], "tool");
    let end: Value = serde_json::from_str(turn3[at + 1]["content"].as_str().unwrap()).unwrap();
    assert_eq!(end["result"]["slept"], 2.5);
    assert_eq!(
        (&turn3[at + 2]["role"], &turn3[at + 2]["content"]),
        (&json!("user"), &json!("is it done?"))
    );
    // Its host.tool_call records, the one of the call and the one of its end, join.
    let events: Vec<Value> = ran
        .tool_events()
        .into_iter()
        .filter(|e| e["task_id"] == json!(id))
        .collect();
    assert_eq!(events.len(), 2);
    assert_eq!(
        (&events[0]["outcome"], &events[1]["outcome"]),
        (&json!("background"), &json!("ok"))
    );
    assert_eq!(
        (&events[0]["trace_id"], &events[0]["step"]),
        (&events[1]["trace_id"], &events[1]["step"])
    );
    let record = world
        .records()
        .into_iter()
        .find(|r| r["task_id"] == json!(id))
        .unwrap();
    assert_eq!(
        (record["status"].as_str(), record["reported"].as_bool()),
        (Some("completed"), Some(true))
    );
}

/// The host and its orders server stop while a report is being built; from another
/// process, `gatehouse tasks` finds the record, and the orders server started anew takes
/// the task over from its checkpoint and finishes it.
#[test]
fn a_task_outlives_its_host_and_its_server_and_gatehouse_tasks_gets_its_result() {
    let world = World::new("orders", &["export_report"], json!({"taskWaitMs": 1000}));
    let ran = world.play(
        json!([call("orders__export_report", json!({"rows": 100000})), {"answer": "later"}]),
        &[],
    );
    assert_eq!(ran.outcomes(), ["background"]);
    let id = task_id(&ran);
    let listed = world.tasks(&["list"]);
    assert!(
        listed.stdout.contains(&id) && listed.stdout.contains("working"),
        "{}",
        listed.stdout
    );
    // The start of the id is enough.
    let shown = world.tasks(&["show", &id[..8]]);
    assert_eq!(shown.status, 0, "{}", shown.stderr);
    assert!(
        shown
            .stdout
            .contains(&format!("task {id} (orders__export_report on orders")),
        "{}",
        shown.stdout
    );
    let result = world.tasks(&["result", &id, "--wait", "30", "--json"]);
    assert_eq!(result.status, 0, "{}", result.stderr);
    let got = result.json();
    assert_eq!(got["task"]["status"], "completed");
    assert_eq!(got["end"]["result"]["structuredContent"]["rows"], 100000);
    assert!(
        result.stderr.contains("\"event\":\"task_adopted\""),
        "{}",
        result.stderr
    );
    assert!(
        result.stderr.contains("\"event\":\"export_resumed\""),
        "went on from its checkpoint: {}",
        result.stderr
    );
    // Ended and kept: no server needed to read it again; cancelling it changes nothing.
    let again = world.tasks(&["result", &id]);
    assert_eq!(again.status, 0);
    assert!(
        again.stdout.contains("\"rows\": 100000"),
        "{}",
        again.stdout
    );
    assert!(world.tasks(&["cancel", &id]).stdout.contains("completed"));
    let unknown = world.tasks(&["show", "nosuchtask"]);
    assert_eq!(unknown.status, 2);
    assert!(
        unknown.stderr.contains("no task \"nosuchtask\""),
        "{}",
        unknown.stderr
    );
}

/// A testbed job of a minute, left running after a turn that waited `wait_ms` for it.
fn left_running(wait_ms: u64) -> (World, String) {
    let world = World::new("testbed", &["task_job"], json!({"taskWaitMs": wait_ms}));
    let ran = world.play(
        json!([call("testbed__task_job", json!({"seconds": 60})), {"answer": "later"}]),
        &[],
    );
    let id = task_id(&ran);
    (world, id)
}

#[test]
fn gatehouse_tasks_cancel_reaches_a_task_from_another_process() {
    let (world, id) = left_running(500);
    let cancelled = world.tasks(&["cancel", &id]);
    assert_eq!(cancelled.status, 0, "{}", cancelled.stderr);
    assert!(
        cancelled.stdout.contains(&format!("task {id} "))
            && cancelled.stdout.ends_with("cancelled\n"),
        "{}",
        cancelled.stdout
    );
    let result = world.tasks(&["result", &id]);
    assert_eq!(result.status, 0);
    assert!(result.stdout.contains("cancelled"), "{}", result.stdout);
}

#[test]
fn a_result_that_is_not_in_yet_exits_3() {
    let (world, id) = left_running(300);
    let result = world.tasks(&["result", &id, "--wait", "1"]);
    assert_eq!(result.status, 3, "{}", result.stderr);
    assert!(result.stdout.contains("working"), "{}", result.stdout);
    world.tasks(&["cancel", &id]);
}

#[test]
fn a_tasks_end_reported_at_a_later_turn_passes_the_after_call_hook_like_any_result() {
    // A result that still fits the tool's output schema, with nothing of the report's.
    let redact = r#"cat >/dev/null; echo '{"result": {"content": [{"type": "text", "text": "[redacted by hook]"}], "structuredContent": {"rows": 0, "columns": [], "total_value": 0, "preview": []}}}'"#;
    let hooks = json!({"hooks": {"afterCall": {"command": "sh", "args": ["-c", redact], "timeoutMs": 5000}},
                       "taskWaitMs": 300});
    let world = World::new("orders", &["export_report"], hooks);
    let ran = world.play(
        json!([call("orders__export_report", json!({"rows": 20000})), {"answer": "later"}]),
        &[],
    );
    assert_eq!(ran.outcomes(), ["background"]);
    let id = task_id(&ran);
    // The person reads it through `gatehouse tasks`; the model has not been told yet.
    let result = world.tasks(&["result", &id, "--wait", "30"]);
    assert_eq!(result.status, 0, "{}", result.stderr);
    // The next turn (another process) gives the model the end, through the gate.
    let next = world.play(json!([{"answer": "it finished"}]), &[]);
    assert_eq!(next.status, 0, "{}", next.stderr);
    next.assert_step_starting(&format!("host: task {id} (orders__export_report)"));
    assert!(
        next.step_texts()
            .contains(&"host: the afterCall hook replaced the result".to_string()),
        "{:#?}",
        next.step_texts()
    );
    let events = next.tool_events();
    assert_eq!(
        (events[0]["task_id"].as_str(), events[0]["outcome"].as_str()),
        (Some(id.as_str()), Some("ok"))
    );
    let record = &world.records()[0];
    assert_eq!(record["reported"], true);
    assert_eq!(
        record["end"]["result"]["content"][0]["text"],
        "[redacted by hook]"
    );
    assert_eq!(record["end"]["result"]["structuredContent"]["rows"], 0);
}
