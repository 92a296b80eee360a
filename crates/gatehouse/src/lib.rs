//! Gatehouse, an MCP host. The modules follow one request:
//!
//! - [`config`]: the servers file and the host's settings (allow-list, bounds).
//! - [`connect`]: one client per server, on the revision both speak.
//! - [`catalog`]: discovery, namespacing, and the tools as the model sees them.
//! - [`model`]: what proposes ([`model::Decision`]): scripted, playback, OpenAI-compatible.
//! - [`policy`]: where a proposal is refused, run, or put to the person.
//! - [`schema`]: arguments and structured results checked against a tool's schemas.
//! - [`person`]: approvals and answers to servers' questions; always the person.
//! - [`dispatch`]: the call, with its time limit and `input_required` rounds.
//! - [`result`]: what goes back into the model's context, bounded.
//! - [`turn`]: the loop that ties them together.
//! - [`trace`]: the steps of a run, for people and scripts.
//! - [`files`]: files written for the person, private and never overwritten.
//! - [`redact`]: the host's secrets kept out of what is shown, recorded or sent to the model.
//! - [`text`]: a peer's text made safe to show, and cut by characters.

pub mod catalog;
pub mod config;
pub mod connect;
pub mod dispatch;
pub mod files;
pub mod model;
pub mod person;
pub mod policy;
pub mod redact;
pub mod result;
pub mod schema;
pub mod text;
pub mod trace;
pub mod turn;
