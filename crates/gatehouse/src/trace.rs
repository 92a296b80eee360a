//! What happened, step by step: the record a person reads (`[host] …`) and a script checks
//! (`--json`). Every stage of a turn writes here, and an observer can show each step the
//! moment it happens.

use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::Value;

/// Who a step is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Who {
    /// The host: discovery, decisions, refusals, time limits.
    Host,
    /// The model: what it proposed, its answer.
    Model,
    /// A server: results, errors, progress, questions.
    Server,
    /// The person: approvals, answers.
    Person,
}

impl Who {
    /// The word the run shows (`host`, `model`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Who::Host => "host",
            Who::Model => "model",
            Who::Server => "server",
            Who::Person => "person",
        }
    }
}

/// One line of the run: who, a sentence, and the data behind it.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Who acted.
    pub who: Who,
    /// What happened, in a sentence.
    pub text: String,
    /// The data behind it.
    pub data: Value,
}

/// The data key that marks a step as a detail ([`Trace::add_detail`]).
pub const DETAIL_KEY: &str = "detail";

/// Something that wants to see a run as it happens (the terminal printer, the lab).
pub trait Observer: Send + Sync {
    /// A step was recorded.
    fn step(&self, step: &Step);
    /// A server wrote a line on its stderr. It is the server's, not the host's.
    fn server_stderr(&self, server: &str, line: &str);
    /// One `host.tool_call` record: the host's view of one call, joinable with the
    /// servers' `mcp.request` records on `trace_id` and `step`.
    fn tool_event(&self, event: &ToolEvent) {
        let _ = event;
    }
    /// Does this observer want every JSON-RPC message ([`Observer::wire`])? Taps cost a
    /// serialisation per message, so connections only install them when asked.
    fn wants_wire(&self) -> bool {
        false
    }
    /// One JSON-RPC message between the host and a server.
    fn wire(&self, event: &WireEvent) {
        let _ = event;
    }
    /// A server reported progress on the call in flight.
    fn progress(&self, event: &ProgressEvent) {
        let _ = event;
    }
    /// A call of an earlier turn that went on as a task has ended, and this turn gives
    /// the model its end: a notice for the person (the step says it too).
    fn task_ended(&self, notice: &TaskEnded) {
        let _ = notice;
    }
    /// The host is now waiting on a server round (`Some`), or no longer (`None`): a
    /// screen can show the time so far when the server says nothing.
    fn waiting(&self, round: Option<&Waiting<'_>>) {
        let _ = round;
    }
}

/// A server round the host waits on (borrowed: told on every round, most observers
/// ignore it).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Waiting<'a> {
    /// The server's name.
    pub server: &'a str,
    /// The tool (or what else) as the server names it.
    pub tool: &'a str,
}

/// A task that went on in the background has ended, found at the start of a later turn.
#[derive(Debug, Clone, Serialize)]
pub struct TaskEnded {
    /// The server's name.
    pub server: String,
    /// The tool as the model named it.
    pub tool: String,
    /// The server's id of the task.
    pub task_id: String,
    /// How it ended: `completed`, `failed` or `cancelled`.
    pub status: &'static str,
}

/// Progress a server reported on one call (`notifications/progress`).
#[derive(Debug, Clone, Serialize)]
pub struct ProgressEvent {
    /// The server's name.
    pub server: String,
    /// The tool as the model named it.
    pub tool: String,
    /// How far it is.
    pub progress: f64,
    /// Out of how much, when it knows.
    pub total: Option<f64>,
    /// What it says it is doing.
    pub message: Option<String>,
}

/// Which way a message went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// From the host to the server.
    ToServer,
    /// From the server to the host.
    FromServer,
}

/// What a JSON-RPC message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// It has a method and an id: it wants an answer.
    Request,
    /// It answers a request with a result.
    Result,
    /// It answers a request with an error.
    Error,
    /// It has a method and no id.
    Notification,
}

/// One JSON-RPC message as the host sent or received it, for recordings and the explorer.
#[derive(Debug, Clone, Serialize)]
pub struct WireEvent {
    /// The server's name.
    pub server: String,
    /// Which way.
    pub direction: Direction,
    /// Request, result, error or notification.
    pub kind: MessageKind,
    /// Its JSON-RPC id, for requests and answers.
    pub id: Option<Value>,
    /// The method of a request or notification.
    pub method: Option<String>,
    /// Bytes of the message as compact JSON.
    pub bytes: usize,
    /// The whole message (the host's secrets replaced).
    pub message: Value,
}

impl WireEvent {
    /// Describe one message.
    pub fn new(server: &str, direction: Direction, message: Value) -> Self {
        let kind = if message.get("method").is_some() {
            if message.get("id").is_some() {
                MessageKind::Request
            } else {
                MessageKind::Notification
            }
        } else if message.get("error").is_some() {
            MessageKind::Error
        } else {
            MessageKind::Result
        };
        WireEvent {
            server: server.to_owned(),
            direction,
            kind,
            id: message.get("id").cloned(),
            method: message
                .get("method")
                .and_then(Value::as_str)
                .map(str::to_owned),
            bytes: message.to_string().len(),
            message,
        }
    }
}

/// How one proposed call ended, as its `host.tool_call` record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A result went back to the model.
    Ok,
    /// The tool ran and reported an error (`isError`, or a result that breaks its schema).
    ToolError,
    /// A protocol error, or the call failed (connection, server).
    Error,
    /// The model proposed a tool that is not in the catalog.
    UnknownTool,
    /// The host refused it before sending anything (size, schema, a link not given).
    Refused,
    /// The person said no.
    Declined,
    /// A server round passed its time limit; the call was cancelled.
    Timeout,
    /// The person stopped it.
    Stopped,
    /// The server runs it as a task, which went on in the background when the turn
    /// stopped waiting.
    Background,
}

/// Who let a call go to its server, as its `host.tool_call` record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovedBy {
    /// The person, asked about this call (at the terminal, in the lab, on a gateway's
    /// approval page).
    Person,
    /// A command-line option that answers for the person (`--yes`).
    Option,
    /// A gateway's caller, in their own client's form.
    Client,
    /// A rule of `rules`.
    Rule,
    /// The `allow` list.
    AllowList,
    /// An approval the person gave earlier (this session, this project).
    Remembered,
    /// The `beforeCall` hook.
    Hook,
    /// One of the host's own tools, which run unasked.
    Host,
}

impl ApprovedBy {
    /// Was the person (or what answers for them) asked about the call itself?
    pub fn asked(self) -> bool {
        matches!(
            self,
            ApprovedBy::Person | ApprovedBy::Option | ApprovedBy::Client
        )
    }
}

/// The host's record of one proposed call, whatever became of it.
#[derive(Debug, Clone, Serialize)]
pub struct ToolEvent {
    /// The host's session.
    pub session_id: String,
    /// The question's trace (a W3C trace id).
    pub trace_id: String,
    /// The call's number in the turn.
    pub step: u64,
    /// The server's name, or `-` when the tool is not in the catalog.
    pub server: String,
    /// The tool, as the model named it.
    pub tool: String,
    /// The argument names only: values may be personal or large.
    pub arg_keys: Vec<String>,
    /// How it ended.
    pub outcome: Outcome,
    /// Was the person asked anything about the call: whether to run it (whatever the
    /// answer), or a question of the server's during it?
    pub asked_user: bool,
    /// Who let it go to its server; `None` when it was not sent (refused, declined).
    pub approved_by: Option<ApprovedBy>,
    /// Did the server ask the person a question (a form, a page) during the call?
    pub server_asked: bool,
    /// From the proposal to what the model reads.
    pub ms: f64,
    /// Bytes of what went back into the model's context.
    pub result_bytes: usize,
    /// The task the server ran the call as, if it did: its `tasks/*` requests carry the
    /// same `trace_id` and `step`, so the server's records of them join this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
}

impl ToolEvent {
    /// The record as one JSON object, `operation` first, its strings made visible (the
    /// tool's name is the model's own text).
    pub fn record(&self) -> Value {
        let mut v = serde_json::json!({"operation": gatehouse_contract::TOOL_CALL_RECORD});
        if let (Some(m), Ok(Value::Object(more))) = (v.as_object_mut(), serde_json::to_value(self))
        {
            m.extend(more);
        }
        crate::text::visible_json(&mut v);
        v
    }
}

/// A fresh random id of `bytes` bytes, as lowercase hex (trace ids, span ids, sessions).
pub fn random_hex(bytes: usize) -> String {
    let mut random = vec![0u8; bytes];
    rand::fill(&mut random[..]);
    crate::digest::hex(&random)
}

/// An observer that shows nothing; the steps are still recorded.
pub struct Quiet;

impl Observer for Quiet {
    fn step(&self, _step: &Step) {}
    fn server_stderr(&self, _server: &str, _line: &str) {}
}

/// Most steps one turn keeps for `--json` (they are still shown as they happen): a
/// server that floods the host with questions or dropped answers cannot fill its memory.
pub const MAX_KEPT_STEPS: usize = 10_000;

/// Most levels of arrays and objects a proposal's arguments keep in a step: deeper ones are
/// shown as the model's text. `--json` nests a step's data four levels down, and JSON
/// readers stop at a depth (serde_json at 128), so a model's deep arguments must not make
/// the run's own output unreadable.
pub const MAX_SHOWN_ARGUMENT_DEPTH: usize = 32;

/// A proposal's arguments as a step shows them: the JSON value the model wrote when it is
/// one that nests at most [`MAX_SHOWN_ARGUMENT_DEPTH`] levels, else its text.
pub fn shown_arguments(raw: &str) -> Value {
    match serde_json::from_str::<Value>(raw) {
        Ok(value) if depth_within(&value, MAX_SHOWN_ARGUMENT_DEPTH) => value,
        _ => Value::String(raw.to_owned()),
    }
}

/// Does `value` nest at most `max` arrays and objects? Iterative: no stack to overflow.
fn depth_within(value: &Value, max: usize) -> bool {
    let mut stack = vec![(value, 0usize)];
    while let Some((v, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        if depth + 1 > max {
            return false;
        }
        stack.extend(children.map(|c| (c, depth + 1)));
    }
    true
}

/// The steps of one run, shared by the stages that write them.
#[derive(Clone)]
pub struct Trace {
    steps: Arc<Mutex<Vec<Step>>>,
    observer: Arc<dyn Observer>,
    secrets: crate::redact::Secrets,
}

impl Trace {
    /// A trace that shows each step to `observer` as it is added.
    pub fn new(observer: Arc<dyn Observer>) -> Self {
        Trace {
            steps: Arc::new(Mutex::new(Vec::new())),
            observer,
            secrets: crate::redact::Secrets::default(),
        }
    }

    /// The host's secrets: replaced in every step, record and message shown or kept.
    pub fn secrets(&self) -> &crate::redact::Secrets {
        &self.secrets
    }

    fn keep(&self, step: Step) {
        let mut steps = self.steps.lock().unwrap_or_else(|e| e.into_inner());
        match steps.len() {
            n if n < MAX_KEPT_STEPS => steps.push(step),
            n if n == MAX_KEPT_STEPS => steps.push(Step {
                who: Who::Host,
                text: format!("further steps are shown but not kept (more than {MAX_KEPT_STEPS})"),
                data: serde_json::json!({}),
            }),
            _ => {}
        }
    }

    /// Record a step that is a detail of the run (routine, or long): kept and recorded
    /// like any, marked [`DETAIL_KEY`] so a screen shows it only when asked to (`-v`).
    pub fn add_detail(&self, who: Who, text: impl Into<String>, mut data: Value) {
        if let Value::Object(map) = &mut data {
            map.insert(DETAIL_KEY.into(), Value::Bool(true));
        }
        self.add(who, text, data);
    }

    /// Record a step and show it to the observer. Its text and every string of its data
    /// are made visible first ([`crate::text::visible`]): a step is shown to a person, and
    /// servers and the model write much of it.
    pub fn add(&self, who: Who, text: impl Into<String>, mut data: Value) {
        let text = text.into();
        let text = self.secrets.text(&text);
        let text = crate::text::visible(&text).into_owned();
        self.secrets.json(&mut data);
        crate::text::visible_json(&mut data);
        let step = Step { who, text, data };
        self.observer.step(&step);
        self.keep(step);
    }

    /// Say that the host waits on a server round (`Some`) or no longer does (`None`).
    pub fn waiting(&self, round: Option<&Waiting<'_>>) {
        self.observer.waiting(round);
    }

    /// Report progress: shown live to the observer, and kept as a `[server] progress …`
    /// step when `keep` (the run's record is bounded).
    pub fn progress(&self, event: &ProgressEvent, keep: bool) {
        let mut event = event.clone();
        if let Some(m) = &event.message {
            event.message = Some(crate::text::visible_line(m).into_owned());
        }
        let event = &event;
        self.observer.progress(event);
        if keep {
            let amount = match event.total {
                Some(total) => format!("{}/{}", event.progress, total),
                None => format!("{}", event.progress),
            };
            let text = match &event.message {
                Some(m) => format!("progress {amount}: {m}"),
                None => format!("progress {amount}"),
            };
            let step = Step {
                who: Who::Server,
                text,
                data: serde_json::json!({"server": event.server, "tool": event.tool,
                    "progress": event.progress, "total": event.total}),
            };
            self.keep(step);
        }
    }

    /// Report one tool call's record to the observer.
    pub fn tool_event(&self, event: &ToolEvent) {
        let mut event = event.clone();
        event.tool = self.secrets.text(&event.tool).into_owned();
        let event = &event;
        self.observer.tool_event(event);
    }

    /// A task of an earlier turn has ended and the model reads its end now: the step, and
    /// the observer's notice, made visible and its secrets replaced like any step.
    pub fn task_ended(&self, notice: &TaskEnded) {
        let mut notice = notice.clone();
        for text in [&mut notice.server, &mut notice.tool, &mut notice.task_id] {
            *text = crate::text::visible_line(&self.secrets.text(text)).into_owned();
        }
        self.add(
            Who::Host,
            format!(
                "task {} ({}), which went on in the background, has ended: {}; the model reads its end with this question",
                notice.task_id, notice.tool, notice.status
            ),
            serde_json::json!({"server": notice.server, "task_id": notice.task_id,
                "status": notice.status, "decision": "task_reported"}),
        );
        self.observer.task_ended(&notice);
    }

    /// The observer, for stages that report more than steps (server stderr).
    pub fn observer(&self) -> Arc<dyn Observer> {
        self.observer.clone()
    }

    /// Take the steps recorded so far, leaving the trace empty for the next turn.
    pub fn take(&self) -> Vec<Step> {
        std::mem::take(&mut *self.steps.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_ids_are_hex_of_their_length_and_differ() {
        let (a, b) = (random_hex(16), random_hex(16));
        assert_eq!(a.len(), 32);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
        assert_eq!(random_hex(0), "");
    }

    #[test]
    fn arguments_are_shown_as_json_up_to_the_depth_and_as_text_past_it() {
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let at = nested(MAX_SHOWN_ARGUMENT_DEPTH);
        assert!(shown_arguments(&at).is_array());
        let past = nested(MAX_SHOWN_ARGUMENT_DEPTH + 1);
        assert_eq!(shown_arguments(&past), Value::String(past.clone()));
        let deep_object = format!("{}1{}", r#"{"a":"#.repeat(200), "}".repeat(200));
        assert!(shown_arguments(&deep_object).is_string());
        assert_eq!(shown_arguments(r#"{"q": 1}"#), serde_json::json!({"q": 1}));
        assert_eq!(
            shown_arguments("not json"),
            Value::String("not json".into())
        );
        assert_eq!(shown_arguments("7"), serde_json::json!(7));
    }

    /// Keeps the notices it is shown.
    #[derive(Default)]
    struct Notices(Mutex<Vec<TaskEnded>>);

    impl Observer for Notices {
        fn step(&self, _: &Step) {}
        fn server_stderr(&self, _: &str, _: &str) {}
        fn task_ended(&self, notice: &TaskEnded) {
            self.0.lock().unwrap().push(notice.clone());
        }
    }

    #[test]
    fn a_task_ended_notice_is_shown_visible_and_without_secrets_and_said_as_a_step() {
        let seen = Arc::new(Notices::default());
        let trace = Trace::new(seen.clone());
        trace.secrets().add("sk-live-0123456789abcdef");
        trace.task_ended(&TaskEnded {
            server: "srv\u{1b}]0;owned\u{7}".into(),
            tool: "srv__job\u{1b}[2J".into(),
            task_id: "id-sk-live-0123456789abcdef\nforged line".into(),
            status: "completed",
        });
        let notice = seen.0.lock().unwrap()[0].clone();
        for text in [&notice.server, &notice.tool, &notice.task_id] {
            assert!(!text.contains(['\u{1b}', '\u{7}', '\n']), "{text:?}");
        }
        assert!(!notice.task_id.contains("sk-live"), "{}", notice.task_id);
        let steps = trace.take();
        assert_eq!(steps.len(), 1);
        assert!(
            steps[0].text.starts_with("task id-[redacted]"),
            "{}",
            steps[0].text
        );
        assert!(steps[0].text.contains("has ended: completed"));
        assert_eq!(steps[0].data["decision"], "task_reported");
    }
}
