//! The person at the host: the only one who approves a call or answers a server's question.
//! The model never answers here. Every way of asking defaults to "no".
//!
//! - this module: the [`Person`] trait, and the two questions as the run records them:
//!   [`approve_call`] (the approval flow) and [`ask_person`] (a server's question);
//! - [`terminal`]: the person at a terminal, or options in a script;
//! - [`form`]: a server's flat form, its fields, and answers given by options;
//! - [`sign_in`]: a sign-in to a server, as the person is asked to do it;
//! - [`time`]: the person's time, which the host's time limits leave out;
//! - [`unattended`]: nobody at the host, every answer fixed beforehand (probing, harnesses).

pub mod form;
pub mod sign_in;
pub mod terminal;
pub mod time;
pub mod unattended;

#[cfg(test)]
mod tests;

use futures::future::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Map, Value, json};

pub use form::{FormAnswer, FormField, answers_for, fill_from_options, form_fields};
pub use sign_in::{SignInAnswer, SignInOptions, SignInRequest};
pub use terminal::{FixedAnswers, Terminal, asks_at_terminal, describe_call};
pub use time::PersonTime;
pub use unattended::Unattended;

use crate::trace::{Trace, Who};

/// How an answer was given, so the run can say so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnsweredBy {
    /// A command-line option (`--yes`, `--no`, `--answer`, `--decline`).
    Option,
    /// The person typed it.
    Terminal,
    /// The person answered in the lab's page, in their browser.
    Browser,
    /// Nobody could answer (no terminal, end of input): the default, no.
    Nobody,
    /// A gateway's caller answered in their own MCP client, through the form the gateway
    /// asked with: the client (or the model driving it) may have answered for the person.
    Client,
    /// A person signed in on a gateway's approval page decided there.
    Page,
}

/// The person's answer to "run this call?".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Approval {
    /// Run it?
    pub yes: bool,
    /// Who said so.
    pub by: AnsweredBy,
    /// With a yes: also run this tool, at this definition, without asking for the rest of
    /// the session (`a`) or in this project (`A`). Only where the request offered it.
    pub remember: Option<crate::approvals::Scope>,
    /// A no given by closing the question without answering it (a form's `cancel`), not
    /// by answering no: the caller and the ledger are told which.
    pub dismissed: bool,
}

impl Approval {
    /// A yes or no for this call only.
    pub fn once(yes: bool, by: AnsweredBy) -> Approval {
        Approval {
            yes,
            by,
            remember: None,
            dismissed: false,
        }
    }

    /// The question closed without an answer (`cancel`): the call is not run.
    pub fn dismissed(by: AnsweredBy) -> Approval {
        Approval {
            dismissed: true,
            ..Approval::once(false, by)
        }
    }
}

/// What the person is shown before a call that is not on the allow-list.
#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    /// The server that offers the tool.
    pub server: String,
    /// The tool, as the model named it.
    pub tool: String,
    /// The exact arguments.
    pub arguments: Value,
    /// What the server says about the tool (hints, never trusted).
    pub annotations: Value,
    /// Why the person is asked (a rule's reason, a hook's), in words.
    pub why: String,
    /// May the answer be remembered (`a` for the session, `A` for the project)? Not when a
    /// rule or a hook asks: they ask every time.
    pub may_remember: bool,
    /// The arguments the model proposed, when a `beforeCall` hook rewrote them into
    /// `arguments`: the person sees both.
    pub proposed: Option<Value>,
    /// Who proposed the call: the model, or the person by hand.
    pub by: ProposedBy,
    /// Where each argument came from, in words ([`crate::flow`]), where the host saw it.
    pub flows: Vec<String>,
}

/// Most arguments an approval says the origin of; the ledger line keeps them all.
pub const MAX_SHOWN_FLOWS: usize = 20;

/// Each argument's origin in words, at most [`MAX_SHOWN_FLOWS`].
fn flow_lines(traced: &crate::flow::Traced) -> Vec<String> {
    let mut lines: Vec<String> = traced
        .arguments
        .iter()
        .take(MAX_SHOWN_FLOWS)
        .map(crate::flow::ArgumentFlow::describe)
        .collect();
    let more = traced.arguments.len().saturating_sub(MAX_SHOWN_FLOWS);
    if more > 0 {
        lines.push(format!(
            "and {more} more values (the ledger line has them all)"
        ));
    }
    lines
}

/// Who proposed a call the person is asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProposedBy {
    /// The model (or a gateway's caller).
    #[default]
    Model,
    /// The person, by hand (`gatehouse call`, chat's `/call`, the lab's manual panel).
    Person,
}

impl ProposedBy {
    /// How a step names the one who proposed it: `the assistant`, `you`.
    pub fn who(self) -> &'static str {
        match self {
            ProposedBy::Model => "the assistant",
            ProposedBy::Person => "you",
        }
    }
}

impl ApprovalRequest {
    /// The question whether to call `tool` of `server` with `arguments`, asked for
    /// `why`: no annotations shown, the answer not to be remembered, the arguments the
    /// model's own. A proposal's question ([`Proposed::request`]) fills in the rest.
    pub fn new(server: &str, tool: &str, arguments: Value, why: &str) -> ApprovalRequest {
        ApprovalRequest {
            server: server.to_owned(),
            tool: tool.to_owned(),
            arguments,
            annotations: Value::Object(Default::default()),
            why: why.to_owned(),
            may_remember: false,
            proposed: None,
            by: ProposedBy::Model,
            flows: Vec::new(),
        }
    }
}

/// What answering a server's question gives: the answer, and who gave it.
pub type Answered<'a> = BoxFuture<'a, (ElicitResult, AnsweredBy)>;

/// The person, however they are reached.
pub trait Person: Send + Sync {
    /// Ask whether to run one call.
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval>;
    /// Answer a server's question (elicitation). `server` names who asks.
    fn elicit<'a>(&'a self, server: &'a str, request: &'a ElicitRequestParams) -> Answered<'a>;
    /// Can the person sign in to a server now? Asked before anything is sent to the
    /// authorization server, so a run that cannot sign in registers nothing there.
    /// Default: no (a server that needs a sign-in is then reported as needing one).
    fn can_sign_in(&self) -> bool {
        false
    }
    /// Sign in to a server: show the address, and wait for the person (or for
    /// `request.finished`).
    fn sign_in<'a>(&'a self, request: &'a SignInRequest) -> BoxFuture<'a, SignInAnswer> {
        let _ = request;
        Box::pin(async { SignInAnswer::Declined })
    }
}

/// A "no" to a server's question.
pub fn decline() -> ElicitResult {
    ElicitResult::new(ElicitationAction::Decline)
}

/// A server's question as every way of asking reads it: a form with its schema as JSON, or
/// a URL to open. One reading, so the terminal, the lab and the harnesses cannot drift.
#[derive(Debug, Clone, PartialEq)]
pub enum Question<'a> {
    /// A form to fill (SEP-1034's flat schema).
    Form {
        /// What the server says it wants.
        message: &'a str,
        /// The requested schema, as JSON (null when it cannot be written as JSON).
        schema: Value,
    },
    /// A URL the person is asked to open themselves.
    Url {
        /// What the server says it wants.
        message: &'a str,
        /// Where it wants the person to go.
        url: &'a str,
    },
}

impl<'a> Question<'a> {
    /// Read a request; `None` for a kind this host does not know, which is declined.
    pub fn of(request: &'a ElicitRequestParams) -> Option<Question<'a>> {
        match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => Some(Question::Form {
                message,
                schema: serde_json::to_value(requested_schema).unwrap_or(Value::Null),
            }),
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                Some(Question::Url { message, url })
            }
            _ => None,
        }
    }
}

/// A call the host asks the person about: which server's tool, with what, and what the
/// server says about the tool.
#[derive(Debug, Clone, Copy)]
pub struct Proposed<'a> {
    /// The server that offers the tool.
    pub server: &'a str,
    /// The tool, as the model named it.
    pub tool: &'a str,
    /// The checked arguments.
    pub arguments: &'a rmcp::model::JsonObject,
    /// The tool's annotations (hints, shown, never trusted).
    pub annotations: Option<&'a rmcp::model::ToolAnnotations>,
    /// May the answer be remembered ([`ApprovalRequest::may_remember`])?
    pub may_remember: bool,
    /// The model's own arguments, when a hook rewrote them.
    pub proposed: Option<&'a rmcp::model::JsonObject>,
    /// Who proposed it.
    pub by: ProposedBy,
    /// Where the arguments came from, where the host saw it.
    pub flows: Option<&'a crate::flow::Traced>,
}

impl Proposed<'_> {
    /// The question put to the person, with `why` they are asked.
    pub fn request(&self, why: &str) -> ApprovalRequest {
        let arguments = Value::Object(self.arguments.clone());
        ApprovalRequest {
            annotations: annotations_for_display(self.annotations),
            may_remember: self.may_remember,
            proposed: self.proposed.map(|p| Value::Object(p.clone())),
            by: self.by,
            flows: self.flows.map(flow_lines).unwrap_or_default(),
            ..ApprovalRequest::new(self.server, self.tool, arguments, why)
        }
    }
}

/// Ask the person whether to run one call, the way the run shows it: why the host asks,
/// the exact call, the answer and who gave it. `why` is the policy's reason, in words.
pub async fn approve_call(
    person: &dyn Person,
    trace: &Trace,
    call: &Proposed<'_>,
    why: &str,
) -> Approval {
    let may_remember = call.may_remember;
    let request = call.request(why);
    trace.add(
        Who::Host,
        why,
        json!({"decision": "ask", "server": call.server, "annotations": request.annotations}),
    );
    let who = request.by.who();
    let rewritten = match &request.proposed {
        Some(p) => format!(" (rewritten by the beforeCall hook; {who} proposed {p})"),
        None => String::new(),
    };
    let wants = match request.by {
        ProposedBy::Model => "The assistant wants to run",
        ProposedBy::Person => "You asked to run",
    };
    // Where each argument came from goes with the call, in the step's data.
    let data = if request.flows.is_empty() {
        json!({})
    } else {
        json!({"flows": request.flows})
    };
    trace.add(
        Who::Host,
        format!(
            "{wants} {} with {}{rewritten}",
            call.tool, request.arguments
        ),
        data,
    );
    let approval = person.approve(&request).await;
    let said = if approval.yes { "yes" } else { "no" };
    match approval.by {
        AnsweredBy::Option => trace.add(
            Who::Host,
            format!("Answer given by option: {said}"),
            json!({}),
        ),
        AnsweredBy::Nobody => trace.add(Who::Host, "No answer could be read: no", json!({})),
        AnsweredBy::Terminal | AnsweredBy::Browser | AnsweredBy::Client | AnsweredBy::Page => {}
    }
    if let (true, Some(scope)) = (approval.yes && may_remember, approval.remember) {
        let text = match scope {
            crate::approvals::Scope::Session => {
                "said yes, for this tool for the rest of the session"
            }
            crate::approvals::Scope::Project => "said yes, for this tool in this project",
        };
        trace.add(
            Who::Person,
            text,
            json!({"decision": "approved", "remember": scope.as_str()}),
        );
    } else if approval.yes {
        trace.add(Who::Person, "said yes", json!({"decision": "approved"}));
    } else if approval.dismissed {
        let data = json!({"decision": "declined", "dismissed": true});
        trace.add(
            Who::Person,
            "dismissed the question without answering",
            data,
        );
    } else {
        trace.add(Who::Person, "said no", json!({"decision": "declined"}));
    }
    approval
}

/// Put a server's question to the person, and record both the question and the answer.
/// Used for `input_required` rounds and for the `elicitation/create` of older revisions
/// alike, so both look the same in the run.
pub async fn ask_person(
    server: &str,
    key: &str,
    params: &rmcp::model::ElicitRequestParams,
    person: &dyn Person,
    trace: &Trace,
) -> rmcp::model::ElicitResult {
    // A URL is shown whole, so the person sees where it would take them; the host never
    // opens it.
    let (message, data) = match params {
        rmcp::model::ElicitRequestParams::FormElicitationParams { message, .. } => (
            message.clone(),
            json!({"server": server, "key": key, "mode": "form"}),
        ),
        rmcp::model::ElicitRequestParams::UrlElicitationParams { message, url, .. } => (
            message.clone(),
            json!({"server": server, "key": key, "mode": "url", "url": url}),
        ),
        _ => (
            String::new(),
            json!({"server": server, "key": key, "mode": "unknown"}),
        ),
    };
    trace.add(Who::Server, format!("{server} asks: {message}"), data);
    let (answer, by) = person.elicit(server, params).await;
    let action = serde_json::to_value(&answer.action).unwrap_or_default();
    let how = match by {
        AnsweredBy::Option => "by option",
        AnsweredBy::Terminal => "at the terminal",
        AnsweredBy::Browser => "in the lab's page",
        AnsweredBy::Client => "in their client",
        AnsweredBy::Page => "on the approval page",
        AnsweredBy::Nobody => "by default: nobody could answer",
    };
    let mut data = json!({"action": action, "answered": how});
    if let Some(content) = &answer.content {
        data["content"] = content.clone();
    }
    trace.add(
        Who::Person,
        format!("answered {}", action.as_str().unwrap_or("?")),
        data,
    );
    answer
}

/// The annotations of a tool in the host's own words, for showing (never for trusting).
pub fn annotations_for_display(annotations: Option<&rmcp::model::ToolAnnotations>) -> Value {
    match annotations {
        None => json!({}),
        Some(a) => {
            // Gathered first, so the map is made at its size (a listing shows a thousand).
            let hints: Vec<(String, Value)> = [
                ("read_only_hint", a.read_only_hint),
                ("destructive_hint", a.destructive_hint),
                ("idempotent_hint", a.idempotent_hint),
                ("open_world_hint", a.open_world_hint),
            ]
            .into_iter()
            .filter_map(|(k, v)| Some((k.to_owned(), Value::Bool(v?))))
            .collect();
            Value::Object(hints.into_iter().collect::<Map<_, _>>())
        }
    }
}
