//! Stand-in OpenAI-compatible endpoints on 127.0.0.1. For the tests of the first minutes:
//! `GET /v1/models` answers as the test says (a list of models, or a bare status such as
//! 405), and every `POST /v1/chat/completions` gets the same final answer. For the evals'
//! A/B tests, a reader ([`start_reader`]) whose choice of tool depends only on what the
//! tools' descriptions say.

use axum::{
    Json, Router,
    http::StatusCode,
    routing::{get, post},
};
use serde_json::{Value, json};

/// What `GET /v1/models` answers.
#[derive(Clone)]
pub enum Models {
    /// 200 with these model ids.
    List(Vec<&'static str>),
    /// This status and an OpenAI-style error body.
    Status(u16),
}

/// A running endpoint; it stops when dropped.
pub struct Endpoint {
    /// `http://127.0.0.1:PORT/v1`, as `OPENAI_BASE_URL` takes it.
    pub base: String,
    _runtime: tokio::runtime::Runtime,
}

/// Start an endpoint whose model list is `models` and whose every answer is `answer`.
pub fn start(models: Models, answer: &str) -> Endpoint {
    let completion = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": answer}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    });
    let app = Router::new()
        .route("/v1/models", get(move || list(models.clone())))
        .route(
            "/v1/chat/completions",
            post(move || async move { Json(completion.clone()) }),
        );
    serve(app)
}

/// Start a model that reads descriptions: asked a question, it calls the offered tool whose
/// description shares the most words of four letters or more with the question (the
/// first of equals), every required string argument the question itself; with no tool
/// sharing a word, it answers that none fits. Given a tool's result, it answers with it.
pub fn start_reader() -> Endpoint {
    let app = Router::new()
        .route("/v1/models", get(|| list(Models::List(vec!["reader"]))))
        .route(
            "/v1/chat/completions",
            post(|Json(request): Json<Value>| async move { Json(read(&request)) }),
        );
    serve(app)
}

fn words(text: &str) -> std::collections::BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 4)
        .map(str::to_lowercase)
        .collect()
}

/// The reader's answer to one chat-completions request.
fn read(request: &Value) -> Value {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let usage = json!({"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110});
    let answer = |text: String| {
        json!({"id": "r", "object": "chat.completion", "model": "reader",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}], "usage": usage})
    };
    if last["role"] == "tool" {
        return answer(format!(
            "From the tool: {}",
            last["content"].as_str().unwrap_or("")
        ));
    }
    let question = last["content"].as_str().unwrap_or("").to_owned();
    let asked = words(&question);
    let tools = request["tools"].as_array().cloned().unwrap_or_default();
    let best = tools
        .iter()
        .map(|t| {
            let shared = words(t["function"]["description"].as_str().unwrap_or(""))
                .intersection(&asked)
                .count();
            (shared, t)
        })
        .filter(|(shared, _)| *shared > 0)
        .fold(None::<(usize, &Value)>, |best, (n, t)| match best {
            Some((m, _)) if m >= n => best,
            _ => Some((n, t)),
        });
    let Some((_, tool)) = best else {
        return answer("None of the tools I was given fits this question.".into());
    };
    let function = &tool["function"];
    let mut arguments = serde_json::Map::new();
    for name in function["parameters"]["required"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if let Some(name) = name.as_str() {
            arguments.insert(name.to_owned(), json!(question));
        }
    }
    json!({"id": "r", "object": "chat.completion", "model": "reader",
        "choices": [{"index": 0, "finish_reason": "tool_calls",
            "message": {"role": "assistant", "content": null, "tool_calls": [{
                "id": "call-1", "type": "function",
                "function": {"name": function["name"], "arguments": Value::Object(arguments).to_string()}}]}}],
        "usage": usage})
}

fn serve(app: Router) -> Endpoint {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    runtime.spawn(async move { axum::serve(listener, app).await });
    Endpoint {
        base,
        _runtime: runtime,
    }
}

async fn list(models: Models) -> (StatusCode, Json<Value>) {
    match models {
        Models::List(ids) => (
            StatusCode::OK,
            Json(json!({"object": "list",
                        "data": ids.iter().map(|id| json!({"id": id, "object": "model"})).collect::<Vec<_>>()})),
        ),
        Models::Status(code) => (
            StatusCode::from_u16(code).unwrap(),
            Json(json!({"error": {"message": "not here"}})),
        ),
    }
}
