//! The chat-completions wire: the messages as the API takes them, and its answer read
//! into a [`Decision`]. Every odd shape of an answer is a [`ModelError`] with a plain
//! reason, never a panic.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::KNOWN_FINISH_REASONS;
use crate::model::{Decision, Message, ModelError, ToolCall, Usage};

/// Read `choices[0].message` into a decision. A call without an id gets a `call_N` that no
/// other call of the conversation or of this answer has (`next_id` counts them); `quote`
/// shows the endpoint's own words, clipped and with its key blanked out.
pub(super) fn decision(
    value: &Value,
    ids_in_use: &HashSet<&str>,
    next_id: &mut u64,
    quote: impl Fn(&str) -> String,
) -> Result<Decision, ModelError> {
    let fail = |why: String| Err(ModelError(why));
    let Some(object) = value.as_object() else {
        return fail("the model endpoint's answer is not a JSON object".into());
    };
    let (message, finish) = first_message(object, &quote)?;
    let text = content_text(message.get("content"))?;
    let mut tool_calls = tool_calls(message)?;
    let taken: HashSet<String> = tool_calls
        .iter()
        .map(|c| c.id.clone())
        .filter(|id| !id.is_empty())
        .collect();
    for call in tool_calls.iter_mut().filter(|c| c.id.is_empty()) {
        call.id = loop {
            *next_id += 1;
            let id = format!("call_{next_id}");
            if !taken.contains(&id) && !ids_in_use.contains(id.as_str()) {
                break id;
            }
        };
    }
    if text.is_none() && tool_calls.is_empty() {
        return fail(empty_reason(message, finish));
    }
    Ok(Decision {
        text,
        tool_calls,
        usage: Some(usage(object.get("usage"))),
    })
}

/// The first choice's message and its finish reason, or why there is none.
fn first_message<'v>(
    object: &'v Map<String, Value>,
    quote: &impl Fn(&str) -> String,
) -> Result<(&'v Map<String, Value>, Option<&'v str>), ModelError> {
    let fail = |why: String| Err(ModelError(why));
    let choice = match object.get("choices").and_then(Value::as_array) {
        Some(choices) if !choices.is_empty() => &choices[0],
        _ => {
            if let Some(error) = object.get("error").filter(|e| !e.is_null()) {
                return fail(format!(
                    "the model endpoint reported an error{}",
                    quote(&error_text(error))
                ));
            }
            return fail("the model endpoint's answer has no choices".into());
        }
    };
    let finish = match choice.get("finish_reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if KNOWN_FINISH_REASONS.contains(&s.as_str()) => Some(s.as_str()),
        Some(other) => {
            return fail(format!(
                "the model stopped for an unknown reason (finish_reason {})",
                crate::text::clip(&other.to_string(), 60)
            ));
        }
    };
    match choice.get("message").and_then(Value::as_object) {
        Some(message) => Ok((message, finish)),
        None => fail("the model endpoint's answer has no message in its first choice".into()),
    }
}

/// The message's tool calls, or its legacy single `function_call`.
fn tool_calls(message: &Map<String, Value>) -> Result<Vec<ToolCall>, ModelError> {
    let mut calls = Vec::new();
    match message.get("tool_calls") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for (i, call) in list.iter().enumerate() {
                calls.push(tool_call(i + 1, call)?);
            }
        }
        Some(_) => return Err(ModelError("the model's tool_calls is not a list".into())),
    }
    // The legacy single `function_call`, which some servers still send.
    if calls.is_empty()
        && let Some(call) = message.get("function_call").filter(|c| !c.is_null())
    {
        calls.push(tool_call(1, &json!({ "function": call }))?);
    }
    Ok(calls)
}

/// Why a message with neither text nor calls gave nothing. Reasoning fields are never the
/// answer; only say that they were there.
fn empty_reason(message: &Map<String, Value>, finish: Option<&str>) -> String {
    let reasoned = ["reasoning_content", "reasoning"]
        .iter()
        .any(|k| message.get(*k).is_some_and(|r| !r.is_null()));
    match finish {
        Some("length") => {
            "the model ran out of output tokens before it answered (finish_reason length)".into()
        }
        Some("content_filter") => {
            "the provider's content filter withheld the model's answer".into()
        }
        _ if reasoned => {
            "the model only reasoned, and gave neither an answer nor a tool call".into()
        }
        _ => "the model gave neither an answer nor a tool call".into(),
    }
}

/// One entry of `tool_calls` (`n` counts from 1, for the error message).
fn tool_call(n: usize, call: &Value) -> Result<ToolCall, ModelError> {
    let function = call.get("function");
    let name = function
        .and_then(|f| f.get("name"))
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| ModelError(format!("the model's tool call {n} has no function name")))?;
    let arguments = match function.and_then(|f| f.get("arguments")) {
        None | Some(Value::Null) => "{}".to_owned(),
        // The model's own text, exactly: the host checks it, not this adapter.
        Some(Value::String(raw)) => raw.clone(),
        Some(other) => other.to_string(),
    };
    // A missing id is left empty here and made up by the caller.
    let id = call
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Ok(ToolCall {
        id,
        name: name.to_owned(),
        arguments,
    })
}

/// One message as chat-completion APIs take it: one entry, or for a tool result with media
/// two — the tool message, then a user message carrying the images and audio as input
/// parts, since tool messages take text only.
pub(super) fn message_json(message: &Message) -> Vec<Value> {
    if let Message::Tool {
        call_id,
        name,
        content,
        media,
    } = message
        && !media.is_empty()
    {
        let mut parts = vec![
            json!({"type": "text", "text": format!("Media returned by {name} (call {call_id}):")}),
        ];
        for m in media {
            parts.push(match m.kind {
                crate::model::MediaKind::Audio => json!({"type": "input_audio", "input_audio": {
                    "data": m.data, "format": m.mime.rsplit('/').next().unwrap_or("wav")}}),
                crate::model::MediaKind::Image => json!({"type": "image_url", "image_url": {"url": format!("data:{};base64,{}", m.mime, m.data)}}),
            });
        }
        return vec![
            json!({"role": "tool", "tool_call_id": call_id, "content": content}),
            json!({"role": "user", "content": parts}),
        ];
    }
    vec![message_one(message)]
}

fn message_one(message: &Message) -> Value {
    match message {
        Message::System(text) => json!({"role": "system", "content": text}),
        Message::User(text) => json!({"role": "user", "content": text}),
        Message::Assistant { text, tool_calls } => {
            let mut m = json!({"role": "assistant", "content": text});
            if !tool_calls.is_empty() {
                m["tool_calls"] = tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function", "function": {
                            "name": c.name,
                            "arguments": c.arguments,
                        }})
                    })
                    .collect();
            }
            m
        }
        Message::Tool {
            call_id, content, ..
        } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
    }
}

/// The message's text: a string, null, or (from some servers) a list of text parts. Blank
/// text counts as none.
fn content_text(content: Option<&Value>) -> Result<Option<String>, ModelError> {
    let text = match content {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.as_str()),
                Value::Object(o) if o.get("type").and_then(Value::as_str) == Some("text") => {
                    o.get("text").and_then(Value::as_str)
                }
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(""),
        Some(_) => {
            return Err(ModelError(
                "the model's message content is neither text nor null".into(),
            ));
        }
    };
    Ok((!text.trim().is_empty()).then_some(text))
}

/// `usage` as reported, one model call whether or not tokens were reported.
fn usage(value: Option<&Value>) -> Usage {
    let count = |k: &str| value.and_then(|u| u.get(k)).and_then(Value::as_u64);
    let prompt_tokens = count("prompt_tokens").unwrap_or(0);
    let completion_tokens = count("completion_tokens").unwrap_or(0);
    Usage {
        prompt_tokens,
        completion_tokens,
        total_tokens: count("total_tokens").unwrap_or(prompt_tokens + completion_tokens),
        model_calls: 1,
    }
}

/// The server's own message from an error body: `{"error": {"message"}}`, `{"error": "…"}`,
/// `{"message"}` or `{"detail"}`, else the body's text.
pub(super) fn server_message(body: &str) -> String {
    match serde_json::from_str::<Value>(body) {
        Ok(Value::Object(o)) => {
            let found = ["error", "message", "detail"]
                .iter()
                .find_map(|k| o.get(*k).filter(|v| !v.is_null()));
            match found {
                Some(v) => error_text(v),
                None => body.to_owned(),
            }
        }
        _ => body.to_owned(),
    }
}

/// The text of an `error` value: its `message` when it has one.
fn error_text(error: &Value) -> String {
    match error {
        Value::String(s) => s.clone(),
        Value::Object(o) => match o.get("message") {
            Some(Value::String(s)) => s.clone(),
            _ => error.to_string(),
        },
        other => other.to_string(),
    }
}

/// Most model ids kept from one list.
const MAX_LISTED_MODELS: usize = 1_000;

/// The model ids of a `GET /models` answer (`{"data": [{"id": …}, …]}`), at most
/// [`MAX_LISTED_MODELS`] of them; `None` when the body is not such a list.
pub(super) fn model_ids(body: &str) -> Option<Vec<String>> {
    let value: Value = serde_json::from_str(body).ok()?;
    let items = value.get("data")?.as_array()?;
    Some(
        items
            .iter()
            .filter_map(|m| m.get("id")?.as_str())
            .take(MAX_LISTED_MODELS)
            .map(str::to_owned)
            .collect(),
    )
}
