//! How the gateway answers its caller with a call's end: the server's result as it came,
//! the server's JSON-RPC error with its message made visible and clipped, or why there is
//! none, as a tool error. Calls, passed-on requests and tasks all answer through here.

use rmcp::{
    ErrorData,
    model::{CallToolResponse, CallToolResult, ContentBlock},
};

use crate::error::Error;
use gatehouse::{dispatch::CallEnd, text};

/// A failure as the caller reads it: a tool error.
pub(crate) fn failed(text: String) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(text)]).into()
}

/// A call's end as the caller reads it: the server's result, or its JSON-RPC error
/// (code kept, message made visible), as it came; or why there is none.
pub(crate) fn finished(end: CallEnd) -> Result<CallToolResult, ErrorData> {
    let text = match end {
        // A server on an older revision writes no `resultType`; a 2026-07-28 client needs
        // it (rmcp takes it out again for an older client).
        CallEnd::Result(mut result) => {
            result
                .result_type
                .get_or_insert(rmcp::model::ResultType::COMPLETE);
            return Ok(result);
        }
        CallEnd::ProtocolError(e) => return Err(Error::Server(e).into()),
        CallEnd::TimedOut(after) => format!(
            "the server did not answer within {}; the call was cancelled",
            text::seconds(after)
        ),
        CallEnd::Failed(why) => why,
        CallEnd::Stopped => "the call was cancelled".into(),
        // The gateway follows a task only for the call's wait and keeps no record of it.
        CallEnd::Background(seen) => format!(
            "the server runs this call as task {} ({:?}) and it had not ended within the \
             gateway's wait; the gateway does not follow it further",
            text::clip(&text::visible(&seen.id), 80),
            seen.status
        ),
    };
    Ok(CallToolResult::error(vec![ContentBlock::text(text)]))
}
