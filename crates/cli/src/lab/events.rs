//! What the browser sees: every event of the lab, numbered and timed, kept in a log (so a
//! page that connects late replays it) and sent live over server-sent events.
//!
//! [`LabObserver`] turns the host's steps, tool records, wire messages, stderr lines,
//! progress and the notices of tasks that ended in the background into events, and
//! records the wire in the current turn. [`TimedModel`] wraps the model so the timeline
//! can draw each model call exactly.

use std::{
    collections::VecDeque,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Instant,
};

use futures::future::BoxFuture;
use gatehouse::{
    catalog::ToolSpec,
    model::{Decided, Message, Model, ModelError},
    trace::{Observer, ProgressEvent, Step, TaskEnded, ToolEvent, Who, WireEvent},
};
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use super::recordings::Recordings;
use crate::record::ms_since;

/// Live events a slow page may fall behind by before it must reload.
const LIVE_BUFFER: usize = 4096;
/// Most events the log keeps for a page that connects late: past it the oldest go (their
/// numbers, `seq`, are not reused, so a page sees where its replay starts).
pub const MAX_LOGGED_EVENTS: usize = 20_000;

/// One event, shared: the log, each page's replay and the live feed hold the same one.
pub type Shared = Arc<Value>;

/// The events kept, and the number the next one gets.
#[derive(Default)]
struct Log {
    events: VecDeque<Shared>,
    next_seq: u64,
}

/// The lab's event log and its live feed.
pub struct Hub {
    start: Instant,
    log: Mutex<Log>,
    live: broadcast::Sender<Shared>,
    /// The turn events belong to (0: the start-up).
    turn: AtomicU64,
}

impl Default for Hub {
    fn default() -> Self {
        Hub {
            start: Instant::now(),
            log: Mutex::new(Log::default()),
            live: broadcast::channel(LIVE_BUFFER).0,
            turn: AtomicU64::new(0),
        }
    }
}

impl Hub {
    /// Add one event: `kind` and its fields, stamped with `seq`, `t` (ms since the lab
    /// started) and `turn`.
    pub fn emit(&self, kind: &str, fields: Value) {
        let mut event = Map::new();
        event.insert("type".into(), json!(kind));
        event.insert("t".into(), json!(ms_since(self.start)));
        event.insert("turn".into(), json!(self.turn.load(Ordering::SeqCst)));
        if let Value::Object(more) = fields {
            event.extend(more);
        }
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        event.insert("seq".into(), json!(log.next_seq));
        log.next_seq += 1;
        // What the page shows is what a terminal would: nothing a peer wrote is acted on.
        let mut event = Value::Object(event);
        gatehouse::text::visible_json(&mut event);
        let event = Arc::new(event);
        if log.events.len() == MAX_LOGGED_EVENTS {
            log.events.pop_front();
        }
        log.events.push_back(event.clone());
        // Sent while the log is locked, so a subscriber never sees an event twice or misses one.
        let _ = self.live.send(event);
    }

    /// Start the next turn; events from now on carry its number.
    pub fn next_turn(&self) -> u64 {
        self.turn.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// The events kept so far (shared, not copied) and a live feed of the ones after them.
    pub fn subscribe(&self) -> (Vec<Shared>, broadcast::Receiver<Shared>) {
        let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        (log.events.iter().cloned().collect(), self.live.subscribe())
    }
}

/// Sees the host at work and tells the browser.
pub struct LabObserver {
    pub hub: Arc<Hub>,
    pub recordings: Arc<Recordings>,
    /// The arguments of the last `model: wants X` step, for the tool record that follows.
    wanted: Mutex<Option<Value>>,
}

impl LabObserver {
    pub fn new(hub: Arc<Hub>, recordings: Arc<Recordings>) -> Self {
        LabObserver {
            hub,
            recordings,
            wanted: Mutex::new(None),
        }
    }
}

impl Observer for LabObserver {
    fn step(&self, step: &Step) {
        // A proposal: the model's (`wants X`), or the person's by hand (`calls X`).
        let proposed = match step.who {
            Who::Model => step.text.starts_with("wants "),
            Who::Person => step.text.starts_with("calls "),
            _ => false,
        };
        if proposed {
            *self.wanted.lock().unwrap_or_else(|e| e.into_inner()) =
                Some(step.data["arguments"].clone());
        }
        self.hub.emit(
            "step",
            json!({"who": step.who, "text": step.text, "data": step.data}),
        );
    }

    fn server_stderr(&self, server: &str, line: &str) {
        self.recordings.stderr(server, line);
        self.hub
            .emit("stderr", json!({"server": server, "line": line}));
    }

    fn tool_event(&self, event: &ToolEvent) {
        let arguments = self
            .wanted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or(Value::Null);
        let mut fields = serde_json::to_value(event).unwrap_or_else(|_| json!({}));
        fields["arguments"] = arguments;
        self.hub.emit("tool", fields);
    }

    fn wants_wire(&self) -> bool {
        true
    }

    fn wire(&self, event: &WireEvent) {
        self.recordings.wire(event);
        // The browser gets the envelope; whole messages are in the recordings.
        let tool = match event.method.as_deref() {
            Some("tools/call") => event.message["params"]["name"].clone(),
            _ => Value::Null,
        };
        self.hub.emit(
            "wire",
            json!({
                "server": event.server,
                "direction": event.direction,
                "kind": event.kind,
                "id": event.id,
                "method": event.method,
                "tool": tool,
                "bytes": event.bytes,
            }),
        );
    }

    fn progress(&self, event: &ProgressEvent) {
        self.hub.emit(
            "progress",
            serde_json::to_value(event).unwrap_or_else(|_| json!({})),
        );
    }

    fn task_ended(&self, notice: &TaskEnded) {
        self.hub.emit(
            "task_ended",
            serde_json::to_value(notice).unwrap_or_else(|_| json!({})),
        );
    }
}

/// A model that reports when each of its calls starts and ends, for the timeline.
pub struct TimedModel<'a> {
    pub inner: &'a mut dyn Model,
    pub hub: &'a Hub,
}

impl Model for TimedModel<'_> {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn decide<'b>(&'b mut self, messages: &'b [Message], tools: &'b [ToolSpec]) -> Decided<'b> {
        Box::pin(async move {
            self.hub.emit("model_start", json!({}));
            let decision = self.inner.decide(messages, tools).await;
            let fields = match &decision {
                Ok(d) => json!({
                    "calls": d.tool_calls.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
                    "answer": d.tool_calls.is_empty(),
                }),
                Err(e) => json!({"error": e.to_string()}),
            };
            self.hub.emit("model_end", fields);
            decision
        })
    }

    fn preflight<'b>(&'b mut self) -> BoxFuture<'b, Result<(), ModelError>> {
        self.inner.preflight()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_subscriber_gets_the_log_then_live_events() {
        let hub = Hub::default();
        hub.emit("step", json!({"text": "one"}));
        let (log, mut live) = hub.subscribe();
        assert_eq!(log.len(), 1);
        assert_eq!(log[0]["seq"], 0);
        assert_eq!(log[0]["turn"], 0);
        assert_eq!(hub.next_turn(), 1);
        hub.emit("step", json!({"text": "two"}));
        let next = live.try_recv().unwrap();
        assert_eq!(next["seq"], 1);
        assert_eq!(next["turn"], 1);
        assert_eq!(next["text"], "two");
    }

    #[test]
    fn the_log_keeps_the_latest_events_and_pages_share_them() {
        let hub = Hub::default();
        for i in 0..MAX_LOGGED_EVENTS + 10 {
            hub.emit("step", json!({"text": i}));
        }
        let (first, _) = hub.subscribe();
        assert_eq!(first.len(), MAX_LOGGED_EVENTS);
        assert_eq!(first[0]["seq"], 10);
        assert_eq!(first.last().unwrap()["seq"], MAX_LOGGED_EVENTS + 9);
        // A second page replays the same events, not copies of them.
        let (second, _) = hub.subscribe();
        assert!(first.iter().zip(&second).all(|(a, b)| Arc::ptr_eq(a, b)));
    }

    #[test]
    fn tool_records_carry_the_wanted_arguments() {
        let hub = Arc::new(Hub::default());
        let obs = LabObserver::new(hub.clone(), Arc::new(Recordings::new()));
        obs.step(&Step {
            who: Who::Model,
            text: "wants a__b".into(),
            data: json!({"arguments": {"x": 1}}),
        });
        obs.tool_event(&ToolEvent {
            session_id: "s".into(),
            trace_id: "t".into(),
            step: 1,
            server: "a".into(),
            tool: "a__b".into(),
            arg_keys: vec!["x".into()],
            outcome: gatehouse::trace::Outcome::Ok,
            asked_user: false,
            approved_by: Some(gatehouse::trace::ApprovedBy::AllowList),
            server_asked: false,
            task_id: None,
            ms: 1.0,
            result_bytes: 10,
        });
        let (log, _) = hub.subscribe();
        assert_eq!(log[1]["type"], "tool");
        assert_eq!(log[1]["arguments"], json!({"x": 1}));
        assert_eq!(log[1]["outcome"], "ok");
    }

    #[test]
    fn a_task_that_ended_in_the_background_is_a_notice_event() {
        let hub = Arc::new(Hub::default());
        let obs = LabObserver::new(hub.clone(), Arc::new(Recordings::new()));
        obs.task_ended(&TaskEnded {
            server: "testbed".into(),
            tool: "testbed__task_job".into(),
            task_id: "t-1\u{1b}[2J".into(),
            status: "failed",
        });
        let (log, _) = hub.subscribe();
        assert_eq!(log[0]["type"], "task_ended");
        assert_eq!(log[0]["status"], "failed");
        assert_eq!(log[0]["tool"], "testbed__task_job");
        let id = log[0]["task_id"].as_str().unwrap();
        assert!(id.starts_with("t-1") && !id.contains('\u{1b}'), "{id:?}");
    }
}
