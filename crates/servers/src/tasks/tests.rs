use std::time::Duration;

use rmcp::model::{CallToolResult, ContentBlock, TaskPayload, TaskStatus};
use serde_json::json;

use super::*;

/// The tools of these tests: `count` counts to `to` one step each `step_ms`, saving where
/// it is; `ask` asks once and reports the answer; `fail` fails; `forever` never ends.
struct Work;

fn text(s: String) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(s)])
}

impl TaskWork for Work {
    fn leg(&self, job: Job) -> BoxFuture<'_, Leg> {
        Box::pin(async move {
            match job.tool.as_str() {
                "count" => {
                    let to = job.args.get("to").and_then(Value::as_u64).unwrap_or(3);
                    let step = Duration::from_millis(
                        job.args
                            .get("step_ms")
                            .and_then(Value::as_u64)
                            .unwrap_or(10),
                    );
                    let from = job.checkpoint.as_ref().and_then(Value::as_u64).unwrap_or(0);
                    for i in from..to {
                        tokio::select! {
                            _ = job.control.cancelled() => return Leg::Cancelled,
                            _ = tokio::time::sleep(step) => {}
                        }
                        job.control.save(json!(i + 1));
                        job.control.say(&format!("{} of {to}", i + 1));
                    }
                    Leg::Done(text(format!("counted to {to} from {from}")))
                }
                "ask" => match job.answers.get("confirm") {
                    None => Leg::Ask(
                        serde_json::from_value(json!({
                            "confirm": {"method": "elicitation/create", "params": {"mode": "form",
                                "message": "Sure?", "requestedSchema": {"type": "object",
                                "properties": {"ok": {"type": "boolean"}}}}},
                            "second": {"method": "elicitation/create", "params": {"mode": "form",
                                "message": "Really?", "requestedSchema": {"type": "object",
                                "properties": {"ok": {"type": "boolean"}}}}}
                        }))
                        .unwrap(),
                    ),
                    Some(answer) => Leg::Done(text(format!(
                        "answered {} and {}",
                        answer["action"], job.answers["second"]["action"]
                    ))),
                },
                "fail" => Leg::Failed(ErrorData::internal_error("it broke", None)),
                _ => {
                    job.control.cancelled().await;
                    Leg::Cancelled
                }
            }
        })
    }
}

fn settings() -> TaskSettings {
    TaskSettings {
        heartbeat: Duration::from_millis(50),
        stale_after: Duration::from_millis(300),
        ..TaskSettings::default()
    }
}

fn work() -> Arc<dyn TaskWork> {
    Arc::new(Work)
}

const SAM: &str = r#"["usr-sam","larkfield"]"#;
const EVE: &str = r#"["usr-eve","northwind"]"#;

fn args(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

/// Poll until the task is no longer `working`.
/// The id of a new task of Sam's running `tool` with no arguments.
fn started(tasks: &Tasks, tool: &str) -> String {
    tasks
        .create(work(), SAM, tool, Map::new())
        .unwrap()
        .task
        .task_id
}

async fn settled(tasks: &Tasks, owner: &str, id: &str) -> GetTaskResult {
    for _ in 0..200 {
        let got = tasks.get(work(), owner, id).unwrap();
        if got.task.status() != TaskStatus::Working {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("task {id} did not settle");
}

#[tokio::test]
async fn a_task_is_found_at_once_works_and_completes_with_its_result() {
    let tasks = Tasks::in_memory("test", settings()).unwrap();
    let created = tasks
        .create(work(), SAM, "count", args(json!({"to": 3})))
        .unwrap();
    let v = serde_json::to_value(&created).unwrap();
    assert_eq!(v["resultType"], "task");
    assert_eq!(v["status"], "working");
    assert_eq!(v["ttlMs"], TASK_TTL.as_millis() as u64);
    assert_eq!(v["pollIntervalMs"], 1000);
    let id = created.task.task_id.clone();
    assert_eq!(id.len(), 32, "128 random bits, as hex");
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(tasks.get(work(), SAM, &id).unwrap().task.task.task_id, id);
    let done = settled(&tasks, SAM, &id).await;
    let TaskPayload::Completed { result } = &done.task.payload else {
        panic!("{done:?}");
    };
    assert_eq!(result["content"][0]["text"], "counted to 3 from 0");
    assert_eq!(done.task.task.status_message.as_deref(), Some("3 of 3"));
}

#[tokio::test]
async fn another_callers_id_reads_like_one_that_never_existed() {
    let tasks = Tasks::in_memory("test", settings()).unwrap();
    let id = started(&tasks, "forever");
    let theirs = tasks.get(work(), EVE, &id).unwrap_err();
    let none = tasks
        .get(work(), SAM, "0123456789abcdef0123456789abcdef")
        .unwrap_err();
    assert_eq!(theirs, none);
    assert_eq!(theirs.code.0, -32602);
    assert_eq!(tasks.cancel(EVE, &id).unwrap_err(), none);
    let update = tasks.update(work(), EVE, &id, InputResponses::new());
    assert_eq!(update.unwrap_err(), none);
    // Eve's cancel did nothing.
    assert_eq!(
        tasks.get(work(), SAM, &id).unwrap().task.status(),
        TaskStatus::Working
    );
    tasks.cancel(SAM, &id).unwrap();
}

#[tokio::test]
async fn questions_are_answered_in_part_checked_and_the_last_answer_finishes_the_task() {
    let tasks = Tasks::in_memory("test", settings()).unwrap();
    let id = started(&tasks, "ask");
    let asking = settled(&tasks, SAM, &id).await;
    let TaskPayload::InputRequired { input_requests } = &asking.task.payload else {
        panic!("{asking:?}");
    };
    let keys: Vec<&String> = input_requests.keys().collect();
    assert_eq!(keys, ["confirm.1", "second.1"]);
    // Not an answer: refused, nothing recorded.
    let bad = [("confirm.1".to_owned(), json!({"action": "maybe"}))].into();
    assert_eq!(
        tasks.update(work(), SAM, &id, bad).unwrap_err().code.0,
        -32602
    );
    // A key never asked is ignored; one answer leaves the other open.
    let part = [
        (
            "confirm.1".to_owned(),
            json!({"action": "accept", "content": {"ok": true}}),
        ),
        ("unknown".to_owned(), json!({"ignored": true})),
    ]
    .into();
    tasks.update(work(), SAM, &id, part).unwrap();
    let still = tasks.get(work(), SAM, &id).unwrap();
    let TaskPayload::InputRequired { input_requests } = &still.task.payload else {
        panic!("{still:?}");
    };
    assert_eq!(input_requests.keys().collect::<Vec<_>>(), ["second.1"]);
    // Answering the first again changes nothing: it is no longer open.
    let again = [("confirm.1".to_owned(), json!({"action": "decline"}))].into();
    tasks.update(work(), SAM, &id, again).unwrap();
    let last = [("second.1".to_owned(), json!({"action": "decline"}))].into();
    tasks.update(work(), SAM, &id, last).unwrap();
    let done = settled(&tasks, SAM, &id).await;
    let TaskPayload::Completed { result } = &done.task.payload else {
        panic!("{done:?}");
    };
    assert_eq!(
        result["content"][0]["text"],
        r#"answered "accept" and "decline""#
    );
}

#[tokio::test]
async fn cancel_ends_a_working_or_asking_task_and_leaves_an_ended_one_as_it_was() {
    let tasks = Tasks::in_memory("test", settings()).unwrap();
    for tool in ["forever", "ask"] {
        let id = started(&tasks, tool);
        if tool == "ask" {
            settled(&tasks, SAM, &id).await;
        }
        tasks.cancel(SAM, &id).unwrap();
        let ended = settled(&tasks, SAM, &id).await;
        assert_eq!(ended.task.status(), TaskStatus::Cancelled, "{tool}");
    }
    let id = started(&tasks, "fail");
    let failed = settled(&tasks, SAM, &id).await;
    let TaskPayload::Failed { error } = &failed.task.payload else {
        panic!("{failed:?}");
    };
    assert_eq!(error["code"], -32603);
    assert_eq!(error["message"], "it broke");
    tasks.cancel(SAM, &id).unwrap();
    assert_eq!(
        tasks.get(work(), SAM, &id).unwrap().task.status(),
        TaskStatus::Failed
    );
}

#[tokio::test]
async fn an_owner_has_at_most_so_many_unfinished_tasks() {
    let settings = TaskSettings {
        max_active: 2,
        ..settings()
    };
    let tasks = Tasks::in_memory("test", settings).unwrap();
    for _ in 0..2 {
        tasks.create(work(), SAM, "forever", Map::new()).unwrap();
    }
    assert!(matches!(
        tasks.create(work(), SAM, "forever", Map::new()),
        Err(NotCreated::TooMany(2))
    ));
    // Someone else is not held back by Sam's tasks.
    tasks.create(work(), EVE, "forever", Map::new()).unwrap();
}

#[tokio::test]
async fn an_expired_task_is_gone() {
    let settings = TaskSettings {
        ttl: Duration::from_millis(100),
        ..settings()
    };
    let tasks = Tasks::in_memory("test", settings).unwrap();
    let id = tasks
        .create(work(), SAM, "count", args(json!({"to": 1})))
        .unwrap()
        .task
        .task_id;
    settled(&tasks, SAM, &id).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(tasks.get(work(), SAM, &id).unwrap_err().code.0, -32602);
}

/// Two instances on one store: the second reads what the first runs; when the first
/// stops (its runtime ends mid-leg), the second takes the task over from its checkpoint.
#[test]
fn a_second_instance_answers_for_the_first_and_takes_over_when_it_stops() {
    let dir = std::env::temp_dir().join(format!("gh-tasks-{}", new_id()));
    let path = dir.join("tasks.db");
    let first = tokio::runtime::Runtime::new().unwrap();
    let a = first.block_on(async { Tasks::open(&path, "test", settings()).unwrap() });
    let id = first.block_on(async {
        let created = a
            .create(work(), SAM, "count", args(json!({"to": 40, "step_ms": 25})))
            .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        created.task.task_id
    });
    let second = tokio::runtime::Runtime::new().unwrap();
    second.block_on(async {
        let b = Tasks::open(&path, "test", settings()).unwrap();
        let seen = b.get(work(), SAM, &id).unwrap();
        assert_eq!(seen.task.status(), TaskStatus::Working);
        let message = seen.task.task.status_message.clone().unwrap();
        assert!(message.ends_with(" of 40"), "{message}");
        // Another server's tasks in the same store are not this one's.
        let other = Tasks::open(&path, "other", settings()).unwrap();
        assert_eq!(other.get(work(), SAM, &id).unwrap_err().code.0, -32602);
    });
    // The first instance stops: its legs go with its runtime.
    first.shutdown_background();
    second.block_on(async {
        let b = Tasks::open(&path, "test", settings()).unwrap();
        let done = settled(&b, SAM, &id).await;
        let TaskPayload::Completed { result } = &done.task.payload else {
            panic!("{done:?}");
        };
        let text = result["content"][0]["text"].as_str().unwrap();
        let from: u64 = text.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(from > 0 && from < 40, "went on from its checkpoint: {text}");
    });
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn instances_that_start_at_once_on_a_new_store_all_open_it() {
    // A host starts its servers at once; two of them on one new store must both come up.
    // (Two processes once failed with "database is locked" here; threads of one process
    // have not shown it, so this guards the open path rather than reproducing that race.)
    for round in 0..5 {
        let dir = std::env::temp_dir().join(format!("gh-tasks-race-{}-{round}", new_id()));
        let path = dir.join("tasks.db");
        let opened: Vec<anyhow::Result<Tasks>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| Tasks::open(&path, "test", settings())))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for o in &opened {
            assert!(o.is_ok(), "round {round}: {:?}", o.as_ref().err());
        }
        drop(opened);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
