//! How a call's end becomes what the model reads (bounded), what the person sees of it (a
//! step), and what is kept for the person (saved binaries): the one place a result, a tool
//! error, a protocol error, a timeout, a stop or a failure is turned into text.
//!
//! The host's secrets are taken out first: a server may echo back the credentials it was
//! given, and neither the model nor the run may see them.

use std::{path::Path, time::Duration};

use rmcp::model::{CallToolResult, ContentBlock, ReadResourceResult};
use serde_json::{Value, json};

use super::{ForModel, blocks};
use crate::{
    catalog::CatalogTool,
    dispatch::{
        CallEnd,
        task::{self, TaskSeen},
    },
    redact::Secrets,
    text,
    trace::{Outcome, Trace, Who},
};

/// What a time-out tells the person: the settings that give a call longer.
pub const RAISE_TIMEOUT: &str = "(a longer limit: toolTimeoutMs in the servers file, or HOST_TOOL_TIMEOUT; progress from the server extends it up to toolMaxTimeoutMs)";
/// The key of a result step's data that holds the text the model reads.
pub const RESULT_TEXT_KEY: &str = "text";
/// Most characters of a block meant for the person only that a step shows.
pub const MAX_SHOWN_CHARS: usize = 2_000;

/// What the model is told of a call that goes on in the background as a task.
pub const BACKGROUND_NOTE: &str = "The server runs this call as a task, which was still going when the host stopped waiting. It goes on in the background: do not call the tool again for it. Its result will be given to you with the person's next question; the person can see it now with `gatehouse tasks show ID`.";

/// What one call's end came to.
#[derive(Debug)]
pub struct Shaped {
    /// What the model reads.
    pub shown: ForModel,
    /// How the call ended, for the `host.tool_call` record.
    pub outcome: Outcome,
    /// The resource URIs the result linked to, which `read_resource` may then follow.
    pub links: Vec<String>,
    /// The whole result as text, when it was cut and is to be kept for `read_result`.
    pub whole: Option<String>,
}

/// Turns ends into text, for one turn.
pub struct Shaper<'a> {
    /// Where the steps go.
    pub trace: &'a Trace,
    /// The bound on what the model reads (`maxResultChars`).
    pub max_chars: usize,
    /// Pass images and audio to the model as input (`modelAcceptsMedia`).
    pub media_for_model: bool,
    /// Where binary blocks are saved for the person.
    pub save_dir: &'a Path,
    /// The id a cut result is kept under for `read_result` (`None`: cut results are not
    /// kept, and their note says to ask for less).
    pub keep_as: Option<String>,
}

impl Shaper<'_> {
    /// A refusal or any other error the host gives the model itself.
    pub fn error(&self, name: &str, error: &str) -> ForModel {
        super::failure(name, error, self.max_chars)
    }

    /// The end of a tool call: `name` as the model named it, `tool` its catalog entry,
    /// `stem` naming any files saved, `ms` the time it took.
    pub fn call(
        &self,
        name: &str,
        tool: &CatalogTool,
        end: CallEnd,
        ms: f64,
        stem: &str,
    ) -> Shaped {
        let server = tool.origin.label();
        let r = match redacted(end, self.trace.secrets()) {
            CallEnd::Result(r) => r,
            CallEnd::Background(left) => return self.background(name, server, &left),
            other => return self.unfinished(name, other, "call"),
        };
        let failed = if r.is_error == Some(true) {
            Some((blocks::error_text(&r), json!({"ms": ms})))
        } else {
            output_mismatch(tool, &r).map(|e| (e, json!({"ms": ms, "decision": "output_mismatch"})))
        };
        if let Some((error, data)) = failed {
            self.trace
                .add(Who::Server, format!("tool error: {error}"), data);
            return self.shaped(name, &error, Outcome::ToolError);
        }
        let (value, attachments) = blocks::result_value(&r);
        let (mut shown, whole) = self.bounded(name, &value, &attachments);
        if self.media_for_model {
            shown.media = blocks::media_for_model(&r.content);
        }
        // The text the model reads is in the step's data (for `--json`, the log and `-v`),
        // made visible and within the result's bound like everything the model gets.
        self.trace.add(
            Who::Server,
            format!("result: {} characters", shown.chars),
            json!({"ms": ms, "clipped": shown.clipped, RESULT_TEXT_KEY: shown.text}),
        );
        self.keep_whole(whole.as_deref(), server, stem);
        self.keep_for_person(&r.content, server, stem);
        self.show_person_only_blocks(&r.content, server);
        Shaped {
            shown,
            outcome: Outcome::Ok,
            links: blocks::linked_uris(&r),
            whole,
        }
    }

    /// A value for the model within the bound, and, when it was cut and is kept, its
    /// whole text.
    fn bounded(
        &self,
        name: &str,
        value: &Value,
        attachments: &[String],
    ) -> (ForModel, Option<String>) {
        match &self.keep_as {
            Some(id) => super::success_kept(
                name,
                value,
                attachments,
                self.max_chars,
                id,
                super::pages::MAX_KEPT_CHARS,
            ),
            None => (
                super::success_with(name, value, attachments, self.max_chars),
                None,
            ),
        }
    }

    /// A cut result kept for `read_result` is saved for the person too, and the step says
    /// where.
    fn keep_whole(&self, whole: Option<&str>, server: &str, stem: &str) {
        let Some(whole) = whole else {
            return;
        };
        let chars = whole.chars().count();
        let id = self.keep_as.as_deref().unwrap_or("");
        match crate::files::write_new(self.save_dir, &format!("{stem}-result"), "txt", whole.as_bytes()) {
            Ok(path) => self.trace.add(
                Who::Host,
                format!("the whole result ({chars} characters) is kept as {id} for read_result and saved to {}", path.display()),
                json!({"server": server, "id": id, "chars": chars, "path": path}),
            ),
            Err(e) => self.trace.add(
                Who::Host,
                format!("the whole result ({chars} characters) is kept as {id} for read_result; it could not be saved: {e}"),
                json!({"server": server, "id": id, "chars": chars}),
            ),
        }
    }

    /// The end of the host's own `read_resource`: text for the model, blobs saved for the
    /// person and described.
    pub fn read(
        &self,
        name: &str,
        server: &str,
        uri: &str,
        end: CallEnd<ReadResourceResult>,
        ms: f64,
        stem: &str,
    ) -> Shaped {
        let read = match end {
            CallEnd::Result(read) => read,
            other => return self.unfinished(name, other, "read"),
        };
        let mut contents: Vec<Value> = read
            .contents
            .iter()
            .map(|c| serde_json::to_value(c).unwrap_or_default())
            .collect();
        contents
            .iter_mut()
            .for_each(|c| self.trace.secrets().json(c));
        let saved: Vec<ContentBlock> = contents
            .iter()
            .filter(|c| c.get("blob").is_some())
            .filter_map(|c| serde_json::from_value(json!({"type": "resource", "resource": c})).ok())
            .collect();
        self.keep_for_person(&saved, server, stem);
        let value: Vec<Value> = contents
            .iter()
            .map(|c| match c.get("text") {
                Some(text) => json!({"uri": c["uri"], "mimeType": c["mimeType"], "text": text}),
                None => json!({"uri": c["uri"], "mimeType": c["mimeType"],
                               "binary": format!("{} bytes of base64, saved for the person", c["blob"].as_str().map_or(0, str::len))}),
            })
            .collect();
        let (shown, whole) = self.bounded(name, &Value::Array(value), &[]);
        self.trace.add(
            Who::Server,
            format!("result: {} characters", shown.chars),
            json!({"ms": ms, "clipped": shown.clipped, "uri": uri, "server": server,
                   RESULT_TEXT_KEY: shown.text}),
        );
        self.keep_whole(whole.as_deref(), server, stem);
        Shaped {
            shown,
            outcome: Outcome::Ok,
            links: Vec::new(),
            whole,
        }
    }

    /// An end without a result: a protocol error, a time-out, a stop or a failure.
    fn unfinished<T>(&self, name: &str, end: CallEnd<T>, what: &str) -> Shaped {
        match end {
            CallEnd::Result(_) => self.shaped(name, "the server's answer was lost", Outcome::Error),
            CallEnd::ProtocolError(e) => {
                self.trace.add(
                    Who::Server,
                    format!("protocol error {}: {}", e.code.0, e.message),
                    json!({"code": e.code.0}),
                );
                self.shaped(name, &e.message, Outcome::Error)
            }
            CallEnd::TimedOut(after) => {
                let after_text = text::seconds(after);
                self.trace.add(
                    Who::Host,
                    format!("timed out after {after_text}: the {what} was cancelled on the server {RAISE_TIMEOUT}"),
                    json!({"decision": "timeout", "timeout_ms": after.as_millis() as u64}),
                );
                let error = format!("the {what} timed out after {after_text} and was cancelled");
                self.shaped(name, &error, Outcome::Timeout)
            }
            CallEnd::Stopped => {
                self.trace.add(
                    Who::Person,
                    format!("stopped the {what}: it was cancelled on the server"),
                    json!({"decision": "stopped"}),
                );
                let error = format!("the person stopped this {what} before it finished");
                self.shaped(name, &error, Outcome::Stopped)
            }
            CallEnd::Failed(reason) => {
                self.trace.add(
                    Who::Host,
                    format!("the {what} failed: {reason}"),
                    json!({"error": reason}),
                );
                self.shaped(name, &reason, Outcome::Error)
            }
            CallEnd::Background(left) => {
                let error = format!("the {what} goes on in the background as task {}", left.id);
                self.shaped(name, &error, Outcome::Background)
            }
        }
    }

    /// A call the server runs as a task that goes on without the turn: the model learns
    /// the task's id and where it is, and that its result comes later.
    fn background(&self, name: &str, server: &str, left: &TaskSeen) -> Shaped {
        let mut task =
            json!({"id": left.id, "server": server, "status": task::status_word(left.status)});
        if let Some(message) = &left.message {
            task["statusMessage"] = json!(message);
        }
        let value = json!({"task": task, "note": BACKGROUND_NOTE});
        Shaped {
            shown: super::success(name, &value, self.max_chars),
            outcome: Outcome::Background,
            links: Vec::new(),
            whole: None,
        }
    }

    fn shaped(&self, name: &str, error: &str, outcome: Outcome) -> Shaped {
        Shaped {
            shown: self.error(name, error),
            outcome,
            links: Vec::new(),
            whole: None,
        }
    }

    /// Save the binary blocks of a result for the person, and say where they are.
    fn keep_for_person(&self, content: &[ContentBlock], server: &str, stem: &str) {
        let (saved, problems) = blocks::save_binaries(content, self.save_dir, stem);
        for s in saved {
            self.trace.add(
                Who::Server,
                format!("{} {} ({} bytes) saved to {}", s.kind, s.mime, s.bytes, s.path.display()),
                json!({"server": server, "kind": s.kind, "mime": s.mime, "bytes": s.bytes, "path": s.path}),
            );
        }
        for p in problems {
            self.trace.add(Who::Host, p, json!({"server": server}));
        }
    }

    /// Blocks a server meant for the person only (`audience: ["user"]`) stay out of the
    /// model's context, so they are shown to the person here instead.
    fn show_person_only_blocks(&self, content: &[ContentBlock], server: &str) {
        for block in content.iter().filter(|b| !blocks::meant_for_model(b)) {
            let text = blocks::content_text(std::slice::from_ref(block));
            let shown = text::clip(&text, MAX_SHOWN_CHARS);
            self.trace.add(
                Who::Server,
                format!("for the person only: {shown}"),
                json!({"server": server, "audience": "user", "chars": text.chars().count()}),
            );
        }
    }
}

/// A call's end with the host's secrets taken out.
fn redacted(end: CallEnd, secrets: &Secrets) -> CallEnd {
    if secrets.is_empty() {
        return end;
    }
    match end {
        CallEnd::Result(r) => {
            let mut value = serde_json::to_value(&r).unwrap_or_default();
            secrets.json(&mut value);
            CallEnd::Result(serde_json::from_value(value).unwrap_or(r))
        }
        CallEnd::ProtocolError(mut e) => {
            e.message = secrets.text(&e.message).into_owned().into();
            if let Some(data) = &mut e.data {
                secrets.json(data);
            }
            CallEnd::ProtocolError(e)
        }
        CallEnd::Failed(reason) => CallEnd::Failed(secrets.text(&reason).into_owned()),
        other => other,
    }
}

/// Why a result breaks the tool's own output schema, if it does. A tool that declares one
/// promises `structuredContent` that matches it.
fn output_mismatch(tool: &CatalogTool, r: &CallToolResult) -> Option<String> {
    let schema = tool.output.as_ref()?;
    let Some(structured) = &r.structured_content else {
        return Some(
            "the result has no structuredContent, though the tool declares an output schema".into(),
        );
    };
    let problems = crate::schema::problems(schema, structured);
    (!problems.is_empty()).then(|| {
        format!(
            "the result does not match the tool's output schema: {}",
            problems.join("; ")
        )
    })
}

/// Milliseconds, to a tenth, as the run's data shows them.
pub fn round_ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 10_000.0).round() / 10.0
}
