//! Gatehouse end to end: the real `gatehouse` binary, the real server processes, and the
//! foreign peers, one module per subject.
//!
//! One test binary rather than one per file: each would link the whole host, the servers
//! and rmcp again (seventeen links, about 600 MB of a fresh build). Run one subject with
//! `cargo test -p gatehouse-cli --test end_to_end -- SUBJECT::`, for example
//! `-- interop_foreign_servers::`.

mod common;
mod fake_model;
mod interop_peers;

mod approvals_remembered;
mod call_command;
mod calls_that_go_wrong;
mod claude_code;
mod completions;
mod configs_people_have;
mod conformance;
mod doctor;
mod evals;
mod execution;
mod first_minutes;
mod flows;
mod fuzz_proposals;
mod gateway;
mod gateway_connect;
mod hooks;
mod host_chains;
mod host_decisions;
mod host_secrets;
mod hostile_input;
mod hostile_servers;
mod http_abuse;
mod http_host;
mod http_servers;
mod interop_fastmcp_tasks;
mod interop_foreign_clients;
mod interop_foreign_servers;
mod lab_browser;
mod lab_http;
mod ledger;
mod long_waits;
mod many_servers;
mod mcp_command;
mod no_terminal;
mod oauth;
mod openai_endpoint;
mod package_runners;
mod policy_rules;
mod project_trust;
mod results_past_the_bound;
mod sandbox;
mod schema_dialects;
mod screens;
mod support_desk;
mod tasks;
mod tickets_confirmation;
mod tool_filters;
mod tool_search;
mod uvx_servers;
