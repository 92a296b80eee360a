//! Foreign MCP clients against the Gatehouse reference servers (`gatehouse serve
//! support|cmdb|tickets|orders`), one suite over both transports: the official Python SDK
//! 2.3.0 client (`tests/peers/py_mcp_client.py`, auto mode and legacy mode), the inspector's
//! CLI 1.0.3 (`initialize` only) and the inspector 2.12.0 `--cli` in its legacy, auto and
//! modern eras, and the FastMCP 4.1.4 client on the servers' tasks.
//!
//! Over stdio the client starts `gatehouse serve NAME` as `usr-sam` of `larkfield` (the
//! server's environment says who calls); over Streamable HTTP the server runs with
//! `--http 127.0.0.1:0 --tokens FILE` and the client sends Sam's bearer token. Either way
//! each server sits behind its wire tap (`tests/peers/stdio_tap.py`,
//! `tests/peers/http_tap.py`), so each test also says which revision was negotiated and
//! what the server logged, and over HTTP checks every exchange (the token, the revision's
//! header, the session). The tickets store is in a temporary folder; every process is
//! on 127.0.0.1 and is killed when its test ends.
//!
//! - `python_sdk.rs`: the Python SDK client;
//! - `inspectors.rs`: inspector-cli 1.0.3 and inspector 2.12.0;
//! - `fastmcp_tasks.rs`: the FastMCP 4.1.4 client with fastmcp-tasks 4.1.4
//!   (`tests/peers/fastmcp_tasks_client.py`) on the servers' tasks.
//!
//! The peers come from `scripts/install-test-peers.sh`; a missing one fails the test and
//! names the command. See docs/interop.md.

mod fastmcp_tasks;
mod inspectors;
pub mod python_sdk;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::{
    exe,
    process::Process,
    serve::{serve_http, tokens_file},
};
use crate::interop_peers::*;

cases! {
    python_sdk::the_python_sdk_client_in_auto_mode_lists_calls_and_reads_every_server_on_2026_07_28: stdio, http;
    python_sdk::the_python_sdk_client_in_legacy_mode_lists_calls_and_reads_every_server_on_2025_11_25: stdio, http;
    python_sdk::the_python_sdk_client_in_auto_mode_answers_open_tickets_input_required_form: stdio, http;
    python_sdk::the_python_sdk_client_in_legacy_mode_confirms_open_ticket_through_elicitation_create: stdio, http;
    // A bearer token is HTTP's: over stdio the server's environment says who calls.
    python_sdk::the_python_sdk_client_without_the_token_is_refused: http;
    inspectors::inspector_cli_1_0_3_lists_calls_and_reads_every_server_on_2025_11_25: stdio, http;
    inspectors::inspector_2_in_the_legacy_era_lists_calls_and_reads_every_server_on_2025_11_25: stdio, http;
    inspectors::inspector_2_in_the_auto_era_discovers_2026_07_28_and_lists_calls_and_reads_every_server: stdio, http;
    inspectors::inspector_2_in_the_modern_era_lists_calls_and_reads_every_server_on_2026_07_28: stdio, http;
    inspectors::each_inspector_gets_export_report_as_a_task_on_2026_07_28_and_as_a_call_on_2025_11_25: stdio, http;
    fastmcp_tasks::the_fastmcp_client_follows_export_report_as_a_task_to_its_result: stdio, http;
    fastmcp_tasks::the_fastmcp_client_answers_a_question_inside_a_task_and_cancels_a_task: stdio, http;
    fastmcp_tasks::another_callers_task_id_reads_as_unknown_to_the_fastmcp_client: stdio, http;
}

// ------------------------------------------------------------------------------------
// The reference servers of one test
// ------------------------------------------------------------------------------------

/// One reference server, behind its tap.
struct Served {
    name: String,
    log: PathBuf,
    // HTTP: dropped (killed) in this order: the tap, then the server.
    _tap: Option<Process>,
    server: Option<Process>,
}

/// The reference servers of one test over one transport, with a tickets store (and over
/// HTTP a tokens file) of their own.
pub struct Desk {
    pub transport: Transport,
    // Dropped in this order: the processes, then their folder.
    served: Vec<Served>,
    db: String,
    tasks_db: String,
    dir: tempfile::TempDir,
}

impl Desk {
    pub fn new(transport: Transport, names: &[&str]) -> Desk {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("tickets.db");
        let tokens = (transport == Transport::Http).then(|| tokens_file(dir.path()));
        let served = names
            .iter()
            .map(|name| {
                let log = dir.path().join(format!("{name}.tap"));
                let (tap, server) = match transport {
                    // The client starts the server (behind its tap) for each run.
                    Transport::Stdio => (None, None),
                    Transport::Http => {
                        let tokens = tokens.as_ref().expect("a tokens file");
                        let server = serve_http(name, tokens, &db);
                        (Some(http_tap(&server.url, &log)), Some(server))
                    }
                };
                Served {
                    name: name.to_string(),
                    log,
                    _tap: tap,
                    server,
                }
            })
            .collect();
        Desk {
            transport,
            served,
            db: db.to_string_lossy().into_owned(),
            tasks_db: db
                .with_file_name("server-tasks.db")
                .to_string_lossy()
                .into_owned(),
            dir,
        }
    }

    /// Every reference server.
    pub fn all(transport: Transport) -> Desk {
        Desk::new(transport, &SERVERS.iter().map(|s| s.0).collect::<Vec<_>>())
    }

    fn get(&self, name: &str) -> &Served {
        self.served
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("{name} is not served"))
    }

    /// Over stdio: the command a client starts, `gatehouse serve NAME` behind the tap.
    pub fn command(&self, name: &str) -> Vec<String> {
        let exe = exe().to_string_lossy().into_owned();
        stdio_tap(&self.get(name).log, &[&exe, "serve", name])
    }

    /// Over HTTP: the URL a client is given (the tap's).
    pub fn url(&self, name: &str) -> String {
        let tap = self.get(name)._tap.as_ref();
        tap.expect("the server is on HTTP").url.clone()
    }

    /// The environment a client passes to a stdio server: Sam is asking, the tickets
    /// store and the task store. None over HTTP, where the token says who is asking.
    pub fn vars(&self) -> Vec<(&str, &str)> {
        self.vars_as(Caller::Sam)
    }

    /// [`Desk::vars`] with `caller` asking.
    pub fn vars_as(&self, caller: Caller) -> Vec<(&str, &str)> {
        let (user, tenant) = caller.who();
        match self.transport {
            Transport::Stdio => vec![
                ("MCP_USER", user),
                ("MCP_TENANT", tenant),
                ("GATEHOUSE_TICKETS_DB", &self.db),
                ("GATEHOUSE_SERVER_TASKS_DB", &self.tasks_db),
            ],
            Transport::Http => vec![],
        }
    }

    /// The tap's log of `name` so far; `.len()` marks where the next run starts.
    pub fn tap(&self, name: &str) -> Vec<(String, Value)> {
        tapped(&self.get(name).log)
    }

    /// The JSON lines `name` logged on stderr so far: over stdio as the tap relayed them,
    /// over HTTP as the process wrote them.
    pub fn records(&self, name: &str) -> Vec<Value> {
        match &self.get(name).server {
            Some(server) => server.records(),
            None => tapped_stderr(&self.tap(name)),
        }
    }

    /// The server's `mcp.request` records so far.
    pub fn requests(&self, name: &str) -> Vec<Value> {
        self.records(name)
            .into_iter()
            .filter(|r| r["operation"] == "mcp.request")
            .collect()
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Who a client run calls as: Sam of Larkfield (every test's caller), another user of
/// Larkfield, or Sam acting in another organization.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    Sam,
    Omar,
    SamInBramble,
}

impl Caller {
    /// The user and the organization, as a stdio server's environment names them.
    pub fn who(self) -> (&'static str, &'static str) {
        match self {
            Caller::Sam => ("usr-sam", "larkfield"),
            Caller::Omar => ("usr-omar", "larkfield"),
            Caller::SamInBramble => ("usr-sam", "bramble"),
        }
    }

    /// The `Authorization` header with this caller's token.
    pub fn bearer(self) -> String {
        use crate::common::serve::{OMAR_TOKEN, SAM_IN_BRAMBLE_TOKEN, SAM_TOKEN};
        let token = match self {
            Caller::Sam => SAM_TOKEN,
            Caller::Omar => OMAR_TOKEN,
            Caller::SamInBramble => SAM_IN_BRAMBLE_TOKEN,
        };
        format!("Authorization: Bearer {token}")
    }
}

/// The `Authorization` header with Sam's token.
pub fn bearer() -> String {
    Caller::Sam.bearer()
}

/// Over HTTP, every exchange of a run carried the bearer token, the revision's header,
/// and (on 2026-07-28) no session; or (on 2025-11-25) the session `initialize` opened.
/// Over stdio there are no exchanges to check.
pub fn assert_exchanges(t: Transport, run: &[(String, Value)], protocol: &str, what: &str) {
    if t == Transport::Stdio {
        return;
    }
    let exchanges = http_exchanges(run);
    assert!(!exchanges.is_empty(), "{what}: no exchange");
    for e in &exchanges {
        assert_eq!(e["authorization"], true, "{what}: {e}");
        assert!(e["status"].as_u64().is_some_and(|s| s < 300), "{what}: {e}");
    }
    if protocol == "2026-07-28" {
        for e in &exchanges {
            assert_eq!(
                e["headers"]["mcp-protocol-version"], protocol,
                "{what}: {e}"
            );
            assert!(
                e["session"].is_null(),
                "{what}: a session on 2026-07-28: {e}"
            );
            assert!(e["headers"].get("mcp-session-id").is_none(), "{what}: {e}");
        }
    } else {
        let session = exchanges[0]["session"].clone();
        assert!(session.is_string(), "{what}: initialize opened no session");
        for e in &exchanges[1..] {
            assert_eq!(e["headers"]["mcp-session-id"], session, "{what}: {e}");
            assert_eq!(
                e["headers"]["mcp-protocol-version"], protocol,
                "{what}: {e}"
            );
        }
    }
}

// ------------------------------------------------------------------------------------
// What every client is asked to do
// ------------------------------------------------------------------------------------

/// Every reference server, with the tools it must list.
pub const SERVERS: &[(&str, &str, &[&str])] = &[
    (
        "support",
        "support-mcp",
        &["search_knowledge", "get_ticket"],
    ),
    ("cmdb", "cmdb", &["get_asset", "find_assets"]),
    ("tickets", "tickets", &["open_ticket", "list_tickets"]),
    ("orders", "orders", &["get_order_status", "export_report"]),
];

pub const POLICY: &str = "policy://larkfield/refunds-and-payments";

/// One ordinary call per server, and what its structured result must hold.
pub fn sample_call(server: &str) -> (&'static str, Value, &'static str, Value) {
    match server {
        "support" => (
            "search_knowledge",
            json!({"query": "charged twice", "limit": 2}),
            "/results/0/uri",
            json!(POLICY),
        ),
        "cmdb" => (
            "get_asset",
            json!({"hostname": "jump-prod-02"}),
            "/owner_name",
            json!("Camille Michel"),
        ),
        "tickets" => ("list_tickets", json!({}), "/total", json!(0)),
        "orders" => (
            "get_order_status",
            json!({"order_id": "A-1002"}),
            "/eta",
            json!("2026-10-18"),
        ),
        other => panic!("no sample call for {other}"),
    }
}

pub fn open_ticket_args() -> Value {
    json!({"host": "jump-prod-02", "summary": "brute force then a login from 203.0.113.77"})
}

pub fn tool_names(tools: &Value) -> Vec<String> {
    tools
        .as_array()
        .unwrap_or_else(|| panic!("not a tool list: {tools}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

pub fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}
