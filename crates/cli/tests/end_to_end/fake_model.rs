//! A stand-in OpenAI-compatible endpoint on 127.0.0.1 for the tests of the first minutes:
//! `GET /v1/models` answers as the test says (a list of models, or a bare status such as
//! 405), and every `POST /v1/chat/completions` gets the same final answer.

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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
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
