//! Recordings: every message of a run as JSON lines, for the lab's explorer.
//!
//! One line per JSON-RPC message or server stderr line:
//! `{"t_ms", "server", "direction", "kind", "id", "method", "summary", "bytes", "message"}`,
//! where `t_ms` is the time since the start of the run (or of the lab's turn), `direction`
//! is `to_server`, `from_server` or `stderr`, and `message` is the whole message (the line
//! itself for stderr). `gatehouse ask --record FILE` writes them with
//! [`RecordingObserver`]; the lab keeps one recording per turn (`lab/recordings.rs`).

use std::{
    collections::HashMap,
    fs::File,
    io::Write,
    path::Path,
    sync::{Arc, Mutex},
    time::Instant,
};

use gatehouse::trace::{MessageKind, Observer, ProgressEvent, Step, ToolEvent, WireEvent};
use serde_json::{Value, json};

/// Longest summary of a stderr line or an error.
const SUMMARY_CHARS: usize = 120;

fn clip(text: &str) -> String {
    gatehouse::text::clip(text, SUMMARY_CHARS).into_owned()
}

/// Milliseconds since `start`, to a tenth.
pub fn ms_since(start: Instant) -> f64 {
    (start.elapsed().as_secs_f64() * 10_000.0).round() / 10.0
}

/// Turns wire events into recorded lines, remembering each request's method so an answer
/// can say what it answers.
#[derive(Default)]
pub struct Summaries {
    /// `server id` → method of the request with that id.
    methods: Mutex<HashMap<String, String>>,
}

impl Summaries {
    /// One recorded line for a JSON-RPC message.
    pub fn wire_line(&self, t_ms: f64, event: &WireEvent) -> Value {
        let key = format!(
            "{} {}",
            event.server,
            event.id.as_ref().map(Value::to_string).unwrap_or_default()
        );
        let mut methods = self.methods.lock().unwrap_or_else(|e| e.into_inner());
        let summary = match (event.kind, &event.method) {
            (MessageKind::Request, Some(m)) => {
                methods.insert(key, m.clone());
                match event.message["params"]["name"].as_str() {
                    Some(tool) if m == "tools/call" => format!("call {tool}"),
                    _ => format!("request {m}"),
                }
            }
            (MessageKind::Notification, Some(m)) => format!("notification {m}"),
            (MessageKind::Error, _) => {
                let of = methods.remove(&key).unwrap_or_else(|| "?".into());
                let message = event.message["error"]["message"].as_str().unwrap_or("");
                format!("error for {of}: {}", clip(message))
            }
            _ => {
                let of = methods.remove(&key).unwrap_or_else(|| "?".into());
                match event.message["result"]["resultType"].as_str() {
                    Some("input_required") => format!("result of {of}: input required"),
                    _ => format!("result of {of}"),
                }
            }
        };
        json!({
            "t_ms": t_ms,
            "server": event.server,
            "direction": event.direction,
            "kind": event.kind,
            "id": event.id,
            "method": event.method,
            "summary": summary,
            "bytes": event.bytes,
            "message": event.message,
        })
    }
}

/// One recorded line for a line a server wrote on its stderr.
pub fn stderr_line(t_ms: f64, server: &str, line: &str) -> Value {
    json!({
        "t_ms": t_ms,
        "server": server,
        "direction": "stderr",
        "kind": "stderr",
        "id": null,
        "method": null,
        "summary": clip(line),
        "bytes": line.len(),
        "message": line,
    })
}

/// An observer that writes every message to a file as JSON lines and passes everything on
/// to another observer (the terminal printer). Used by `gatehouse ask --record FILE`.
pub struct RecordingObserver {
    inner: Arc<dyn Observer>,
    file: Mutex<File>,
    start: Instant,
    summaries: Summaries,
}

impl RecordingObserver {
    /// Create (or truncate) the recording file, readable by the user only: it holds every
    /// message of the run.
    pub fn create(path: &Path, inner: Arc<dyn Observer>) -> anyhow::Result<Self> {
        let file = gatehouse::files::create_private(path)
            .map_err(|e| anyhow::anyhow!("cannot write the recording {}: {e}", path.display()))?;
        Ok(RecordingObserver {
            inner,
            file: Mutex::new(file),
            start: Instant::now(),
            summaries: Summaries::default(),
        })
    }

    /// Write one line, timed under the lock so the file stays in time order.
    fn write(&self, line: impl FnOnce(f64) -> Value) {
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let mut text = line(ms_since(self.start)).to_string();
        text.push('\n');
        // A full disk must not stop the run; the recording is a by-product.
        let _ = file.write_all(text.as_bytes());
    }
}

impl Observer for RecordingObserver {
    fn step(&self, step: &Step) {
        self.inner.step(step);
    }

    fn server_stderr(&self, server: &str, line: &str) {
        self.write(|t| stderr_line(t, server, line));
        self.inner.server_stderr(server, line);
    }

    fn tool_event(&self, event: &ToolEvent) {
        self.inner.tool_event(event);
    }

    fn wants_wire(&self) -> bool {
        true
    }

    fn wire(&self, event: &WireEvent) {
        self.write(|t| self.summaries.wire_line(t, event));
        if self.inner.wants_wire() {
            self.inner.wire(event);
        }
    }

    fn progress(&self, event: &ProgressEvent) {
        self.inner.progress(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse::trace::Direction;

    #[test]
    fn answers_say_what_they_answer() {
        let s = Summaries::default();
        let req = WireEvent::new(
            "support",
            Direction::ToServer,
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_ticket"}}),
        );
        let line = s.wire_line(1.5, &req);
        assert_eq!(line["summary"], "call get_ticket");
        assert_eq!(line["direction"], "to_server");
        assert_eq!(line["method"], "tools/call");
        let res = WireEvent::new(
            "support",
            Direction::FromServer,
            json!({"jsonrpc": "2.0", "id": 3, "result": {}}),
        );
        let line = s.wire_line(2.0, &res);
        assert_eq!(line["summary"], "result of tools/call");
        assert_eq!(line["kind"], "result");
        assert_eq!(line["bytes"], res.bytes);
        let err = stderr_line(3.0, "support", &"x".repeat(500));
        assert_eq!(err["direction"], "stderr");
        assert!(err["summary"].as_str().unwrap().ends_with('…'));
    }
}
