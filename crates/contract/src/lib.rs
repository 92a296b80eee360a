//! What the Gatehouse host and the reference servers agree on beyond MCP itself: the
//! request `_meta` key that carries the host's call number and session, and the names of
//! the log records that join on it (`grep TRACE_ID host.log` joins a host's
//! `host.tool_call` records with each server's `mcp.request` records).
//!
//! One home for both sides, so neither can drift: the host writes what the servers read.
#![warn(missing_docs)]
#![warn(clippy::too_many_lines)]

/// The `_meta` key of every request the host sends: `{"session_id": …, "step": N}`.
pub const TRACE_META_KEY: &str = "io.gatehouse/trace";
/// The field of [`TRACE_META_KEY`] that numbers the host's calls in a turn (its "step").
pub const STEP_FIELD: &str = "step";
/// The field of [`TRACE_META_KEY`] that names the host's session (a chat).
pub const SESSION_FIELD: &str = "session_id";
/// Longest session id a server keeps from a request (anything longer is not the host's).
pub const MAX_SESSION_ID_CHARS: usize = 64;

/// The `operation` of the host's record of one proposed call.
pub const TOOL_CALL_RECORD: &str = "host.tool_call";
/// The `operation` of a server's record of one request.
pub const REQUEST_RECORD: &str = "mcp.request";

/// A W3C `traceparent` for a request of the trace `trace_id` (32 hex) in the span
/// `span_id` (16 hex), sampled.
pub fn traceparent(trace_id: &str, span_id: &str) -> String {
    format!("00-{trace_id}-{span_id}-01")
}

/// The trace id inside a W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`), if well
/// formed, in lowercase. An id of all zeros is invalid (W3C Trace Context), as is the
/// version `ff`.
pub fn trace_id_of(traceparent: &str) -> Option<String> {
    let parts: Vec<&str> = traceparent.split('-').collect();
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    let zeros = |s: &str| s.bytes().all(|b| b == b'0');
    (parts.len() == 4
        && hex(parts[0], 2)
        && !parts[0].eq_ignore_ascii_case("ff")
        && hex(parts[1], 32)
        && !zeros(parts[1])
        && hex(parts[2], 16)
        && !zeros(parts[2])
        && hex(parts[3], 2))
    .then(|| parts[1].to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_carries_its_trace_id_back() {
        let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
        let header = traceparent(trace, "00f067aa0ba902b7");
        assert_eq!(
            header,
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
        assert_eq!(trace_id_of(&header).as_deref(), Some(trace));
        assert_eq!(trace_id_of("00-xyz-00f067aa0ba902b7-01"), None);
        assert_eq!(trace_id_of(""), None);
        // W3C's invalid values: a trace or parent id of zeros, the version ff.
        let zeros = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
        assert_eq!(trace_id_of(zeros), None);
        assert_eq!(trace_id_of(&traceparent(trace, "0000000000000000")), None);
        assert_eq!(trace_id_of(&header.replacen("00", "ff", 1)), None);
    }
}
