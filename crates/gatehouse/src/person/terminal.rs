//! The person at a terminal: "Run it?" and a server's forms read from stdin when it is a
//! terminal, or answered by options in a script. With no terminal and no options, no:
//! what a pipe or a file holds answers nothing.
//!
//! The questions are written where the answer comes from: when stdin is a terminal, to
//! that terminal itself, whatever stdout and stderr were sent to (`gatehouse chat
//! 2>host.log` still shows "Run it?"); otherwise to stderr.

use std::{
    io::{BufRead, IsTerminal, Write},
    sync::Mutex,
};

use futures::future::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Map, Value};

use super::{
    Answered, AnsweredBy, Approval, ApprovalRequest, Person, Question, decline,
    form::{FormAnswer, answers_for, fill_from_options, form_fields},
    sign_in::{self, SignInAnswer, SignInOptions, SignInRequest},
};
use crate::{
    approvals::Scope,
    text::{visible, visible_line},
};

/// Answers fixed in advance by options, for scripts and tests. Anything not given is "no".
#[derive(Debug, Default)]
pub struct FixedAnswers {
    /// `Some(true)` for `--yes`, `Some(false)` for `--no`; `None` falls back to the terminal.
    pub approve: Option<bool>,
    /// `--answer [SERVER:]FIELD=VALUE` for forms.
    pub fields: Vec<FormAnswer>,
    /// `--decline`: decline every form.
    pub decline_forms: bool,
}

/// The terminal: prompts where the person reads them, answers from stdin. With no terminal
/// and no options, no.
pub struct Terminal {
    /// Answers given by options.
    pub fixed: FixedAnswers,
    /// Show the call itself with "Run it?": set when the run's steps (which show it) are
    /// not on the person's screen, as with `--json`. The person always sees what they approve.
    show_calls: bool,
    /// How the person signs in to servers.
    sign_in: SignInOptions,
    /// Serialises questions, so two never interleave on the screen.
    lock: Mutex<()>,
}

impl Terminal {
    /// The terminal, with these options.
    pub fn new(fixed: FixedAnswers) -> Self {
        Terminal {
            fixed,
            show_calls: false,
            sign_in: SignInOptions::default(),
            lock: Mutex::new(()),
        }
    }

    /// Sign in to servers as `options` say (open the browser, sign in without a terminal).
    pub fn signing_in(mut self, options: SignInOptions) -> Self {
        self.sign_in = options;
        self
    }

    /// Show each call with its "Run it?" question (the run's steps are not on screen).
    pub fn showing_calls(mut self, show: bool) -> Self {
        self.show_calls = show;
        self
    }
}

/// The terminal device the person's answers are typed at.
#[cfg(unix)]
const TERMINAL: &str = "/dev/tty";
/// The terminal device the person's answers are typed at.
#[cfg(windows)]
const TERMINAL: &str = "CONOUT$";

/// Is there a person at a terminal to answer (stdin is one)? The one test every question
/// makes: "Run it?", `a`/`A`, forms, URLs and sign-ins are answered only from a terminal;
/// without one (a pipe, a file, `setsid`) nobody answers and the answer is no, so input a
/// script piped in never approves anything. The questions are then written to the
/// terminal itself, rather than to stderr.
pub fn asks_at_terminal() -> bool {
    std::io::stdin().is_terminal()
}

/// What "Run it?" shows when nobody can answer it: the answer, and how a script says yes.
pub const NO_TERMINAL: &str =
    "[host] Run it? no: nobody at a terminal to answer (--yes approves every call)";

/// Where the person's questions are written: the terminal the answers are typed at when
/// stdin is one (whatever stdout and stderr were sent to), else stderr.
pub fn screen() -> Box<dyn Write> {
    if asks_at_terminal()
        && let Ok(terminal) = std::fs::OpenOptions::new().write(true).open(TERMINAL)
    {
        return Box::new(terminal);
    }
    Box::new(std::io::stderr())
}

/// Show `prompt` on `screen` and read one line from stdin; `None` at end of input or on
/// error.
fn read_line(screen: &mut dyn Write, prompt: &str) -> Option<String> {
    let _ = write!(screen, "{prompt}");
    let _ = screen.flush();
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim().to_owned()),
    }
}

fn said_yes(answer: Option<String>) -> bool {
    answer.is_some_and(|a| matches!(a.to_lowercase().as_str(), "y" | "yes"))
}

/// The answer to "Run it?": `y` this call, `a` this tool for the session, `A` this tool in
/// this project (only when `may_remember`); anything else is no. `a` and `A` differ by
/// case, so they are read exactly.
pub(super) fn approval_answer(answer: &str, may_remember: bool) -> Approval {
    let by = AnsweredBy::Terminal;
    match answer {
        "a" if may_remember => Approval {
            remember: Some(Scope::Session),
            ..Approval::once(true, by)
        },
        "A" if may_remember => Approval {
            remember: Some(Scope::Project),
            ..Approval::once(true, by)
        },
        other => Approval::once(said_yes(Some(other.to_owned())), by),
    }
}

/// Most times "Run it?" is asked for one call when the answer is one it does not take.
pub const MAX_RUN_IT_ASKS: usize = 3;
/// Said when `a` or `A` is typed where only this call can be approved.
pub const REMEMBER_NOT_OFFERED: &str = "[host] a and A are not offered here: this call is asked about every time (a rule or a hook says so). Answer y or n.";

/// The approval prompt, where only this call can be approved.
pub const RUN_IT: &str = "[host] Run it? [y/N] ";
/// The approval prompt with `a` and `A` offered.
pub const RUN_IT_REMEMBER: &str =
    "[host] Run it? [y/N] (a: this tool for this session, A: this tool in this project) ";

/// The call as the person reads it before saying yes: server, tool, arguments, hints.
pub fn describe_call(request: &ApprovalRequest) -> String {
    let rewritten = match &request.proposed {
        Some(p) => format!(
            " (rewritten by the beforeCall hook; {} proposed {p})",
            request.by.who()
        ),
        None => String::new(),
    };
    let hints = match &request.annotations {
        Value::Object(m) if !m.is_empty() => {
            format!(" (hints from the server: {})", request.annotations)
        }
        _ => String::new(),
    };
    // Why it is asked (a rule's reason, a hook's) is part of what the person decides on.
    let why = if request.why.is_empty() {
        String::new()
    } else {
        format!("; asked because: {}", request.why)
    };
    // Where each argument came from, when the host saw the flow.
    let came = if request.flows.is_empty() {
        String::new()
    } else {
        format!(
            "; where the arguments came from: {}",
            request.flows.join("; ")
        )
    };
    visible(&format!(
        "{} on {} wants to run with {}{rewritten}{hints}{why}{came}",
        request.tool, request.server, request.arguments
    ))
    .into_owned()
}

impl Person for Terminal {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            if let Some(yes) = self.fixed.approve {
                return Approval::once(yes, AnsweredBy::Option);
            }
            if !asks_at_terminal() {
                self.at_screen(|screen| {
                    if self.show_calls {
                        let _ = writeln!(screen, "[host] {}", describe_call(request));
                    }
                    let _ = writeln!(screen, "{NO_TERMINAL}");
                });
                return Approval::once(false, AnsweredBy::Nobody);
            }
            let answer = self.at_screen(|screen| {
                if self.show_calls {
                    let _ = writeln!(screen, "[host] {}", describe_call(request));
                }
                let prompt = if request.may_remember {
                    RUN_IT_REMEMBER
                } else {
                    RUN_IT
                };
                // `a` or `A` where a rule or hook asks every time is said to be so and asked
                // again, not taken silently as no.
                let mut answer = read_line(screen, prompt);
                for _ in 1..MAX_RUN_IT_ASKS {
                    match answer.as_deref() {
                        Some("a" | "A") if !request.may_remember => {
                            let _ = writeln!(screen, "{REMEMBER_NOT_OFFERED}");
                            answer = read_line(screen, prompt);
                        }
                        _ => break,
                    }
                }
                answer
            });
            match answer {
                None => Approval::once(false, AnsweredBy::Nobody),
                Some(a) => approval_answer(&a, request.may_remember),
            }
        })
    }

    fn elicit<'a>(&'a self, server: &'a str, request: &'a ElicitRequestParams) -> Answered<'a> {
        Box::pin(async move {
            if self.fixed.decline_forms {
                return (decline(), AnsweredBy::Option);
            }
            match Question::of(request) {
                Some(Question::Form { message, schema }) => self.form(server, message, &schema),
                Some(Question::Url { message, url }) => self.url(server, message, url),
                None => (decline(), AnsweredBy::Nobody),
            }
        })
    }

    fn can_sign_in(&self) -> bool {
        asks_at_terminal() || self.sign_in.without_terminal
    }

    fn sign_in<'a>(&'a self, request: &'a SignInRequest) -> BoxFuture<'a, SignInAnswer> {
        Box::pin(self.sign_in_here(request))
    }
}

impl Terminal {
    /// Run `ask` at the screen, one question at a time (the lock), off the async threads.
    fn at_screen<T>(&self, ask: impl FnOnce(&mut dyn Write) -> T) -> T {
        tokio::task::block_in_place(|| {
            let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            ask(&mut *screen())
        })
    }

    /// A sign-in: the address shown (and opened when asked for), then either the browser
    /// comes back by itself or the person pastes the address it ended on; without a
    /// terminal, only the first.
    async fn sign_in_here(&self, request: &SignInRequest) -> SignInAnswer {
        let at_terminal = asks_at_terminal();
        let answer = tokio::task::block_in_place(|| {
            let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            let mut screen = screen();
            let opened = self
                .sign_in
                .open_browser
                .then(|| sign_in::open_browser(&request.url));
            sign_in::show(&mut *screen, request, opened.as_ref());
            if !at_terminal {
                let _ = writeln!(screen, "  Waiting for the browser to come back…");
                return None;
            }
            let _ = write!(
                screen,
                "  When the browser says you are signed in, this goes on by itself; or paste\n  the address the browser ended on here (Enter alone cancels): "
            );
            let _ = screen.flush();
            Some(match sign_in::line_or_finished(&request.finished) {
                None => SignInAnswer::Finished,
                Some(Some(line)) if !line.is_empty() => SignInAnswer::Pasted(line),
                Some(_) => SignInAnswer::Declined,
            })
        });
        match answer {
            Some(answer) => answer,
            None => {
                request.finished.cancelled().await;
                SignInAnswer::Finished
            }
        }
    }

    /// A URL-mode question: the URL shown whole, never opened by the host; without a
    /// person at a terminal, declined.
    fn url(&self, server: &str, message: &str, url: &str) -> (ElicitResult, AnsweredBy) {
        if !asks_at_terminal() {
            return (decline(), AnsweredBy::Nobody);
        }
        let yes = self.at_screen(|screen| {
            server_asks(screen, server, message);
            let _ = writeln!(screen, "  It wants you to open: {}", visible_line(url));
            said_yes(read_line(screen, "  Open it yourself and continue? [y/N] "))
        });
        let action = if yes {
            ElicitationAction::Accept
        } else {
            ElicitationAction::Decline
        };
        (ElicitResult::new(action), AnsweredBy::Terminal)
    }

    /// A form: answered by the options that fill it (they name its fields, and its server
    /// if they name one), else field by field at the terminal, else declined.
    fn form(&self, server: &str, message: &str, schema: &Value) -> (ElicitResult, AnsweredBy) {
        let fields = form_fields(schema);
        if let Some(given) = answers_for(&self.fixed.fields, server, &fields) {
            return match fill_from_options(&fields, &given) {
                Ok(content) => (
                    ElicitResult::new(ElicitationAction::Accept).with_content(content),
                    AnsweredBy::Option,
                ),
                Err(_) => (decline(), AnsweredBy::Option),
            };
        }
        if !asks_at_terminal() {
            return (decline(), AnsweredBy::Nobody);
        }
        self.at_screen(|screen| {
            server_asks(screen, server, message);
            if !said_yes(read_line(screen, "  Accept? [y/N] ")) {
                return (decline(), AnsweredBy::Terminal);
            }
            let mut content = Map::new();
            for field in &fields {
                match ask_field(screen, field) {
                    Some(Some(v)) => {
                        content.insert(field.name.clone(), v);
                    }
                    Some(None) => {}
                    None => {
                        return (
                            ElicitResult::new(ElicitationAction::Cancel),
                            AnsweredBy::Terminal,
                        );
                    }
                }
            }
            (
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content)),
                AnsweredBy::Terminal,
            )
        })
    }
}

/// The line that opens a server's question: who asks, and what it says.
fn server_asks(screen: &mut dyn Write, server: &str, message: &str) {
    let _ = writeln!(
        screen,
        "\n[{} asks] {}",
        visible_line(server),
        visible(message)
    );
}

/// One field asked until its answer fits: `Some(None)` for an optional field left blank,
/// `None` at the end of input.
fn ask_field(screen: &mut dyn Write, field: &super::FormField) -> Option<Option<Value>> {
    loop {
        let raw = read_line(screen, &format!("  {} ", field.prompt()))?;
        if raw.is_empty() && !field.required {
            return Some(None);
        }
        match field.parse(&raw) {
            Ok(v) => return Some(Some(v)),
            Err(e) => {
                let _ = writeln!(screen, "  {}", visible(&e));
            }
        }
    }
}
