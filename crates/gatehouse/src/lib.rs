//! Gatehouse, an MCP host: the application that starts MCP servers, offers their tools to
//! a model, and turns the model's proposals into calls, or refuses them. The modules
//! follow one request:
//!
//! - [`config`]: the servers file and the host's settings (allow-list, bounds);
//! - [`connect`]: one client per server, on the revision both speak;
//! - [`catalog`]: discovery, namespacing, filters, tool search, and the tools as the
//!   model sees them;
//! - [`dialect`]: tool schemas in the JSON Schema each model provider accepts;
//! - [`model`]: what proposes ([`model::Decision`]): scripted, playback, OpenAI-compatible;
//! - [`flow`]: where the context and so each argument came from, and how far it is
//!   trusted;
//! - [`policy`]: where a proposal is refused, run, or put to the person;
//! - [`rules`]: the person's rules over tools and their arguments, as written;
//! - [`approvals`]: approvals remembered for the session and the project;
//! - [`schema`]: arguments and structured results checked against a tool's schemas;
//! - [`gate`]: one proposal's whole decision: policy, hook, person, ledger; [`caller`]:
//!   who proposes, when not the host's model;
//! - [`ledger`]: every decision, hash-chained, written before the call is sent;
//! - [`hooks`]: the person's commands before and after a call;
//! - [`person`]: approvals and answers to servers' questions; always the person;
//! - [`dispatch`]: the request, with its time limit, the person's Stop and the
//!   `input_required` rounds;
//! - [`result`]: what goes back into the model's context, bounded;
//! - [`turn`]: one question, from the model's first proposal to its answer;
//! - [`host`]: the session: the connections, the catalog, start and shutdown;
//! - [`tasks`]: calls that go on as tasks after their turn: the records, the report at the
//!   next turn, `gatehouse tasks`;
//! - [`trace`]: the steps of a run, for people and scripts;
//! - [`telemetry`]: the spans of each MCP request, for a team's OpenTelemetry collector.
//!
//! Beside them: [`text`] (a peer's text made safe to show), [`redact`] (the host's secrets
//! kept out of what is shown, recorded or sent), [`files`] (files written for the person),
//! [`digest`] (SHA-256 of arguments and definitions), and for the command line: [`probe`]
//! (a quick look at every server, without a model) and [`edit`] (servers added to and
//! removed from a servers file).
#![warn(missing_docs)]
// No function over 80 lines (the threshold is in the workspace's clippy.toml); CI's
// clippy run with -D warnings keeps it so. `tests/shape.rs` keeps the files short and the
// modules without an import cycle.
#![warn(clippy::too_many_lines)]

pub mod approvals;
pub mod caller;
pub mod catalog;
pub mod config;
pub mod connect;
pub mod dialect;
pub mod dispatch;
pub mod eval;
pub mod flow;
pub mod gate;
pub mod hooks;
pub mod host;
pub mod ledger;
pub mod model;
pub mod person;
pub mod policy;
pub mod probe;
pub mod result;
pub mod rules;
pub mod schema;
pub mod tasks;
pub mod telemetry;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod trace;
pub mod turn;

pub mod digest;
pub mod edit;
pub mod files;
pub mod redact;
pub mod text;
