//! What every reference server shares: who the caller is, how a server logs, and how a
//! tool's answer is shaped on the wire.
//!
//! A reference server never trusts its client. The caller's identity comes from the
//! server's own environment (set by whoever started it) on stdio, or from the bearer token
//! the HTTP layer checked for this very request (`gatehouse_http`), never from request
//! arguments, and every argument is checked again here even when the host already checked it.

use std::time::Instant;

use rmcp::{
    ErrorData,
    model::{CallToolResult, ErrorCode, Implementation, JsonObject, MetaObject, Tool},
};
use serde_json::{Map, Value, json};

use gatehouse_contract as contract;
// Who calls, how servers log, and the refusal of a non-member: the HTTP face's, shared.
pub use gatehouse_http::{
    Caller,
    caller::{ENV_CLIENT, ENV_TENANT, ENV_USER},
    log::{elapsed_ms, line as log_line, now_ms, timestamp, timestamp_of},
    members::FORBIDDEN_CODE,
};

/// The `_meta` key under which every result names the server (2026-07-28 SHOULD).
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// A tool definition kept as the JSON it is sent as, so names, schemas and annotations
/// are byte-for-byte what the documentation shows. Panics only on a bug in our own
/// embedded JSON, which the tests catch.
pub fn tool_from_json(text: &str) -> Tool {
    serde_json::from_str(text).expect("embedded tool definition is valid")
}

/// `_meta` naming this server, for every result.
pub fn server_meta(info: &Implementation) -> MetaObject {
    let mut meta = MetaObject::new();
    meta.insert(
        SERVER_INFO_KEY.into(),
        json!({"name": info.name, "version": info.version}),
    );
    meta
}

/// A successful structured result: `structuredContent` plus the same JSON as a text block.
pub fn structured_result(value: Value, info: &Implementation) -> CallToolResult {
    let text = serde_json::to_string_pretty(&value).unwrap_or_default();
    let mut result: CallToolResult = serde_json::from_value(json!({
        "resultType": "complete",
        "content": [{"type": "text", "text": text}],
        "isError": false,
        "structuredContent": value,
    }))
    .expect("a structured result is a valid CallToolResult");
    result.meta = Some(server_meta(info));
    result
}

/// A tool execution error (`isError: true`): the model can read it and recover.
pub fn tool_error(message: impl Into<String>, info: &Implementation) -> CallToolResult {
    let mut result: CallToolResult = serde_json::from_value(json!({
        "resultType": "complete",
        "content": [{"type": "text", "text": message.into()}],
        "isError": true,
    }))
    .expect("a tool error is a valid CallToolResult");
    result.meta = Some(server_meta(info));
    result
}

/// A JSON-RPC error refusing the caller before any tool runs.
pub fn forbidden(message: impl Into<String>) -> ErrorData {
    ErrorData::new(ErrorCode(FORBIDDEN_CODE), message.into(), None)
}

/// Arguments of a call as an object (absent means empty).
pub fn arguments(args: Option<&JsonObject>) -> Map<String, Value> {
    args.cloned().unwrap_or_default()
}

/// A string argument, checked for presence, type and length.
pub fn string_arg(
    args: &Map<String, Value>,
    name: &str,
    min: usize,
    max: usize,
) -> Result<String, String> {
    match args.get(name) {
        None | Some(Value::Null) => Err(format!("invalid arguments: \"{name}\" is required")),
        Some(Value::String(s)) => {
            let n = s.chars().count();
            if n < min {
                Err(format!(
                    "invalid arguments: \"{name}\" must be at least {min} characters"
                ))
            } else if n > max {
                Err(format!(
                    "invalid arguments: \"{name}\" must be at most {max} characters"
                ))
            } else {
                Ok(s.clone())
            }
        }
        Some(_) => Err(format!("invalid arguments: \"{name}\" must be a string")),
    }
}

/// An optional integer argument with bounds and a default.
pub fn int_arg(
    args: &Map<String, Value>,
    name: &str,
    default: i64,
    min: i64,
    max: i64,
) -> Result<i64, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => match v.as_i64() {
            Some(n) if (min..=max).contains(&n) => Ok(n),
            Some(_) => Err(format!(
                "invalid arguments: \"{name}\" must be between {min} and {max}"
            )),
            None => Err(format!("invalid arguments: \"{name}\" must be an integer")),
        },
    }
}

/// Reject arguments the tool does not declare: a server never guesses what a client meant.
pub fn no_unknown_args(args: &Map<String, Value>, known: &[&str]) -> Result<(), String> {
    match args.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(format!("invalid arguments: unknown property \"{k}\"")),
        None => Ok(()),
    }
}

/// The answer to `tools/list` for a server whose tools fit on one page, logged as one
/// `mcp.request` record like every other request.
pub fn tool_list(
    server: &'static str,
    tools: &[Tool],
    info: &Implementation,
    meta: &rmcp::model::RequestMetaObject,
) -> rmcp::model::ListToolsResult {
    let log = RequestLog::start(server, "tools/list", None, meta);
    let mut result = rmcp::model::ListToolsResult::with_all_items(tools.to_vec());
    result.meta = Some(server_meta(info));
    log.finish("ok");
    result
}

/// A tool of `tools` by name.
pub fn find_tool(tools: &[Tool], name: &str) -> Option<Tool> {
    tools.iter().find(|t| t.name == name).cloned()
}

/// One `mcp.request` record per request, joinable with the host's `host.tool_call`
/// records on `trace_id` and `step`. Both come from the request's `_meta`: the W3C
/// `traceparent`, and the host's own key with its step and session id.
pub struct RequestLog {
    server: &'static str,
    method: &'static str,
    name: Option<String>,
    trace_id: Option<String>,
    step: Option<u64>,
    session_id: Option<String>,
    start: Instant,
}

impl RequestLog {
    /// Start timing a request; nothing is written until [`RequestLog::finish`].
    pub fn start(
        server: &'static str,
        method: &'static str,
        name: Option<&str>,
        meta: &rmcp::model::RequestMetaObject,
    ) -> Self {
        let host = meta.get(contract::TRACE_META_KEY);
        RequestLog {
            server,
            method,
            name: name.map(str::to_owned),
            trace_id: meta.get_traceparent().and_then(contract::trace_id_of),
            step: host
                .and_then(|h| h.get(contract::STEP_FIELD))
                .and_then(Value::as_u64),
            session_id: host
                .and_then(|h| h.get(contract::SESSION_FIELD))
                .and_then(Value::as_str)
                .filter(|s| s.chars().count() <= contract::MAX_SESSION_ID_CHARS)
                .map(str::to_owned),
            start: Instant::now(),
        }
    }

    /// Write the record with how the request ended.
    pub fn finish(self, outcome: &str) {
        log_line(json!({
            "ts": timestamp(),
            "operation": contract::REQUEST_RECORD,
            "server": self.server,
            "method": self.method,
            "name": self.name,
            "trace_id": self.trace_id,
            "step": self.step,
            "session_id": self.session_id,
            "outcome": outcome,
            "ms": elapsed_ms(self.start),
        }));
    }
}

/// The outcome word for a finished `tools/call`, as `mcp.request` records it.
pub fn call_outcome(result: &Result<rmcp::model::CallToolResponse, ErrorData>) -> &'static str {
    match result {
        Err(_) => "error",
        Ok(rmcp::model::CallToolResponse::InputRequired(_)) => "input_required",
        Ok(rmcp::model::CallToolResponse::Task(_)) => "task",
        Ok(rmcp::model::CallToolResponse::Complete(r)) if r.is_error == Some(true) => "tool_error",
        Ok(_) => "ok",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_checks() {
        let args: Map<String, Value> =
            serde_json::from_value(json!({"q": "ab", "n": 9, "x": 1})).unwrap();
        assert!(
            string_arg(&args, "q", 3, 10)
                .unwrap_err()
                .contains("at least 3")
        );
        assert!(
            string_arg(&args, "missing", 0, 10)
                .unwrap_err()
                .contains("required")
        );
        assert_eq!(int_arg(&args, "m", 3, 1, 5), Ok(3));
        assert!(
            int_arg(&args, "n", 3, 1, 5)
                .unwrap_err()
                .contains("between 1 and 5")
        );
        assert!(
            no_unknown_args(&args, &["q", "n"])
                .unwrap_err()
                .contains("\"x\"")
        );
    }
}
