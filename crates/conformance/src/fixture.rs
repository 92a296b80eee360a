//! The conformance fixture: the surface the MCP conformance harness's server scenarios
//! call by name (`test_*` tools, `test://` resources, `test_*` prompts), ported from the
//! Python SDK's `everything-server`, on an rmcp [`ServerHandler`] served by
//! `gatehouse_servers::http`. Not a reference server: it is only for the harness
//! (`docs/conformance.md`) and is not in `gatehouse serve`'s set.
//!
//! Both protocol eras are served on the same endpoint. On 2026-07-28 a tool that needs the
//! client (sampling, elicitation, roots) answers `input_required`; on 2025-11-25 it sends
//! the client a request in the middle of the call. Every `requestState` this server hands
//! out is sealed (HMAC, rmcp's [`RequestStateCodec`]); one that does not open is refused.
//! The tasks extension's tools (`greet`, `slow_compute`, …) are in `tasks`.

#![allow(deprecated)] // sampling, roots and logging are deprecated by SEP-2577, still in the suite

mod tasks;

use std::{
    collections::BTreeSet,
    sync::{Arc, Mutex},
    time::Duration,
};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
        CompleteRequestParams, CompleteResult, CreateMessageRequestParams, ElicitRequestParams,
        GetPromptRequestParams, GetPromptResponse, GetPromptResult, GetTaskParams, GetTaskResult,
        Implementation, InputRequiredResult, InputResponses, ListPromptsResult,
        ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
        LoggingMessageNotificationParam, PaginatedRequestParams, ProgressNotificationParam,
        ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
        RequestStateCodec, ServerCapabilities, ServerConfig, SetLevelRequestParams,
        SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams,
        UpdateTaskParams,
    },
    service::{RequestContext, SubscriptionContext},
};
use serde_json::{Value, json};
use tokio::sync::watch;

/// A 1x1 PNG, the image of the Python fixture.
pub const TEST_IMAGE_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A tiny WAV file, the audio of the Python fixture.
pub const TEST_AUDIO_BASE64: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";
/// The name the fixture gives in `serverInfo`.
pub const SERVER_NAME: &str = "gatehouse-conformance-fixture";

const NAME_SCHEMA: &str =
    r#"{"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}"#;

/// The tools, as the JSON they are sent as (names are the harness's).
const TOOLS: &str = r##"[
 {"name": "test_simple_text", "description": "Tests simple text content response", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "test_image_content", "description": "Tests image content response", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "test_audio_content", "description": "Tests audio content response", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "test_embedded_resource", "description": "Tests embedded resource content response", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "test_multiple_content_types", "description": "Tests response with multiple content types (text, image, resource)", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "test_tool_with_logging", "description": "Tests tool that emits log messages during execution", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "test_tool_with_progress", "description": "Tests tool that reports progress notifications", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "test_sampling", "description": "Tests server-initiated sampling (LLM completion request)", "inputSchema": {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]}},
 {"name": "test_elicitation", "description": "Tests server-initiated elicitation (user input request)", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}},
 {"name": "test_elicitation_sep1034_defaults", "description": "Tests elicitation with default values for all primitive types (SEP-1034)", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "test_elicitation_sep1330_enums", "description": "Tests elicitation with enum schema variations per SEP-1330", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "test_error_handling", "description": "Tests error response handling", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "test_x_mcp_header", "description": "Tests SEP-2243 Mcp-Param-* server-side validation.", "inputSchema": {"type": "object", "properties": {"region": {"type": "string", "default": "<none>", "description": "Mirrored into the Mcp-Param-Region header", "x-mcp-header": "Region"}}}},
 {"name": "test_missing_capability", "description": "Needs the client's sampling capability; without it, a -32021 JSON-RPC error.", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "test_streaming_elicitation", "description": "A tool that needs elicitation (input_required on 2026-07-28, a mid-call request before).", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "test_logging_tool", "description": "Logs once on the request-scoped channel (SEP-2575).", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "test_input_required_result_elicitation", "description": "Tests InputRequiredResult with a single elicitation request", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "test_input_required_result_sampling", "description": "Tests InputRequiredResult with a single sampling request", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "test_input_required_result_list_roots", "description": "Tests InputRequiredResult with a single roots/list request", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "test_input_required_result_request_state", "description": "Tests requestState round-tripping in the InputRequiredResult flow", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "test_input_required_result_multiple_inputs", "description": "Tests InputRequiredResult carrying elicitation, sampling and roots requests together", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "test_input_required_result_multi_round", "description": "Tests a three-round InputRequiredResult flow with evolving requestState", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "test_input_required_result_tampered_state", "description": "Tests that the server rejects a tampered requestState echo.", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "test_input_required_result_capabilities", "description": "Tests that inputRequests only include methods the client declared support for", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "json_schema_2020_12_tool", "description": "Tests JSON Schema 2020-12 keyword preservation in tools/list.",
  "inputSchema": {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}, "contactMethod": {"type": "string", "enum": ["phone", "email"]}, "phone": {"type": "string"}, "email": {"type": "string"}},
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": false}},
 {"name": "test_reconnection", "description": "Tests SSE polling by closing stream mid-call (SEP-1699)", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "test_trigger_tool_change", "description": "Mutates the tool list and announces it to subscriptions/listen streams (SEP-2575)", "inputSchema": {"type": "object", "properties": {}}},
 {"name": "test_trigger_prompt_change", "description": "Mutates the prompt list and announces it to subscriptions/listen streams (SEP-2575)", "inputSchema": {"type": "object", "properties": {}}}
]"##;

const PROMPTS: &str = r#"[
 {"name": "test_simple_prompt", "description": "A simple prompt without arguments"},
 {"name": "test_prompt_with_arguments", "description": "A prompt with required arguments",
  "arguments": [{"name": "arg1", "required": true}, {"name": "arg2", "required": true}]},
 {"name": "test_prompt_with_embedded_resource", "description": "A prompt that includes an embedded resource",
  "arguments": [{"name": "resourceUri", "required": true}]},
 {"name": "test_prompt_with_image", "description": "A prompt that includes image content"},
 {"name": "test_input_required_result_prompt", "description": "Tests InputRequiredResult from prompts/get (SEP-2322 non-tool request)"}
]"#;

const RESOURCES: &str = r#"[
 {"uri": "test://static-text", "name": "static_text_resource", "description": "A static text resource for testing", "mimeType": "text/plain"},
 {"uri": "test://static-binary", "name": "static_binary_resource", "description": "A static binary resource (image) for testing", "mimeType": "image/png"},
 {"uri": "test://watched-resource", "name": "watched_resource", "description": "A resource that can be subscribed to for updates", "mimeType": "text/plain"}
]"#;

const TEMPLATES: &str = r#"[
 {"uriTemplate": "test://template/{id}/data", "name": "template_resource", "description": "A resource template with parameter substitution", "mimeType": "application/json"}
]"#;

/// List changes: a counter per list, watched by every `subscriptions/listen` stream.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Changes {
    tools: u64,
    prompts: u64,
}

#[derive(Clone)]
/// The conformance fixture: the server surface the harness's scenarios call by name.
pub struct Fixture {
    info: Implementation,
    tools: Arc<Vec<Tool>>,
    codec: RequestStateCodec,
    /// `resources/subscribe` URIs of legacy sessions.
    subscriptions: Arc<Mutex<BTreeSet<String>>>,
    changes: Arc<watch::Sender<Changes>>,
    /// The tasks of the tasks extension's tools.
    tasks: gatehouse_servers::tasks::Tasks,
}

impl Default for Fixture {
    fn default() -> Self {
        Self::new()
    }
}

fn parse<T: for<'de> rmcp::serde::Deserialize<'de>>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value).map_err(|e| {
        ErrorData::internal_error(format!("fixture built an invalid result: {e}"), None)
    })
}

/// A result of a request that finished: `resultType: "complete"` (2026-07-28 requires it;
/// rmcp strips it again for older peers).
fn complete<T: for<'de> rmcp::serde::Deserialize<'de>>(mut value: Value) -> Result<T, ErrorData> {
    if let Value::Object(map) = &mut value {
        map.entry("resultType").or_insert_with(|| json!("complete"));
    }
    parse(value)
}

fn text_result(text: impl Into<String>) -> Result<CallToolResponse, ErrorData> {
    Ok(CallToolResult::success(vec![rmcp::model::ContentBlock::text(text.into())]).into())
}

fn blocks_result(content: Value) -> Result<CallToolResponse, ErrorData> {
    let result: CallToolResult = complete(json!({"content": content, "isError": false}))?;
    Ok(result.into())
}

fn elicitation(message: &str, schema: Value) -> Value {
    json!({"method": "elicitation/create",
           "params": {"mode": "form", "message": message, "requestedSchema": schema}})
}

fn sampling(text: &str, max_tokens: u32) -> Value {
    json!({"method": "sampling/createMessage",
           "params": {"messages": [{"role": "user", "content": {"type": "text", "text": text}}],
                      "maxTokens": max_tokens}})
}

fn name_schema() -> Value {
    serde_json::from_str(NAME_SCHEMA).expect("the name schema parses")
}

/// The form of `test_elicitation_sep1034_defaults` (SEP-1034: a default for every type).
fn sep1034_schema() -> Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string", "default": "John Doe", "description": "User name"},
        "age": {"type": "integer", "default": 30, "description": "User age"},
        "score": {"type": "number", "default": 95.5, "description": "User score"},
        "status": {"type": "string", "default": "active", "description": "User status", "enum": ["active", "inactive", "pending"]},
        "verified": {"type": "boolean", "default": true, "description": "Verification status"}
    }})
}

/// The form of `test_elicitation_sep1330_enums` (SEP-1330: every enum style).
fn sep1330_schema() -> Value {
    json!({"type": "object", "properties": {
        "untitledSingle": {"type": "string", "description": "Simple enum without titles", "enum": ["active", "inactive", "pending"]},
        "titledSingle": {"type": "string", "description": "Enum with titled options (oneOf)", "oneOf": [
            {"const": "low", "title": "Low Priority"}, {"const": "medium", "title": "Medium Priority"}, {"const": "high", "title": "High Priority"}]},
        "untitledMulti": {"type": "array", "description": "Multi-select without titles", "items": {"type": "string", "enum": ["read", "write", "execute"]}},
        "titledMulti": {"type": "array", "description": "Multi-select with titled options", "items": {"anyOf": [
            {"const": "feature", "title": "New Feature"}, {"const": "bug", "title": "Bug Fix"}, {"const": "docs", "title": "Documentation"}]}},
        "legacyEnum": {"type": "string", "description": "Legacy enum with enumNames", "enum": ["small", "medium", "large"], "enumNames": ["Small Size", "Medium Size", "Large Size"]}
    }, "required": ["untitledSingle", "titledSingle", "untitledMulti", "titledMulti", "legacyEnum"]})
}

fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// The answer under `key` in a retry's `inputResponses`, if there is one.
fn answer<'a>(responses: Option<&'a InputResponses>, key: &str) -> Option<&'a Value> {
    responses.and_then(|r| r.get(key))
}

/// Every answer in a retry's `inputResponses` must be a result object (an elicitation's
/// with a known `action`); anything else is refused before the tool runs (SEP-2322 SHOULD).
fn check_responses(responses: Option<&InputResponses>) -> Result<(), ErrorData> {
    for (key, value) in responses.into_iter().flatten() {
        let valid = match value {
            Value::Object(map) => match map.get("action") {
                None => true,
                Some(a) => matches!(a.as_str(), Some("accept" | "decline" | "cancel")),
            },
            _ => false,
        };
        if !valid {
            return Err(ErrorData::invalid_params(
                format!("inputResponses[{key:?}] is not a valid response"),
                Some(json!({"key": key})),
            ));
        }
    }
    Ok(())
}

fn level_rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

impl Fixture {
    /// A fixture with its tools, prompts and resources.
    pub fn new() -> Self {
        // A fresh key per process: states from an earlier run never open.
        let mut key = [0u8; 32];
        for (i, b) in key.iter_mut().enumerate() {
            *b = (rand_byte() ^ (i as u8)).wrapping_add(0x5a);
        }
        Fixture {
            info: Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")),
            tools: Arc::new(
                [TOOLS, tasks::TOOLS]
                    .iter()
                    .flat_map(|t| {
                        serde_json::from_str::<Vec<Tool>>(t).expect("the fixture's tools parse")
                    })
                    .collect(),
            ),
            codec: RequestStateCodec::try_new(key.to_vec()).expect("a 32-byte key"),
            subscriptions: Arc::new(Mutex::new(BTreeSet::new())),
            changes: Arc::new(watch::Sender::new(Changes::default())),
            tasks: tasks::store(),
        }
    }

    /// An `input_required` answer; `state` is sealed before it leaves.
    fn input_required(
        &self,
        requests: Value,
        state: Option<Value>,
    ) -> Result<InputRequiredResult, ErrorData> {
        let mut result = json!({"resultType": "input_required", "inputRequests": requests});
        if let Some(state) = state {
            let sealed = self
                .codec
                .seal_json(&state)
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            result["requestState"] = Value::String(sealed);
        }
        parse(result)
    }

    /// The state a retry echoes back, opened; a forged or altered one is refused.
    fn open_state(&self, state: Option<&str>) -> Result<Option<Value>, ErrorData> {
        match state {
            None => Ok(None),
            Some(sealed) => self
                .codec
                .open_json::<Value>(sealed)
                .map(Some)
                .map_err(|e| {
                    ErrorData::invalid_params(
                        format!("requestState failed verification: {e}"),
                        None,
                    )
                }),
        }
    }

    /// Log at `info` the way the request's revision allows: on 2026-07-28 only when the
    /// request's `_meta` asked for a level (SEP-2575); on older revisions always.
    async fn log(&self, context: &RequestContext<RoleServer>, message: &str) {
        if is_modern(context) {
            match context.meta.log_level() {
                Some(min) if level_rank(min) <= level_rank(LoggingLevel::Info) => {}
                _ => return,
            }
        }
        let _ = context
            .peer
            .notify_logging_message(
                LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(message))
                    .with_logger(SERVER_NAME),
            )
            .await;
    }

    /// Ask the client with a form: `input_required` on 2026-07-28, `elicitation/create`
    /// before. Returns the answer, or the `input_required` result to send.
    async fn ask_form(
        &self,
        context: &RequestContext<RoleServer>,
        responses: Option<&InputResponses>,
        key: &str,
        message: &str,
        schema: Value,
    ) -> Result<Result<Value, InputRequiredResult>, ErrorData> {
        if is_modern(context) {
            return match answer(responses, key) {
                Some(a) => Ok(Ok(a.clone())),
                None => Ok(Err(self.input_required(
                    json!({key: elicitation(message, schema)}),
                    None,
                )?)),
            };
        }
        let params: ElicitRequestParams =
            parse(json!({"mode": "form", "message": message, "requestedSchema": schema}))?;
        let result = context
            .peer
            .create_elicitation(params)
            .await
            .map_err(|e| ErrorData::internal_error(format!("elicitation failed: {e}"), None))?;
        Ok(Ok(serde_json::to_value(result).unwrap_or_default()))
    }

    fn form_outcome(prefix: &str, answer: &Value) -> String {
        let action = answer["action"].as_str().unwrap_or("?");
        let content = if action == "accept" {
            serde_json::to_string(&answer["content"]).unwrap_or_default()
        } else {
            "{}".into()
        };
        format!("{prefix}: action={action}, content={content}")
    }

    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let responses = request.input_responses.as_ref();
        check_responses(responses)?;
        if let Some(answer) = tasks::call(self, &request, &context).await {
            return answer;
        }
        let args = request.arguments.clone().unwrap_or_default();
        let state = self.open_state(request.request_state.as_deref())?;
        match request.name.as_ref() {
            "test_simple_text" => text_result("This is a simple text response for testing."),
            "test_image_content" => blocks_result(
                json!([{"type": "image", "data": TEST_IMAGE_BASE64, "mimeType": "image/png"}]),
            ),
            "test_audio_content" => blocks_result(
                json!([{"type": "audio", "data": TEST_AUDIO_BASE64, "mimeType": "audio/wav"}]),
            ),
            "test_embedded_resource" => blocks_result(json!([{"type": "resource", "resource": {
                "uri": "test://embedded-resource", "mimeType": "text/plain",
                "text": "This is an embedded resource content."}}])),
            "test_multiple_content_types" => blocks_result(json!([
                {"type": "text", "text": "Multiple content types test:"},
                {"type": "image", "data": TEST_IMAGE_BASE64, "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "test://mixed-content-resource",
                    "mimeType": "application/json", "text": "{\"test\": \"data\", \"value\": 123}"}}
            ])),
            "test_tool_with_logging" => {
                self.log(&context, "Tool execution started").await;
                tokio::time::sleep(Duration::from_millis(50)).await;
                self.log(&context, "Tool processing data").await;
                tokio::time::sleep(Duration::from_millis(50)).await;
                self.log(&context, "Tool execution completed").await;
                text_result("Tool with logging executed successfully")
            }
            "test_logging_tool" => {
                self.log(&context, "test_logging_tool ran").await;
                text_result("logged through the request-scoped, logLevel-gated channel")
            }
            "test_tool_with_progress" => {
                let token = context.meta.get_progress_token();
                if let Some(token) = &token {
                    for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                        if i > 0 {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                        let _ = context
                            .peer
                            .notify_progress(
                                ProgressNotificationParam::new(token.clone(), step)
                                    .with_total(100.0)
                                    .with_message(format!("Completed step {step} of 100")),
                            )
                            .await;
                    }
                }
                let shown = token
                    .map(|t| match serde_json::to_value(&t).unwrap_or_default() {
                        Value::String(s) => s,
                        other => other.to_string(),
                    })
                    .unwrap_or_else(|| "0".into());
                text_result(shown)
            }
            "test_sampling" => {
                let prompt = args.get("prompt").and_then(Value::as_str).unwrap_or("");
                let answer_value = if is_modern(&context) {
                    match answer(responses, "sampling") {
                        Some(a) => a.clone(),
                        None => {
                            return Ok(self
                                .input_required(json!({"sampling": sampling(prompt, 100)}), None)?
                                .into());
                        }
                    }
                } else {
                    let params: CreateMessageRequestParams = parse(sampling(prompt, 100)["params"].clone())?;
                    match context.peer.create_message(params).await {
                        Ok(r) => serde_json::to_value(r).unwrap_or_default(),
                        Err(e) => {
                            return text_result(format!("Sampling not supported or error: {e}"));
                        }
                    }
                };
                let text = answer_value["content"]["text"]
                    .as_str()
                    .unwrap_or("No response");
                text_result(format!("LLM response: {text}"))
            }
            "test_elicitation" => {
                let message = args.get("message").and_then(Value::as_str).unwrap_or("");
                let schema = json!({"type": "object", "properties": {
                    "response": {"type": "string", "description": "User's response"}}, "required": ["response"]});
                match self.ask_form(&context, responses, "elicitation", message, schema).await {
                    Ok(Ok(a)) => text_result(Self::form_outcome("User response", &a)),
                    Ok(Err(asked)) => Ok(asked.into()),
                    Err(e) => text_result(format!("Elicitation not supported or error: {}", e.message)),
                }
            }
            "test_streaming_elicitation" => {
                let schema = json!({"type": "object", "properties": {
                    "response": {"type": "string", "description": "User's response"}}, "required": ["response"]});
                match self
                    .ask_form(&context, responses, "answer", "The stateless streaming probe asks for a word", schema)
                    .await?
                {
                    Ok(a) => text_result(format!("elicitation {}", a["action"].as_str().unwrap_or("?"))),
                    Err(asked) => Ok(asked.into()),
                }
            }
            "test_elicitation_sep1034_defaults" => {
                match self
                    .ask_form(&context, responses, "defaults", "Please provide user information", sep1034_schema())
                    .await
                {
                    Ok(Ok(a)) => text_result(Self::form_outcome("Elicitation result", &a)),
                    Ok(Err(asked)) => Ok(asked.into()),
                    Err(e) => text_result(format!("Elicitation not supported or error: {}", e.message)),
                }
            }
            "test_elicitation_sep1330_enums" => {
                match self
                    .ask_form(
                        &context,
                        responses,
                        "enums",
                        "Please select values using different enum schema types",
                        sep1330_schema(),
                    )
                    .await
                {
                    Ok(Ok(a)) => text_result(Self::form_outcome("Elicitation completed", &a)),
                    Ok(Err(asked)) => Ok(asked.into()),
                    Err(e) => text_result(format!("Elicitation not supported or error: {}", e.message)),
                }
            }
            "test_error_handling" => Ok(CallToolResult::error(vec![rmcp::model::ContentBlock::text(
                "This tool intentionally returns an error for testing",
            )])
            .into()),
            "test_x_mcp_header" => {
                let region = args.get("region").and_then(Value::as_str).unwrap_or("<none>");
                text_result(format!("region={region}"))
            }
            "test_missing_capability" => {
                let declared = context
                    .client_capabilities()
                    .is_some_and(|c| c.sampling.is_some());
                if !declared {
                    return Err(ErrorData::new(
                        rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                        "This tool requires the client 'sampling' capability",
                        Some(json!({"requiredCapabilities": {"sampling": {}}})),
                    ));
                }
                text_result("Client declared sampling capability; proceeding.")
            }
            "test_input_required_result_elicitation" => match answer(responses, "user_name") {
                Some(a) => {
                    let name = a["content"]["name"].as_str().unwrap_or("stranger");
                    text_result(format!("Hello, {name}!"))
                }
                None => Ok(self
                    .input_required(json!({"user_name": elicitation("What is your name?", name_schema())}), None)?
                    .into()),
            },
            "test_input_required_result_sampling" => match answer(responses, "capital_question") {
                Some(a) => text_result(format!(
                    "Model said: {}",
                    a["content"]["text"].as_str().unwrap_or("?")
                )),
                None => Ok(self
                    .input_required(
                        json!({"capital_question": sampling("What is the capital of France?", 100)}),
                        None,
                    )?
                    .into()),
            },
            "test_input_required_result_list_roots" => match answer(responses, "client_roots") {
                Some(a) => text_result(format!(
                    "Client exposed {} root(s).",
                    a["roots"].as_array().map_or(0, Vec::len)
                )),
                None => Ok(self
                    .input_required(json!({"client_roots": {"method": "roots/list"}}), None)?
                    .into()),
            },
            "test_input_required_result_request_state" => {
                if answer(responses, "confirm").is_some()
                    && state.as_ref().and_then(Value::as_str) == Some("request-state-nonce")
                {
                    return text_result("state-ok: confirmation received");
                }
                let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
                Ok(self
                    .input_required(
                        json!({"confirm": elicitation("Please confirm", schema)}),
                        Some(json!("request-state-nonce")),
                    )?
                    .into())
            }
            "test_input_required_result_multiple_inputs" => {
                let all = ["user_name", "greeting", "client_roots"]
                    .iter()
                    .all(|k| answer(responses, k).is_some());
                if all {
                    return text_result("All inputs received.");
                }
                Ok(self
                    .input_required(
                        json!({
                            "user_name": elicitation("What is your name?", name_schema()),
                            "greeting": sampling("Generate a greeting", 50),
                            "client_roots": {"method": "roots/list"},
                        }),
                        Some(json!("multiple-inputs")),
                    )?
                    .into())
            }
            "test_input_required_result_multi_round" => {
                let round = state.as_ref().and_then(|s| s["round"].as_u64()).unwrap_or(0);
                let step1 = || {
                    self.input_required(
                        json!({"step1": elicitation("Step 1: What is your name?", name_schema())}),
                        Some(json!({"round": 1})),
                    )
                };
                match (round, answer(responses, "step1"), answer(responses, "step2")) {
                    (1, Some(a), _) => {
                        let name = a["content"]["name"].clone();
                        let schema = json!({"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]});
                        Ok(self
                            .input_required(
                                json!({"step2": elicitation("Step 2: What is your favorite color?", schema)}),
                                Some(json!({"round": 2, "name": name})),
                            )?
                            .into())
                    }
                    (2, _, Some(a)) => {
                        let name = state
                            .as_ref()
                            .and_then(|s| s["name"].as_str())
                            .unwrap_or("None")
                            .to_owned();
                        let color = a["content"]["color"].as_str().unwrap_or("None");
                        text_result(format!("{name} likes {color}."))
                    }
                    _ => Ok(step1()?.into()),
                }
            }
            "test_input_required_result_tampered_state" => match &state {
                None => {
                    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
                    Ok(self
                        .input_required(
                            json!({"confirm": elicitation("Please confirm", schema)}),
                            Some(json!("round-1")),
                        )?
                        .into())
                }
                Some(s) => text_result(format!("state-ok: {}", s.as_str().unwrap_or("?"))),
            },
            "test_input_required_result_capabilities" => {
                let caps = context.client_capabilities();
                let mut requests = serde_json::Map::new();
                if caps.as_ref().is_none_or(|c| c.sampling.is_some()) {
                    requests.insert("sample".into(), sampling("Say hello", 50));
                }
                if caps.as_ref().is_none_or(|c| c.elicitation.is_some()) {
                    requests.insert(
                        "ask".into(),
                        elicitation("What is your name?", name_schema()),
                    );
                }
                Ok(self
                    .input_required(Value::Object(requests), Some(json!("capability-gated")))?
                    .into())
            }
            "json_schema_2020_12_tool" => text_result("json_schema_2020_12_tool"),
            "test_reconnection" => {
                self.log(&context, "Before disconnect").await;
                tokio::time::sleep(Duration::from_millis(200)).await;
                self.log(&context, "After reconnect").await;
                text_result("Reconnection test completed")
            }
            "test_trigger_tool_change" => {
                self.changes.send_modify(|c| c.tools += 1);
                if !is_modern(&context) {
                    let _ = context.peer.notify_tool_list_changed().await;
                }
                text_result("tool list changed")
            }
            "test_trigger_prompt_change" => {
                self.changes.send_modify(|c| c.prompts += 1);
                if !is_modern(&context) {
                    let _ = context.peer.notify_prompt_list_changed().await;
                }
                text_result("prompt list changed")
            }
            other => Err(ErrorData::invalid_params(
                format!("Unknown tool: {other}"),
                None,
            )),
        }
    }
}

/// A byte of randomness from the clock and the process (no extra dependency).
fn rand_byte() -> u8 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish() as u8
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        let capabilities: ServerCapabilities = serde_json::from_value(json!({
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "logging": {},
            "completions": {},
            "extensions": {gatehouse_servers::tasks::TASKS_EXTENSION_ID: {}},
        }))
        .expect("the fixture's capabilities parse");
        ServerConfig::new(capabilities)
            .with_server_info(self.info.clone())
            .with_instructions(
                "MCP conformance fixture (Gatehouse). For the conformance harness only.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.call(request, context).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        tasks::get(self, &request.task_id)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tasks::update(self, &request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tasks::cancel(self, &request.task_id)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        complete(json!({"prompts": serde_json::from_str::<Value>(PROMPTS).unwrap_or_default()}))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        check_responses(request.input_responses.as_ref())?;
        let args = request.arguments.clone().unwrap_or_default();
        let arg = |k: &str| -> Result<String, ErrorData> {
            args.get(k)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| ErrorData::invalid_params(format!("missing argument {k}"), None))
        };
        let user = |content: Value| json!({"role": "user", "content": content});
        let messages = match request.name.as_str() {
            "test_simple_prompt" => vec![user(
                json!({"type": "text", "text": "This is a simple prompt for testing."}),
            )],
            "test_prompt_with_arguments" => {
                let (a1, a2) = (arg("arg1")?, arg("arg2")?);
                vec![user(json!({"type": "text",
                    "text": format!("Prompt with arguments: arg1='{a1}', arg2='{a2}'")}))]
            }
            "test_prompt_with_embedded_resource" => {
                let uri = arg("resourceUri")?;
                vec![
                    user(
                        json!({"type": "resource", "resource": {"uri": uri, "mimeType": "text/plain",
                        "text": "Embedded resource content for testing."}}),
                    ),
                    user(
                        json!({"type": "text", "text": "Please process the embedded resource above."}),
                    ),
                ]
            }
            "test_prompt_with_image" => vec![
                user(json!({"type": "image", "data": TEST_IMAGE_BASE64, "mimeType": "image/png"})),
                user(json!({"type": "text", "text": "Please analyze the image above."})),
            ],
            "test_input_required_result_prompt" => {
                match answer(request.input_responses.as_ref(), "user_context") {
                    Some(a) => {
                        let text = a["content"]["context"].as_str().unwrap_or("?");
                        vec![user(json!({"type": "text",
                            "text": format!("Use the following context: {text}")}))]
                    }
                    None => {
                        let schema = json!({"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]});
                        return Ok(GetPromptResponse::InputRequired(self.input_required(
                            json!({"user_context": elicitation("What context should the prompt use?", schema)}),
                            None,
                        )?));
                    }
                }
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("Unknown prompt: {other}"),
                    None,
                ));
            }
        };
        let result: GetPromptResult = complete(json!({"messages": messages}))?;
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        complete(json!({"resources": serde_json::from_str::<Value>(RESOURCES).unwrap_or_default()}))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        complete(
            json!({"resourceTemplates": serde_json::from_str::<Value>(TEMPLATES).unwrap_or_default()}),
        )
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let contents = match uri {
            "test://static-text" => json!({"uri": uri, "mimeType": "text/plain",
                "text": "This is the content of the static text resource."}),
            "test://static-binary" => {
                json!({"uri": uri, "mimeType": "image/png", "blob": TEST_IMAGE_BASE64})
            }
            "test://watched-resource" => {
                json!({"uri": uri, "mimeType": "text/plain", "text": "Watched resource content"})
            }
            _ => match uri
                .strip_prefix("test://template/")
                .and_then(|rest| rest.strip_suffix("/data"))
                .filter(|id| !id.is_empty() && !id.contains('/'))
            {
                Some(id) => json!({"uri": uri, "mimeType": "application/json",
                    "text": json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string()}),
                None => {
                    return Err(ErrorData::resource_not_found(
                        format!("Resource not found: {uri}"),
                        Some(json!({"uri": uri})),
                    ));
                }
            },
        };
        let result: ReadResourceResult = complete(json!({"contents": [contents]}))?;
        Ok(result.into())
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        complete(json!({"completion": {"values": [], "total": 0, "hasMore": false}}))
    }

    async fn set_level(
        &self,
        _request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(request.uri.to_string());
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(request.uri.as_str());
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.changes.subscribe();
        let mut seen = *changes.borrow_and_update();
        loop {
            tokio::select! {
                _ = context.cancelled() => return Ok(()),
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    let now = *changes.borrow_and_update();
                    if now.tools > seen.tools {
                        let _ = context.sink().notify_tool_list_changed().await;
                    }
                    if now.prompts > seen.prompts {
                        let _ = context.sink().notify_prompt_list_changed().await;
                    }
                    seen = now;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_surface_has_the_harness_names() {
        let fixture = Fixture::new();
        let names: Vec<&str> = fixture.tools.iter().map(|t| t.name.as_ref()).collect();
        for name in [
            "test_simple_text",
            "test_missing_capability",
            "test_input_required_result_tampered_state",
            "json_schema_2020_12_tool",
            "test_trigger_prompt_change",
        ] {
            assert!(names.contains(&name), "{name} is missing");
        }
        let schema = &fixture
            .get_tool("json_schema_2020_12_tool")
            .unwrap()
            .input_schema;
        assert_eq!(schema["$defs"]["address"]["$anchor"], "addressDef");
        assert!(fixture.get_tool("nope").is_none());
    }

    #[test]
    fn request_state_is_sealed_and_a_tampered_one_refused() {
        let fixture = Fixture::new();
        let asked = fixture
            .input_required(
                json!({"confirm": elicitation("ok?", name_schema())}),
                Some(json!("round-1")),
            )
            .unwrap();
        let state = serde_json::to_value(&asked).unwrap()["requestState"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_ne!(state, "round-1");
        assert_eq!(
            fixture.open_state(Some(&state)).unwrap(),
            Some(json!("round-1"))
        );
        let err = fixture
            .open_state(Some(&format!("{state}-TAMPERED")))
            .unwrap_err();
        assert_eq!(err.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert!(
            Fixture::new().open_state(Some(&state)).is_err(),
            "another process's key"
        );
    }

    #[test]
    fn input_responses_must_be_result_objects() {
        let mut responses = InputResponses::new();
        responses.insert("a".into(), json!({"action": "accept", "content": {}}));
        assert!(check_responses(Some(&responses)).is_ok());
        responses.insert("b".into(), json!(42));
        assert!(check_responses(Some(&responses)).is_err());
        let mut odd = InputResponses::new();
        odd.insert("a".into(), json!({"action": "maybe"}));
        assert!(check_responses(Some(&odd)).is_err());
        assert!(check_responses(None).is_ok());
    }

    #[test]
    fn forms_and_results_parse_as_rmcp_types() {
        for schema in [sep1034_schema(), sep1330_schema(), name_schema()] {
            let params: Result<ElicitRequestParams, _> =
                parse(json!({"mode": "form", "message": "m", "requestedSchema": schema}));
            assert!(params.is_ok(), "{:?}", params.err());
        }
        let result: CallToolResult = complete(json!({"content": [], "isError": false})).unwrap();
        assert_eq!(
            serde_json::to_value(&result).unwrap()["resultType"],
            "complete"
        );
    }
}
