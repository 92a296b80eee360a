//! The inspector CLIs against the reference servers: inspector-cli 1.0.3 (`initialize`
//! only) and inspector 2.12.0 `--cli` in its legacy, auto and modern eras.

use serde_json::{Value, json};

use super::*;

/// Which inspector, and in which era.
#[derive(Clone, Copy, Debug)]
enum Inspector {
    /// inspector-cli 1.0.3 (`initialize` only).
    One,
    /// inspector 2.12.0 `--cli --protocol-era ERA`.
    Two(&'static str),
}

/// Run an inspector against `server` with `method_args` (over stdio it starts the
/// server's command, over HTTP it is given the URL and the bearer token); what it printed
/// as JSON (inspector 2 wraps it in `{"result": …}`, and prints a failure as
/// `{"error": …}` on stderr), its exit status, and the tap's log of this run.
fn inspector(
    desk: &Desk,
    which: Inspector,
    server: &str,
    method_args: &[String],
) -> (Value, i32, Vec<(String, Value)>) {
    let mark = desk.tap(server).len();
    let mut argv: Vec<String> = Vec::new();
    let wrapper = match which {
        Inspector::One => {
            require(
                "inspector-cli/node_modules/@modelcontextprotocol/inspector-cli/build/index.js",
                "inspector_cli",
            );
            // The target first, then the method.
            match desk.transport {
                Transport::Stdio => argv.extend(desk.command(server)),
                Transport::Http => argv.extend([
                    desk.url(server),
                    "--transport".into(),
                    "http".into(),
                    "--header".into(),
                    bearer(),
                ]),
            }
            argv.extend(method_args.iter().cloned());
            script("inspector1.sh")
        }
        Inspector::Two(era) => {
            require(
                "inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js",
                "inspector",
            );
            node22();
            argv.extend(strings(&["--protocol-era", era, "--format", "json", "-q"]));
            match desk.transport {
                // The inspector 2 passes its server only the SDK's default environment.
                Transport::Stdio => {
                    for (k, v) in desk.vars() {
                        argv.extend(["-e".to_string(), format!("{k}={v}")]);
                    }
                }
                Transport::Http => argv.extend(["--header".into(), bearer()]),
            }
            argv.extend(method_args.iter().cloned());
            match desk.transport {
                Transport::Stdio => {
                    argv.push("--".into());
                    argv.extend(desk.command(server));
                }
                Transport::Http => argv.push(desk.url(server)),
            }
            script("inspector2.sh")
        }
    };
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let home = desk.path().join("inspector-home");
    let home = home.to_string_lossy().into_owned();
    let mut vars = desk.vars();
    vars.push(("INSPECTOR_HOME", &home));
    let ran = run_peer(&wrapper, &argv, &vars, None);
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

/// `--method tools/call` with the tool's arguments as each inspector takes them:
/// inspector-cli 1.0.3 as `--tool-arg key=value…` (it parses each value as JSON when it
/// can), inspector 2 as `--tool-args-json`.
fn tool_call(which: Inspector, name: &str, args: &Value) -> Vec<String> {
    let mut argv = strings(&["--method", "tools/call", "--tool-name", name]);
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

/// Every server listed and called, the policy read, and open_ticket refused (neither
/// inspector declares elicitation) with nothing opened, on `protocol`, reached as `how`
/// says.
fn inspector_uses_every_server(t: Transport, which: Inspector, protocol: &str, how: &str) {
    let desk = Desk::all(t);
    for (server, _, tools) in SERVERS {
        let (out, status, run) =
            inspector(&desk, which, server, &strings(&["--method", "tools/list"]));
        assert_eq!(status, 0, "{which:?} {server}: {out}");
        assert_eq!(
            negotiated(&run),
            (how.to_string(), protocol.to_string()),
            "{which:?} {server}"
        );
        assert_exchanges(t, &run, protocol, &format!("{which:?} {server}"));
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
        assert_exchanges(t, &run, protocol, &format!("{which:?} {server}"));
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
    assert_exchanges(t, &run, protocol, &format!("{which:?} support read"));
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
    let (out, _, _) = inspector(
        &desk,
        which,
        "tickets",
        &tool_call(which, "list_tickets", &json!({})),
    );
    assert_eq!(result_of(which, &out)["structuredContent"]["total"], 0);
}

pub fn inspector_cli_1_0_3_lists_calls_and_reads_every_server_on_2025_11_25(t: Transport) {
    inspector_uses_every_server(t, Inspector::One, "2025-11-25", "initialize");
}

pub fn inspector_2_in_the_legacy_era_lists_calls_and_reads_every_server_on_2025_11_25(
    t: Transport,
) {
    inspector_uses_every_server(t, Inspector::Two("legacy"), "2025-11-25", "initialize");
}

pub fn inspector_2_in_the_auto_era_discovers_2026_07_28_and_lists_calls_and_reads_every_server(
    t: Transport,
) {
    inspector_uses_every_server(t, Inspector::Two("auto"), "2026-07-28", "server/discover");
}

pub fn inspector_2_in_the_modern_era_lists_calls_and_reads_every_server_on_2026_07_28(
    t: Transport,
) {
    inspector_uses_every_server(t, Inspector::Two("modern"), "2026-07-28", "server/discover");
}

/// `export_report` as each inspector calls it. Inspector 2 in the modern and auto eras
/// declares the tasks extension in the call's `_meta`, gets a task, and polls it with
/// `tasks/get` (over HTTP with `Mcp-Name`: the task's id) to the report it prints.
/// Inspector-cli 1.0.3 and inspector 2 in the legacy era are on 2025-11-25, where the
/// extension is not defined: they get the report as an ordinary call, never a task.
pub fn each_inspector_gets_export_report_as_a_task_on_2026_07_28_and_as_a_call_on_2025_11_25(
    t: Transport,
) {
    let desk = Desk::new(t, &["orders"]);
    for (which, tasked) in [
        (Inspector::Two("modern"), true),
        (Inspector::Two("auto"), true),
        (Inspector::Two("legacy"), false),
        (Inspector::One, false),
    ] {
        let args = tool_call(which, "export_report", &json!({"rows": 20000}));
        let (out, status, run) = inspector(&desk, which, "orders", &args);
        assert_eq!(status, 0, "{which:?}: {out}");
        let result = result_of(which, &out);
        assert_eq!(result["isError"], false, "{which:?}: {result}");
        assert_eq!(result["structuredContent"]["rows"], 20000, "{which:?}");
        let (call, created) = run
            .iter()
            .find(|(d, m)| d == ">>" && m["method"] == "tools/call")
            .map(|(_, call)| {
                let answer = run
                    .iter()
                    .find(|(d, m)| d == "<<" && m["id"] == call["id"] && m.get("method").is_none());
                (call, answer.expect("the call's answer").1["result"].clone())
            })
            .unwrap_or_else(|| panic!("{which:?}: no tools/call: {run:#?}"));
        let polls: Vec<&Value> = run
            .iter()
            .filter(|(d, m)| d == ">>" && m["method"] == "tasks/get")
            .map(|(_, m)| m)
            .collect();
        if !tasked {
            assert_ne!(created["resultType"], "task", "{which:?}: {created}");
            assert_eq!(created["structuredContent"]["rows"], 20000, "{which:?}");
            assert!(polls.is_empty(), "{which:?}: {polls:?}");
            continue;
        }
        let caps = &call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
        assert!(
            caps["extensions"]["io.modelcontextprotocol/tasks"].is_object(),
            "{which:?}: {caps}"
        );
        assert_eq!(created["resultType"], "task", "{which:?}: {created}");
        let id = &created["taskId"];
        assert!(!polls.is_empty(), "{which:?}: {run:#?}");
        for p in &polls {
            assert_eq!(&p["params"]["taskId"], id, "{which:?}");
            if t == Transport::Http {
                assert_eq!(
                    &exchange_of(&run, p)["headers"]["mcp-name"],
                    id,
                    "{which:?}"
                );
            }
        }
        let last = run
            .iter()
            .rev()
            .find(|(d, m)| d == "<<" && m["id"] == polls.last().unwrap()["id"])
            .unwrap();
        assert_eq!(last.1["result"]["status"], "completed", "{which:?}");
    }
}
