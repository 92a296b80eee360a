//! What the gateway refuses or fails with outside a tool's own answer, and how each reaches
//! the client: one enum, mapped to JSON-RPC's codes and messages in one place (its
//! `From<Error> for ErrorData`). A call's own end that the model should read (refused,
//! timed out, failed) is a tool error instead, made in `answer.rs`.
//!
//! | variant              | code   | when                                                  |
//! |----------------------|--------|-------------------------------------------------------|
//! | `Invalid`            | -32602 | the client's request is malformed or too large        |
//! | `NoSuchTask`         | -32602 | no task of this caller's has the id (any reason)      |
//! | `StaleState`         | -32602 | a `requestState` that does not open for this call     |
//! | `NoSuchResource`     | -32002 | no server offers the URI                              |
//! | `Store`              | -32603 | the shared store cannot be reached (a `StoreError`)   |
//! | `TimedOut`, `Gone`, `Failed` | -32603 | a server behind did not answer            |
//! | `Server`             | its own | a server's JSON-RPC error, passed on made visible    |

use std::time::Duration;

use gatehouse::text;

use crate::store::StoreError;
use rmcp::ErrorData;
use serde_json::json;

/// Most characters of a server's error message passed on to the caller.
pub const MAX_RELAYED_ERROR_CHARS: usize = 1_000;
/// Most characters of a URI named in an error.
const MAX_URI_CHARS: usize = 1_000;

/// Why the gateway answers a request with a JSON-RPC error.
#[derive(Debug)]
pub enum Error {
    /// The client's request is malformed or asks too much; the text says what.
    Invalid(String),
    /// No task of this caller's has the id: the same whether it never existed, expired,
    /// or is another caller's.
    NoSuchTask,
    /// A `requestState` that does not open for this call (expired, altered, another
    /// call's, or sealed under a key this gateway no longer uses).
    StaleState,
    /// No server offers the resource at this URI.
    NoSuchResource(String),
    /// The shared store cannot be reached for `what` (a task's record, a session's state).
    Store {
        /// What could not be reached, in words.
        what: &'static str,
        /// Why.
        cause: StoreError,
    },
    /// The server did not answer within the limit.
    TimedOut {
        /// The server, by its name in the servers file.
        server: String,
        /// The limit.
        after: Duration,
    },
    /// The server is no longer connected.
    Gone(String),
    /// The server's answer never came, for the reason given (shown made visible).
    Failed(String),
    /// The server's own JSON-RPC error.
    Server(ErrorData),
}

impl From<Error> for ErrorData {
    fn from(error: Error) -> ErrorData {
        match error {
            Error::Invalid(why) => ErrorData::invalid_params(why, None),
            Error::NoSuchTask => ErrorData::invalid_params(
                "unknown task: no task of yours has this id (it may have expired)",
                None,
            ),
            Error::StaleState => ErrorData::invalid_params(
                "the requestState is not valid for this call (expired, altered, another \
                 call's, or sealed under a key this gateway no longer uses): call the tool again",
                Some(json!({"reason": "invalid_request_state"})),
            ),
            Error::NoSuchResource(uri) => ErrorData::resource_not_found(
                "resource not found",
                Some(json!({"uri": text::clip(&uri, MAX_URI_CHARS)})),
            ),
            Error::Store { what, cause } => {
                ErrorData::internal_error(format!("{what} cannot be reached: {cause}"), None)
            }
            Error::TimedOut { server, after } => ErrorData::internal_error(
                format!("{server} did not answer within {}", text::seconds(after)),
                None,
            ),
            Error::Gone(server) => {
                ErrorData::internal_error(format!("{server} is no longer connected"), None)
            }
            Error::Failed(why) => ErrorData::internal_error(
                text::clip(&text::visible(&why), MAX_RELAYED_ERROR_CHARS).into_owned(),
                None,
            ),
            Error::Server(e) => visible(e),
        }
    }
}

/// A server's JSON-RPC error as the client reads it: its code kept, its message made
/// visible and clipped, its data only when small.
fn visible(mut e: ErrorData) -> ErrorData {
    let shown = text::clip(&text::visible(&e.message), MAX_RELAYED_ERROR_CHARS).into_owned();
    e.message = shown.into();
    if e.data
        .as_ref()
        .is_some_and(|d| d.to_string().len() > MAX_RELAYED_ERROR_CHARS)
    {
        e.data = None;
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ErrorCode;

    #[test]
    fn each_refusal_has_its_code() {
        let code = |e: Error| ErrorData::from(e).code;
        assert_eq!(code(Error::Invalid("x".into())), ErrorCode::INVALID_PARAMS);
        assert_eq!(code(Error::NoSuchTask), ErrorCode::INVALID_PARAMS);
        assert_eq!(code(Error::StaleState), ErrorCode::INVALID_PARAMS);
        assert_eq!(
            code(Error::NoSuchResource("file:///x".into())),
            ErrorCode::RESOURCE_NOT_FOUND
        );
        assert_eq!(code(Error::Gone("cmdb".into())), ErrorCode::INTERNAL_ERROR);
        let own = ErrorData::new(ErrorCode(-32042), "slow down", None);
        assert_eq!(code(Error::Server(own)), ErrorCode(-32042));
    }

    #[test]
    fn a_servers_text_reaches_the_client_visible_and_clipped() {
        let hostile = format!("\u{1b}[31mred{}", "x".repeat(5_000));
        let e = ErrorData::from(Error::Server(ErrorData::internal_error(
            hostile.clone(),
            Some(json!({"big": "y".repeat(5_000)})),
        )));
        assert!(!e.message.contains('\u{1b}'), "{}", e.message);
        assert!(e.message.chars().count() <= MAX_RELAYED_ERROR_CHARS + 1);
        assert!(e.data.is_none(), "large data is dropped");
        let failed = ErrorData::from(Error::Failed(hostile));
        assert!(!failed.message.contains('\u{1b}'));
        let uri = ErrorData::from(Error::NoSuchResource("u".repeat(5_000)));
        let shown = uri.data.unwrap()["uri"].as_str().unwrap().chars().count();
        assert!(shown <= MAX_URI_CHARS + 1, "{shown}");
    }
}
