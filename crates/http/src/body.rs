//! A POST's body, read here whole within its time and size bounds and checked to be JSON
//! before rmcp parses it; what the door needs of the message (id, method, tool) peeked.

use std::time::Duration;

use axum::{
    body::{Body, Bytes, HttpBody},
    extract::Request,
    http::Method,
    response::Response,
};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{MAX_JSON_DEPTH, MAX_REQUEST_BODY_BYTES, log, refusal::Refusal, task_route};

/// A POST with its body read whole (within `limit` of `started`, at most
/// [`MAX_REQUEST_BODY_BYTES`]), checked to be JSON, and the message's id and method; other
/// methods as they are (rmcp reads no body for them).
pub(crate) async fn read_post(
    request: Request,
    started: tokio::time::Instant,
    limit: Duration,
) -> Result<(Request, Option<Peek>), Response> {
    if request.method() != Method::POST {
        return Ok((request, None));
    }
    let (parts, body) = request.into_parts();
    let bytes = read_body(body, started + limit).await.map_err(|refusal| {
        body_refused_log(refusal);
        Response::from(match refusal {
            BodyRefusal::TooLarge => Refusal::TooLarge,
            BodyRefusal::TooSlow => Refusal::TooSlow(limit),
            BodyRefusal::Broken => Refusal::BrokenBody,
        })
    })?;
    if nests_deeper_than(&bytes, MAX_JSON_DEPTH) {
        return Err(not_json(format!(
            "the body nests deeper than {MAX_JSON_DEPTH} levels"
        )));
    }
    // The whole text is parsed (whatever is not the id or the method only checked), so
    // that malformed JSON is answered here; a message of another shape is rmcp's to judge.
    let message = match serde_json::from_slice::<Peek>(&bytes) {
        Ok(mut message) => {
            message.body = bytes.clone();
            Some(message)
        }
        Err(e) if e.is_data() => None,
        Err(e) => return Err(not_json(e.to_string())),
    };
    let mut parts = parts;
    if let Some(m) = &message {
        task_route::fill_in(&mut parts.headers, m.method.as_deref(), m.params.as_ref());
    }
    Ok((Request::from_parts(parts, Body::from(bytes)), message))
}

/// What the HTTP layer reads of a JSON-RPC message: its id, its method, and its params
/// (the name in them is a tool call's tool, for the scopes it needs; [`task_route`] reads
/// the rest).
#[derive(Deserialize)]
pub(crate) struct Peek {
    #[serde(default)]
    pub(crate) id: Option<Value>,
    #[serde(default)]
    pub(crate) method: Option<String>,
    #[serde(default)]
    pub(crate) params: Option<Value>,
    /// Present in an answer to a server's request.
    #[serde(default)]
    pub(crate) result: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(crate) error: Option<serde::de::IgnoredAny>,
    /// The whole body, as read.
    #[serde(skip)]
    pub(crate) body: Bytes,
}

impl Peek {
    /// If the message answers a server's request: the id it answers, as JSON.
    pub(crate) fn answers(&self) -> Option<String> {
        let answer = self.method.is_none() && (self.result.is_some() || self.error.is_some());
        answer.then(|| self.id.as_ref().map(Value::to_string))?
    }
}

/// Whether JSON text opens more than `max` arrays or objects inside one another. One pass
/// over the bytes, nothing allocated; brackets inside strings do not count. Malformed text
/// is left to the parser.
fn nests_deeper_than(text: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in text {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Why a body was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyRefusal {
    /// More than [`MAX_REQUEST_BODY_BYTES`], declared or not.
    TooLarge,
    /// Not all there by the deadline.
    TooSlow,
    /// The client broke it off or sent it malformed (a bad chunk, a short body).
    Broken,
}

/// Read a whole body, chunk by chunk, never holding more than [`MAX_REQUEST_BODY_BYTES`].
async fn read_body(body: Body, deadline: tokio::time::Instant) -> Result<Bytes, BodyRefusal> {
    let hint = usize::try_from(body.size_hint().lower()).unwrap_or(usize::MAX);
    let mut collected = Vec::with_capacity(hint.min(MAX_REQUEST_BODY_BYTES));
    let mut chunks = body.into_data_stream();
    loop {
        let next = tokio::time::timeout_at(deadline, chunks.next())
            .await
            .map_err(|_| BodyRefusal::TooSlow)?;
        match next {
            None => return Ok(Bytes::from(collected)),
            Some(Err(_)) => return Err(BodyRefusal::Broken),
            Some(Ok(chunk)) => {
                if chunk.len() > MAX_REQUEST_BODY_BYTES - collected.len() {
                    return Err(BodyRefusal::TooLarge);
                }
                collected.extend_from_slice(&chunk);
            }
        }
    }
}

fn body_refused_log(refusal: BodyRefusal) {
    log::line(json!({
        "ts": log::timestamp(), "event": "http_body_refused",
        "reason": match refusal {
            BodyRefusal::TooLarge => "too_large",
            BodyRefusal::TooSlow => "too_slow",
            BodyRefusal::Broken => "broken",
        },
    }));
}

/// 400 with JSON-RPC's parse error, for a body that is not JSON at all or nests too deep:
/// a clearer answer than rmcp's 415, and nothing of the body is kept.
fn not_json(why: String) -> Response {
    Refusal::NotJson(why).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_counted_outside_strings_only() {
        assert!(!nests_deeper_than(br#"{"a":[1,{"b":[]}]}"#, 4));
        assert!(nests_deeper_than(br#"{"a":[1,{"b":[]}]}"#, 3));
        assert!(!nests_deeper_than(br#"{"a":"[[[[{{{{\"[[["}"#, 1));
        let deep = "[".repeat(100_000);
        assert!(nests_deeper_than(deep.as_bytes(), MAX_JSON_DEPTH));
        let fits = format!(
            "{}{}",
            "[".repeat(MAX_JSON_DEPTH),
            "]".repeat(MAX_JSON_DEPTH)
        );
        assert!(!nests_deeper_than(fits.as_bytes(), MAX_JSON_DEPTH));
        // What passes is what serde_json (and so rmcp) can parse.
        assert!(serde_json::from_str::<serde_json::Value>(&fits).is_ok());
    }

    #[test]
    fn an_answer_to_a_servers_request_is_told_from_requests_and_notifications() {
        let peek = |text: &str| serde_json::from_str::<Peek>(text).unwrap().answers();
        assert_eq!(
            peek(r#"{"jsonrpc":"2.0","id":"ab","result":{}}"#).as_deref(),
            Some("\"ab\"")
        );
        assert_eq!(
            peek(r#"{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"}}"#).as_deref(),
            Some("7")
        );
        assert_eq!(
            peek(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#),
            None
        );
        assert_eq!(
            peek(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            None
        );
        assert_eq!(peek(r#"{"jsonrpc":"2.0","result":{}}"#), None, "no id");
        assert_eq!(
            peek(r#"{"jsonrpc":"2.0","id":7}"#),
            None,
            "neither result nor error"
        );
    }
}
