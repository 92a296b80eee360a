//! Spans of the MCP requests the host and the gateway make and answer, in OpenTelemetry's
//! model and named as its MCP semantic conventions name them, sent over OTLP to a team's
//! collector when the environment names one ([`Exporter::start`]).
//!
//! Each span keeps the ids the W3C `traceparent` in a request's `_meta` already carries:
//! a turn's trace id, a fresh span id per request, and for the gateway the client's trace
//! as the remote parent. So the host's `tools/call` span is the parent of the gateway's,
//! whose own call to the server behind is a child of it, and the server's records join
//! the same trace. With no exporter started a span is its ids alone: nothing is built,
//! timed or sent.

mod export;

pub use export::{Delivery, Exporter, TelemetryError};

use std::{
    cell::Cell,
    sync::{Mutex, OnceLock},
};

use opentelemetry::{
    Context, KeyValue,
    trace::{
        Span as _, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId,
        TraceState, Tracer as _,
    },
};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator, SdkTracer};

pub use crate::connect::Network;

use crate::{dispatch::CallEnd, text, trace::random_hex};

/// Most characters of a peer's error message kept as a span's status description.
pub const MAX_STATUS_CHARS: usize = 256;
/// Most characters of a name a peer chose (a tool, a prompt, a resource URI) kept in a
/// span's name and attributes: a client may send any name, of any length.
pub const MAX_NAME_CHARS: usize = 256;

/// A peer's name as a span keeps it: on one line, made visible, clipped.
fn bounded(name: &str) -> String {
    text::visible_line(&text::clip(name, MAX_NAME_CHARS)).into_owned()
}

/// The tracer of the exporter this process started, if it started one.
static TRACER: OnceLock<SdkTracer> = OnceLock::new();

/// What a span stands for, as OpenTelemetry's span kinds say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A request this process sends (the host's call, the gateway's call behind).
    Client,
    /// A request this process answers (the gateway's `tools/call`).
    Server,
    /// Work of the host's own (a turn).
    Internal,
}

/// One MCP request, as its span describes it.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The method (`tools/call`, `resources/read`).
    pub method: &'a str,
    /// The tool called, as its server names it.
    pub tool: Option<&'a str>,
    /// The prompt asked for (`prompts/get`).
    pub prompt: Option<&'a str>,
    /// The resource read.
    pub resource_uri: Option<&'a str>,
    /// The revision the two sides speak.
    pub protocol: Option<&'a str>,
    /// How the request travels.
    pub network: &'a Network,
}

impl Request<'_> {
    /// `{method} {tool}`, or the method alone: URIs stay out of span names (too many).
    fn span_name(&self) -> String {
        match self.tool.or(self.prompt) {
            Some(target) => format!("{} {}", self.method, bounded(target)),
            None => self.method.to_owned(),
        }
    }

    fn attributes(&self) -> Vec<KeyValue> {
        let mut kv = vec![KeyValue::new("mcp.method.name", self.method.to_owned())];
        if let Some(tool) = self.tool {
            kv.push(KeyValue::new("gen_ai.tool.name", bounded(tool)));
            kv.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        }
        if let Some(prompt) = self.prompt {
            kv.push(KeyValue::new("gen_ai.prompt.name", bounded(prompt)));
        }
        if let Some(uri) = self.resource_uri {
            kv.push(KeyValue::new("mcp.resource.uri", bounded(uri)));
        }
        if let Some(protocol) = self.protocol {
            kv.push(KeyValue::new("mcp.protocol.version", protocol.to_owned()));
        }
        match self.network {
            Network::Pipe => kv.push(KeyValue::new("network.transport", "pipe")),
            Network::Tcp { address, port } => {
                kv.push(KeyValue::new("network.transport", "tcp"));
                kv.push(KeyValue::new("network.protocol.name", "http"));
                kv.push(KeyValue::new("server.address", address.clone()));
                kv.push(KeyValue::new("server.port", i64::from(*port)));
            }
            Network::Unknown => {}
        }
        kv
    }
}

/// One span: its ids always (what the request's `traceparent` says), and while an
/// exporter runs, the span it sends when this is dropped or ended.
pub struct Span {
    trace_id: String,
    span_id: String,
    /// Whether the span is sampled (the `traceparent`'s flag).
    sampled: bool,
    live: Option<Mutex<opentelemetry_sdk::trace::Span>>,
}

impl std::fmt::Debug for Span {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Span")
            .field("trace_id", &self.trace_id)
            .field("span_id", &self.span_id)
            .field("recording", &self.live.is_some())
            .finish()
    }
}

impl Span {
    /// The span of a request this process sends, in trace `trace_id` under the span
    /// `parent` of this process (none: a root of the trace).
    pub fn client(request: &Request<'_>, trace_id: &str, parent: Option<&Span>) -> Span {
        let parent = parent.map(Span::context);
        let start = Start {
            kind: Kind::Client,
            trace_id: trace_id.to_owned(),
            parent,
            describe: || (request.span_name(), request.attributes()),
        };
        start.run(TRACER.get())
    }

    /// The span of a request this process answers: in the trace of the `traceparent` it
    /// came with, under the client's span; in a trace of its own if it came with none,
    /// or with one that is not valid.
    pub fn server(request: &Request<'_>, traceparent: Option<&str>) -> Span {
        Span::server_in(request, traceparent, TRACER.get())
    }

    fn server_in(
        request: &Request<'_>,
        traceparent: Option<&str>,
        tracer: Option<&SdkTracer>,
    ) -> Span {
        let remote = traceparent.and_then(Remote::parse);
        let trace_id = remote
            .as_ref()
            .map_or_else(|| random_hex(16), |r| r.trace_id.clone());
        let start = Start {
            kind: Kind::Server,
            trace_id,
            parent: remote.map(|r| r.context()),
            describe: || (request.span_name(), request.attributes()),
        };
        start.run(tracer)
    }

    /// The span of one turn of the host: a question, up to its answer.
    pub fn turn(trace_id: &str, model: &str) -> Span {
        let start = Start {
            kind: Kind::Internal,
            trace_id: trace_id.to_owned(),
            parent: None,
            describe: || {
                let attributes = vec![
                    KeyValue::new("gen_ai.operation.name", "invoke_agent"),
                    KeyValue::new("gen_ai.agent.name", "gatehouse"),
                    KeyValue::new("gen_ai.request.model", model.to_owned()),
                ];
                ("invoke_agent gatehouse".to_owned(), attributes)
            },
        };
        start.run(TRACER.get())
    }

    /// The trace this span belongs to (32 hex digits).
    pub fn trace_id(&self) -> &str {
        &self.trace_id
    }

    /// This span's id (16 hex digits).
    pub fn span_id(&self) -> &str {
        &self.span_id
    }

    /// The W3C `traceparent` that makes this span the parent of the receiver's.
    pub fn traceparent(&self) -> String {
        let flags = if self.sampled { "01" } else { "00" };
        format!("00-{}-{}-{flags}", self.trace_id, self.span_id)
    }

    /// Does an exporter receive this span?
    pub fn is_recording(&self) -> bool {
        self.live.is_some()
    }

    /// Set an attribute (nothing when not recording).
    pub fn set(&self, key: &'static str, value: impl Into<opentelemetry::Value>) {
        self.with(|s| s.set_attribute(KeyValue::new(key, value)));
    }

    /// The request failed: `error.type` (a low-cardinality class or a JSON-RPC code), the
    /// code as `rpc.response.status_code` when there is one, and the status an error
    /// described by the peer's message, cleaned and clipped.
    pub fn fail(&self, error_type: &str, code: Option<i64>, message: &str) {
        let description = text::visible_line(&text::clip(message, MAX_STATUS_CHARS)).into_owned();
        self.with(|s| {
            s.set_attribute(KeyValue::new("error.type", error_type.to_owned()));
            if let Some(code) = code {
                s.set_attribute(KeyValue::new("rpc.response.status_code", code.to_string()));
            }
            s.set_status(Status::error(description));
        });
    }

    /// Record how a call ended; `tool_error` says whether a result reports a failure
    /// (a `tools/call` result's `isError`).
    pub fn ended<T>(&self, end: &CallEnd<T>, tool_error: impl FnOnce(&T) -> bool) {
        match end {
            CallEnd::Result(result) if tool_error(result) => {
                self.fail("tool_error", None, "the tool reported an error");
            }
            CallEnd::Result(_) | CallEnd::Background(_) => {}
            CallEnd::ProtocolError(e) => {
                let code = i64::from(e.code.0);
                self.fail(&code.to_string(), Some(code), &e.message);
            }
            CallEnd::TimedOut(_) => self.fail("timeout", None, "the call took too long"),
            CallEnd::Failed(why) => self.fail("connection_failed", None, why),
            CallEnd::Stopped => self.fail("cancelled", None, "the person stopped the call"),
        }
    }

    fn with(&self, f: impl FnOnce(&mut opentelemetry_sdk::trace::Span)) {
        if let Some(live) = &self.live {
            f(&mut live
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner));
        }
    }

    /// This span as the parent of another of this process's.
    fn context(&self) -> SpanContext {
        Remote {
            trace_id: self.trace_id.clone(),
            span_id: self.span_id.clone(),
            sampled: self.sampled,
        }
        .context()
    }
}

/// A span about to start: its kind, trace and parent, and what describes it (its name and
/// attributes, made only when an exporter will receive them). An SDK tracer takes span
/// ids (and a root's trace id) from its id generator alone, so [`ChosenIds`] hands it
/// these while one span is built on this thread; the ids stay the ones the requests'
/// `traceparent` carries.
struct Start<D> {
    kind: Kind,
    trace_id: String,
    parent: Option<SpanContext>,
    describe: D,
}

thread_local! {
    /// The ids of the span being built on this thread, read by [`ChosenIds`].
    static CHOSEN: Cell<Option<(TraceId, SpanId)>> = const { Cell::new(None) };
}

impl<D: FnOnce() -> (String, Vec<KeyValue>)> Start<D> {
    fn run(self, tracer: Option<&SdkTracer>) -> Span {
        let span_id = random_hex(8);
        let sampled = self.parent.as_ref().is_none_or(SpanContext::is_sampled);
        let live = tracer.and_then(|tracer| {
            let ids = (hex_id(&self.trace_id)?, hex_span_id(&span_id)?);
            let kind = match self.kind {
                Kind::Client => SpanKind::Client,
                Kind::Server => SpanKind::Server,
                Kind::Internal => SpanKind::Internal,
            };
            let (name, attributes) = (self.describe)();
            let builder = tracer
                .span_builder(name)
                .with_kind(kind)
                .with_attributes(attributes);
            let parent = match self.parent {
                Some(sc) => Context::new().with_remote_span_context(sc),
                None => Context::new(),
            };
            CHOSEN.with(|c| c.set(Some(ids)));
            let span = tracer.build_with_context(builder, &parent);
            CHOSEN.with(|c| c.set(None));
            span.is_recording().then(|| Mutex::new(span))
        });
        Span {
            trace_id: self.trace_id,
            span_id,
            sampled,
            live,
        }
    }
}

/// The ids [`Start::run`] chose for the span it builds; random ones otherwise.
#[derive(Debug, Default)]
pub(crate) struct ChosenIds(RandomIdGenerator);

impl IdGenerator for ChosenIds {
    fn new_trace_id(&self) -> TraceId {
        CHOSEN
            .with(Cell::get)
            .map_or_else(|| self.0.new_trace_id(), |(t, _)| t)
    }

    fn new_span_id(&self) -> SpanId {
        CHOSEN
            .with(Cell::get)
            .map_or_else(|| self.0.new_span_id(), |(_, s)| s)
    }
}

/// A span of another process, from its `traceparent`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Remote {
    trace_id: String,
    span_id: String,
    sampled: bool,
}

impl Remote {
    /// A W3C `traceparent` as [`gatehouse_contract::trace_id_of`] reads it (the rule
    /// the ledger and the servers join traces by), its ids in lowercase; anything else
    /// is no parent.
    fn parse(traceparent: &str) -> Option<Remote> {
        let trace_id = gatehouse_contract::trace_id_of(traceparent)?;
        let mut parts = traceparent.split('-').skip(2);
        let (span_id, flags) = (parts.next()?.to_ascii_lowercase(), parts.next()?);
        let flags = u8::from_str_radix(flags, 16).ok()?;
        hex_span_id(&span_id)?;
        Some(Remote {
            trace_id,
            span_id,
            sampled: flags & 1 == 1,
        })
    }

    fn context(&self) -> SpanContext {
        let flags = if self.sampled {
            TraceFlags::SAMPLED
        } else {
            TraceFlags::default()
        };
        SpanContext::new(
            hex_id(&self.trace_id).unwrap_or(TraceId::INVALID),
            hex_span_id(&self.span_id).unwrap_or(SpanId::INVALID),
            flags,
            true,
            TraceState::NONE,
        )
    }
}

/// A trace id from 32 lower-case hex digits, not all zeros.
fn hex_id(hex: &str) -> Option<TraceId> {
    let lower = hex.len() == 32 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let id = TraceId::from_hex(hex).ok().filter(|_| lower)?;
    (id != TraceId::INVALID).then_some(id)
}

/// A span id from 16 lower-case hex digits, not all zeros.
fn hex_span_id(hex: &str) -> Option<SpanId> {
    let lower = hex.len() == 16 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let id = SpanId::from_hex(hex).ok().filter(|_| lower)?;
    (id != SpanId::INVALID).then_some(id)
}

#[cfg(test)]
mod tests;
