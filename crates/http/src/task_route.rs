//! The one header the HTTP layer fills in: `Mcp-Name` on `tasks/get`, `tasks/update` and
//! `tasks/cancel`, when a client left it out, from the body's `params.taskId`.
//!
//! The tasks extension says a client MUST send it (for load balancers to route a poll to
//! the instance that holds the task), and rmcp refuses a request without it (400, -32020).
//! But the FastMCP/Python SDK client never sends it on `tasks/*` (fastmcp 4.1.4), and the
//! FastMCP server accepts that, checking only a header that disagrees with the body. So do
//! we: a missing `Mcp-Name` on these three methods is taken from the body, one that is
//! there is still checked against it by rmcp, and every other header rule stays. Our task
//! store is shared by every instance, so routing never decides correctness here.

use axum::http::{HeaderMap, HeaderValue};
use serde_json::Value;

/// The routing header.
pub const MCP_NAME: &str = "mcp-name";
/// The methods whose `Mcp-Name` is the task's id.
pub const TASK_METHODS: &[&str] = &["tasks/get", "tasks/update", "tasks/cancel"];

/// Fill in `Mcp-Name` for a `tasks/*` request of `method` with `params` that has none,
/// when the task id is plain printable ASCII (any other id is left to rmcp to refuse).
pub fn fill_in(headers: &mut HeaderMap, method: Option<&str>, params: Option<&Value>) {
    if !method.is_some_and(|m| TASK_METHODS.contains(&m)) || headers.contains_key(MCP_NAME) {
        return;
    }
    let Some(id) = params.and_then(|p| p.get("taskId")).and_then(Value::as_str) else {
        return;
    };
    let plain = !id.is_empty() && id.bytes().all(|b| b.is_ascii_graphic());
    if plain && let Ok(value) = HeaderValue::from_str(id) {
        headers.insert(MCP_NAME, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_missing_name_on_tasks_methods_is_filled_in_and_only_with_a_plain_id() {
        let params = json!({"taskId": "0a21f6a8"});
        let mut h = HeaderMap::new();
        fill_in(&mut h, Some("tasks/get"), Some(&params));
        assert_eq!(h[MCP_NAME], "0a21f6a8");
        // One that is there stays, for rmcp to check against the body.
        let mut h = HeaderMap::new();
        h.insert(MCP_NAME, HeaderValue::from_static("other"));
        fill_in(&mut h, Some("tasks/cancel"), Some(&params));
        assert_eq!(h[MCP_NAME], "other");
        for (method, params) in [
            ("tools/call", json!({"name": "x", "taskId": "1"})),
            ("tasks/get", json!({"taskId": " padded"})),
            ("tasks/get", json!({"taskId": "ünï"})),
            ("tasks/get", json!({"taskId": 7})),
            ("tasks/get", json!({})),
        ] {
            let mut h = HeaderMap::new();
            fill_in(&mut h, Some(method), Some(&params));
            assert!(h.get(MCP_NAME).is_none(), "{method} {params}");
        }
    }
}
