//! `testbed`: a server for the host's own tests, not in the default set. It does what the
//! reference servers never do: sleeps past time limits, crashes mid-call, writes garbage
//! on stdout, refuses to start, or speaks only older protocol revisions.
//!
//! Behaviour at start is chosen by `TESTBED_START`: `garbage` (junk lines on stdout, then
//! serve), `garbage-exit` (junk, then exit 1), `exit` (a message on stderr, exit 3).
//! `TESTBED_MAX_VERSION=2025-11-25` makes it a server of that revision or older.

use std::time::Duration;

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
        PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
};
use serde_json::{Value, json};

use crate::common;

/// The longest a `sleep` call may ask for.
pub const MAX_SLEEP_SECONDS: f64 = 600.0;

#[derive(Clone)]
pub struct Testbed {
    info: Implementation,
    tools: Vec<Tool>,
    max_version: ProtocolVersion,
}

impl Testbed {
    pub fn new(max_version: Option<ProtocolVersion>) -> Self {
        let tools = vec![
            common::tool_from_json(
                r#"{"name": "sleep", "description": "Wait the given number of seconds, then say so. Honours cancellation.",
                    "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number", "minimum": 0, "maximum": 600}},
                                    "required": ["seconds"]},
                    "annotations": {"readOnlyHint": true}}"#,
            ),
            common::tool_from_json(
                r#"{"name": "echo", "description": "Return the text it is given.",
                    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                    "annotations": {"readOnlyHint": true}}"#,
            ),
            common::tool_from_json(
                r#"{"name": "repeat", "description": "Return a text repeated a number of times (for large results).",
                    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}, "times": {"type": "integer", "minimum": 1, "maximum": 100000}},
                                    "required": ["text", "times"]}}"#,
            ),
            common::tool_from_json(
                r#"{"name": "ask_forever", "description": "Ask the person a question on every round, never finishing (tests the host's round cap).",
                    "inputSchema": {"type": "object", "properties": {}}}"#,
            ),
            common::tool_from_json(
                r#"{"name": "ask_url", "description": "Ask the person to open a web page (URL-mode elicitation), then report their answer.",
                    "inputSchema": {"type": "object", "properties": {}}}"#,
            ),
            common::tool_from_json(
                r#"{"name": "crash", "description": "Exit the server process in the middle of the call.",
                    "inputSchema": {"type": "object", "properties": {}}}"#,
            ),
        ];
        Testbed {
            info: Implementation::new("testbed", "0.1.0"),
            tools,
            max_version: max_version.unwrap_or(ProtocolVersion::LATEST),
        }
    }
}

impl ServerHandler for Testbed {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(self.info.clone())
            .with_instructions("Test server: sleeps, echoes, crashes on request.")
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(ProtocolVersion::known_up_to(&self.max_version))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = common::arguments(request.arguments.as_ref());
        match request.name.as_ref() {
            "sleep" => {
                let Some(seconds) = args
                    .get("seconds")
                    .and_then(|v| v.as_f64())
                    .filter(|s| (0.0..=MAX_SLEEP_SECONDS).contains(s))
                else {
                    return Ok(common::tool_error(
                        "\"seconds\" must be a number from 0 to 600",
                        &self.info,
                    )
                    .into());
                };
                tokio::select! {
                    _ = context.ct.cancelled() => {
                        common::log_line(json!({"event": "cancelled", "tool": "sleep", "seconds": seconds}));
                        Err(ErrorData::internal_error("cancelled", None))
                    }
                    _ = tokio::time::sleep(Duration::from_secs_f64(seconds)) => {
                        Ok(common::structured_result(json!({"slept": seconds}), &self.info).into())
                    }
                }
            }
            "echo" => match common::string_arg(&args, "text", 0, 1_000_000) {
                Ok(text) => Ok(common::structured_result(json!({"text": text}), &self.info).into()),
                Err(e) => Ok(common::tool_error(e, &self.info).into()),
            },
            "repeat" => {
                let text = common::string_arg(&args, "text", 1, 1_000);
                let times = common::int_arg(&args, "times", 1, 1, 100_000);
                match (text, times) {
                    (Ok(text), Ok(times)) => Ok(common::structured_result(
                        json!({"text": text.repeat(times as usize)}),
                        &self.info,
                    )
                    .into()),
                    (Err(e), _) | (_, Err(e)) => Ok(common::tool_error(e, &self.info).into()),
                }
            }
            "ask_forever" => {
                let round = request
                    .request_state
                    .as_deref()
                    .and_then(|s| s.strip_prefix("round-"))
                    .and_then(|n| n.parse::<u32>().ok())
                    .unwrap_or(0)
                    + 1;
                Ok(Self::asking(
                    "again",
                    json!({"message": format!("Round {round}: go on?"),
                    "requestedSchema": {"type": "object", "properties": {"again": {"type": "boolean"}}, "required": ["again"]}}),
                    format!("round-{round}"),
                ))
            }
            "ask_url" => match request
                .input_responses
                .as_ref()
                .and_then(|r| r.get("consent"))
            {
                Some(answer) => Ok(common::structured_result(
                    json!({"answer": answer.get("action").cloned().unwrap_or(Value::Null)}),
                    &self.info,
                )
                .into()),
                None => Ok(Self::asking(
                    "consent",
                    json!({"mode": "url", "message": "Approve the change in the change-management system",
                    "url": "https://changes.example.com/approve?change=CHG-2291"}),
                    "asked".into(),
                )),
            },
            "crash" => {
                common::log_line(json!({"event": "crash", "tool": "crash"}));
                std::process::exit(70);
            }
            other => Err(ErrorData::invalid_params(
                format!("unknown tool: {other}"),
                None,
            )),
        }
    }
}

impl Testbed {
    /// An `input_required` answer with one elicitation under `key`.
    fn asking(key: &str, params: Value, state: String) -> CallToolResponse {
        let result: rmcp::model::InputRequiredResult = serde_json::from_value(json!({
            "resultType": "input_required",
            "inputRequests": {key: {"method": "elicitation/create", "params": params}},
            "requestState": state,
        }))
        .expect("a valid input_required result");
        result.into()
    }
}

/// Misbehave at start as `TESTBED_START` says; returns whether to go on serving.
pub fn misbehave_at_start() -> bool {
    use std::io::Write;
    match std::env::var("TESTBED_START").as_deref() {
        Ok("exit") => {
            eprintln!("testbed: refusing to start (TESTBED_START=exit)");
            std::process::exit(3);
        }
        Ok("garbage") | Ok("garbage-exit") => {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "this is not JSON-RPC\n{{\"not\": \"a message\"");
            let _ = out.flush();
            std::env::var("TESTBED_START").as_deref() == Ok("garbage")
        }
        _ => true,
    }
}
