//! Every answer the HTTP face gives in place of the server's, and how each looks on the
//! wire: one enum, its status, headers and body made in one place (`IntoResponse for
//! Refusal`). Logging why is the caller's; this is only the answer.
//!
//! | variant             | status | body and headers                                        |
//! |---------------------|--------|---------------------------------------------------------|
//! | `Unauthorized`      | 401    | `WWW-Authenticate: Bearer realm=…[, error=…]`; close    |
//! | `OAuthUnauthorized` | 401    | the resource server's challenge; `Connection: close`    |
//! | `InsufficientScope` | 403    | its challenge, naming every scope the request needs     |
//! | `TooLarge`          | 413    | `Connection: close` (the rest of the body is not read)  |
//! | `TooSlow`           | 408    | `Connection: close`                                     |
//! | `BrokenBody`        | 400    | `Connection: close`                                     |
//! | `NotJson`           | 400    | JSON-RPC -32700                                         |
//! | `NoSuchSession`     | 404    | the same for an unknown session and another's; close    |
//! | `JsonRpc`           | its own | a JSON-RPC error answering the request (`initialize`)  |
//! | `StoreUnavailable`  | 503    | the shared session store did not answer                 |
//! | `AnswerTooLarge`, `TooManyAnswers` | 413, 429 | an answer carried between replicas   |
//! | `TimedOut`          | 504    | the request ran past `REQUEST_TIMEOUT`                  |
//!
//! A refusal given before the request's body is read (the door checks the token and the
//! session first, and reads nothing for a caller it turns away) closes the connection and
//! says so: the unread body leaves the connection unusable, and a client that kept it for
//! its next request (the metadata a 401 points to) got "server disconnected" or no answer.

use std::time::Duration;

use axum::{
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde_json::{Value, json};

use crate::{AUTH_REALM, MAX_REQUEST_BODY_BYTES, REQUEST_TIMEOUT};

/// Why the face answers instead of the server.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// No bearer token, or one this server does not know; `error` is the challenge's
    /// (none when the request carried no credentials at all, RFC 6750 §3.1).
    Unauthorized { error: Option<&'static str> },
    /// Under `--oauth-issuer`: no valid access token; `challenge` names the metadata.
    OAuthUnauthorized { challenge: String },
    /// The access token lacks a scope the request needs.
    InsufficientScope {
        /// What is missing, for the body.
        description: String,
        /// The challenge naming every scope needed.
        challenge: String,
    },
    /// A body beyond [`MAX_REQUEST_BODY_BYTES`], declared or read.
    TooLarge,
    /// A body not all there within its limit.
    TooSlow(Duration),
    /// A body broken off or malformed (a bad chunk, a short body).
    BrokenBody,
    /// A body that is not JSON, or nests too deep.
    NotJson(String),
    /// A session this server does not hold, or not for this caller.
    NoSuchSession,
    /// A JSON-RPC error answering request `id`, with its HTTP status.
    JsonRpc {
        status: StatusCode,
        id: Value,
        code: i32,
        message: String,
        data: Option<Value>,
    },
    /// The shared session store did not answer.
    StoreUnavailable,
    /// An answer carried between replicas beyond its bound (`limit` bytes).
    AnswerTooLarge { limit: usize },
    /// Too many answers of one session waiting already (`limit`).
    TooManyAnswers { limit: usize },
    /// The request ran past [`REQUEST_TIMEOUT`].
    TimedOut,
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::Unauthorized { error } => {
                let challenge = match error {
                    Some(e) => format!("Bearer realm=\"{AUTH_REALM}\", error=\"{e}\""),
                    None => format!("Bearer realm=\"{AUTH_REALM}\""),
                };
                closed(challenged(
                    StatusCode::UNAUTHORIZED,
                    "Unauthorized: send Authorization: Bearer <token>".into(),
                    &challenge,
                ))
            }
            Refusal::OAuthUnauthorized { challenge } => closed(challenged(
                StatusCode::UNAUTHORIZED,
                "Unauthorized: send Authorization: Bearer <access token>".into(),
                &challenge,
            )),
            Refusal::InsufficientScope {
                description,
                challenge,
            } => challenged(
                StatusCode::FORBIDDEN,
                format!("Forbidden: {description}"),
                &challenge,
            ),
            Refusal::TooLarge => closing(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("Payload Too Large: request body exceeds {MAX_REQUEST_BODY_BYTES} bytes"),
            ),
            Refusal::TooSlow(limit) => closing(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "Request Timeout: the request body took longer than {} s",
                    limit.as_secs()
                ),
            ),
            Refusal::BrokenBody => closing(
                StatusCode::BAD_REQUEST,
                "Bad Request: the request body could not be read".into(),
            ),
            Refusal::NotJson(why) => jsonrpc(
                StatusCode::BAD_REQUEST,
                &Value::Null,
                -32700,
                &format!("Parse error: {why}"),
                None,
            ),
            Refusal::NoSuchSession => {
                closed(plain(StatusCode::NOT_FOUND, "Not Found: Session not found"))
            }
            Refusal::JsonRpc {
                status,
                id,
                code,
                message,
                data,
            } => jsonrpc(status, &id, code, &message, data),
            Refusal::StoreUnavailable => plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "Service Unavailable: the session store did not answer; try again",
            ),
            Refusal::AnswerTooLarge { limit } => plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "Payload Too Large: an answer carried between replicas is at most {limit} bytes"
                ),
            ),
            Refusal::TooManyAnswers { limit } => plain(
                StatusCode::TOO_MANY_REQUESTS,
                format!("Too Many Requests: {limit} answers of this session are waiting already"),
            ),
            Refusal::TimedOut => plain(
                StatusCode::GATEWAY_TIMEOUT,
                format!(
                    "the request took longer than {} s and was stopped",
                    REQUEST_TIMEOUT.as_secs()
                ),
            ),
        }
    }
}

impl From<Refusal> for Response {
    fn from(refusal: Refusal) -> Response {
        refusal.into_response()
    }
}

/// A refusal in plain text.
fn plain(status: StatusCode, body: impl Into<String>) -> Response {
    (status, body.into()).into_response()
}

/// A refusal with its `WWW-Authenticate` challenge.
fn challenged(status: StatusCode, body: String, challenge: &str) -> Response {
    let mut response = (status, body).into_response();
    if let Ok(value) = HeaderValue::from_str(challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// A refusal after which the connection closes: the rest of the body is not read.
fn closing(status: StatusCode, body: String) -> Response {
    closed((status, body).into_response())
}

/// `response`, saying that the connection closes after it.
fn closed(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// An HTTP error whose body is a JSON-RPC error answering request `id`.
fn jsonrpc(
    status: StatusCode,
    id: &Value,
    code: i32,
    message: &str,
    data: Option<Value>,
) -> Response {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_has_its_status_and_the_body_bounds_close_the_connection() {
        let status = |r: Refusal| r.into_response().status();
        assert_eq!(status(Refusal::Unauthorized { error: None }), 401);
        assert_eq!(status(Refusal::NoSuchSession), 404);
        assert_eq!(status(Refusal::StoreUnavailable), 503);
        assert_eq!(status(Refusal::TimedOut), 504);
        // Each given before the body is read, or while reading it: the connection closes.
        for r in [
            Refusal::TooLarge,
            Refusal::TooSlow(Duration::from_secs(3)),
            Refusal::BrokenBody,
            Refusal::Unauthorized { error: None },
            Refusal::OAuthUnauthorized {
                challenge: "Bearer".into(),
            },
            Refusal::NoSuchSession,
        ] {
            let response = r.into_response();
            assert_eq!(response.headers()[header::CONNECTION], "close");
        }
        let challenged = Refusal::Unauthorized {
            error: Some("invalid_token"),
        }
        .into_response();
        assert_eq!(
            challenged.headers()[header::WWW_AUTHENTICATE],
            format!("Bearer realm=\"{AUTH_REALM}\", error=\"invalid_token\"").as_str()
        );
        // A challenge that cannot be a header value is left out, never a panic.
        let odd = Refusal::OAuthUnauthorized {
            challenge: "bad\nvalue".into(),
        }
        .into_response();
        assert!(odd.headers().get(header::WWW_AUTHENTICATE).is_none());
    }
}
