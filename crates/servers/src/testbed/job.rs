//! The testbed's long job, `task_job`: a task when the request declares the tasks
//! extension, an ordinary call otherwise. It may ask the person one question first (inside
//! a task through `tasks/update`, in a call through `input_required`), then sleeps
//! `seconds` (progress as it goes, stopping on a cancellation), and ends as `end` says:
//! with its result, a tool error, a JSON-RPC error, or a result that breaks its own output
//! schema.

use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::{
    ErrorData,
    model::{CallToolResult, Implementation},
};
use serde_json::{Map, Value, json};

use crate::{
    common,
    tasks::{Job, Leg, TaskWork, Watch},
};

/// The tool, as it is listed.
pub const TOOL: &str = r#"{"name": "task_job", "description": "A long job: a task when the client declares the tasks extension. Optionally asks the person first; ends as \"end\" says.",
  "inputSchema": {"type": "object", "properties": {
    "seconds": {"type": "number", "minimum": 0, "maximum": 600},
    "ask": {"type": "boolean", "default": false},
    "end": {"type": "string", "enum": ["ok", "tool_error", "protocol_error", "bad_output"], "default": "ok"}},
   "required": ["seconds"]},
  "outputSchema": {"type": "object", "properties": {"slept": {"type": "number"}, "answer": {}}, "required": ["slept"]},
  "annotations": {"readOnlyHint": true}}"#;

/// How often the job reports, and saves where it is.
pub const STEP: Duration = Duration::from_millis(100);
/// The key of its one question.
pub const QUESTION_KEY: &str = "go";

/// What the job was asked to do.
pub struct Order {
    seconds: f64,
    ask: bool,
    end: String,
}

impl Order {
    /// Read and check the arguments.
    pub fn of(args: &Map<String, Value>) -> Result<Order, String> {
        common::no_unknown_args(args, &["seconds", "ask", "end"])?;
        let seconds = args
            .get("seconds")
            .and_then(Value::as_f64)
            .filter(|s| (0.0..=super::MAX_SLEEP_SECONDS).contains(s))
            .ok_or("\"seconds\" must be a number from 0 to 600")?;
        let end = args.get("end").and_then(Value::as_str).unwrap_or("ok");
        if !["ok", "tool_error", "protocol_error", "bad_output"].contains(&end) {
            return Err(format!("\"end\" cannot be {end:?}"));
        }
        Ok(Order {
            seconds,
            ask: args.get("ask").and_then(Value::as_bool).unwrap_or(false),
            end: end.into(),
        })
    }

    /// Does it still have to ask, given the answers it has?
    pub fn must_ask(&self, answers: Option<&Value>) -> bool {
        self.ask && answers.is_none()
    }
}

/// The job's one question, as `{method, params}`.
pub fn question() -> Value {
    json!({"method": "elicitation/create", "params": {"mode": "form",
        "message": "Go on with the long job?",
        "requestedSchema": {"type": "object", "properties": {"go": {"type": "boolean"}}, "required": ["go"]}}})
}

/// Sleep the rest of the job (from `from` seconds on), then end as ordered.
pub async fn run(
    order: &Order,
    from: f64,
    answer: Option<&Value>,
    watch: Watch<'_>,
    info: &Implementation,
) -> Leg {
    let total = order.seconds;
    let mut slept = from.min(total);
    while slept < total {
        let step = STEP.as_secs_f64().min(total - slept);
        tokio::select! {
            _ = watch.cancelled() => {
                common::log_line(json!({"event": "cancelled", "tool": "task_job", "slept": slept}));
                return Leg::Cancelled;
            }
            _ = tokio::time::sleep(Duration::from_secs_f64(step)) => {}
        }
        slept = ((slept + step) * 10.0).round() / 10.0;
        let message = format!("slept {slept:.1} of {total} s");
        watch
            .report(slept, total, &message, Some(json!(slept)))
            .await;
    }
    let answer = answer.map(|a| a.get("action").cloned().unwrap_or(Value::Null));
    match order.end.as_str() {
        "tool_error" => Leg::Done(common::tool_error("the job failed, as asked", info)),
        "protocol_error" => Leg::Failed(ErrorData::internal_error(
            "the job broke, as asked",
            Some(json!({"slept": slept})),
        )),
        "bad_output" => Leg::Done(common::structured_result(json!({"wrong": true}), info)),
        _ => Leg::Done(common::structured_result(
            json!({"slept": total, "answer": answer}),
            info,
        )),
    }
}

/// The job as a task's work.
pub struct JobWork(pub Implementation);

impl TaskWork for JobWork {
    fn leg(&self, job: Job) -> BoxFuture<'_, Leg> {
        Box::pin(async move {
            let order = match Order::of(&job.args) {
                Ok(order) => order,
                Err(e) => return Leg::Done(common::tool_error(e, &self.0)),
            };
            let answer = job.answers.get(QUESTION_KEY);
            if order.must_ask(answer) {
                let mut ask = Map::new();
                ask.insert(QUESTION_KEY.into(), question());
                return Leg::Ask(ask);
            }
            let from = job
                .checkpoint
                .as_ref()
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            run(&order, from, answer, Watch::Task(&job.control), &self.0).await
        })
    }
}

/// The end of a job run as an ordinary call.
pub fn answer_of(leg: Leg) -> Result<CallToolResult, ErrorData> {
    match leg {
        Leg::Done(result) => Ok(result),
        Leg::Failed(e) => Err(e),
        Leg::Cancelled => Err(ErrorData::internal_error("cancelled", None)),
        Leg::Ask(_) => Err(ErrorData::internal_error("the job asked twice", None)),
    }
}
