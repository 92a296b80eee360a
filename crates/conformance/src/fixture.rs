//! The conformance fixture: the surface the MCP conformance harness's server scenarios
//! call by name (`test_*` tools, `test://` resources, `test_*` prompts), ported from the
//! Python SDK's `everything-server`, on an rmcp [`ServerHandler`] served by
//! `gatehouse_http`. Not a reference server: it is only for the harness
//! (`docs/conformance.md`) and is not in `gatehouse serve`'s set.
//!
//! Both protocol eras are served on the same endpoint. On 2026-07-28 a tool that needs the
//! client (sampling, elicitation, roots) answers `input_required`; on 2025-11-25 it sends
//! the client a request in the middle of the call. Every `requestState` this server hands
//! out is sealed (HMAC, rmcp's [`RequestStateCodec`]); one that does not open is refused.
//! The tasks extension's tools (`greet`, `slow_compute`, …) are in `tasks`.

#![allow(deprecated)] // sampling, roots and logging are deprecated by SEP-2577, still in the suite

mod tasks;
mod tools;

use tools::{answer, check_responses, elicitation};

use std::{
    collections::BTreeSet,
    sync::{Arc, Mutex},
};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
        CompleteResult, GetPromptRequestParams, GetPromptResponse, GetPromptResult, GetTaskParams,
        GetTaskResult, Implementation, InputRequiredResult, ListPromptsResult,
        ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
        LoggingMessageNotificationParam, PaginatedRequestParams, ProtocolVersion,
        ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, RequestStateCodec,
        ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
        SubscriptionFilter, Tool, UnsubscribeRequestParams, UpdateTaskParams,
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

fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
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
mod tests;
