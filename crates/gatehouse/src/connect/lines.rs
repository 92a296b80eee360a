//! A stdio server's messages, read off its stdout one JSON line each as rmcp reads them,
//! with one difference: an answer to a `tools/call` the host sent is read straight as the
//! call's result.
//!
//! rmcp reads every message through untagged enums: the whole message is buffered, then
//! each kind of message, and inside a response each of the twenty kinds of result, is tried
//! in turn until one fits; a call's result is the sixteenth. For the support desk's ticket
//! that is about 147,000 instructions an answer, against 38,000 read straight (callgrind;
//! docs/benchmarks.md), most of the host's own work per call. So [`Lines`] notes the ids of
//! the `tools/call` requests it sends, and reads an answer to one of them as a
//! [`CallToolResult`] when the answer has a response's fields only and its result a call
//! result's fields only (`content`, `structuredContent`, `isError`, `resultType`, `_meta`),
//! and says it is complete: a result no other kind could have been read as. Anything else
//! (a question, a task, an error, a notification, a malformed line, an answer to another
//! request) is read by rmcp's own parse, and dropped or answered as rmcp would.

use std::collections::HashSet;

use rmcp::{
    RoleClient,
    model::{
        CallToolResult, ClientNotification, ClientRequest, JsonRpcMessage, JsonRpcResponse,
        JsonRpcVersion2_0, RequestId, ServerResult,
    },
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
};
use serde::{Deserialize, de::IgnoredAny};
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// Most `tools/call` ids noted at once. The host keeps far fewer calls in flight on one
/// server; past it (a server that never answers, a gateway's flood) answers are read the
/// slow way, and nothing grows.
pub const MAX_CALLS_NOTED: usize = 4_096;

/// The room the line buffer keeps between lines. One long line (a listing of a server's
/// hundreds of tools, a large result) grows it; the room past this is given back once the
/// line is read, so a host of twenty servers does not keep each one's longest line.
pub const KEPT_LINE_BYTES: usize = 16 * 1024;

/// What one line of the server's stdout was.
#[derive(Debug)]
pub enum Read {
    /// A message for rmcp.
    Message(Box<RxJsonRpcMessage<RoleClient>>),
    /// Nothing to pass on: an empty line, text that is not JSON, or a notification rmcp
    /// ignores for compatibility.
    Skip,
    /// JSON that is no JSON-RPC message: rmcp answers it with an invalid-request error.
    Invalid,
    /// The server's output ended (or could not be read).
    End,
}

/// A server's stdout as lines, and the `tools/call` requests whose answers are awaited.
pub struct Lines<R> {
    read: BufReader<R>,
    /// The line being read. It is cleared only once a whole line has been read and
    /// parsed: a read cancelled half-way (the service polls in a `select!`) goes on where
    /// it stopped.
    line: Vec<u8>,
    calls: HashSet<RequestId>,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    /// Read messages from `read` (which bounds its lines itself).
    pub fn new(read: R) -> Self {
        Lines {
            read: BufReader::new(read),
            line: Vec::new(),
            calls: HashSet::new(),
        }
    }

    /// Note a message the host is sending: a `tools/call`'s id is awaited from now on; a
    /// cancelled request's is not.
    pub fn sent(&mut self, item: &TxJsonRpcMessage<RoleClient>) {
        match item {
            JsonRpcMessage::Request(r)
                if matches!(r.request, ClientRequest::CallToolRequest(_))
                    && self.calls.len() < MAX_CALLS_NOTED =>
            {
                self.calls.insert(r.id.clone());
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    self.calls.remove(id);
                }
            }
            _ => {}
        }
    }

    /// The next line, read.
    pub async fn next(&mut self) -> Read {
        match self.read.read_until(b'\n', &mut self.line).await {
            Ok(0) | Err(_) => return Read::End,
            // The output ended in the middle of a line: nothing to deliver (as rmcp).
            Ok(_) if self.line.last() != Some(&b'\n') => return Read::End,
            Ok(_) => {}
        }
        let read = read_line(&self.line, &mut self.calls);
        self.line.clear();
        self.line.shrink_to(KEPT_LINE_BYTES);
        read
    }
}

/// One whole line (its newline included or not), read as rmcp reads it but for an answer
/// to a call in `calls`, which is read straight and taken off the list.
pub fn read_line(line: &[u8], calls: &mut HashSet<RequestId>) -> Read {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.is_empty() {
        return Read::Skip;
    }
    if !calls.is_empty()
        && let Some(message) = answer_to_call(line, calls)
    {
        return Read::Message(Box::new(message));
    }
    match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(line) {
        Ok(message) => Read::Message(Box::new(message)),
        Err(_) if ignored_notification(line) => Read::Skip,
        Err(e) => match e.classify() {
            // Not JSON: there is no id to answer, and answering could start an error storm
            // with a peer that echoes (rmcp, and the other SDKs, ignore it).
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => Read::Skip,
            serde_json::error::Category::Data | serde_json::error::Category::Io => Read::Invalid,
        },
    }
}

/// A response, with nothing else in it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer<'a> {
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    #[serde(borrow)]
    result: &'a RawValue,
}

/// The fields of a call's result, and no other: a result with only these could not be read
/// as any other kind (every other kind needs a field of its own), so reading it straight
/// gives what the untagged parse would.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // read to check the names; the values are skipped
struct CallFields {
    content: Option<IgnoredAny>,
    #[serde(rename = "structuredContent")]
    structured_content: Option<IgnoredAny>,
    #[serde(rename = "isError")]
    is_error: Option<IgnoredAny>,
    #[serde(rename = "resultType")]
    result_type: Option<IgnoredAny>,
    #[serde(rename = "_meta")]
    meta: Option<IgnoredAny>,
}

/// `line` as the answer to a call in `calls`, when it is one with a complete call result.
fn answer_to_call(
    line: &[u8],
    calls: &mut HashSet<RequestId>,
) -> Option<RxJsonRpcMessage<RoleClient>> {
    let answer: Answer = serde_json::from_slice(line).ok()?;
    if !calls.contains(&answer.id) {
        return None;
    }
    let raw = answer.result.get();
    serde_json::from_str::<CallFields>(raw).ok()?;
    // rmcp's own reading of a call result: a `resultType` other than `complete` (a
    // question, a task) fails here and is read the slow way.
    let result: CallToolResult = serde_json::from_str(raw).ok()?;
    calls.remove(&answer.id);
    Some(JsonRpcMessage::Response(JsonRpcResponse {
        jsonrpc: answer.jsonrpc,
        id: answer.id,
        result: ServerResult::CallToolResult(result),
    }))
}

/// rmcp's rule for a line it cannot read: a notification it ignores for compatibility (one
/// outside MCP, like LSP's, or an MCP-looking one it does not know).
fn ignored_notification(line: &[u8]) -> bool {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(line) else {
        return false;
    };
    let Some(method) = value.get("method").and_then(serde_json::Value::as_str) else {
        return false;
    };
    let notification = value.get("id").is_none();
    (notification && !standard_method(method))
        || (method.starts_with("notifications/") && !standard_notification(method))
}

/// A method MCP defines (rmcp's list).
fn standard_method(method: &str) -> bool {
    matches!(
        method,
        "initialize"
            | "ping"
            | "server/discover"
            | "prompts/get"
            | "prompts/list"
            | "resources/list"
            | "resources/read"
            | "resources/subscribe"
            | "resources/unsubscribe"
            | "resources/templates/list"
            | "subscriptions/listen"
            | "tools/call"
            | "tools/list"
            | "completion/complete"
            | "elicitation/create"
            | "logging/setLevel"
            | "roots/list"
            | "sampling/createMessage"
    ) || standard_notification(method)
}

/// A notification MCP defines (rmcp's list).
fn standard_notification(method: &str) -> bool {
    matches!(
        method,
        "notifications/cancelled"
            | "notifications/initialized"
            | "notifications/message"
            | "notifications/progress"
            | "notifications/prompts/list_changed"
            | "notifications/resources/list_changed"
            | "notifications/resources/updated"
            | "notifications/roots/list_changed"
            | "notifications/subscriptions/acknowledged"
            | "notifications/tools/list_changed"
    )
}

#[cfg(test)]
mod tests;
