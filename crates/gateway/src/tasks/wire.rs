//! The gateway's tasks as the wire shows them: a record as a `CreateTaskResult` or a
//! `tasks/get` result, and what a server's task or a call's end becomes in a record.

use rmcp::model::{
    CreateTaskResult, DetailedTask, ErrorData, GetTaskResult, InputRequests, JsonObject, Task,
    TaskPayload, TaskStatus,
};
use serde_json::{Value, json};

use crate::store::tasks::TaskRow;

/// Milliseconds since the Unix epoch as ISO 8601.
fn timestamp(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Now, in milliseconds since the Unix epoch.
pub(super) fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn status(word: &str) -> TaskStatus {
    serde_json::from_value(json!(word)).unwrap_or(TaskStatus::Working)
}

fn base(row: &TaskRow) -> Task {
    let mut task = Task::new(
        row.id.clone(),
        status(&row.status),
        timestamp(row.created_at),
        timestamp(row.updated_at),
    )
    .with_ttl_ms(u64::try_from(row.expires_at - row.created_at).unwrap_or(0))
    .with_poll_interval_ms(u64::try_from(row.poll_ms).unwrap_or(1).max(1));
    if !row.message.is_empty() {
        task = task.with_status_message(row.message.clone());
    }
    task
}

/// The `CreateTaskResult` of a new record.
pub(super) fn created(row: &TaskRow) -> CreateTaskResult {
    CreateTaskResult::new(base(row))
}

fn object(text: &str) -> Option<JsonObject> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// The `tasks/get` result of a record: its fields, and by status its open questions,
/// its result or its error. A record whose stored part cannot be read shows as failed,
/// not lost.
pub(super) fn detailed(row: &TaskRow) -> GetTaskResult {
    let unreadable = || TaskPayload::Failed {
        error: object(r#"{"code": -32603, "message": "the task's stored state is unreadable"}"#)
            .unwrap_or_default(),
    };
    let payload = match status(&row.status) {
        TaskStatus::InputRequired => match serde_json::from_str::<InputRequests>(&row.asked) {
            Ok(input_requests) => TaskPayload::InputRequired { input_requests },
            Err(_) => unreadable(),
        },
        TaskStatus::Completed => match object(&row.end_json) {
            Some(result) => TaskPayload::Completed { result },
            None => unreadable(),
        },
        TaskStatus::Failed => match object(&row.end_json) {
            Some(error) => TaskPayload::Failed { error },
            None => unreadable(),
        },
        TaskStatus::Cancelled => TaskPayload::Cancelled,
        _ => TaskPayload::Working,
    };
    GetTaskResult::new(DetailedTask::new(base(row), payload))
}

/// A JSON-RPC error as a failed task's `error` object.
pub(super) fn error_object(e: &ErrorData) -> Value {
    let mut v = json!({"code": e.code.0, "message": e.message});
    if let Some(data) = &e.data {
        v["data"] = data.clone();
    }
    v
}

/// The text that stands for an end too large to keep.
pub(super) fn too_large(bytes: usize, max: usize) -> Value {
    json!({"content": [{"type": "text", "text": format!(
        "the task's result was {bytes} bytes, more than the {max} this gateway keeps for a task; it was not kept"
    )}], "isError": true})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(status: &str, asked: &str, end: &str) -> TaskRow {
        TaskRow {
            id: "g1".into(),
            status: status.into(),
            message: "half way".into(),
            poll_ms: 500,
            asked: asked.into(),
            end_json: end.into(),
            created_at: 1_000,
            updated_at: 2_000,
            expires_at: 61_000,
            ..TaskRow::blank(crate::caller::CallerName::local())
        }
    }

    fn shown(row: &TaskRow) -> Value {
        serde_json::to_value(detailed(row)).unwrap()
    }

    #[test]
    fn a_record_shows_as_the_extension_spells_a_task_and_an_unreadable_one_as_failed() {
        let working = shown(&row("working", "", ""));
        assert_eq!(working["taskId"], "g1");
        assert_eq!(working["status"], "working");
        assert_eq!(
            (
                working["ttlMs"].as_u64(),
                working["pollIntervalMs"].as_u64()
            ),
            (Some(60_000), Some(500))
        );
        assert_eq!(working["statusMessage"], "half way");
        assert_eq!(working["createdAt"], "1970-01-01T00:00:01.000Z");
        assert!(working.get("result").is_none() && working.get("requestState").is_none());

        let question = r#"{"go": {"method": "elicitation/create", "params": {"mode": "form", "message": "Go?", "requestedSchema": {"type": "object", "properties": {}}}}}"#;
        let asking = shown(&row("input_required", question, ""));
        assert_eq!(
            asking["inputRequests"]["go"]["method"], "elicitation/create",
            "{asking}"
        );

        let done = shown(&row("completed", "", r#"{"content": [], "isError": true}"#));
        assert_eq!(done["result"]["isError"], true, "{done}");
        let failed = shown(&row("failed", "", r#"{"code": -32000, "message": "boom"}"#));
        assert_eq!(failed["error"]["code"], -32000, "{failed}");
        assert!(failed.get("result").is_none());

        let broken = shown(&row("completed", "", "not json"));
        assert_eq!(broken["status"], "failed", "{broken}");
        assert_eq!(broken["error"]["code"], -32603, "{broken}");
        let created = serde_json::to_value(created(&row("working", "", ""))).unwrap();
        assert_eq!(created["resultType"], "task", "{created}");
    }
}
