//! Tasks as the wire shows them: a row as a `CreateTaskResult` or a `tasks/get` result.

use rmcp::model::{CreateTaskResult, GetTaskResult};
use serde_json::{Value, json};

use super::table::{self, TaskRow};
use crate::common::timestamp_of;

fn base(row: &TaskRow) -> Value {
    let mut v = json!({
        "taskId": row.id,
        "status": row.status,
        "createdAt": timestamp_of(row.created_ms),
        "lastUpdatedAt": timestamp_of(row.updated_ms),
        "ttlMs": row.ttl_ms,
        "pollIntervalMs": row.poll_ms,
    });
    if let Some(message) = &row.status_message {
        v["statusMessage"] = json!(message);
    }
    v
}

/// The `CreateTaskResult` of a new task.
pub fn created(row: &TaskRow) -> CreateTaskResult {
    let mut v = base(row);
    v["resultType"] = json!("task");
    serde_json::from_value(v).expect("a task row makes a valid CreateTaskResult")
}

/// The `tasks/get` result of a task: its fields, and by status its open questions,
/// its result or its error.
pub fn detailed(row: &TaskRow) -> GetTaskResult {
    let mut v = base(row);
    v["resultType"] = json!("complete");
    match row.status.as_str() {
        table::INPUT_REQUIRED => {
            let asked: serde_json::Map<String, Value> = row
                .asked
                .iter()
                .map(|(k, a)| (k.clone(), a["request"].clone()))
                .collect();
            v["inputRequests"] = Value::Object(asked);
        }
        table::COMPLETED => {
            v["result"] = row.result.clone().unwrap_or_else(|| json!({"content": []}))
        }
        table::FAILED => {
            v["error"] = row
                .error
                .clone()
                .unwrap_or_else(|| json!({"code": -32603, "message": "the task failed"}))
        }
        _ => {}
    }
    serde_json::from_value(v).unwrap_or_else(|_| {
        // A row another version wrote in a shape this one cannot show: failed, not lost.
        let mut failed = base(row);
        failed["resultType"] = json!("complete");
        failed["status"] = json!("failed");
        failed["error"] =
            json!({"code": -32603, "message": "the task's stored state is unreadable"});
        serde_json::from_value(failed).expect("a failed task is a valid GetTaskResult")
    })
}
