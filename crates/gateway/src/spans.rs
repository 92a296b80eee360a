//! The spans of the requests the gateway answers (`tools/call`, `resources/read`, and the
//! lists, prompts and completions it passes on): each in the trace of the `traceparent`
//! its client sent, under the client's span, and ended with how the gateway answered. The call behind, to a server, is a child span
//! (`call.rs`, `span_behind`).

use rmcp::{
    ErrorData, RoleServer,
    model::{CallToolRequestParams, CallToolResponse, ReadResourceRequestParams},
    service::RequestContext,
};

use gatehouse::telemetry::{Network, Request, Span};

/// The span of a `tools/call` the gateway answers.
pub(crate) fn call_span(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Span {
    let protocol = context.protocol_version();
    let request = Request {
        method: "tools/call",
        tool: Some(&request.name),
        prompt: None,
        resource_uri: None,
        protocol: protocol.as_ref().map(|p| p.as_str()),
        network: &Network::Unknown,
    };
    Span::server(&request, context.meta.get_traceparent())
}

/// The span of a `resources/read` the gateway answers.
pub(crate) fn read_span(
    request: &ReadResourceRequestParams,
    context: &RequestContext<RoleServer>,
) -> Span {
    let protocol = context.protocol_version();
    let request = Request {
        method: "resources/read",
        tool: None,
        prompt: None,
        resource_uri: Some(&request.uri),
        protocol: protocol.as_ref().map(|p| p.as_str()),
        network: &Network::Unknown,
    };
    Span::server(&request, context.meta.get_traceparent())
}

/// The span of another request the gateway answers (`tools/list`, `prompts/get` of
/// `prompt`, `resources/list`, `completion/complete`, …).
pub(crate) fn request_span(
    method: &str,
    prompt: Option<&str>,
    context: &RequestContext<RoleServer>,
) -> Span {
    let protocol = context.protocol_version();
    let request = Request {
        method,
        tool: None,
        prompt,
        resource_uri: None,
        protocol: protocol.as_ref().map(|p| p.as_str()),
        network: &Network::Unknown,
    };
    Span::server(&request, context.meta.get_traceparent())
}

/// Say on `span` that the request failed, if it did; the answer, as it was.
pub(crate) fn ended<T>(span: &Span, answer: Result<T, ErrorData>) -> Result<T, ErrorData> {
    if let Err(e) = &answer {
        failed_on(span, e);
    }
    answer
}

/// Say on `span` how a `tools/call` was answered: a result that reports an error is a
/// `tool_error`, a question for the person an `input_required` answer.
pub(crate) fn answered_on(span: &Span, answer: &Result<CallToolResponse, ErrorData>) {
    match answer {
        Err(e) => failed_on(span, e),
        Ok(CallToolResponse::Complete(result)) if result.is_error == Some(true) => {
            span.fail(
                "tool_error",
                None,
                "the call was not run, or its tool reported an error",
            );
        }
        Ok(CallToolResponse::InputRequired(_)) => span.set("gatehouse.answer", "input_required"),
        Ok(CallToolResponse::Task(_)) => span.set("gatehouse.answer", "task"),
        Ok(_) => {}
    }
}

/// Say on `span` that the request was answered with a JSON-RPC error.
pub(crate) fn failed_on(span: &Span, e: &ErrorData) {
    let code = i64::from(e.code.0);
    span.fail(&code.to_string(), Some(code), &e.message);
}
