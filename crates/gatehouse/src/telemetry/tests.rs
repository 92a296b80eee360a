//! Spans keep the ids their requests' `traceparent` carries, join the client's trace, and
//! say how a call ended as the MCP semantic conventions say it; checked on a tracer that
//! keeps what it would send.

use std::sync::{Arc, Mutex};

use opentelemetry::{
    Value,
    trace::{SpanKind, Status, TracerProvider as _},
};
use opentelemetry_sdk::{
    error::OTelSdkResult,
    trace::{SdkTracer, SdkTracerProvider, SpanData, SpanExporter},
};
use rmcp::model::{CallToolResult, ErrorCode, ErrorData};

use super::*;

/// An exporter that keeps every span it is given.
#[derive(Debug, Clone, Default)]
struct Kept(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Kept {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

fn tracer() -> (SdkTracer, Kept, SdkTracerProvider) {
    let kept = Kept::default();
    let provider = SdkTracerProvider::builder()
        .with_id_generator(ChosenIds::default())
        .with_simple_exporter(kept.clone())
        .build();
    (provider.tracer("test"), kept, provider)
}

fn attribute(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

fn tool_call() -> Request<'static> {
    static NETWORK: std::sync::LazyLock<Network> =
        std::sync::LazyLock::new(|| Network::of_url("http://user:secret@127.0.0.1:8931/mcp"));
    Request {
        method: "tools/call",
        tool: Some("get_ticket"),
        prompt: None,
        resource_uri: None,
        protocol: Some("2026-07-28"),
        network: &NETWORK,
    }
}

fn client(tracer: &SdkTracer, trace_id: &str, parent: Option<&Span>) -> Span {
    let request = tool_call();
    let start = Start {
        kind: Kind::Client,
        trace_id: trace_id.to_owned(),
        parent: parent.map(Span::context),
        describe: || (request.span_name(), request.attributes()),
    };
    start.run(Some(tracer))
}

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

#[test]
fn a_span_is_sent_with_the_ids_its_traceparent_carries() {
    let (tracer, kept, _provider) = tracer();
    let span = client(&tracer, TRACE, None);
    let traceparent = span.traceparent();
    assert!(
        traceparent.starts_with(&format!("00-{TRACE}-")),
        "{traceparent}"
    );
    assert!(traceparent.ends_with("-01"));
    let span_id = span.span_id().to_owned();
    drop(span);
    let spans = kept.0.lock().unwrap();
    let [sent] = spans.as_slice() else {
        panic!("one span, got {spans:?}")
    };
    assert_eq!(sent.span_context.trace_id().to_string(), TRACE);
    assert_eq!(sent.span_context.span_id().to_string(), span_id);
    assert_eq!(sent.name, "tools/call get_ticket");
    assert_eq!(sent.span_kind, SpanKind::Client);
    assert_eq!(sent.parent_span_id, opentelemetry::trace::SpanId::INVALID);
    assert_eq!(
        attribute(sent, "mcp.method.name"),
        Some("tools/call".into())
    );
    assert_eq!(
        attribute(sent, "gen_ai.tool.name"),
        Some("get_ticket".into())
    );
    assert_eq!(
        attribute(sent, "gen_ai.operation.name"),
        Some("execute_tool".into())
    );
    assert_eq!(
        attribute(sent, "mcp.protocol.version"),
        Some("2026-07-28".into())
    );
    assert_eq!(attribute(sent, "network.transport"), Some("tcp".into()));
    // The server's host and port, never the URL's credentials.
    assert_eq!(attribute(sent, "server.address"), Some("127.0.0.1".into()));
    assert_eq!(attribute(sent, "server.port"), Some(Value::I64(8931)));
}

#[test]
fn the_gateway_joins_the_clients_trace_and_its_own_call_behind_is_a_child() {
    let (tracer, kept, _provider) = tracer();
    let host = client(&tracer, TRACE, None);
    let request = tool_call();
    let gateway = Span::server_in(&request, Some(&host.traceparent()), Some(&tracer));
    assert_eq!(gateway.trace_id(), TRACE);
    let behind = client(&tracer, gateway.trace_id(), Some(&gateway));
    let ids = [&host, &gateway, &behind].map(|s| s.span_id().to_owned());
    drop((behind, gateway, host));
    let spans = kept.0.lock().unwrap();
    let by_id = |id: &str| {
        spans
            .iter()
            .find(|s| s.span_context.span_id().to_string() == id)
            .unwrap_or_else(|| panic!("no span {id} in {spans:?}"))
    };
    let (host, gateway, behind) = (by_id(&ids[0]), by_id(&ids[1]), by_id(&ids[2]));
    assert_eq!(gateway.span_kind, SpanKind::Server);
    assert_eq!(gateway.parent_span_id, host.span_context.span_id());
    assert!(gateway.parent_span_is_remote);
    assert_eq!(behind.parent_span_id, gateway.span_context.span_id());
    for span in [host, gateway, behind] {
        assert_eq!(span.span_context.trace_id().to_string(), TRACE);
    }
}

#[test]
fn a_traceparent_that_is_not_valid_starts_a_trace_of_the_gateways_own() {
    let (tracer, kept, _provider) = tracer();
    let request = tool_call();
    for bad in [
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz",
        "00-4bf92f3577b34da6a3ce929d0e0e4736",
        "a",
        "",
    ] {
        let span = Span::server_in(&request, Some(bad), Some(&tracer));
        assert_ne!(span.trace_id(), TRACE, "{bad}");
        assert_eq!(span.trace_id().len(), 32);
    }
    for span in kept.0.lock().unwrap().iter() {
        assert_eq!(span.parent_span_id, opentelemetry::trace::SpanId::INVALID);
    }
    // Upper-case hex is read as the ledger and the servers read it: in lowercase.
    let upper = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01";
    let span = Span::server_in(&request, Some(upper), Some(&tracer));
    assert_eq!(span.trace_id(), TRACE);
    drop(span);
    let spans = kept.0.lock().unwrap();
    let last = spans.last().unwrap();
    assert_eq!(last.parent_span_id.to_string(), "00f067aa0ba902b7");
}

#[test]
fn a_client_that_samples_its_trace_out_is_followed() {
    let (tracer, kept, _provider) = tracer();
    let unsampled = format!("00-{TRACE}-00f067aa0ba902b7-00");
    let span = Span::server_in(&tool_call(), Some(&unsampled), Some(&tracer));
    assert!(!span.is_recording());
    assert!(
        span.traceparent().ends_with("-00"),
        "{}",
        span.traceparent()
    );
    drop(span);
    assert!(kept.0.lock().unwrap().is_empty());
}

#[test]
fn how_a_call_ended_is_said_as_the_conventions_say_it() {
    let (tracer, kept, _provider) = tracer();
    let ends: Vec<(CallEnd, Option<&str>)> = vec![
        (CallEnd::Result(CallToolResult::success(vec![])), None),
        (
            CallEnd::Result(CallToolResult::error(vec![])),
            Some("tool_error"),
        ),
        (
            CallEnd::ProtocolError(ErrorData::new(
                ErrorCode::INVALID_PARAMS,
                "bad \u{1b}[31mname",
                None,
            )),
            Some("-32602"),
        ),
        (
            CallEnd::TimedOut(std::time::Duration::from_secs(1)),
            Some("timeout"),
        ),
        (CallEnd::Failed("gone".into()), Some("connection_failed")),
        (CallEnd::Stopped, Some("cancelled")),
    ];
    let mut ids = vec![];
    for (end, _) in &ends {
        let span = client(&tracer, TRACE, None);
        span.ended(end, |r| r.is_error == Some(true));
        ids.push(span.span_id().to_owned());
    }
    let spans = kept.0.lock().unwrap();
    for ((_, error_type), id) in ends.iter().zip(&ids) {
        let span = spans
            .iter()
            .find(|s| s.span_context.span_id().to_string() == *id)
            .unwrap();
        assert_eq!(
            attribute(span, "error.type"),
            error_type.map(|t| Value::from(t.to_owned())),
            "{span:?}"
        );
        match error_type {
            None => assert_eq!(span.status, Status::Unset),
            Some(_) => assert!(matches!(span.status, Status::Error { .. })),
        }
    }
    let protocol = spans
        .iter()
        .find(|s| s.span_context.span_id().to_string() == ids[2])
        .unwrap();
    assert_eq!(
        attribute(protocol, "rpc.response.status_code"),
        Some("-32602".into())
    );
    // The peer's message is the description, with no control sequence left in it.
    let Status::Error { description } = &protocol.status else {
        panic!()
    };
    assert_eq!(description, "bad \\u{1b}[31mname");
}

#[test]
fn a_prompt_names_its_span_and_a_list_is_its_method_alone() {
    let prompt = Request {
        method: "prompts/get",
        prompt: Some("triage"),
        tool: None,
        ..tool_call()
    };
    assert_eq!(prompt.span_name(), "prompts/get triage");
    let names: Vec<_> = prompt
        .attributes()
        .into_iter()
        .map(|kv| kv.key.to_string())
        .collect();
    assert!(
        names.contains(&"gen_ai.prompt.name".to_owned()),
        "{names:?}"
    );
    assert!(
        !names.contains(&"gen_ai.operation.name".to_owned()),
        "{names:?}"
    );
    let list = Request {
        method: "tools/list",
        tool: None,
        ..tool_call()
    };
    assert_eq!(list.span_name(), "tools/list");
}

#[test]
fn a_clients_name_of_any_length_or_bytes_is_kept_bounded_and_visible() {
    let hostile = format!("x\u{1b}[2J{}", "y".repeat(10_000));
    let request = Request {
        tool: Some(&hostile),
        resource_uri: Some(&hostile),
        ..tool_call()
    };
    let name = request.span_name();
    assert!(!name.contains('\u{1b}'), "{name:?}");
    assert!(
        name.chars().count() <= "tools/call ".len() + MAX_NAME_CHARS + 8,
        "{}",
        name.len()
    );
    for kv in request.attributes() {
        let value = kv.value.to_string();
        assert!(!value.contains('\u{1b}'), "{value:?}");
        assert!(value.chars().count() <= MAX_NAME_CHARS + 8, "{}", kv.key);
    }
}

#[test]
fn with_no_exporter_a_span_is_its_ids_alone() {
    let span = Span::client(&tool_call(), TRACE, None);
    assert!(!span.is_recording());
    assert_eq!(span.trace_id(), TRACE);
    assert_eq!(span.span_id().len(), 16);
    span.fail("timeout", None, "nothing is kept");
}
