//! Foreign MCP servers under the Gatehouse host, one suite over both transports: the npm
//! reference servers (`server-everything`, `server-filesystem`, `server-memory` 2026.8.31,
//! TS SDK 1.32.2, revisions up to 2025-11-25) and two servers on the official Python SDK
//! 2.3.0 (`tests/peers/py_confirm_server.py` on 2026-07-28 with `input_required`, stateless
//! over HTTP, and `tests/peers/py_legacy_only_server.py`, which speaks 2025-11-25 only and
//! keeps sessions over HTTP).
//!
//! Each case is one body, run over stdio (the host starts the server) and over Streamable
//! HTTP (the server runs on 127.0.0.1 with a port the system picked, and is killed when its
//! test ends), as the case list below says. A body writes a servers file, starts the real
//! `gatehouse` binary with a playback model, and reads its `--json` run, its stderr, its
//! `--record` file and, where the server's view matters, the wire tap's log
//! (`tests/peers/stdio_tap.py`, `tests/peers/http_tap.py`). The peers come from
//! `scripts/install-test-peers.sh`; a missing one fails the test and names the command.
//! See docs/interop.md.
//!
//! - `everything.rs`: server-everything (what it offers, content, forms);
//! - `cancellation.rs`: its long operation (progress, time limits, Ctrl-C);
//! - `python_sdk.rs`: the two Python SDK servers, under the host and under rmcp's client;
//! - `files_and_memory.rs`: server-filesystem and server-memory, which speak stdio only.

mod cancellation;
mod everything;
mod files_and_memory;
mod python_sdk;

use std::path::Path;

use serde_json::{Value, json};

use crate::common::{
    Ran, ask_args, http_server, playback, process::Process, run_bounded, servers_file, stdio_server,
};
use crate::interop_peers::*;

pub use crate::common::texts;

cases! {
    everything::every_foreign_server_is_listed_by_one_host_with_the_revision_it_speaks: stdio, http;
    everything::server_everything_images_links_embedded_resources_structured_and_annotated_results: stdio, http;
    cancellation::server_everything_long_operation_shows_progress_and_a_short_limit_cancels_it: stdio, http;
    cancellation::progress_of_a_cancelled_call_is_not_counted_for_the_next_one: stdio, http;
    cancellation::ctrl_c_stops_server_everythings_long_operation_and_the_turn_goes_on: stdio, http;
    cancellation::ctrl_c_on_the_turns_last_call_still_tells_the_server: stdio, http;
    everything::server_everythings_form_is_answered_by_answer_options_and_declined_by_default: stdio, http;
    everything::a_form_from_an_older_server_is_shown_like_an_input_required_one: stdio, http;
    everything::form_answers_are_checked_against_the_whole_field_schema: stdio, http;
    python_sdk::a_python_sdk_server_asks_through_input_required_and_the_person_answers: stdio, http;
    python_sdk::declining_a_python_sdk_servers_form_opens_nothing: stdio, http;
    async python_sdk::the_python_sdk_refuses_its_sealed_state_replayed_with_other_arguments: stdio, http;
    async python_sdk::rmcp_alone_gives_up_on_a_server_that_lists_only_2025_11_25: stdio, http;
    python_sdk::the_host_connects_to_a_python_server_that_lists_only_2025_11_25_through_initialize: stdio, http;
    python_sdk::the_fallback_initialize_offers_2025_11_25: stdio, http;
    // server-filesystem and server-memory have no HTTP mode: stdio only.
    files_and_memory::server_filesystem_writes_with_the_persons_yes_reads_back_and_lists: stdio;
    files_and_memory::server_memory_keeps_entities_and_relations_and_finds_them: stdio;
}

// ------------------------------------------------------------------------------------
// The servers, over either transport
// ------------------------------------------------------------------------------------

/// The foreign servers that speak both transports.
#[derive(Clone, Copy, Debug)]
pub enum Peer {
    /// server-everything: `stdio`, or `streamableHttp` (sessions).
    Everything,
    /// `py_confirm_server.py`: 2026-07-28, stateless over HTTP.
    Confirm,
    /// `py_legacy_only_server.py`: 2025-11-25 only, sessions over HTTP.
    Legacy,
}

/// The tools every server-everything test may run without asking.
const EVERYTHING_ALLOWED: &[&str] = &[
    "everything__get-tiny-image",
    "everything__get-resource-links",
    "everything__get-resource-reference",
    "everything__get-structured-content",
    "everything__get-annotated-message",
    "everything__trigger-long-running-operation",
    "everything__get-sum",
];

impl Peer {
    /// Its name in the servers file.
    pub fn key(self) -> &'static str {
        match self {
            Peer::Everything => "everything",
            Peer::Confirm => "confirm",
            Peer::Legacy => "legacy",
        }
    }

    /// The host settings of a servers file with it alone: what may run without asking
    /// (and where binary blocks are saved, in `dir`).
    fn settings(self, dir: &Path) -> Value {
        match self {
            Peer::Everything => json!({"allow": EVERYTHING_ALLOWED, "saveDir": dir.join("saved")}),
            Peer::Confirm => json!({"allow": ["confirm__list_tickets"]}),
            Peer::Legacy => json!({"allow": ["legacy__add", "legacy__whoami"]}),
        }
    }

    /// The command that serves it on stdio.
    fn stdio_command(self) -> Vec<String> {
        match self {
            Peer::Everything => vec![node(), npm_server("everything"), "stdio".into()],
            Peer::Confirm => vec![python(), script("py_confirm_server.py")],
            Peer::Legacy => vec![python(), script("py_legacy_only_server.py")],
        }
    }

    /// The process that serves it on Streamable HTTP.
    fn http_process(self) -> Process {
        match self {
            Peer::Everything => everything_http(),
            Peer::Confirm => python_http("py_confirm_server.py"),
            Peer::Legacy => python_http("py_legacy_only_server.py"),
        }
    }
}

/// A foreign server as one test reaches it: the servers-file entry (stdio: the command
/// the host starts; HTTP: the URL), and over HTTP the processes, killed when dropped.
pub struct Served {
    pub entry: Value,
    transport: Transport,
    // Dropped in this order: the tap, then the server.
    _tap: Option<Process>,
    server: Option<Process>,
}

/// `peer` over `transport`, behind the wire tap (which logs to `log`) if there is one.
pub fn serve(peer: Peer, transport: Transport, log: Option<&Path>) -> Served {
    let (entry, tap, server) = match transport {
        Transport::Stdio => {
            let command = peer.stdio_command();
            let command: Vec<&str> = command.iter().map(String::as_str).collect();
            let argv = match log {
                Some(log) => stdio_tap(log, &command),
                None => command.iter().map(|s| s.to_string()).collect(),
            };
            let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
            (stdio_server(&argv[0], &args), None, None)
        }
        Transport::Http => {
            let server = peer.http_process();
            let tap = log.map(|log| http_tap(&server.url, log));
            let url = tap.as_ref().unwrap_or(&server).url.clone();
            (http_server(&url, json!({})), tap, Some(server))
        }
    };
    Served {
        entry,
        transport,
        _tap: tap,
        server,
    }
}

impl Served {
    /// The JSON lines the server logged on stderr: over stdio as the host relayed them in
    /// `ran` (it runs the server as `key`), over HTTP as the process wrote them.
    pub fn records(&self, ran: &Ran, key: &str) -> Vec<Value> {
        match (&self.server, self.transport) {
            (Some(server), Transport::Http) => server.records(),
            _ => ran.server_records(key),
        }
    }

    /// A credential for the server from the host's environment variable `var`, which must
    /// never be shown: over HTTP an `Authorization` header, over stdio a variable of the
    /// server's environment.
    pub fn with_secret(mut self, var: &str) -> Served {
        match self.transport {
            Transport::Http => {
                self.entry["headers"] = json!({"Authorization": format!("Bearer ${{{var}}}")})
            }
            Transport::Stdio => self.entry["env"] = json!({var: format!("${{{var}}}")}),
        }
        self
    }
}

/// One test's world: a folder (the servers file, the record, the tap's log) and one
/// foreign server over one transport, in the servers file as [`Peer::key`] with the
/// settings its tests use.
pub struct World {
    pub peer: Peer,
    // Dropped in this order: the server's processes, then the folder.
    pub served: Served,
    pub dir: tempfile::TempDir,
}

impl World {
    pub fn new(peer: Peer, t: Transport) -> World {
        let dir = tempfile::tempdir().unwrap();
        let served = serve(peer, t, None);
        World { peer, served, dir }
    }

    /// The same, with the server behind the wire tap.
    pub fn tapped(peer: Peer, t: Transport) -> World {
        let dir = tempfile::tempdir().unwrap();
        let served = serve(peer, t, Some(&dir.path().join("tap.log")));
        World { peer, served, dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The servers file.
    pub fn config(&self) -> String {
        servers_file(
            self.path(),
            json!({self.peer.key(): self.served.entry}),
            self.peer.settings(self.path()),
        )
    }

    /// An `ask` run of the host with the servers file ([`ask`]).
    pub fn ask(&self, decisions: Value, extra: &[&str], env: &[(&str, &str)]) -> Ran {
        ask(self.path(), &self.config(), decisions, extra, env)
    }

    /// The record of the last run, between the host and the server.
    pub fn wire(&self) -> Vec<(String, Value)> {
        wire(self.path(), self.peer.key())
    }

    /// The tap's log so far (of a world made with [`World::tapped`]).
    pub fn tap(&self) -> Vec<(String, Value)> {
        tapped(&self.path().join("tap.log"))
    }

    /// The server's log records, as of `ran` ([`Served::records`]).
    pub fn records(&self, ran: &Ran) -> Vec<Value> {
        self.served.records(ran, self.peer.key())
    }
}

// ------------------------------------------------------------------------------------
// Runs and what they show
// ------------------------------------------------------------------------------------

/// `gatehouse ask x --config FILE --model playback:… --json --record FILE ARGS…`, which
/// must succeed.
pub fn ask(
    dir: &Path,
    config: &str,
    decisions: Value,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Ran {
    let model = playback(dir, decisions);
    let record = dir.join("record.jsonl");
    let _ = std::fs::remove_file(&record);
    let record = record.to_string_lossy().into_owned();
    let mut more = vec!["--record", &record];
    more.extend_from_slice(extra);
    let ran = run_bounded(&ask_args(config, &model, &more), env);
    assert_eq!(ran.status, 0, "gatehouse failed:\n{}", ran.stderr);
    ran
}

/// The data of the "discovered … on SERVER" step, which says the server agreed on
/// `protocol` and calls itself `name`.
pub fn discovered(ran: &Ran, server: &str, protocol: &str, name: &str) -> Value {
    let found = ran
        .steps()
        .into_iter()
        .find(|s| {
            let t = s["text"].as_str().unwrap();
            t.starts_with("discovered ") && t.contains(&format!(" on {server}: "))
        })
        .unwrap_or_else(|| panic!("no discovery of {server}: {:?}", ran.step_texts()))["data"]
        .clone();
    assert_eq!(found["protocol"], protocol, "{found}");
    assert_eq!(found["server"], name, "{found}");
    found
}

/// The content blocks of a tool result of one `type` (`resource_link`, `image`, …).
pub fn blocks<'a>(result: &'a Value, kind: &str) -> Vec<&'a Value> {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == kind)
        .collect()
}

/// The messages of the `--record` file between the host and one server, as the host
/// handled them: (`to_server` or `from_server`, message).
pub fn wire(dir: &Path, server: &str) -> Vec<(String, Value)> {
    json_lines(&dir.join("record.jsonl"))
        .into_iter()
        .filter(|l| l["server"] == server && l["kind"] != "stderr")
        .map(|l| {
            (
                l["direction"].as_str().unwrap().to_owned(),
                l["message"].clone(),
            )
        })
        .collect()
}

/// The result the server sent for the host's `n`-th `tools/call` of `tool`.
pub fn tool_result(wire: &[(String, Value)], tool: &str, n: usize) -> Value {
    let id = wire
        .iter()
        .filter(|(d, m)| {
            d == "to_server" && m["method"] == "tools/call" && m["params"]["name"] == tool
        })
        .nth(n)
        .unwrap_or_else(|| panic!("no tools/call of {tool}"))
        .1["id"]
        .clone();
    wire.iter()
        .find(|(d, m)| d == "from_server" && m["id"] == id && m.get("method").is_none())
        .unwrap_or_else(|| panic!("no answer to the tools/call of {tool}"))
        .1["result"]
        .clone()
}

/// The first message of a tap log the client sent.
pub fn first_request(tap: &[(String, Value)]) -> Value {
    tap.iter()
        .find(|(d, _)| d == ">>")
        .expect("the client sent a message")
        .1
        .clone()
}

/// The first message of a tap log the client sent with `method`.
pub fn sent(tap: &[(String, Value)], method: &str) -> Value {
    tap.iter()
        .find(|(d, m)| d == ">>" && m["method"] == method)
        .unwrap_or_else(|| panic!("no {method} was sent: {tap:#?}"))
        .1
        .clone()
}
