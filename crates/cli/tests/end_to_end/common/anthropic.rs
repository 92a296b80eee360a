//! A scripted Anthropic Messages API endpoint on 127.0.0.1, which a real Claude Code talks
//! to as its model (`ANTHROPIC_BASE_URL`): it calls one tool when that tool is offered,
//! then answers with the text of the tool's result, and records every request it gets.
//!
//! `POST /v1/messages` is answered as the API does, streamed (server-sent events:
//! `message_start`, `content_block_start`/`_delta`/`_stop` for text or for a `tool_use`
//! with `input_json_delta`, `message_delta` with the stop reason, `message_stop`) when the
//! request says `"stream": true`, else as one JSON message. The script is stateless, read
//! from each request: a request whose last user message carries a `tool_result` is answered
//! with [`ANSWER_PREFIX`] and the result's text; one whose `tools` offer the scripted tool
//! is answered with a `tool_use` of it; any other (the side requests Claude Code makes,
//! for a title, say) with [`SIDE_ANSWER`]. `POST /v1/messages/count_tokens` gets a count;
//! anything else a 404 in the API's error shape. Every request is recorded, the path
//! with its query, the body and what it was answered ([`Seen`]).

use std::sync::{Arc, Mutex};

use axum::{
    Router,
    body::{Body, Bytes},
    extract::{DefaultBodyLimit, State},
    http::{HeaderValue, Method, StatusCode, Uri, header},
    response::Response,
};
use serde_json::{Value, json};

/// The largest request body the endpoint reads (Claude Code's first request carries its
/// system prompt and every tool's schema: a few hundred KiB).
pub const MAX_BODY_BYTES: usize = 16 << 20;
/// The most requests recorded; later ones are answered but not kept.
pub const MAX_RECORDED: usize = 512;
/// What the answer to a request carrying a tool's result starts with, before its text.
pub const ANSWER_PREFIX: &str = "The tool answered: ";
/// The answer to every request that neither offers the tool nor carries its result.
pub const SIDE_ANSWER: &str = "ok";
/// The id of the scripted `tool_use`.
pub const TOOL_USE_ID: &str = "toolu_01GatehouseScripted";

/// What one request was answered.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// A `tool_use` of the scripted tool.
    ToolUse,
    /// A text: [`ANSWER_PREFIX`] and a result's text, or [`SIDE_ANSWER`].
    Text(String),
    /// A token count (`/v1/messages/count_tokens`).
    Count,
    /// 404: a path the endpoint does not serve, or a body that is not JSON.
    NotFound,
}

/// One request the endpoint received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    /// The path with its query (`/v1/messages?beta=true`).
    pub path: String,
    /// The body as JSON (`null` when it was not JSON).
    pub body: Value,
    pub reply: Reply,
}

impl Seen {
    /// The names of the tools the request offered.
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    }

    /// The `tool_result` blocks of the request's last user message.
    pub fn tool_results(&self) -> Vec<Value> {
        last_message_blocks(&self.body)
            .into_iter()
            .filter(|b| b["type"] == "tool_result")
            .collect()
    }

    /// The text of each of those results (an error's marked `(error) `).
    pub fn result_texts(&self) -> Vec<String> {
        self.tool_results().iter().map(result_text).collect()
    }
}

/// The scripted tool: its name as Claude Code offers it (`mcp__ENTRY__TOOL`) and the input
/// the `tool_use` gives it.
#[derive(Clone, Debug)]
struct Script {
    tool: String,
    input: Value,
}

#[derive(Clone)]
struct Shared {
    script: Arc<Script>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// A running endpoint; it stops when dropped.
pub struct Endpoint {
    /// `http://127.0.0.1:PORT`, as `ANTHROPIC_BASE_URL` takes it.
    pub base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    _runtime: tokio::runtime::Runtime,
}

impl Endpoint {
    /// Start an endpoint that calls `tool` (Claude Code's name for it) with `input`.
    pub fn start(tool: &str, input: Value) -> Endpoint {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime for the scripted model");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("a loopback port for the scripted model");
        let base = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let shared = Shared {
            script: Arc::new(Script {
                tool: tool.to_owned(),
                input,
            }),
            seen: seen.clone(),
        };
        let app = Router::new()
            .fallback(answer)
            .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
            .with_state(shared);
        runtime.spawn(async move { axum::serve(listener, app).await });
        Endpoint {
            base,
            seen,
            _runtime: runtime,
        }
    }

    /// Every request so far, in the order they came.
    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The requests answered with the scripted `tool_use`.
    pub fn tool_uses(&self) -> Vec<Seen> {
        let mut seen = self.requests();
        seen.retain(|s| s.reply == Reply::ToolUse);
        seen
    }

    /// The requests that carried a `tool_result`.
    pub fn with_results(&self) -> Vec<Seen> {
        let mut seen = self.requests();
        seen.retain(|s| !s.tool_results().is_empty());
        seen
    }

    /// Every request in a few lines each (path, model, tools offered, the last message
    /// clipped, what it was answered), for a failing test's message.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for (n, s) in self.requests().iter().enumerate() {
            let last = s.body["messages"]
                .as_array()
                .and_then(|m| m.last())
                .map(|m| clip(&m.to_string(), 600))
                .unwrap_or_default();
            out.push_str(&format!(
                "#{n} {} {} model={} stream={} tools={:?}\n   last message: {last}\n   answered: {:?}\n",
                s.method,
                s.path,
                s.body["model"],
                s.body["stream"],
                s.tool_names(),
                s.reply
            ));
        }
        out
    }
}

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The content blocks of the last user message (a string content is one text block);
/// Claude Code may put a system message after it.
fn last_message_blocks(body: &Value) -> Vec<Value> {
    let last = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"));
    let Some(last) = last else {
        return Vec::new();
    };
    match &last["content"] {
        Value::Array(blocks) => blocks.clone(),
        Value::String(text) => vec![json!({"type": "text", "text": text})],
        _ => Vec::new(),
    }
}

/// The text of a `tool_result` block (its content a string or text blocks), with
/// `is_error` said.
fn result_text(block: &Value) -> String {
    let text = match &block["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    if block["is_error"] == true {
        format!("(error) {text}")
    } else {
        text
    }
}

/// What the script answers a Messages request.
fn reply_to(script: &Script, body: &Value) -> Reply {
    let results: Vec<String> = last_message_blocks(body)
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(result_text)
        .collect();
    if !results.is_empty() {
        return Reply::Text(format!("{ANSWER_PREFIX}{}", results.join("\n")));
    }
    let offered = body["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == script.tool.as_str()));
    if offered {
        Reply::ToolUse
    } else {
        Reply::Text(SIDE_ANSWER.to_owned())
    }
}

async fn answer(State(shared): State<Shared>, method: Method, uri: Uri, body: Bytes) -> Response {
    let path = uri
        .path_and_query()
        .map_or_else(|| uri.path().to_owned(), |p| p.as_str().to_owned());
    let parsed: Option<Value> = serde_json::from_slice(&body).ok();
    let reply = match (method == Method::POST, uri.path(), &parsed) {
        (true, "/v1/messages", Some(body)) => reply_to(&shared.script, body),
        (true, "/v1/messages/count_tokens", Some(_)) => Reply::Count,
        _ => Reply::NotFound,
    };
    let body = parsed.unwrap_or(Value::Null);
    let response = respond(&shared.script, &body, &reply);
    let mut seen = shared.seen.lock().unwrap_or_else(|e| e.into_inner());
    if seen.len() < MAX_RECORDED {
        seen.push(Seen {
            method: method.to_string(),
            path,
            body,
            reply,
        });
    }
    response
}

/// The HTTP response for `reply`, streamed or not as the request asked.
fn respond(script: &Script, body: &Value, reply: &Reply) -> Response {
    let (blocks, stop) = match reply {
        Reply::Count => return json_response(StatusCode::OK, &json!({"input_tokens": 100})),
        Reply::NotFound => {
            let error = json!({"type": "error",
                               "error": {"type": "not_found_error", "message": "not scripted"}});
            return json_response(StatusCode::NOT_FOUND, &error);
        }
        Reply::ToolUse => (
            vec![
                json!({"type": "tool_use", "id": TOOL_USE_ID, "name": script.tool,
                        "input": script.input}),
            ],
            "tool_use",
        ),
        Reply::Text(text) => (vec![json!({"type": "text", "text": text})], "end_turn"),
    };
    let model = body["model"].as_str().unwrap_or("claude-scripted");
    if body["stream"] == true {
        let mut response = Response::new(Body::from(events(model, &blocks, stop)));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        return response;
    }
    let message = json!({
        "id": "msg_scripted", "type": "message", "role": "assistant", "model": model,
        "content": blocks, "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": 100, "output_tokens": 10}
    });
    json_response(StatusCode::OK, &message)
}

fn json_response(status: StatusCode, value: &Value) -> Response {
    let mut response = Response::new(Body::from(value.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A message with these content blocks as the API streams it.
fn events(model: &str, blocks: &[Value], stop: &str) -> String {
    let mut out = String::new();
    let mut event = |name: &str, data: Value| {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    event(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": "msg_scripted", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 100, "output_tokens": 1}}}),
    );
    for (index, block) in blocks.iter().enumerate() {
        let (start, delta) = if block["type"] == "tool_use" {
            let start = json!({"type": "tool_use", "id": block["id"], "name": block["name"],
                               "input": {}});
            let partial = block["input"].to_string();
            (
                start,
                json!({"type": "input_json_delta", "partial_json": partial}),
            )
        } else {
            let text = block["text"].clone();
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": text}),
            )
        };
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        );
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        );
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
               "usage": {"output_tokens": 10}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    out
}
