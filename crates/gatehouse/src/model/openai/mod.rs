//! A real model behind any OpenAI-compatible `POST {base}/chat/completions` endpoint:
//! vLLM, llama.cpp, Ollama, LM Studio, or a hosted provider.
//!
//! The model only proposes: its tool calls come back as [`Decision`]s with the raw
//! arguments text, which the host checks like any other proposal. What the endpoint sends
//! is peer input: every odd shape becomes a [`ModelError`] with a plain reason, never a
//! panic. Busy or failing endpoints (429, 5xx, broken connections) are retried with
//! bounded backoff; the API key is sent only as a bearer header and never shown.

use std::{
    collections::HashSet,
    time::{Duration, Instant},
};

use futures::future::BoxFuture;
use reqwest::{StatusCode, Url, header};
use serde_json::{Value, json};

use super::{Decided, Decision, Message, Model, ModelError};
use crate::catalog::ToolSpec;

mod wire;

/// Where requests go when `OPENAI_BASE_URL` is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// Environment variable naming the endpoint, e.g. `http://127.0.0.1:8000/v1`.
pub const BASE_URL_ENV: &str = "OPENAI_BASE_URL";
/// Environment variable holding the API key; local servers usually need none.
pub const API_KEY_ENV: &str = "OPENAI_API_KEY";
/// Most requests for one decision, the first included, so a failing endpoint ends the turn.
pub const MAX_MODEL_ATTEMPTS: u32 = 4;
/// Longest the retries of one decision may go on: no retry starts after it, and waits
/// (including a server's `Retry-After`) are cut to what is left of it.
pub const MODEL_RETRY_BUDGET: Duration = Duration::from_secs(60);
/// How long one request may take, answer included; big models on small GPUs are slow.
pub const MODEL_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// The first wait before a retry; each later wait doubles, up to [`MODEL_MAX_BACKOFF`].
pub const MODEL_FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// The longest wait between two attempts when the server does not say how long.
pub const MODEL_MAX_BACKOFF: Duration = Duration::from_secs(8);
/// How long the preflight `GET {base}/models` may take: it only proves the endpoint is there.
pub const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(10);

/// The answers to `GET {base}/models` that mean "no model list here", not "no endpoint":
/// some OpenAI-compatible servers and proxies serve chat completions only.
pub const NO_MODEL_LIST: [StatusCode; 3] = [
    StatusCode::NOT_FOUND,
    StatusCode::METHOD_NOT_ALLOWED,
    StatusCode::NOT_IMPLEMENTED,
];
/// Most bytes of a model list read (a hosted provider lists a few hundred models).
pub const MAX_MODEL_LIST_BYTES: usize = 1 << 20;

/// What an endpoint's `GET {base}/models` said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelList {
    /// The ids of the models it serves.
    Listed(Vec<String>),
    /// It answered, but not with a list the host can read.
    Unreadable,
    /// It has no model list (the HTTP status it answered with).
    NotOffered(u16),
}

/// Most characters of a server's own error text quoted in an error.
const MAX_QUOTED_CHARS: usize = 300;
/// The `finish_reason` values chat-completion servers send (absent or null is fine too).
pub(crate) const KNOWN_FINISH_REASONS: [&str; 5] = [
    "stop",
    "tool_calls",
    "length",
    "content_filter",
    "function_call",
];

/// The bounds of one model's requests, so tests and callers can shrink them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most requests for one decision ([`MAX_MODEL_ATTEMPTS`]); at least one is made.
    pub max_attempts: u32,
    /// Time after which no retry starts ([`MODEL_RETRY_BUDGET`]).
    pub retry_budget: Duration,
    /// Time limit of one chat-completions request ([`MODEL_REQUEST_TIMEOUT`]).
    pub request_timeout: Duration,
    /// First backoff wait ([`MODEL_FIRST_BACKOFF`]).
    pub first_backoff: Duration,
    /// Cap of the backoff wait ([`MODEL_MAX_BACKOFF`]).
    pub max_backoff: Duration,
    /// Time limit of the preflight request ([`PREFLIGHT_TIMEOUT`]).
    pub preflight_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_attempts: MAX_MODEL_ATTEMPTS,
            retry_budget: MODEL_RETRY_BUDGET,
            request_timeout: MODEL_REQUEST_TIMEOUT,
            first_backoff: MODEL_FIRST_BACKOFF,
            max_backoff: MODEL_MAX_BACKOFF,
            preflight_timeout: PREFLIGHT_TIMEOUT,
        }
    }
}

/// A model served by an OpenAI-compatible chat-completions endpoint (`--model openai:NAME`).
pub struct OpenAi {
    client: reqwest::Client,
    model: String,
    /// The base URL as given, without a trailing slash: requests go to `{base}/...`.
    base: String,
    /// The base URL as shown in messages: without any user name or password in it.
    shown_base: String,
    key: Option<String>,
    limits: Limits,
    /// Ids made up so far for tool calls that came without one (`call_N`).
    generated_ids: u64,
}

impl std::fmt::Debug for OpenAi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is a secret: say whether there is one, never what it is.
        f.debug_struct("OpenAi")
            .field("model", &self.model)
            .field("base", &self.shown_base)
            .field("key", &self.key.as_ref().map(|_| "(set)"))
            .field("limits", &self.limits)
            .finish()
    }
}

/// Why one attempt gave no decision: worth another attempt, or final.
enum Failure {
    Retry {
        what: String,
        retry_after: Option<Duration>,
    },
    Fatal(ModelError),
}

impl OpenAi {
    /// A model at an explicit endpoint and key (`None`: no `Authorization` header), as tests
    /// and embedders want it without touching the process environment.
    pub fn new(
        model: impl Into<String>,
        base_url: &str,
        api_key: Option<String>,
    ) -> Result<Self, ModelError> {
        let model = model.into();
        if model.trim().is_empty() {
            return Err(ModelError(
                "the model needs a name, as in openai:gpt-4o-mini".into(),
            ));
        }
        let base = base_url.trim().trim_end_matches('/').to_owned();
        let mut url = Url::parse(&base).map_err(|e| {
            ModelError(format!(
                "the model endpoint {base:?} is not a valid URL: {e}"
            ))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ModelError(format!(
                "the model endpoint {base:?} must start with http:// or https://"
            )));
        }
        let _ = url.set_password(None);
        let _ = url.set_username("");
        let shown_base = url.as_str().trim_end_matches('/').to_owned();
        let client = reqwest::Client::builder()
            .user_agent(concat!("gatehouse/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ModelError(format!("cannot set up the HTTP client: {e}")))?;
        Ok(OpenAi {
            client,
            model,
            base,
            shown_base,
            key: api_key.filter(|k| !k.trim().is_empty()),
            limits: Limits::default(),
            generated_ids: 0,
        })
    }

    /// The model `--model openai:NAME` means: endpoint from `OPENAI_BASE_URL` (default
    /// [`DEFAULT_BASE_URL`]), key from `OPENAI_API_KEY` (none when unset or empty).
    pub fn from_env(model: &str) -> Result<Self, ModelError> {
        Self::from_variables(model, &|name| std::env::var(name).ok())
    }

    /// [`OpenAi::from_env`], the two variables looked up with `variable`.
    pub fn from_variables(
        model: &str,
        variable: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ModelError> {
        let base = variable(BASE_URL_ENV)
            .filter(|b| !b.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_BASE_URL.into());
        let key = variable(API_KEY_ENV).map(|k| k.trim().to_owned());
        Self::new(model, &base, key)
    }

    /// The same model with other bounds (tests use milliseconds instead of seconds).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The bounds in force.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The endpoint as shown in messages (no credentials in it).
    pub fn base_url(&self) -> &str {
        &self.shown_base
    }

    /// What `GET {base}/models` says the endpoint serves. An endpoint without the list
    /// (404, 405 or 501, as some OpenAI-compatible servers and proxies answer) is there all
    /// the same; a refused key, another error status or no answer is an error.
    pub async fn served_models(&self) -> Result<ModelList, ModelError> {
        let limit = self.limits.preflight_timeout;
        let mut response = self
            .request(reqwest::Method::GET, "models")
            .timeout(limit)
            .send()
            .await
            .map_err(|e| ModelError(self.describe_send_error(&e, limit)))?;
        let status = response.status();
        if NO_MODEL_LIST.contains(&status) {
            return Ok(ModelList::NotOffered(status.as_u16()));
        }
        let mut body = Vec::new();
        while let Ok(Some(chunk)) = response.chunk().await {
            let room = MAX_MODEL_LIST_BYTES.saturating_sub(body.len());
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if room <= chunk.len() {
                break;
            }
        }
        let body = String::from_utf8_lossy(&body);
        if status.is_success() {
            return Ok(wire::model_ids(&body).map_or(ModelList::Unreadable, ModelList::Listed));
        }
        if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
            return Err(self.refusal(status, &body));
        }
        Err(ModelError(format!(
            "the model endpoint {} answered GET /models with {status}{}",
            self.shown_base,
            self.quoted(&wire::server_message(&body))
        )))
    }

    /// The model's name at the endpoint (`NAME` of `openai:NAME`).
    pub fn model(&self) -> &str {
        &self.model
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let builder = self
            .client
            .request(method, format!("{}/{path}", self.base))
            .header(header::ACCEPT, "application/json");
        match &self.key {
            Some(key) => builder.bearer_auth(key),
            None => builder,
        }
    }

    /// The chat-completions request for a conversation and the tools on offer, exactly as
    /// it would be sent (for inspection and tests).
    pub fn request_body(&self, messages: &[Message], tools: &[ToolSpec]) -> Value {
        let mut body = json!({
            "model": self.model,
            "messages": messages.iter().flat_map(wire::message_json).collect::<Vec<_>>(),
        });
        if !tools.is_empty() {
            body["tools"] = tools
                .iter()
                .map(|t| {
                    let mut function = json!({
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    });
                    if t.strict {
                        function["strict"] = json!(true);
                    }
                    json!({"type": "function", "function": function})
                })
                .collect();
            body["tool_choice"] = json!("auto");
        }
        body
    }

    /// One request and what came of it.
    async fn attempt(
        &mut self,
        body: &Value,
        ids_in_use: &HashSet<&str>,
    ) -> Result<Decision, Failure> {
        let sent = self
            .request(reqwest::Method::POST, "chat/completions")
            .timeout(self.limits.request_timeout)
            .json(body)
            .send()
            .await;
        let response = match sent {
            Ok(r) => r,
            // A request that cannot even be built (say, a key that is no valid header)
            // will not build the next time either.
            Err(e) if e.is_builder() => {
                return Err(Failure::Fatal(ModelError(format!(
                    "cannot make a request to the model endpoint {}: {}",
                    self.shown_base,
                    cause(&e)
                ))));
            }
            Err(e) => {
                return Err(Failure::Retry {
                    what: self.describe_send_error(&e, self.limits.request_timeout),
                    retry_after: None,
                });
            }
        };
        let status = response.status();
        let retry_after = retry_after(response.headers());
        let text = match response.text().await {
            Ok(t) => t,
            Err(e) => {
                let what = if e.is_timeout() {
                    self.describe_send_error(&e, self.limits.request_timeout)
                } else {
                    format!(
                        "the answer from the model endpoint {} broke off: {}",
                        self.shown_base,
                        cause(&e)
                    )
                };
                return Err(Failure::Retry {
                    what,
                    retry_after: None,
                });
            }
        };
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            return Err(Failure::Retry {
                what: format!(
                    "the model endpoint answered {status}{}",
                    self.quoted(&wire::server_message(&text))
                ),
                retry_after,
            });
        }
        if !status.is_success() {
            return Err(Failure::Fatal(self.refusal(status, &text)));
        }
        let value: Value = serde_json::from_str(&text).map_err(|_| {
            Failure::Fatal(ModelError(format!(
                "the model endpoint's answer is not JSON (is {} the API's base URL? it \
                 usually ends in /v1){}",
                self.shown_base,
                self.quoted(&text)
            )))
        })?;
        let mut next_id = self.generated_ids;
        let decision = wire::decision(&value, ids_in_use, &mut next_id, |t| self.quoted(t));
        self.generated_ids = next_id;
        decision.map_err(Failure::Fatal)
    }

    /// A 4xx other than 429: the request will not get better by sending it again.
    fn refusal(&self, status: StatusCode, body: &str) -> ModelError {
        let message = self.quoted(&wire::server_message(body));
        let code = status.as_u16();
        ModelError(match status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN if self.key.is_none() => format!(
                "the model endpoint wants a key ({code}), and {API_KEY_ENV} is not set{message}"
            ),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                format!("the model endpoint refused the key ({code}){message}")
            }
            _ => format!("the model endpoint refused the request ({status}){message}"),
        })
    }

    /// `: "text"` for a server's own words, clipped and with the key blanked out, or
    /// nothing when there are none.
    fn quoted(&self, text: &str) -> String {
        let mut text = text.trim().to_owned();
        if let Some(key) = self.key.as_deref().filter(|k| k.len() >= 4) {
            text = text.replace(key, "***");
        }
        if text.is_empty() {
            String::new()
        } else {
            format!(": {}", crate::text::clip(&text, MAX_QUOTED_CHARS))
        }
    }

    /// A request that got no HTTP answer, said plainly.
    fn describe_send_error(&self, e: &reqwest::Error, limit: Duration) -> String {
        let base = &self.shown_base;
        if e.is_timeout() {
            format!(
                "the model endpoint {base} gave no answer within {}",
                crate::text::seconds(limit)
            )
        } else if e.is_connect() {
            format!("cannot reach the model endpoint {base}: {}", cause(e))
        } else {
            format!(
                "the request to the model endpoint {base} failed: {}",
                cause(e)
            )
        }
    }
}

impl Model for OpenAi {
    fn name(&self) -> String {
        format!("openai:{}", self.model)
    }

    fn decide<'a>(&'a mut self, messages: &'a [Message], tools: &'a [ToolSpec]) -> Decided<'a> {
        Box::pin(async move {
            let body = self.request_body(messages, tools);
            let ids_in_use: HashSet<&str> = messages
                .iter()
                .flat_map(|m| match m {
                    Message::Assistant { tool_calls, .. } => {
                        tool_calls.iter().map(|c| c.id.as_str()).collect()
                    }
                    Message::Tool { call_id, .. } => vec![call_id.as_str()],
                    _ => vec![],
                })
                .collect();
            let limits = self.limits;
            let started = Instant::now();
            let mut backoff = limits.first_backoff;
            let mut attempts = 0;
            let (last, out_of_time) = loop {
                attempts += 1;
                let (what, retry_after) = match self.attempt(&body, &ids_in_use).await {
                    Ok(decision) => return Ok(decision),
                    Err(Failure::Fatal(e)) => return Err(e),
                    Err(Failure::Retry { what, retry_after }) => (what, retry_after),
                };
                if attempts >= limits.max_attempts.max(1) {
                    break (what, false);
                }
                let left = limits.retry_budget.saturating_sub(started.elapsed());
                if left.is_zero() {
                    break (what, true);
                }
                tokio::time::sleep(retry_after.unwrap_or(backoff).min(left)).await;
                backoff = backoff.saturating_mul(2).min(limits.max_backoff);
            };
            Err(ModelError(format!(
                "gave up after {attempts} attempt{}{}: {last}",
                if attempts == 1 { "" } else { "s" },
                if out_of_time {
                    format!(
                        " (the retry budget of {} is spent)",
                        crate::text::seconds(limits.retry_budget)
                    )
                } else {
                    String::new()
                }
            )))
        })
    }

    fn preflight<'a>(&'a mut self) -> BoxFuture<'a, Result<(), ModelError>> {
        // Answering at all shows the endpoint is there, list or no list.
        Box::pin(async move { self.served_models().await.map(|_| ()) })
    }
}

/// A `Retry-After` given in seconds; an HTTP date is ignored (the backoff applies).
fn retry_after(headers: &header::HeaderMap) -> Option<Duration> {
    let text = headers.get(header::RETRY_AFTER)?.to_str().ok()?.trim();
    let secs: f64 = text.parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

/// The root cause of a transport error, as short as a person would say it.
fn cause(e: &reqwest::Error) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    let mut innermost = None;
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            return match io.kind() {
                ConnectionRefused => "connection refused".into(),
                ConnectionReset => "connection reset".into(),
                ConnectionAborted => "connection aborted".into(),
                TimedOut => "timed out".into(),
                _ => io.to_string(),
            };
        }
        innermost = Some(s);
        source = s.source();
    }
    innermost.map_or_else(|| e.to_string(), ToString::to_string)
}
