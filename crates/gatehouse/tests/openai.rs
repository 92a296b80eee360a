//! The OpenAI-compatible model against a fake chat-completions endpoint on 127.0.0.1: it
//! answers from a script of canned responses and records every request it receives.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{
    Router,
    body::Bytes,
    extract::State,
    http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri},
    response::{IntoResponse, Response},
};
use gatehouse::{
    catalog::ToolSpec,
    model::{
        Message, Model, ToolCall, Usage, from_spec,
        openai::{Limits, MAX_MODEL_ATTEMPTS, OpenAi},
    },
};
use serde_json::{Value, json};

/// One canned response.
#[derive(Clone)]
struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
    delay: Duration,
}

impl Reply {
    fn json(value: Value) -> Self {
        Reply::status(200, value.to_string())
    }

    fn status(status: u16, body: impl Into<String>) -> Self {
        Reply {
            status,
            headers: vec![],
            body: body.into(),
            delay: Duration::ZERO,
        }
    }

    fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.into()));
        self
    }
}

/// One request the fake endpoint received.
#[derive(Debug, Clone)]
struct Seen {
    method: Method,
    path: String,
    authorization: Option<String>,
    body: Value,
}

#[derive(Default)]
struct Shared {
    /// Replies in order; the last one is repeated once the others are used.
    script: Mutex<VecDeque<Reply>>,
    seen: Mutex<Vec<Seen>>,
}

struct Fake {
    base: String,
    shared: Arc<Shared>,
}

impl Fake {
    async fn start(script: Vec<Reply>) -> Fake {
        let shared = Arc::new(Shared {
            script: Mutex::new(script.into()),
            seen: Mutex::default(),
        });
        let app = Router::new().fallback(answer).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/v1", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Fake { base, shared }
    }

    fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// A model at this endpoint, with no key and quick retries.
    fn model(&self) -> OpenAi {
        self.model_with_key(None)
    }

    fn model_with_key(&self, key: Option<&str>) -> OpenAi {
        OpenAi::new("test-model", &self.base, key.map(str::to_owned))
            .unwrap()
            .with_limits(quick())
    }
}

async fn answer(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    shared.seen.lock().unwrap().push(Seen {
        method,
        path: uri.path().to_owned(),
        authorization: headers
            .get("authorization")
            .map(|v| v.to_str().unwrap().to_owned()),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let reply = {
        let mut script = shared.script.lock().unwrap();
        if script.len() > 1 {
            script.pop_front().unwrap()
        } else {
            script.front().cloned().expect("the script has a reply")
        }
    };
    tokio::time::sleep(reply.delay).await;
    let mut out = HeaderMap::new();
    out.insert("content-type", HeaderValue::from_static("application/json"));
    for (name, value) in &reply.headers {
        out.insert(
            HeaderName::from_static(name),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    (StatusCode::from_u16(reply.status).unwrap(), out, reply.body).into_response()
}

/// The model's decision on the one question "q".
async fn answer_q(model: &mut OpenAi) -> gatehouse::model::Decision {
    model
        .decide(&[Message::User("q".into())], &[])
        .await
        .expect("a decision")
}

/// How the model fails on the one question "q".
async fn failure(model: &mut OpenAi) -> String {
    let failed = model.decide(&[Message::User("q".into())], &[]).await;
    failed.expect_err("the model fails").to_string()
}

/// Bounds for tests: the real attempt count, waits in milliseconds.
fn quick() -> Limits {
    Limits {
        first_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(20),
        retry_budget: Duration::from_secs(10),
        request_timeout: Duration::from_secs(10),
        preflight_timeout: Duration::from_secs(5),
        ..Limits::default()
    }
}

/// A chat-completions answer with one message.
fn completion(message: Value, finish: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    })
}

fn text_reply(text: &str) -> Reply {
    Reply::json(completion(
        json!({"role": "assistant", "content": text}),
        "stop",
    ))
}

fn tool(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("[support] {name}"),
        parameters: std::sync::Arc::new(
            json!({"type": "object", "properties": {"q": {"type": "string"}}})
                .as_object()
                .unwrap()
                .clone(),
        ),
        strict: false,
    }
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

#[tokio::test]
async fn the_conversation_goes_out_in_order_with_roles_tools_and_paired_results() {
    let fake = Fake::start(vec![text_reply("done")]).await;
    let mut model = fake.model();
    let conversation = vec![
        Message::System("be careful".into()),
        Message::User("Draft a reply to ticket T-30002".into()),
        Message::Assistant {
            text: None,
            tool_calls: vec![
                call(
                    "call_a",
                    "support__get_ticket",
                    r#"{"ticket_id":"T-30002"}"#,
                ),
                call(
                    "call_b",
                    "support__search_knowledge",
                    r#"{"query":"refund"}"#,
                ),
            ],
        },
        Message::Tool {
            call_id: "call_a".into(),
            name: "support__get_ticket".into(),
            content: r#"{"result":{"subject":"Charged twice"}}"#.into(),
            media: vec![],
        },
        Message::Tool {
            call_id: "call_b".into(),
            name: "support__search_knowledge".into(),
            content: r#"{"error":"no results"}"#.into(),
            media: vec![],
        },
        Message::Assistant {
            text: Some("Here is a draft.".into()),
            tool_calls: vec![],
        },
        Message::User("Shorter, please".into()),
    ];
    let tools = [
        tool("support__get_ticket"),
        tool("support__search_knowledge"),
    ];
    let d = model.decide(&conversation, &tools).await.unwrap();
    assert_eq!(d.text.as_deref(), Some("done"));

    let seen = fake.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, Method::POST);
    assert_eq!(seen[0].path, "/v1/chat/completions");
    let body = &seen[0].body;
    assert_eq!(body["model"], "test-model");
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "tool",
            "assistant",
            "user"
        ]
    );
    let m = &body["messages"];
    assert_eq!(m[0], json!({"role": "system", "content": "be careful"}));
    assert_eq!(
        m[1],
        json!({"role": "user", "content": "Draft a reply to ticket T-30002"})
    );
    assert_eq!(
        m[2],
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_a", "type": "function", "function": {
                "name": "support__get_ticket", "arguments": "{\"ticket_id\":\"T-30002\"}"}},
            {"id": "call_b", "type": "function", "function": {
                "name": "support__search_knowledge", "arguments": "{\"query\":\"refund\"}"}},
        ]})
    );
    assert_eq!(
        m[3],
        json!({"role": "tool", "tool_call_id": "call_a",
               "content": "{\"result\":{\"subject\":\"Charged twice\"}}"})
    );
    assert_eq!(
        m[4],
        json!({"role": "tool", "tool_call_id": "call_b", "content": "{\"error\":\"no results\"}"})
    );
    // A plain answer carries no empty tool_calls list.
    assert_eq!(
        m[5],
        json!({"role": "assistant", "content": "Here is a draft."})
    );
    assert_eq!(
        body["tools"],
        json!([
            {"type": "function", "function": {
                "name": "support__get_ticket",
                "description": "[support] support__get_ticket",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}},
            {"type": "function", "function": {
                "name": "support__search_knowledge",
                "description": "[support] support__search_knowledge",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}},
        ])
    );
    assert_eq!(body["tool_choice"], "auto");
}

#[tokio::test]
async fn no_tools_means_no_tools_and_no_tool_choice() {
    let fake = Fake::start(vec![text_reply("hello")]).await;
    fake.model()
        .decide(&[Message::User("hi".into())], &[])
        .await
        .unwrap();
    let body = &fake.seen()[0].body;
    assert!(body.get("tools").is_none(), "{body}");
    assert!(body.get("tool_choice").is_none(), "{body}");
}

#[tokio::test]
async fn tool_calls_come_back_in_order_with_their_raw_arguments_and_the_text_beside_them() {
    let fake = Fake::start(vec![Reply::json(completion(
        json!({"role": "assistant", "content": "Let me look.", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "support__get_ticket", "arguments": "{\"ticket_id\": \"T-30002\"}"}},
            {"id": "call_2", "type": "function",
             "function": {"name": "support__search_knowledge", "arguments": "{query: 'oops'"}},
            {"type": "function",
             "function": {"name": "support__search_knowledge", "arguments": {"query": "refund"}}},
        ]}),
        "tool_calls",
    ))])
    .await;
    // An earlier call of the conversation already has the id call_3.
    let conversation = [
        Message::User("q".into()),
        Message::Assistant {
            text: None,
            tool_calls: vec![call("call_3", "support__get_ticket", "{}")],
        },
        Message::Tool {
            call_id: "call_3".into(),
            name: "support__get_ticket".into(),
            content: "{}".into(),
            media: vec![],
        },
    ];
    let d = fake
        .model()
        .decide(&conversation, &[tool("support__get_ticket")])
        .await
        .unwrap();
    assert_eq!(d.text.as_deref(), Some("Let me look."));
    assert_eq!(d.tool_calls.len(), 3);
    assert_eq!(
        d.tool_calls[..2],
        [
            // Exactly as written, spaces included.
            call(
                "call_1",
                "support__get_ticket",
                "{\"ticket_id\": \"T-30002\"}"
            ),
            // Not JSON: passed on untouched, for the host to refuse.
            call("call_2", "support__search_knowledge", "{query: 'oops'"),
        ]
    );
    // An object instead of a string is serialized; a missing id is made up, and unique.
    let third = &d.tool_calls[2];
    assert_eq!(third.name, "support__search_knowledge");
    assert_eq!(third.arguments, r#"{"query":"refund"}"#);
    assert_eq!(third.id, "call_4");
}

#[tokio::test]
async fn other_shapes_some_servers_send_are_read() {
    let fake = Fake::start(vec![
        // Content as a list of text parts.
        Reply::json(completion(
            json!({"role": "assistant", "content": [
                {"type": "text", "text": "Part one, "}, {"type": "text", "text": "part two."}]}),
            "stop",
        )),
        // The legacy single function_call, and no finish_reason at all.
        Reply::json(json!({"choices": [{"message": {"role": "assistant", "content": null,
            "function_call": {"name": "support__get_ticket", "arguments": "{\"ticket_id\":\"T-1\"}"}}}]})),
        // Out of tokens before any answer.
        Reply::json(completion(
            json!({"role": "assistant", "content": "", "reasoning_content": "hmm"}),
            "length",
        )),
    ])
    .await;
    let mut model = fake.model();
    let q = [Message::User("q".into())];
    let d = model.decide(&q, &[]).await.unwrap();
    assert_eq!(d.text.as_deref(), Some("Part one, part two."));
    let d = model.decide(&q, &[]).await.unwrap();
    assert_eq!(
        d.tool_calls,
        [call(
            "call_1",
            "support__get_ticket",
            r#"{"ticket_id":"T-1"}"#
        )]
    );
    let e = model.decide(&q, &[]).await.unwrap_err().to_string();
    assert!(e.contains("ran out of output tokens"), "{e}");
}

#[tokio::test]
async fn a_429_with_retry_after_is_retried_once_then_succeeds() {
    let fake = Fake::start(vec![
        Reply::status(429, r#"{"error":{"message":"slow down"}}"#).header("retry-after", "0"),
        text_reply("after the wait"),
    ])
    .await;
    let d = answer_q(&mut fake.model()).await;
    assert_eq!(d.text.as_deref(), Some("after the wait"));
    assert_eq!(fake.seen().len(), 2);
}

#[tokio::test]
async fn a_500_on_every_attempt_gives_up_after_exactly_the_most_attempts() {
    let fake = Fake::start(vec![Reply::status(
        500,
        r#"{"error":{"message":"the GPU is on fire"}}"#,
    )])
    .await;
    let e = failure(&mut fake.model()).await;
    assert_eq!(fake.seen().len(), MAX_MODEL_ATTEMPTS as usize);
    assert!(
        e.contains(&format!("after {MAX_MODEL_ATTEMPTS} attempts")),
        "{e}"
    );
    assert!(e.contains("500 Internal Server Error"), "{e}");
    assert!(e.contains("the GPU is on fire"), "{e}");
}

#[tokio::test]
async fn a_retry_after_longer_than_the_budget_is_cut_to_it() {
    let fake = Fake::start(vec![
        Reply::status(429, "busy").header("retry-after", "3600"),
    ])
    .await;
    let mut model = fake.model().with_limits(Limits {
        retry_budget: Duration::from_millis(200),
        ..quick()
    });
    let started = Instant::now();
    let e = failure(&mut model).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(fake.seen().len(), 2, "{e}");
    assert!(e.contains("after 2 attempts"), "{e}");
    assert!(e.contains("retry budget"), "{e}");
    assert!(e.contains("429 Too Many Requests"), "{e}");
}

#[tokio::test]
async fn a_slow_answer_hits_the_request_time_limit() {
    let mut slow = text_reply("too late");
    slow.delay = Duration::from_secs(3);
    let fake = Fake::start(vec![slow]).await;
    let mut model = fake.model().with_limits(Limits {
        request_timeout: Duration::from_millis(200),
        max_attempts: 1,
        ..quick()
    });
    let e = failure(&mut model).await;
    assert!(e.contains("gave no answer within 0.2 s"), "{e}");
    assert!(e.contains("after 1 attempt:"), "{e}");
}

#[tokio::test]
async fn a_400_is_not_retried_and_quotes_the_servers_message() {
    let fake = Fake::start(vec![Reply::status(
        400,
        r#"{"error":{"message":"model 'test-model' does not support tools","type":"invalid_request_error"}}"#,
    )])
    .await;
    let e = failure(&mut fake.model()).await;
    assert_eq!(fake.seen().len(), 1);
    assert!(e.contains("400 Bad Request"), "{e}");
    assert!(
        e.contains("model 'test-model' does not support tools"),
        "{e}"
    );
}

#[tokio::test]
async fn usage_is_read_and_adds_up_over_decisions() {
    let fake = Fake::start(vec![
        Reply::json(json!({
            "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}]},
                "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        })),
        Reply::json(json!({
            "choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 150, "completion_tokens": 5, "total_tokens": 155},
        })),
        // No usage at all: still one model call.
        text_reply("no usage"),
    ])
    .await;
    let mut model = fake.model();
    let mut total = Usage::default();
    for _ in 0..2 {
        let d = answer_q(&mut model).await;
        total.add(d.usage.as_ref().unwrap());
    }
    assert_eq!(
        total,
        Usage {
            prompt_tokens: 250,
            completion_tokens: 25,
            total_tokens: 275,
            model_calls: 2,
        }
    );
    let d = answer_q(&mut model).await;
    assert_eq!(
        d.usage,
        Some(Usage {
            model_calls: 1,
            ..Usage::default()
        })
    );
}

#[tokio::test]
async fn reasoning_is_never_the_answer() {
    let fake = Fake::start(vec![
        Reply::json(completion(
            json!({"role": "assistant", "content": "The refund takes 5 days.",
                   "reasoning_content": "SECRET THOUGHTS", "reasoning": "MORE THOUGHTS"}),
            "stop",
        )),
        Reply::json(completion(
            json!({"role": "assistant", "content": null, "reasoning_content": "SECRET THOUGHTS"}),
            "stop",
        )),
    ])
    .await;
    let mut model = fake.model();
    let d = answer_q(&mut model).await;
    assert_eq!(d.text.as_deref(), Some("The refund takes 5 days."));
    let e = failure(&mut model).await;
    assert!(!e.contains("SECRET"), "{e}");
    assert!(e.contains("neither an answer nor a tool call"), "{e}");
}

#[tokio::test]
async fn odd_answers_give_clear_errors() {
    let cases = [
        (
            Reply::json(json!({"id": "x", "choices": []})),
            "has no choices",
        ),
        (
            Reply::json(completion(
                json!({"role": "assistant", "content": "hm"}),
                "sleepy",
            )),
            "unknown reason (finish_reason \"sleepy\")",
        ),
        (
            Reply::status(200, "<html>Welcome to nginx</html>"),
            "is not JSON",
        ),
        (
            Reply::json(completion(
                json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c", "type": "function", "function": {"arguments": "{}"}}]}),
                "tool_calls",
            )),
            "tool call 1 has no function name",
        ),
        (
            Reply::json(json!({"error": {"message": "upstream provider failed"}})),
            "upstream provider failed",
        ),
    ];
    for (reply, expected) in cases {
        let fake = Fake::start(vec![reply]).await;
        let e = failure(&mut fake.model()).await;
        assert!(e.contains(expected), "expected {expected:?} in {e:?}");
        assert_eq!(fake.seen().len(), 1, "not retried: {e}");
    }
}

#[tokio::test]
async fn the_key_is_sent_as_a_bearer_only_when_set_and_never_shown() {
    let fake = Fake::start(vec![text_reply("ok")]).await;
    fake.model_with_key(Some("sk-test-123"))
        .decide(&[Message::User("q".into())], &[])
        .await
        .unwrap();
    answer_q(&mut fake.model()).await;
    let seen = fake.seen();
    assert_eq!(seen[0].authorization.as_deref(), Some("Bearer sk-test-123"));
    assert_eq!(seen[1].authorization, None);

    let fake = Fake::start(vec![Reply::status(
        401,
        r#"{"error":{"message":"Incorrect API key provided: sk-test-123"}}"#,
    )])
    .await;
    let mut model = fake.model_with_key(Some("sk-test-123"));
    assert!(!format!("{model:?}").contains("sk-test-123"));
    let e = failure(&mut model).await;
    assert!(e.contains("refused the key (401)"), "{e}");
    assert!(!e.contains("sk-test-123"), "{e}");
    assert_eq!(fake.seen().len(), 1);
}

#[tokio::test]
async fn preflight_asks_for_the_models_and_accepts_a_missing_list() {
    let fake = Fake::start(vec![
        Reply::json(json!({"object": "list", "data": [{"id": "test-model"}]})),
        Reply::status(404, "Not Found"),
    ])
    .await;
    let mut model = fake.model_with_key(Some("k-1234"));
    model.preflight().await.unwrap();
    model.preflight().await.unwrap();
    let seen = fake.seen();
    assert_eq!(seen[0].method, Method::GET);
    assert_eq!(seen[0].path, "/v1/models");
    assert_eq!(seen[0].authorization.as_deref(), Some("Bearer k-1234"));
}

#[tokio::test]
async fn preflight_says_when_the_key_is_refused() {
    let fake = Fake::start(vec![Reply::status(
        401,
        r#"{"error":{"message":"invalid key"}}"#,
    )])
    .await;
    let e = fake
        .model_with_key(Some("wrong-key"))
        .preflight()
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("the model endpoint refused the key (401)"),
        "{e}"
    );
    let e = fake.model().preflight().await.unwrap_err().to_string();
    assert!(e.contains("OPENAI_API_KEY is not set"), "{e}");
}

#[tokio::test]
async fn preflight_against_a_closed_port_says_it_cannot_reach_the_endpoint() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let mut model = OpenAi::new("m", &base, None).unwrap().with_limits(quick());
    let e = model.preflight().await.unwrap_err().to_string();
    assert_eq!(
        e,
        format!("cannot reach the model endpoint {base}: connection refused")
    );
    // A question to a closed port is retried, then named the same way.
    let mut model = model.with_limits(Limits {
        max_attempts: 2,
        ..quick()
    });
    let e = failure(&mut model).await;
    assert_eq!(
        e,
        format!(
            "gave up after 2 attempts: cannot reach the model endpoint {base}: connection refused"
        )
    );
}

#[test]
fn endpoints_and_specs_are_checked_when_the_model_is_made() {
    assert!(OpenAi::new("m", "not a url", None).is_err());
    assert!(OpenAi::new("m", "ftp://example.com/v1", None).is_err());
    assert!(OpenAi::new("", "http://127.0.0.1:1/v1", None).is_err());
    let m = OpenAi::new("m", "http://user:secret@127.0.0.1:8000/v1/", None).unwrap();
    assert_eq!(m.base_url(), "http://127.0.0.1:8000/v1");
    assert_eq!(
        from_spec("openai:qwen2.5:7b").map(|m| m.name()).ok(),
        Some("openai:qwen2.5:7b".into())
    );
    assert!(from_spec("openai:").is_err());
    assert_eq!(Limits::default().max_attempts, MAX_MODEL_ATTEMPTS);
}

#[test]
fn media_from_a_tool_result_goes_to_the_model_as_input_parts() {
    let messages = vec![Message::Tool {
        call_id: "call_img".into(),
        name: "testbed__content".into(),
        content: r#"{"result":"[image image/png]"}"#.into(),
        media: vec![gatehouse::model::Media {
            kind: gatehouse::model::MediaKind::Image,
            mime: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        }],
    }];
    let model = gatehouse::model::openai::OpenAi::new("m", "http://127.0.0.1:9/v1", None).unwrap();
    let body = model.request_body(&messages, &[]);
    let sent = body["messages"].as_array().unwrap();
    assert_eq!(
        sent.len(),
        2,
        "the tool message, then the media as a user message"
    );
    assert_eq!(sent[0]["role"], "tool");
    assert_eq!(sent[1]["role"], "user");
    assert_eq!(
        sent[1]["content"][1]["image_url"]["url"],
        "data:image/png;base64,iVBORw0KGgo="
    );
}
