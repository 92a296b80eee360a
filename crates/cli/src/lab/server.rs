//! The lab's HTTP side: the guard (token, `Host`, `Origin`), the page and its assets, the
//! JSON API and the event stream.
//!
//! Every request must carry the lab's token (`?token=` or the `X-Lab-Token` header), name
//! this server in `Host` (so a DNS-rebinding page cannot reach it), and, if it has an
//! `Origin`, come from this server's own origin. Anything else is refused with 403.

use std::{convert::Infallible, sync::Arc, time::Duration};

use axum::{
    Json, Router,
    body::{Body, Bytes},
    extract::{FromRequest, Path, Request, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    middleware::{self, Next},
    response::{
        IntoResponse, Response,
        sse::{Event, KeepAlive, Sse},
    },
    routing::{get, post},
};
use futures::stream::{self, Stream, StreamExt};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::{
    person::AnswerError,
    session::{Lab, StartError},
};

/// The lab's document, after the prologue every page of the host's shares
/// ([`gatehouse_http::HTML_HEAD`]).
const INDEX_HTML: &str = include_str!("../../assets/lab/index.html");
const APP_JS: &str = include_str!("../../assets/lab/app.js");
const APP_CSS: &str = include_str!("../../assets/lab/app.css");

/// Who may talk to the lab.
#[derive(Clone)]
pub struct Guard {
    pub token: String,
    pub port: u16,
}

impl Guard {
    /// Why a request is refused, if it is.
    pub fn check(&self, headers: &HeaderMap, query: Option<&str>) -> Result<(), &'static str> {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .ok_or("no Host header")?;
        let ours = [
            format!("127.0.0.1:{}", self.port),
            format!("localhost:{}", self.port),
        ];
        if !ours.iter().any(|o| o.eq_ignore_ascii_case(host)) {
            return Err("this Host is not the lab's");
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().map_err(|_| "unreadable Origin")?;
            if !ours
                .iter()
                .any(|o| origin.eq_ignore_ascii_case(&format!("http://{o}")))
            {
                return Err("this Origin is not the lab's");
            }
        }
        let from_header = headers.get("x-lab-token").and_then(|h| h.to_str().ok());
        let from_query =
            query.and_then(|q| q.split('&').find_map(|pair| pair.strip_prefix("token=")));
        match from_header.or(from_query) {
            Some(t) if same(t.as_bytes(), self.token.as_bytes()) => Ok(()),
            Some(_) => Err("wrong token"),
            None => Err("no token: open the URL the lab printed"),
        }
    }
}

/// Compare without stopping at the first difference.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn guard(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    match guard.check(request.headers(), request.uri().query()) {
        Ok(()) => {
            let mut response = next.run(request).await;
            let h = response.headers_mut();
            // The token is in the URL: never send it anywhere in a Referer.
            h.insert(
                header::REFERRER_POLICY,
                HeaderValue::from_static("no-referrer"),
            );
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            h.insert(
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            );
            response
        }
        Err(why) => (StatusCode::FORBIDDEN, format!("forbidden: {why}\n")).into_response(),
    }
}

/// What the routes share.
#[derive(Clone)]
pub struct AppState {
    pub lab: Arc<Lab>,
    pub token: String,
    /// Ends every event stream when the lab shuts down.
    pub closing: CancellationToken,
    /// The eval shown in the Eval tab (`--eval DIR`).
    pub eval: Option<Arc<super::eval_view::EvalDir>>,
}

/// The lab's routes behind the guard.
pub fn router(state: AppState, guard_state: Guard) -> Router {
    Router::new()
        .route("/", get(index))
        .route(
            "/app.js",
            get(|| async { asset(APP_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/app.css",
            get(|| async { asset(APP_CSS, "text/css; charset=utf-8") }),
        )
        .route("/api/state", get(state_view))
        .route("/api/events", get(events))
        .route("/api/ask", post(ask))
        .route("/api/propose", post(propose))
        .route("/api/stop", post(stop))
        .route("/api/prompts/{id}", post(answer))
        .route("/api/recordings", get(recordings))
        .route("/api/recordings/{turn}", get(recording))
        .route("/api/eval", get(eval_report))
        .route("/api/eval/recordings/{stem}", get(eval_recording))
        .fallback(|| async { error(StatusCode::NOT_FOUND, "no such page in the lab") })
        .with_state(state)
        .layer(middleware::from_fn_with_state(guard_state, guard))
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({"error": message.into()}))).into_response()
}

async fn index(State(s): State<AppState>) -> Response {
    let html = format!(
        "{}{}",
        gatehouse_http::HTML_HEAD,
        INDEX_HTML.replace("{{TOKEN}}", &s.token)
    );
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
            ),
        ],
        html,
    )
        .into_response()
}

/// A request body that is a JSON object; anything else is refused with a 400 that says
/// why, before the handler runs.
struct JsonObject(Value);

impl<S: Send + Sync> FromRequest<S> for JsonObject {
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Response> {
        let body = Bytes::from_request(request, state)
            .await
            .map_err(IntoResponse::into_response)?;
        match serde_json::from_slice::<Value>(&body) {
            Ok(v @ Value::Object(_)) => Ok(JsonObject(v)),
            Ok(_) => Err(error(
                StatusCode::BAD_REQUEST,
                "the body must be a JSON object",
            )),
            Err(e) => Err(error(
                StatusCode::BAD_REQUEST,
                format!("the body is not valid JSON: {e}"),
            )),
        }
    }
}

async fn state_view(State(s): State<AppState>) -> Response {
    let lab = &s.lab;
    Json(json!({
        "model": lab.model_name,
        "manual": lab.model_name.is_none(),
        "busy": lab.is_busy(),
        "session_id": lab.host.session_id(),
        "tools": lab.tools().await,
        "eval": s.eval.is_some(),
    }))
    .into_response()
}

fn started(result: Result<u64, StartError>) -> Response {
    match result {
        Ok(turn) => (StatusCode::ACCEPTED, Json(json!({"turn": turn}))).into_response(),
        Err(StartError::Busy) => error(
            StatusCode::CONFLICT,
            "a turn is running: wait for it, or stop its call",
        ),
        Err(StartError::NoModel) => error(
            StatusCode::CONFLICT,
            "no model in this lab (--manual): run tools from the manual panel",
        ),
    }
}

async fn ask(State(s): State<AppState>, JsonObject(body): JsonObject) -> Response {
    match body["question"].as_str().map(str::trim) {
        Some(q) if !q.is_empty() => started(s.lab.ask(q.to_owned())),
        _ => error(
            StatusCode::BAD_REQUEST,
            "\"question\" must be a non-empty string",
        ),
    }
}

async fn propose(State(s): State<AppState>, JsonObject(body): JsonObject) -> Response {
    let Some(tool) = body["tool"].as_str().filter(|t| !t.is_empty()) else {
        return error(StatusCode::BAD_REQUEST, "\"tool\" must name a tool");
    };
    // The arguments go to the host exactly as typed: its own checks judge them.
    let arguments = match &body["arguments"] {
        Value::String(text) => text.clone(),
        Value::Null => "{}".into(),
        other => other.to_string(),
    };
    started(s.lab.propose(tool.to_owned(), arguments))
}

async fn stop(State(s): State<AppState>) -> Response {
    Json(json!({"stopped": s.lab.stop()})).into_response()
}

async fn answer(
    State(s): State<AppState>,
    Path(id): Path<String>,
    JsonObject(body): JsonObject,
) -> Response {
    let Ok(id) = id.parse::<u64>() else {
        return error(StatusCode::BAD_REQUEST, "the question id must be a number");
    };
    match s.lab.person.answer(id, &body) {
        Ok(said) => Json(json!({"ok": true, "answer": said})).into_response(),
        Err(AnswerError::NotWaiting(id)) => error(
            StatusCode::GONE,
            format!("question {id} is not waiting for an answer"),
        ),
        Err(AnswerError::Invalid { message, fields }) => (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": message, "fields": fields})),
        )
            .into_response(),
    }
}

async fn recordings(State(s): State<AppState>) -> Response {
    Json(json!({"recordings": s.lab.recordings.list()})).into_response()
}

async fn recording(State(s): State<AppState>, Path(turn): Path<String>) -> Response {
    let Ok(turn) = turn.parse::<u64>() else {
        return error(StatusCode::BAD_REQUEST, "the turn must be a number");
    };
    match s.lab.recordings.jsonl(turn) {
        Some(text) => (
            [(header::CONTENT_TYPE, "application/x-ndjson; charset=utf-8")],
            Body::from(text),
        )
            .into_response(),
        None => error(
            StatusCode::NOT_FOUND,
            format!("no recording of turn {turn}"),
        ),
    }
}

/// The eval's report, as `eval --json` prints it.
async fn eval_report(State(s): State<AppState>) -> Response {
    match &s.eval {
        Some(eval) => (
            [(header::CONTENT_TYPE, "application/json")],
            Body::from(eval.report.clone()),
        )
            .into_response(),
        None => error(
            StatusCode::NOT_FOUND,
            "no eval in this lab: start it with --eval DIR",
        ),
    }
}

/// One attempt's recording, by its stem: only a file of the eval's folder is ever read.
async fn eval_recording(State(s): State<AppState>, Path(stem): Path<String>) -> Response {
    let Some(eval) = &s.eval else {
        return error(StatusCode::NOT_FOUND, "no eval in this lab");
    };
    match eval.recording(&stem) {
        Ok(text) => (
            [(header::CONTENT_TYPE, "application/x-ndjson; charset=utf-8")],
            Body::from(text),
        )
            .into_response(),
        Err(why) => error(StatusCode::NOT_FOUND, why),
    }
}

/// Every event so far, then the live ones, until the lab shuts down.
async fn events(State(s): State<AppState>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let (log, live) = s.lab.hub.subscribe();
    let past = stream::iter(log).map(|e| Ok(Event::default().data(e.to_string())));
    let closing = s.closing.clone();
    let live = stream::unfold((live, closing), |(mut live, closing)| async move {
        let next = tokio::select! {
            next = live.recv() => next,
            _ = closing.cancelled() => return None,
        };
        let event = match next {
            Ok(e) => Event::default().data(e.to_string()),
            // The page fell behind: tell it to reload the whole log.
            Err(RecvError::Lagged(_)) => Event::default().event("lagged").data("{}"),
            Err(RecvError::Closed) => return None,
        };
        Some((Ok(event), (live, closing)))
    });
    Sse::new(past.chain(live)).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn the_guard_wants_token_host_and_origin() {
        let g = Guard {
            token: "abc".into(),
            port: 9,
        };
        let host = ("host", "127.0.0.1:9");
        assert!(g.check(&headers(&[host]), Some("token=abc")).is_ok());
        assert!(
            g.check(&headers(&[host, ("x-lab-token", "abc")]), None)
                .is_ok()
        );
        assert!(
            g.check(&headers(&[("host", "localhost:9")]), Some("a=1&token=abc"))
                .is_ok()
        );
        assert!(g.check(&headers(&[host]), None).is_err());
        assert!(g.check(&headers(&[host]), Some("token=abd")).is_err());
        assert!(g.check(&headers(&[host]), Some("token=ab")).is_err());
        assert!(
            g.check(&headers(&[("host", "evil.example:9")]), Some("token=abc"))
                .is_err()
        );
        assert!(g.check(&headers(&[]), Some("token=abc")).is_err());
        let ok_origin = ("origin", "http://127.0.0.1:9");
        assert!(
            g.check(&headers(&[host, ok_origin]), Some("token=abc"))
                .is_ok()
        );
        let bad_origin = ("origin", "http://evil.example");
        assert!(
            g.check(&headers(&[host, bad_origin]), Some("token=abc"))
                .is_err()
        );
        assert!(
            g.check(&headers(&[host, ("origin", "null")]), Some("token=abc"))
                .is_err()
        );
    }
}
