//! `gatehouse tasks list|show|cancel|result ID`: the host library's task records and looks
//! (`gatehouse::tasks`), printed. What a server wrote is made visible and cut short.

use std::time::Duration;

use gatehouse::{
    dispatch::CallEnd,
    result::content_text,
    tasks::{
        Record,
        manage::{self, Manager},
    },
    text::{clip, visible, visible_line},
    trace::Trace,
};
use serde_json::{Value, json};

use crate::{
    args::{TaskArgs, TasksArgs, TasksCommand},
    screen::StepsTo,
    start::{load_config, printer_and_person},
};

/// Most characters of a task's result printed.
pub const MAX_PRINTED_CHARS: usize = 100_000;

/// Run a `gatehouse tasks` command; `Ok(false)` when the task is still running (`result`).
pub async fn run(args: TasksArgs) -> anyhow::Result<bool> {
    match args.command {
        TasksCommand::List(l) => {
            let config = load_config(&l.host, false)?;
            let records = manage::records_of(&config)
                .list()
                .map_err(anyhow::Error::msg)?;
            if l.json {
                let mut v = serde_json::to_value(&records)?;
                gatehouse::text::visible_json(&mut v);
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else if records.is_empty() {
                println!("no tasks");
            } else {
                print!("{}", table(&records));
            }
            Ok(true)
        }
        TasksCommand::Show(t) => one(t, Look::Show).await,
        TasksCommand::Cancel(t) => one(t, Look::Cancel).await,
        TasksCommand::Result(r) => one(r.task, Look::Result(Duration::from_secs(r.wait))).await,
    }
}

/// What is done to one task.
enum Look {
    Show,
    Cancel,
    Result(Duration),
}

async fn one(args: TaskArgs, look: Look) -> anyhow::Result<bool> {
    let config = load_config(&args.run.host, false)?;
    let (printer, person) = printer_and_person(&args.run, &config, StepsTo::Stderr)?;
    let trace = Trace::new(printer);
    let manager = Manager {
        config: &config,
        person,
        trace: &trace,
    };
    let looked = match look {
        Look::Cancel => manager.cancel(&args.id).await,
        Look::Show => manager.look(&args.id, Duration::ZERO).await,
        Look::Result(wait) => manager.look(&args.id, wait).await,
    }
    .map_err(anyhow::Error::msg)?;
    let r = &looked.record;
    if args.json {
        let mut v = json!({"task": r, "end": looked.end.as_ref().map(end_json)});
        gatehouse::text::visible_json(&mut v);
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("{}", summary(r));
        if let (Look::Result(_), Some(end)) = (&look, &looked.end) {
            println!("{}", end_text(end));
        }
    }
    Ok(!matches!(look, Look::Result(_)) || looked.end.is_some())
}

/// One line per task: id, status, tool, server, when, and its last message.
fn table(records: &[Record]) -> String {
    let mut out = format!(
        "{:<34} {:<15} {:<32} {:<12} {}\n",
        "ID", "STATUS", "TOOL", "SERVER", "STARTED"
    );
    for r in records {
        let message = r
            .message
            .as_deref()
            .map(|m| format!("  {}", clip(&visible_line(m), 60)))
            .unwrap_or_default();
        out.push_str(&format!(
            "{:<34} {:<15} {:<32} {:<12} {}{message}\n",
            visible_line(&r.task_id),
            r.status,
            visible_line(&r.tool),
            visible_line(&r.server),
            ago(r.started_ms),
        ));
    }
    out
}

fn ago(ms: u64) -> String {
    let s = gatehouse::tasks::records::now_ms().saturating_sub(ms) / 1000;
    match s {
        0..60 => format!("{s} s ago"),
        60..3600 => format!("{} min ago", s / 60),
        3600..86_400 => format!("{} h ago", s / 3600),
        _ => format!("{} days ago", s / 86_400),
    }
}

fn summary(r: &Record) -> String {
    let message = r
        .message
        .as_deref()
        .map(|m| format!(": {}", clip(&visible_line(m), 200)))
        .unwrap_or_default();
    format!(
        "task {} ({} on {}, started {}): {}{message}",
        visible_line(&r.task_id),
        visible_line(&r.tool),
        visible_line(&r.server),
        ago(r.started_ms),
        r.status
    )
}

fn end_json(end: &CallEnd) -> Value {
    gatehouse::tasks::end_json(end).unwrap_or(Value::Null)
}

/// A task's end for the person: a result's text (and its structured content), an
/// error's code and message, or why it failed; visible and at most [`MAX_PRINTED_CHARS`].
fn end_text(end: &CallEnd) -> String {
    let text = match end {
        CallEnd::Result(r) => {
            let mut text = content_text(&r.content);
            if let Some(s) = r.structured_content.as_ref().filter(|_| text.is_empty()) {
                text = serde_json::to_string_pretty(s).unwrap_or_default();
            }
            if r.is_error == Some(true) {
                format!("tool error: {text}")
            } else {
                text
            }
        }
        CallEnd::ProtocolError(e) => format!("error {}: {}", e.code.0, e.message),
        CallEnd::Failed(why) => format!("failed: {why}"),
        CallEnd::Stopped => "stopped".into(),
        CallEnd::TimedOut(_) | CallEnd::Background(_) => "still running".into(),
    };
    clip(&visible(&text), MAX_PRINTED_CHARS).into_owned()
}
