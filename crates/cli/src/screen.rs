//! Who sees what of a run. On a terminal the screen is quiet: the steps (`[host] …`), the
//! answer, the person's questions, progress, and each server's lines that are not routine
//! request records. `-v` adds every relayed stderr line and the host's `host.tool_call`
//! records; `-q` leaves only the answer. A stderr that is not a terminal is a log
//! (`2>host.log`) and keeps every record, as before. `--log FILE` (`logFile`) adds every
//! record, the host's and the servers', to a private file as JSON lines, whatever the
//! screen shows.

use std::{
    fs::File,
    io::{IsTerminal, Write},
    path::Path,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use gatehouse::{
    text::visible_line,
    trace::{Observer, ProgressEvent, Step, ToolEvent, Who},
};
use serde_json::{Map, Value, json};

use crate::output::{progress_bar, step_line};

/// How much of a run the screen shows (`-q`, the default, `-v`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Only the answer, and the questions the person must answer.
    Quiet,
    /// Steps, answer, questions, progress, and the servers' lines that are not routine.
    Normal,
    /// Everything: every relayed stderr line and every host record.
    Verbose,
}

/// Where a run's steps are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepsTo {
    Stdout,
    Stderr,
    Nowhere,
}

impl StepsTo {
    /// Is this stream a terminal?
    pub fn is_terminal(self) -> bool {
        match self {
            StepsTo::Stdout => std::io::stdout().is_terminal(),
            StepsTo::Stderr => std::io::stderr().is_terminal(),
            StepsTo::Nowhere => false,
        }
    }
}

/// The `operation` of a step as the log file keeps it.
pub const STEP_RECORD: &str = "host.step";
/// The key that names, in the log file, the server that wrote a relayed stderr line.
pub const FROM_SERVER_KEY: &str = "from_server";

/// Is a server's stderr line one of its routine per-request records (a JSON object whose
/// `operation` is [`gatehouse_contract::REQUEST_RECORD`])?
pub fn is_routine(line: &str) -> bool {
    record(line).is_some_and(|r| {
        r.get("operation").and_then(Value::as_str) == Some(gatehouse_contract::REQUEST_RECORD)
    })
}

/// A stderr line as a JSON object, when it is one.
fn record(line: &str) -> Option<Map<String, Value>> {
    if !line.trim_start().starts_with('{') {
        return None;
    }
    match serde_json::from_str(line) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// Does colour go to a stream: `--color always`, or `auto` on a terminal when `NO_COLOR`
/// is unset (or empty) and the terminal is not `dumb`?
pub fn colour(choice: clap::ColorChoice, stream_is_terminal: bool) -> bool {
    match choice {
        clap::ColorChoice::Always => true,
        clap::ColorChoice::Never => false,
        clap::ColorChoice::Auto => {
            stream_is_terminal
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::env::var("TERM").map_or(true, |t| t != "dumb")
        }
    }
}

/// Most characters of a result's text `-v` shows below its line.
pub const SHOWN_RESULT_CHARS: usize = 4_000;

/// A result's text as `-v` shows it: below the line, indented, made visible, bounded.
fn result_text(text: &str) -> String {
    let clipped = gatehouse::text::clip(text, SHOWN_RESULT_CHARS);
    let mut shown = String::new();
    for line in clipped.lines() {
        shown.push_str("\n    ");
        shown.push_str(&visible_line(line));
    }
    shown
}

/// Is a step shown at `level`? A detail ([`gatehouse::trace::Trace::add_detail`]) only
/// with `-v`; every step is kept in `--json` and the log whatever the screen shows.
fn on_screen(level: Level, step: &Step) -> bool {
    level == Level::Verbose || step.data[gatehouse::trace::DETAIL_KEY] != true
}

/// The SGR colour of who acted.
fn who_colour(who: Who) -> &'static str {
    match who {
        Who::Host => "36",
        Who::Model => "35",
        Who::Server => "32",
        Who::Person => "33",
    }
}

/// Is a step a refusal: the host refused a proposal, or the person said no?
fn is_refusal(step: &Step) -> bool {
    step.text.starts_with("refused") || step.data["decision"] == "declined"
}

/// One step as a line in colour: who acted in theirs, a refusal in red. The colours are
/// added around the visible line, so nothing a peer wrote can add or end one.
pub fn coloured_step_line(step: &Step) -> String {
    let line = step_line(step);
    let tag_len = step.who.as_str().len() + 2;
    let (tag, rest) = line.split_at(tag_len.min(line.len()));
    let rest = if is_refusal(step) {
        format!("\x1b[31m{rest}\x1b[0m")
    } else {
        rest.to_owned()
    };
    format!("\x1b[1;{}m{tag}\x1b[0m{rest}", who_colour(step.who))
}

/// Every record of a run, added to a file as JSON lines.
pub struct Log {
    file: Mutex<File>,
}

impl Log {
    /// Open (or create) the log at `path`, readable by the user only; runs add to it.
    pub fn open(path: &Path) -> anyhow::Result<Log> {
        let file = gatehouse::files::append_private(path)
            .map_err(|e| anyhow::anyhow!("cannot write the log {}: {e}", path.display()))?;
        Ok(Log {
            file: Mutex::new(file),
        })
    }

    /// Add one record, with a time first unless it has its own.
    fn write(&self, record: Map<String, Value>) {
        let mut line = Map::new();
        if !record.contains_key("ts") {
            line.insert("ts".into(), json!(gatehouse_http::log::timestamp()));
        }
        line.extend(record);
        let mut text = Value::Object(line).to_string();
        text.push('\n');
        // A full disk must not stop the run; the log is a by-product.
        let _ = self
            .file
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .write_all(text.as_bytes());
    }

    fn step(&self, step: &Step) {
        let mut record = Map::new();
        record.insert("operation".into(), json!(STEP_RECORD));
        record.insert("who".into(), json!(step.who));
        record.insert("text".into(), json!(step.text));
        record.insert("data".into(), step.data.clone());
        self.write(record);
    }

    fn tool_event(&self, event: &ToolEvent) {
        if let Value::Object(record) = event.record() {
            self.write(record);
        }
    }

    /// A server's line: its own record with the server named first, or the line as text.
    fn server_stderr(&self, server: &str, line: &str) {
        let mut record = Map::new();
        record.insert(FROM_SERVER_KEY.into(), json!(server));
        match self::record(line) {
            Some(theirs) => {
                record.extend(theirs.into_iter().filter(|(k, _)| k != FROM_SERVER_KEY));
            }
            None => {
                record.insert("line".into(), json!(line));
            }
        }
        self.write(record);
    }
}

/// Shows a run as it happens, as much as its [`Level`] says, and logs all of it.
pub struct Printer {
    steps: StepsTo,
    level: Level,
    /// Routine records (host.tool_call, servers' mcp.request) go to stderr.
    records: bool,
    colour: bool,
    log: Option<Log>,
    /// A progress bar is drawn on stderr (a terminal) and must be cleared before the next line.
    bar: Arc<AtomicBool>,
    /// The time so far of a quiet server round, on a terminal.
    ticker: crate::ticker::Ticker,
}

impl Printer {
    /// A printer of steps to `steps` at `level`, in colour as `colour` says for that stream.
    pub fn new(steps: StepsTo, level: Level, colour: clap::ColorChoice, log: Option<Log>) -> Self {
        let stderr_is_log = !std::io::stderr().is_terminal();
        Printer {
            steps,
            level,
            records: level == Level::Verbose || (level == Level::Normal && stderr_is_log),
            colour: self::colour(colour, steps.is_terminal()),
            log,
            bar: Arc::new(AtomicBool::new(false)),
            ticker: crate::ticker::Ticker::default(),
        }
    }

    /// Are the steps on a screen?
    pub fn shows_steps(&self) -> bool {
        self.level > Level::Quiet && self.steps != StepsTo::Nowhere
    }

    /// Must each "Run it?" show the call itself? Yes, unless the steps (which show it)
    /// are on the screen the question is asked on: the terminal when stdin is one (see
    /// `gatehouse::person::terminal`), else stderr.
    pub fn calls_need_showing(&self) -> bool {
        if !self.shows_steps() {
            return true;
        }
        let at_terminal = gatehouse::person::asks_at_terminal();
        let stderr_is_terminal = std::io::stderr().is_terminal();
        let beside_the_questions = match self.steps {
            StepsTo::Stdout => self.steps.is_terminal() && (at_terminal || stderr_is_terminal),
            StepsTo::Stderr => !at_terminal || stderr_is_terminal,
            StepsTo::Nowhere => false,
        };
        !beside_the_questions
    }

    /// Clear a progress bar left on the terminal.
    fn clear_bar(&self) {
        if self.bar.swap(false, Ordering::SeqCst) {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
        }
    }
}

impl Observer for Printer {
    fn step(&self, step: &Step) {
        if let Some(log) = &self.log {
            log.step(step);
        }
        if !self.shows_steps() || !on_screen(self.level, step) {
            return;
        }
        self.clear_bar();
        let mut line = if self.colour {
            coloured_step_line(step)
        } else {
            step_line(step)
        };
        if self.level == Level::Verbose
            && let Some(text) = step.data[gatehouse::result::shape::RESULT_TEXT_KEY].as_str()
        {
            line.push_str(&result_text(text));
        }
        match self.steps {
            StepsTo::Stdout => {
                // One write for the step and the result's text below it: stdout's line
                // buffer would write each line on its own, and a server's stderr line
                // could land between them where both share a terminal.
                line.push('\n');
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(line.as_bytes());
                let _ = out.flush();
            }
            StepsTo::Stderr => to_stderr(&line),
            StepsTo::Nowhere => {}
        }
    }

    fn waiting(&self, round: Option<&gatehouse::trace::Waiting<'_>>) {
        match round {
            Some(round) if self.level > Level::Quiet && std::io::stderr().is_terminal() => {
                self.ticker.start(round, self.bar.clone());
            }
            Some(_) => {}
            None => {
                self.ticker.stop();
                self.clear_bar();
            }
        }
    }

    fn progress(&self, event: &ProgressEvent) {
        self.ticker.progressed();
        let mut err = std::io::stderr().lock();
        if self.level > Level::Quiet && err.is_terminal() {
            let _ = write!(err, "\r\x1b[2K{}", progress_bar(event));
            let _ = err.flush();
            self.bar.store(true, Ordering::SeqCst);
        }
    }

    fn tool_event(&self, event: &ToolEvent) {
        if let Some(log) = &self.log {
            log.tool_event(event);
        }
        if self.records {
            self.clear_bar();
            to_stderr(&event.record().to_string());
        }
    }

    fn server_stderr(&self, server: &str, line: &str) {
        if let Some(log) = &self.log {
            log.server_stderr(server, line);
        }
        let shown = self.records || (self.level == Level::Normal && !is_routine(line));
        if !shown {
            return;
        }
        self.clear_bar();
        to_stderr(&format!(
            "[{} stderr] {}",
            visible_line(server),
            visible_line(line)
        ));
    }
}

/// The screen of a command that only starts servers to look at them (`mcp list`, `mcp
/// get`, `doctor`): nothing of the servers' stderr, only the host's notes of a long start
/// ("still starting after 12 s", a package runner's start), on stderr.
pub struct StartNotes;

impl Observer for StartNotes {
    fn step(&self, step: &Step) {
        if step
            .data
            .get(gatehouse::connect::runner::STILL_STARTING_KEY)
            .is_some()
        {
            to_stderr(&format!(
                "[{}] {}",
                step.who.as_str(),
                visible_line(&step.text)
            ));
        }
    }

    fn server_stderr(&self, _server: &str, _line: &str) {}
}

/// One whole line to stderr in one write. Stderr is unbuffered, so `writeln!` would write
/// each piece of a format on its own, and where stdout and stderr share a terminal or a
/// pipe the steps printed to stdout landed inside a server's line.
fn to_stderr(line: &str) {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    let _ = std::io::stderr().lock().write_all(&bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_detail_is_on_the_screen_only_with_v() {
        let step = |data: Value| Step {
            who: Who::Host,
            text: "x was called by name before it was offered".into(),
            data,
        };
        let detail = step(json!({"tool": "x", gatehouse::trace::DETAIL_KEY: true}));
        assert!(!on_screen(Level::Normal, &detail));
        assert!(on_screen(Level::Verbose, &detail));
        assert!(on_screen(Level::Normal, &step(json!({"tool": "x"}))));
    }

    #[test]
    fn only_a_servers_request_records_are_routine() {
        assert!(is_routine(
            r#"{"ts":"t","operation":"mcp.request","method":"tools/list"}"#
        ));
        assert!(!is_routine(
            r#"{"ts":"t","event":"tool_call","tool":"get_ticket"}"#
        ));
        assert!(!is_routine(
            r#"{"operation":"mcp.request" … (12 more bytes)"#
        ));
        assert!(!is_routine("listening on stdio"));
        assert!(!is_routine(r#"["operation","mcp.request"]"#));
    }

    #[test]
    fn colour_marks_who_acted_and_refusals_and_nothing_a_peer_wrote() {
        let step = Step {
            who: Who::Host,
            text: "refused: arguments too large".into(),
            data: json!({"decision": "too_large"}),
        };
        assert_eq!(
            coloured_step_line(&step),
            "\x1b[1;36m[host]\x1b[0m\x1b[31m refused: arguments too large {\"decision\": \"too_large\"}\x1b[0m"
        );
        let said = Step {
            who: Who::Model,
            text: "final answer \u{1b}[2J".into(),
            data: json!({}),
        };
        assert_eq!(
            coloured_step_line(&said),
            "\x1b[1;35m[model]\x1b[0m final answer \\u{1b}[2J"
        );
        assert!(!colour(clap::ColorChoice::Auto, false));
        assert!(!colour(clap::ColorChoice::Never, true));
        assert!(colour(clap::ColorChoice::Always, false));
    }
}
