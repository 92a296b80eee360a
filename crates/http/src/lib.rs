//! Any reference server over Streamable HTTP, at [`MCP_PATH`]: `gatehouse serve NAME
//! --http 127.0.0.1:PORT --tokens FILE`.
//!
//! rmcp's `StreamableHttpService` speaks the protocol: clients on 2026-07-28 are served
//! statelessly, one POST per request, with `MCP-Protocol-Version`, `Mcp-Method` and
//! `Mcp-Name` checked against the body (400, -32020); older clients get a session after
//! `initialize` (`Mcp-Session-Id`, rmcp's `LocalSessionManager` inside our
//! [`sessions::BoundedSessions`]), so servers can still send them requests such as
//! `elicitation/create`. rmcp also checks `Host` (loopback names by default) and `Origin`
//! (this server's own loopback origins by default) against DNS rebinding, with 403.
//!
//! Around it, layers of ours:
//!
//! - **connections** ([`connections`]): our own accept loop serves at most
//!   `--max-connections` at once and closes a connection that keeps the server waiting
//!   (idle, headers too slow, answer unread); at the bound the longest-waiting connection
//!   makes room, so slow or idle sockets never starve other clients.
//! - **who is calling**: the bearer token is looked up in the tokens file
//!   ([`tokens`]), or with `--oauth-issuer` checked as the issuer's access token
//!   ([`oauth`]: protected-resource metadata served beside the endpoint, 401 and 403
//!   challenges naming it and the scopes a request needs); a missing or unknown token gets
//!   401 with `WWW-Authenticate`. The
//!   token's caller is put in the HTTP request's extensions, which rmcp hands to the
//!   handler inside `http::request::Parts`, where [`Caller::of_request`] finds it. A legacy
//!   session belongs to the caller that opened it; another token cannot use it.
//! - **sessions** ([`sessions`]): an `initialize` opens a session only within
//!   `--max-sessions-per-caller` (429 past it) and `--max-sessions` (503), never pushing
//!   out a live one, and on the servers that check membership only for a member (403,
//!   -32003); a session unused for `--session-idle` ends and gives its place back.
//! - **the body**: an authenticated POST's body is read here, whole, within
//!   `--body-timeout` (408 after) and [`MAX_REQUEST_BODY_BYTES`] (413 beyond, whether it
//!   declares its length or comes chunked), before rmcp parses it.
//! - **how long, and shutting down**: a POST may take [`REQUEST_TIMEOUT`], answer
//!   included; SIGTERM or Ctrl-C stops accepting connections, lets the POSTs in flight
//!   finish for up to [`SHUTDOWN_DRAIN`] (a second signal cuts that short), then closes
//!   what is left (sessions' notification streams) and returns.
#![warn(missing_docs)]
#![warn(clippy::too_many_lines)]

pub mod answers;
pub mod args;
mod body;
pub mod caller;
pub mod connections;
mod door;
mod drain;
pub mod log;
pub mod members;
pub mod oauth;
mod options;
mod refusal;
mod serve;
pub mod sessions;
pub mod shared;
pub mod task_route;
pub mod tokens;

use std::time::Duration;

pub use caller::Caller;
pub use members::Members;
pub use options::{Auth, HttpLimits, HttpOptions, SessionAccess};
pub use serve::{serve, serve_sharing, serve_with};

/// The prologue every HTML page Gatehouse serves opens with (the gateway's approval page,
/// the lab): one doctype, charset and viewport for all.
pub const HTML_HEAD: &str = include_str!("../assets/head.html");
/// Where the MCP endpoint is served.
pub const MCP_PATH: &str = "/mcp";
/// The largest request body accepted (413 beyond it). MCP requests are small; tool
/// arguments that need more are better sent as resources.
pub const MAX_REQUEST_BODY_BYTES: usize = 1024 * 1024;
/// The deepest nesting of arrays and objects a request body may have (400 beyond it):
/// below serde_json's own limit of 128, so whatever passes here rmcp can parse.
pub const MAX_JSON_DEPTH: usize = 100;
/// The longest one POST may take, its streamed answer included: room for long calls that
/// report progress (the testbed's longest `sleep` is 600 s). When it runs out the answer
/// stream ends and the call is cancelled.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(11 * 60);
/// On SIGTERM or Ctrl-C, how long the requests in flight get to finish before they are cut.
pub const SHUTDOWN_DRAIN: Duration = Duration::from_secs(30);
/// After the drain, how long the remaining connections get to close.
pub const SHUTDOWN_CLOSE: Duration = Duration::from_secs(2);
/// The realm named in `WWW-Authenticate`.
pub const AUTH_REALM: &str = "gatehouse";
/// The JSON-RPC error code of a refused `initialize` when a session bound is reached (429
/// for the caller's, 503 for the server's); `data.reason` says which.
pub const SESSION_LIMIT_CODE: i32 = -32004;
/// The session header of the legacy (handshake) revisions.
pub const SESSION_HEADER: &str = "mcp-session-id";
