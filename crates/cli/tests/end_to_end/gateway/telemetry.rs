//! Traces over OTLP, received by a real OpenTelemetry collector (Rotel,
//! `scripts/install-test-peers.sh collector`, printing each span it receives): the host's
//! `gatehouse call` through an HTTP gateway to the tickets server is one trace, the host's
//! `tools/call` span the parent of the gateway's, whose call behind is its child, each
//! named and attributed as the MCP semantic conventions say; the ledger's line names the
//! same trace; a call the gateway refuses joins its client's `traceparent` and says it was
//! refused; the spans still queued when SIGTERM comes reach the collector before the
//! gateway exits. A collector that cannot be reached costs the call nothing and is said.

use std::{collections::BTreeMap, time::Duration};

use serde_json::json;

use super::*;
use crate::common::{
    http_server::{call, post, request},
    ports::{free_port, on_a_free_port},
    run,
    serve::SAM_TOKEN,
};

/// A client's trace context, as W3C Trace Context spells it.
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// One span as the collector printed it.
#[derive(Debug, Clone, Default)]
struct Seen {
    service: String,
    trace_id: String,
    parent_id: String,
    id: String,
    name: String,
    kind: String,
    status: String,
    attributes: BTreeMap<String, String>,
}

impl Seen {
    fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

/// A running Rotel taking OTLP over HTTP on a loopback port, its spans printed on stdout.
struct Collector {
    process: Process,
    port: u16,
}

impl Collector {
    fn start() -> Collector {
        let agent = require("collector/bin/rotel-agent", "collector");
        // Both of its ports are picked free; either may be taken before it binds it.
        let (process, port) = on_a_free_port("the collector", |port| {
            let grpc = free_port();
            let mut cmd = std::process::Command::new(&agent);
            cmd.args(["start", "--exporter", "blackhole", "--debug-log", "traces"])
                .args(["--debug-log-verbosity", "detailed"])
                .args(["--otlp-http-endpoint", &format!("127.0.0.1:{port}")])
                .args(["--otlp-grpc-endpoint", &format!("127.0.0.1:{grpc}")])
                .env("NO_COLOR", "1");
            let mut process = Spawn::new(cmd, "rotel-agent").watched(Stream::Stdout);
            process.wait_for_line_or_taken("Starting Rotel", LIMIT)?;
            Ok((process, port))
        });
        // Listening once it takes a connection.
        let deadline = std::time::Instant::now() + LIMIT;
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "the collector never listened"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Collector { process, port }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every span received so far.
    fn spans(&self) -> Vec<Seen> {
        parse(&self.process.lines())
    }

    /// Wait, at most [`LIMIT`], until `enough` holds of the spans received.
    fn wait_until(&self, what: &str, enough: impl Fn(&[Seen]) -> bool) -> Vec<Seen> {
        let deadline = std::time::Instant::now() + LIMIT;
        loop {
            let spans = self.spans();
            if enough(&spans) {
                return spans;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the collector never received {what}; it printed:\n{}",
                self.process.lines().join("\n")
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The spans in the collector's detailed debug output: each `Span #n` block's ids, name,
/// kind and attributes, under the `service.name` of its resource.
fn parse(lines: &[String]) -> Vec<Seen> {
    let (mut spans, mut service, mut in_resource) = (Vec::<Seen>::new(), String::new(), false);
    for line in lines {
        let trimmed = line.trim();
        if trimmed.starts_with("ResourceSpans #") {
            in_resource = true;
            continue;
        }
        if trimmed.starts_with("ScopeSpans #") {
            in_resource = false;
            continue;
        }
        if trimmed.starts_with("Span #") {
            spans.push(Seen {
                service: service.clone(),
                ..Seen::default()
            });
            continue;
        }
        if let Some(attribute) = trimmed.strip_prefix("-> ") {
            let Some((key, value)) = attribute.split_once(": ") else {
                continue;
            };
            // `Str(web-01)`, `Int(8931)`: the value inside.
            let value = value
                .split_once('(')
                .map_or(value, |(_, v)| v.strip_suffix(')').unwrap_or(v));
            if in_resource {
                if key == "service.name" {
                    service = value.to_owned();
                }
            } else if let Some(span) = spans.last_mut() {
                span.attributes.insert(key.to_owned(), value.to_owned());
            }
            continue;
        }
        let Some((field, value)) = trimmed.split_once(':') else {
            continue;
        };
        let Some(span) = spans.last_mut() else {
            continue;
        };
        let value = value.trim().to_owned();
        match field.trim() {
            "Trace ID" => span.trace_id = value,
            "Parent ID" => span.parent_id = value,
            "ID" => span.id = value,
            "Name" => span.name = value,
            "Kind" => span.kind = value,
            "Status code" => span.status = value,
            _ => {}
        }
    }
    spans
}

fn find<'a>(spans: &'a [Seen], service: &str, name: &str) -> Option<&'a Seen> {
    spans
        .iter()
        .find(|s| s.service == service && s.name == name)
}

/// The host's servers file: the gateway at `url` as `gw`, Sam's token sent, its tools
/// allowed.
fn host_config(dir: &Path, url: &str) -> String {
    write(
        dir,
        "host.json",
        &json!({
            "mcpServers": {"gw": {"url": url,
                                  "headers": {"Authorization": format!("Bearer {SAM_TOKEN}")}}},
            "gatehouse": {"rules": [{"tool": "gw__*", "decision": "allow"}]}
        }),
    )
}

#[tokio::test]
async fn one_call_through_the_gateway_is_one_trace_in_a_real_collector() {
    let collector = Collector::start();
    let endpoint = collector.endpoint();
    let dir = tempfile::tempdir().unwrap();
    let config = gateway_config(dir.path());
    let state = dir.path().join("state.db");
    let tokens = tokens_file(dir.path());
    let mut args = http_args(&config, "127.0.0.1:0", state.to_str().unwrap());
    args.extend_from_slice(&["--tokens", tokens.to_str().unwrap()]);
    // A batch leaves only after a minute: what the collector gets, it gets at SIGTERM.
    let gw = gateway_process(
        &args,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_BSP_SCHEDULE_DELAY", "60000"),
        ],
    );

    // The person's own call, through the gateway, with nothing of a model.
    let host = host_config(dir.path(), &gw.url);
    let ran = run(
        &[
            "call",
            "gw__tickets__list_tickets",
            r#"{"host": "web-01"}"#,
            "--config",
            &host,
        ],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)],
    );
    assert_eq!(ran.status, 0, "{}\n{}", ran.stdout, ran.stderr);
    assert!(!ran.stderr.contains("did not reach"), "{}", ran.stderr);
    // A call the gateway refuses, from a client with a trace of its own.
    let params = json!({"name": "tickets__no_such_tool", "arguments": {},
                        "_meta": {"traceparent": TRACEPARENT}});
    let refused = call(&gw.url, SAM_TOKEN, 1, params).await;
    assert_eq!(refused.result(1)["isError"], true, "{}", refused.text);
    let listed = post(
        &gw.url,
        Some(SAM_TOKEN),
        &request(2, "tools/list", json!({})),
    )
    .await;
    assert!(
        listed.text.contains("tickets__list_tickets"),
        "{}",
        listed.text
    );

    // The host's span came when `gatehouse call` ended; the gateway's wait for its exit.
    let spans = collector.wait_until("the host's span", |s| {
        find(s, "gatehouse", "tools/call tickets__list_tickets").is_some()
    });
    assert!(
        !spans.iter().any(|s| s.service == "gatehouse-gateway"),
        "the gateway sent a batch before its time: {spans:#?}"
    );
    let port = port_of(&gw);
    assert!(gw.signal("TERM"));
    let exited = gw.wait(LIMIT);
    assert_eq!(exited.status, 0, "{}", exited.stderr);
    assert!(
        !exited.stderr.contains("did not reach"),
        "{}",
        exited.stderr
    );
    let spans = collector.wait_until("the gateway's spans", |s| {
        s.iter()
            .filter(|s| s.service == "gatehouse-gateway")
            .count()
            >= 4
    });
    // The lists it answered have spans of their own (the host's discovery, the client's).
    let lists = spans
        .iter()
        .filter(|s| s.service == "gatehouse-gateway" && s.name == "tools/list")
        .count();
    assert!(lists >= 2, "{spans:#?}");

    let host_span = find(&spans, "gatehouse", "tools/call tickets__list_tickets").unwrap();
    assert_eq!(host_span.kind, "SPAN_KIND_CLIENT", "{host_span:?}");
    assert_eq!(host_span.parent_id, "", "{host_span:?}");
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "tickets__list_tickets"),
        ("gen_ai.operation.name", "execute_tool"),
        ("mcp.protocol.version", "2026-07-28"),
        ("network.transport", "tcp"),
        ("server.address", "127.0.0.1"),
        ("server.port", &port.to_string()),
    ] {
        assert_eq!(
            host_span.attribute(key),
            Some(value),
            "{key}: {host_span:?}"
        );
    }

    let answered = find(
        &spans,
        "gatehouse-gateway",
        "tools/call tickets__list_tickets",
    )
    .unwrap();
    assert_eq!(answered.kind, "SPAN_KIND_SERVER", "{answered:?}");
    assert_eq!(answered.trace_id, host_span.trace_id, "{answered:?}");
    assert_eq!(answered.parent_id, host_span.id, "{answered:?}");
    assert_eq!(answered.attribute("gatehouse.decision"), Some("allowed"));
    assert_eq!(answered.attribute("error.type"), None, "{answered:?}");

    let behind = find(&spans, "gatehouse-gateway", "tools/call list_tickets").unwrap();
    assert_eq!(behind.kind, "SPAN_KIND_CLIENT", "{behind:?}");
    assert_eq!(behind.trace_id, host_span.trace_id, "{behind:?}");
    assert_eq!(behind.parent_id, answered.id, "{behind:?}");
    assert_eq!(behind.attribute("network.transport"), Some("pipe"));
    assert_eq!(behind.attribute("gen_ai.tool.name"), Some("list_tickets"));

    // The ledger's line is in the same trace.
    let lines = ledger_lines(&dir.path().join("ledger.jsonl"));
    let line = last_line_of(&lines, "tickets__list_tickets");
    assert_eq!(line["trace_id"], host_span.trace_id.as_str(), "{line}");

    let refused = find(
        &spans,
        "gatehouse-gateway",
        "tools/call tickets__no_such_tool",
    )
    .unwrap();
    assert_eq!(
        refused.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736",
        "{refused:?}"
    );
    assert_eq!(refused.parent_id, "00f067aa0ba902b7", "{refused:?}");
    assert_eq!(
        refused.attribute("gatehouse.decision"),
        Some("unknown_tool")
    );
    assert_eq!(refused.attribute("error.type"), Some("tool_error"));
    assert_eq!(refused.status, "STATUS_CODE_ERROR", "{refused:?}");
    assert_eq!(answered.status, "STATUS_CODE_UNSET", "{answered:?}");
}

/// The README's first question on the built-in servers: one turn's span (`invoke_agent`)
/// is the parent of its calls' spans, each in the turn's trace, over the server's pipe.
#[test]
fn a_turn_is_the_parent_of_its_calls_in_the_collector() {
    let collector = Collector::start();
    let endpoint = collector.endpoint();
    let demo = "Draft a reply to ticket T-30002";
    let ran = run(
        &["ask", demo, "--config", "builtin"],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let spans = collector.wait_until("the turn and its call", |s| {
        find(s, "gatehouse", "invoke_agent gatehouse").is_some()
            && find(s, "gatehouse", "tools/call get_ticket").is_some()
    });
    let turn = find(&spans, "gatehouse", "invoke_agent gatehouse").unwrap();
    assert_eq!(turn.kind, "SPAN_KIND_INTERNAL", "{turn:?}");
    assert_eq!(turn.parent_id, "", "{turn:?}");
    assert_eq!(
        turn.attribute("gen_ai.operation.name"),
        Some("invoke_agent")
    );
    assert!(turn.attribute("gen_ai.request.model").is_some(), "{turn:?}");
    let called = find(&spans, "gatehouse", "tools/call get_ticket").unwrap();
    assert_eq!(called.trace_id, turn.trace_id, "{called:?}");
    assert_eq!(called.parent_id, turn.id, "{called:?}");
    assert_eq!(called.attribute("network.transport"), Some("pipe"));
    assert_eq!(called.attribute("server.address"), None, "{called:?}");
}

/// With no collector at the endpoint the question is answered all the same, and the
/// host says at exit that its spans did not reach one; an endpoint or a protocol it does
/// not speak stops it before anything starts, saying which variable is wrong.
#[test]
fn a_collector_out_of_reach_costs_nothing_and_a_wrong_setting_is_named() {
    let demo = "Draft a reply to ticket T-30002";
    let nobody = format!("http://127.0.0.1:{}", free_port());
    let ran = run(
        &["ask", demo, "--config", "builtin"],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &nobody)],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(ran.stdout.contains("Hi Hugo"), "{}", ran.stdout);
    assert!(
        ran.stderr
            .contains("spans did not reach the OpenTelemetry collector"),
        "{}",
        ran.stderr
    );
    for (env, said) in [
        (
            [
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ],
            "OTEL_EXPORTER_OTLP_PROTOCOL=grpc: Gatehouse sends OTLP over HTTP (http/protobuf)",
        ),
        (
            [
                (
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "ftp://127.0.0.1/v1/traces",
                ),
                ("OTEL_SERVICE_NAME", "x"),
            ],
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: a ftp URL",
        ),
        (
            [
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
                ("OTEL_TRACES_EXPORTER", "zipkin"),
            ],
            "OTEL_TRACES_EXPORTER=zipkin",
        ),
    ] {
        let ran = run(&["ask", demo, "--config", "builtin"], &env);
        assert_eq!(ran.status, 2, "{env:?}: {}", ran.stderr);
        assert!(ran.stderr.contains(said), "{env:?}: {}", ran.stderr);
        assert!(!ran.stdout.contains("Hi Hugo"), "{}", ran.stdout);
    }
}
