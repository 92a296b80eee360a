//! `gatehouse gateway` in front of the reference servers (cmdb, tickets), driven by a
//! real foreign client, the official Python SDK 2.3.0 (`tests/peers/py_mcp_client.py`),
//! over stdio (the client starts the gateway, as the local user) and Streamable HTTP (a
//! bearer token says who calls), in auto mode (2026-07-28: `input_required`) and legacy
//! mode (2025-11-25: `elicitation/create`). The servers file's rules hide
//! `cmdb__find_assets`, ask before `cmdb__get_asset` and allow `tickets__*`; behind
//! the gateway each server runs with its own credentials from that file.
//!
//! - `python_sdk.rs`: the catalog, the person's approval through their client, a
//!   server's own question relayed;
//! - `questions.rs`: the questions no round carries (an older server's
//!   `elicitation/create`, a task's) asked of an older client inside its call, and an
//!   older server's of a 2026-07-28 client in its next round, the call held on one
//!   replica (behind nginx, a replica killed);
//! - `inspector.rs`: the inspector 2 `--cli`, a client without forms;
//! - `ts_sdk.rs`: the TypeScript SDK client (`tests/peers/ts_mcp_client.cjs`), the
//!   catalog and the approval form;
//! - `robust.rs`: one bad server does not hurt the rest (restarts, a slow server, the
//!   list marked the same for every caller);
//! - `replicas.rs`: two gateways sharing one state store and one ledger, directly and
//!   behind nginx, in SQLite and in a real PostgreSQL (`common/postgres.rs`);
//! - `database.rs`: the PostgreSQL store going away and coming back;
//! - `database_tls.rs`: the PostgreSQL store over TLS (`sslmode`, `sslrootcert`);
//! - `headers.rs`: SEP-2243 `Mcp-Param-*` headers checked in front and sent behind;
//! - `sessions.rs`: older clients' sessions shared by two replicas behind nginx's round
//!   robin (the Python and TypeScript SDK clients), their approvals answered on the
//!   other replica, other callers refused, DELETE, a replica killed;
//! - `oauth.rs`: `--oauth-issuer` in front (the host signing in through oidc-provider,
//!   the refusals, the approval state bound to the OAuth caller), and the client's token
//!   never reaching the server behind;
//! - `operations.rs`: `/healthz`, `/readyz` and `/metrics`, without a token; SIGTERM's
//!   drain; a store's schema version, checked at start and changed by `gateway migrate`;
//! - `page.rs`: the approval page, for a client that takes only URL questions (the
//!   Python SDK client declaring `elicitation.url` alone, `tests/peers/py_url_client.py`),
//!   in real headless Chromium (`tests/browser/gateway_page.mjs`), and across replicas;
//! - `page_oauth.rs`: the approval page signing people in through the authorization
//!   server under `--oauth-issuer`, and its refusals;
//! - `hostile_client.rs`: a hostile client (red team 3's probes): states forged, replayed
//!   or bent to other arguments, the store and key files' modes;
//! - `flows.rs`: arguments traced to what the gateway relayed to their caller (issue
//!   30), the rule of two and a `from` deny where the caller's own words are unseen;
//! - `who_approves.rs`: a client answering its own form (`by: client`, nothing
//!   remembered), and `"via": "page"`.

mod database;
mod database_tls;
mod flows;
mod headers;
mod hostile_client;
mod inspector;
mod oauth;
mod operations;
mod page;
mod page_oauth;
mod python_sdk;
mod questions;
mod replicas;
mod robust;
mod sessions;
mod tasks;
mod telemetry;
mod ts_sdk;
mod who_approves;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::{
    exe, gatehouse_command,
    ports::Taken,
    postgres::{Cluster, certificates},
    process::{LIMIT, Process, Spawn, Stream},
    serve::tokens_file,
    write,
};
use crate::interop_foreign_clients::bearer;
use crate::interop_peers::*;

cases! {
    python_sdk::lists_the_catalog_less_what_a_deny_rule_hides: stdio, http;
    python_sdk::the_person_approves_in_the_gateways_form_on_2026_07_28: stdio, http;
    python_sdk::the_person_approves_through_elicitation_create_on_2025_11_25: stdio, http;
    python_sdk::a_servers_own_question_reaches_the_client_and_its_answer_the_server: stdio, http;
    inspector::the_inspector_lists_the_catalog_and_is_refused_where_it_cannot_show_the_form: stdio, http;
    ts_sdk::the_typescript_sdk_client_lists_the_catalog_and_answers_the_approval_form: stdio, http;
    questions::an_older_servers_question_reaches_an_older_client_inside_its_call: stdio, http;
    questions::a_tasks_question_reaches_an_older_client_inside_its_call: stdio, http;
    questions::an_older_servers_question_reaches_a_2026_client_in_its_next_round: stdio, http;
    questions::behind_nginx_a_held_calls_answer_lands_on_the_other_replica: sqlite, postgres;
    async questions::a_held_call_answers_only_its_caller_once_and_a_dead_holder_is_said: sqlite, postgres;
    async replicas::a_confirmation_begun_on_one_replica_finishes_on_the_other_and_only_once: sqlite, postgres, postgres_tls;
    replicas::behind_nginx_the_python_clients_two_rounds_land_on_two_replicas: sqlite, postgres;
    async replicas::a_replica_killed_in_the_middle_of_calls_loses_no_acknowledged_decision_and_doubles_none: sqlite, postgres;
    async replicas::calls_made_at_once_on_two_replicas_are_each_decided_once_in_one_chain: sqlite, postgres;
    async replicas::an_approval_remembered_on_one_replica_holds_at_once_on_the_other: sqlite, postgres;
    async replicas::a_confirmation_sent_many_times_at_once_runs_once: sqlite, postgres;
    page::a_url_only_client_is_sent_to_the_page_and_the_person_approves_in_chromium: auto, legacy;
    page::the_person_denies_on_the_page_and_hostile_arguments_stay_text: auto;
    page::an_answer_to_the_url_question_approves_nothing_by_itself: auto;
    page::without_a_page_a_url_only_client_is_refused_and_told_why: auto;
    async page::a_decision_on_one_replicas_page_lets_round_two_run_on_the_other: sqlite, postgres;
    tasks::the_fastmcp_client_follows_answers_and_cancels_gateway_tasks: http;
    async tasks::a_task_started_on_one_replica_is_read_answered_and_finished_on_the_other: sqlite, postgres;
    async tasks::behind_nginx_a_task_outlives_the_replica_that_started_it: sqlite, postgres;
    page_oauth::an_oauth_user_approves_on_the_page_the_call_their_url_only_client_made: sqlite, postgres;
    async sessions::an_older_clients_session_is_served_by_both_replicas_behind_round_robin: sqlite, postgres;
    sessions::the_session_goes_on_when_the_replica_that_opened_it_is_killed: sqlite, postgres;
    sessions::the_typescript_sdk_clients_session_is_served_by_both_replicas: sqlite;
    async sessions::an_older_sessions_log_level_set_on_one_replica_holds_on_the_other: sqlite, postgres;
    async operations::a_store_of_a_newer_version_is_refused_and_one_made_before_versions_is_taken_up: sqlite, postgres;
}

/// The call the rules ask about, and its arguments.
pub const ASKED: &str = "cmdb__get_asset";
/// The tool a deny rule hides.
pub const HIDDEN: &str = "cmdb__find_assets";

pub fn asked_args() -> Value {
    json!({"hostname": "jump-prod-02"})
}

/// One gateway's world: its servers file, state store, ledger, tickets store and tokens,
/// in a folder of its own; over HTTP the gateway itself, started once.
pub struct Gw {
    pub config: String,
    pub state: PathBuf,
    pub ledger: PathBuf,
    // Dropped before its folder.
    server: Option<Process>,
    dir: tempfile::TempDir,
}

impl Gw {
    pub fn new(transport: Transport) -> Gw {
        Gw::with_config(transport, gateway_config)
    }

    /// A gateway on the servers file `config` writes in its folder.
    pub fn with_config(transport: Transport, config: impl FnOnce(&Path) -> String) -> Gw {
        let dir = tempfile::tempdir().unwrap();
        let config = config(dir.path());
        let state = dir.path().join("state.db");
        let server = (transport == Transport::Http)
            .then(|| start_gateway(dir.path(), &config, state.to_str().unwrap()));
        Gw {
            config,
            state,
            ledger: dir.path().join("ledger.jsonl"),
            server,
            dir,
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Run the Python client in `mode` with these arguments (`--call`, `--answer`, …)
    /// against the gateway: what it printed.
    pub fn client(&self, mode: &str, args: &[&str]) -> Value {
        let argv = vec![script("py_mcp_client.py"), "--mode".into(), mode.into()];
        self.run_client(&python(), argv, args)
    }

    /// Run the TypeScript SDK client (2025-11-25) with these arguments against the
    /// gateway: what it printed.
    pub fn ts_client(&self, args: &[&str]) -> Value {
        self.run_client(&node(), vec![ts_client()], args)
    }

    /// Run `program` with `argv`, these arguments, and the way to reach the gateway (the
    /// command that starts it on stdio, or its URL and a bearer token).
    fn run_client(&self, program: &str, mut argv: Vec<String>, args: &[&str]) -> Value {
        argv.extend(args.iter().map(|a| a.to_string()));
        let state = self.state.to_string_lossy().into_owned();
        match &self.server {
            None => {
                argv.push("--".into());
                let exe = exe().to_string_lossy().into_owned();
                argv.extend([
                    exe,
                    "gateway".into(),
                    "--config".into(),
                    self.config.clone(),
                ]);
                argv.extend(["--state".into(), state]);
            }
            Some(server) => {
                argv.extend(["--header".into(), bearer()]);
                argv.extend(["--url".into(), server.url.clone()]);
            }
        }
        peer_client(program, &argv, self.path())
    }

    /// Over HTTP, the gateway itself (its log).
    pub fn gateway(&self) -> Option<&Process> {
        self.server.as_ref()
    }

    /// Over HTTP, the gateway's URL.
    pub fn url(&self) -> Option<String> {
        self.server.as_ref().map(|s| s.url.clone())
    }

    /// The ledger's lines.
    pub fn ledger(&self) -> Vec<Value> {
        ledger_lines(&self.ledger)
    }
}

/// The arguments of `client` (a client script) calling [`ASKED`] with [`asked_args`] and
/// answering the form yes, then `extra`, through `url` as Sam.
pub fn approving(client: String, extra: &[&str], url: &str) -> Vec<String> {
    let args = asked_args().to_string();
    let mut argv = vec![client];
    argv.extend(["--call", ASKED, "--args", &args].map(String::from));
    argv.extend(extra.iter().map(|s| s.to_string()));
    let answer = ["--answer", "approve=true", "--header"].map(String::from);
    argv.extend(answer);
    argv.extend([bearer(), "--url".into(), url.into()]);
    argv
}

/// The Python client with `argv`, the local user `usr-sam` of `larkfield` in its
/// environment (over stdio the gateway it starts is theirs): what it printed.
pub fn py_client(argv: &[String], dir: &Path) -> Value {
    peer_client(&python(), argv, dir)
}

/// A client `program` with `argv`, as [`py_client`] runs the Python one.
fn peer_client(program: &str, argv: &[String], dir: &Path) -> Value {
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let state_home = dir.join("xdg-state");
    let env = [
        ("MCP_USER", "usr-sam"),
        ("MCP_TENANT", "larkfield"),
        ("XDG_STATE_HOME", state_home.to_str().unwrap()),
        ("XDG_CONFIG_HOME", state_home.to_str().unwrap()),
    ];
    let ran = run_peer(program, &argv, &env, None);
    serde_json::from_str(&ran.stdout).unwrap_or_else(|e| {
        panic!(
            "the client {program} printed no JSON ({e}):\n{}\n{}",
            ran.stdout, ran.stderr
        )
    })
}

/// A reference server behind the gateway, `gatehouse serve NAME`, with its own
/// credentials (Sam's, at Larkfield) and the tickets store of the folder `dir`.
pub fn reference_server(dir: &Path, name: &str) -> Value {
    json!({"command": exe(), "args": ["serve", name],
           "env": {"MCP_USER": "usr-sam", "MCP_TENANT": "larkfield",
                   "GATEHOUSE_TICKETS_DB": dir.join("tickets.db")}})
}

/// The servers file of the gateway: cmdb and tickets, each started with its own
/// credentials, and the rules.
pub fn gateway_config(dir: &Path) -> String {
    let server = |name: &str| reference_server(dir, name);
    write(
        dir,
        "servers.json",
        &json!({
            "mcpServers": {"cmdb": server("cmdb"), "tickets": server("tickets")},
            "gatehouse": {
                "rules": [
                    {"tool": HIDDEN, "decision": "deny"},
                    {"tool": ASKED, "decision": "ask", "reason": "asset records are private"},
                    {"tool": "tickets__*", "decision": "allow"}
                ],
                "ledger": {"path": dir.join("ledger.jsonl"), "arguments": true}
            }
        }),
    )
}

/// A gateway over HTTP in `dir` in front of `servers` (an `mcpServers` object), every
/// tool allowed, the ledger in `dir/ledger.jsonl`, the state in `dir/state.db`.
pub fn allowing_gateway(dir: &Path, servers: Value) -> Process {
    let config = write(
        dir,
        "servers.json",
        &json!({
            "mcpServers": servers,
            "gatehouse": {"rules": [{"tool": "*", "decision": "allow"}],
                          "ledger": {"path": dir.join("ledger.jsonl")}}
        }),
    );
    start_gateway(dir, &config, dir.join("state.db").to_str().unwrap())
}

/// `gatehouse gateway --http 127.0.0.1:0 --tokens FILE` on `config`, with `--state
/// state` (a file or a URL); its stderr kept.
pub fn start_gateway(dir: &Path, config: &str, state: &str) -> Process {
    start_gateway_on(dir, config, state, "127.0.0.1:0", &[])
}

/// As [`start_gateway`], listening on `addr`, with `extra` flags.
pub fn start_gateway_on(
    dir: &Path,
    config: &str,
    state: &str,
    addr: &str,
    extra: &[&str],
) -> Process {
    try_start_gateway_on(dir, config, state, addr, extra)
        .unwrap_or_else(|Taken| panic!("the gateway's address {addr} was taken"))
}

/// As [`start_gateway_on`], [`Taken`] when `addr` was taken before the gateway bound it.
pub fn try_start_gateway_on(
    dir: &Path,
    config: &str,
    state: &str,
    addr: &str,
    extra: &[&str],
) -> Result<Process, Taken> {
    let tokens = tokens_file(dir);
    let mut args = http_args(config, addr, state);
    args.extend_from_slice(&["--tokens", tokens.to_str().unwrap()]);
    args.extend_from_slice(extra);
    try_gateway_process(&args, &[])
}

/// `gatehouse ARGS` (a gateway over HTTP) with `env` besides the tests' own, once it
/// listens; its stderr kept. Unless `env` names another, it seals with the run's shared
/// key file ([`key_env`]), as replicas must share one.
pub fn gateway_process(args: &[&str], env: &[(&str, &str)]) -> Process {
    try_gateway_process(args, env)
        .unwrap_or_else(|Taken| panic!("gatehouse {args:?}: its port was taken"))
}

/// As [`gateway_process`], but [`Taken`] when the port `args` name was taken before the
/// gateway could bind it (a gateway whose approval page names its own port is told the
/// port before it starts: the caller tries another, [`crate::common::ports::on_a_free_port`]).
pub fn try_gateway_process(args: &[&str], env: &[(&str, &str)]) -> Result<Process, Taken> {
    let what = format!("gatehouse {}", args.join(" "));
    let mut env = env.to_vec();
    if !env.iter().any(|(k, _)| *k == KEY_FILE_ENV) {
        env.extend(key_env());
    }
    Spawn::new(gatehouse_command(args, &env), what).try_serving(
        Stream::Stderr,
        "listening on ",
        LIMIT,
    )
}

/// The environment variable naming a gateway's sealing key file.
pub const KEY_FILE_ENV: &str = "GATEHOUSE_GATEWAY_KEY_FILE";

/// The sealing key file every HTTP gateway of this test run is given (the replicas of a
/// test must seal with one key; on PostgreSQL it must exist before they start): made
/// once, 0600.
pub fn shared_key_file() -> &'static Path {
    static KEY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    KEY.get_or_init(|| {
        let path = crate::common::scratch_dir().join("gateway.key");
        std::fs::write(&path, "5e".repeat(32)).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        path
    })
}

/// [`KEY_FILE_ENV`] naming [`shared_key_file`], for a gateway's environment.
pub fn key_env() -> [(&'static str, &'static str); 1] {
    [(KEY_FILE_ENV, shared_key_file().to_str().unwrap())]
}

/// `gateway --config CONFIG --http ADDR --state STATE`: the command line each HTTP
/// gateway in these tests starts from, before its sign-in flags.
pub fn http_args<'a>(config: &'a str, addr: &'a str, state: &'a str) -> Vec<&'a str> {
    vec![
        "gateway", "--config", config, "--http", addr, "--state", state,
    ]
}

/// Did `p` write a line holding `part`?
pub fn said(p: &Process, part: &str) -> bool {
    p.lines().iter().any(|l| l.contains(part))
}

/// Two HTTP replicas of `config` (a servers file in `dir`), sharing one state store and
/// ledger in `backing`.
pub fn two_replicas(
    dir: &Path,
    backing: Backing,
    config: String,
) -> (SharedState, Process, Process) {
    let state = SharedState::new(backing, dir, None);
    let a = start_gateway(dir, &config, &state.arg);
    let b = start_gateway(dir, &config, &state.arg);
    (state, a, b)
}

/// GET `path` (`/healthz`, `/readyz`, `/metrics`) of an HTTP gateway, with no token: its
/// status and body.
pub async fn operation(gw: &Process, path: &str) -> (u16, String) {
    let base = gw.url.trim_end_matches("/mcp");
    let got = reqwest::get(format!("{base}{path}")).await.unwrap();
    (got.status().as_u16(), got.text().await.unwrap())
}

/// The port an HTTP gateway listens on.
pub fn port_of(p: &Process) -> u16 {
    p.url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap_or_else(|_| panic!("no port in {}", p.url))
}

/// The names in a list of tools (a `tools/list` result, or the Python client's output).
pub fn tool_names(out: &Value) -> Vec<String> {
    out["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {out}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The ledger's lines, as JSON.
pub fn ledger_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a ledger line is JSON"))
        .collect()
}

/// `gatehouse ledger verify` on the ledger at `path` says its chain holds.
pub fn assert_ledger_verifies(path: &Path) {
    let ran = crate::common::run(&["ledger", "verify", "--file", path.to_str().unwrap()], &[]);
    assert_eq!(ran.status, 0, "{}\n{}", ran.stdout, ran.stderr);
}

/// Where the replicas of a test keep what they share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backing {
    /// A SQLite file, the ledger the servers file's.
    Sqlite,
    /// A real PostgreSQL of the test's own, which keeps the ledger too.
    Postgres,
    /// The same, reached over TLS, `sslmode=verify-full` against a CA of the test's own.
    PostgresTls,
}

/// The host name the TLS tests' database certificate is made for.
pub const DB_HOST: &str = "db.gatehouse.test";

/// A test's shared state, in the backing it was made for.
pub struct SharedState {
    /// What `--state` is given: the file, or the database's URL.
    pub arg: String,
    ledger_file: PathBuf,
    /// The PostgreSQL cluster, for [`Backing::Postgres`].
    pub cluster: Option<Cluster>,
}

impl SharedState {
    /// The state of the test in `dir` (whose servers file names `ledger.jsonl`), the
    /// database's URL with `password` in it if given.
    pub fn new(backing: Backing, dir: &Path, password: Option<&str>) -> SharedState {
        let (arg, cluster) = match backing {
            Backing::Sqlite => (dir.join("state.db").to_string_lossy().into_owned(), None),
            Backing::Postgres => {
                let cluster = Cluster::start();
                (cluster.url(password), Some(cluster))
            }
            Backing::PostgresTls => {
                let tls = dir.join("tls");
                std::fs::create_dir_all(&tls).unwrap();
                let certificates = certificates(&tls, DB_HOST);
                let cluster = Cluster::start_tls(&certificates);
                let query = format!(
                    "sslmode=verify-full&sslrootcert={}",
                    certificates.ca.display()
                );
                (cluster.url_naming(password, DB_HOST, &query), Some(cluster))
            }
        };
        SharedState {
            arg,
            ledger_file: dir.join("ledger.jsonl"),
            cluster,
        }
    }

    /// The ledger's lines, as JSON: the file's, or `gatehouse ledger show --json
    /// --state URL`'s.
    pub fn ledger(&self) -> Vec<Value> {
        if self.cluster.is_none() {
            return ledger_lines(&self.ledger_file);
        }
        let ran = crate::common::run(&["ledger", "show", "--json", "--state", &self.arg], &[]);
        assert_eq!(ran.status, 0, "{}\n{}", ran.stdout, ran.stderr);
        assert!(
            !self.ledger_file.exists(),
            "with PostgreSQL the ledger file is not written"
        );
        ran.stdout
            .lines()
            .map(|l| serde_json::from_str(l).expect("a ledger line is JSON"))
            .collect()
    }

    /// `gatehouse ledger verify` (`--file` or `--state`) says the chain holds.
    pub fn assert_ledger_verifies(&self) {
        if self.cluster.is_none() {
            return assert_ledger_verifies(&self.ledger_file);
        }
        let ran = crate::common::run(&["ledger", "verify", "--state", &self.arg], &[]);
        assert_eq!(ran.status, 0, "{}\n{}", ran.stdout, ran.stderr);
        assert!(ran.stdout.contains("the chain holds"), "{}", ran.stdout);
    }
}

/// The one ledger line deciding on `tool` last.
pub fn last_line_of<'a>(lines: &'a [Value], tool: &str) -> &'a Value {
    lines
        .iter()
        .rev()
        .find(|l| l["tool"] == tool)
        .unwrap_or_else(|| panic!("no ledger line for {tool}: {lines:#?}"))
}

/// A ledger line of a call approved in the caller's client (its form: the client, or
/// whatever drives it, answered), as `caller`.
pub fn assert_approved_in_the_client(line: &Value, caller: &str) {
    assert_eq!(line["decision"], "asked", "{line}");
    assert_eq!(line["answer"], "yes", "{line}");
    assert_eq!(line["by"], "client", "{line}");
    assert_eq!(line["caller"], caller, "{line}");
}
