//! The two subjects of the MCP conformance harness (`docs/conformance.md`):
//!
//! - [`fixture`]: the server surface the harness's server scenarios call by name, on
//!   Gatehouse's own server layer (an rmcp `ServerHandler`, served by
//!   `gatehouse_http`); binary `conformance-fixture`.
//! - `conformance-client` (binary): a client on the host library (`gatehouse::config`,
//!   `connect`, `dispatch`, `person`) that acts on `MCP_CONFORMANCE_SCENARIO`.
#![warn(missing_docs)]
#![warn(clippy::too_many_lines)]

pub mod fixture;
