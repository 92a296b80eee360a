//! The gate: one proposal's whole decision, written down. The policy's verdict
//! ([`crate::policy`]), the `beforeCall` hook ([`crate::hooks`]), the person when they
//! must be asked ([`crate::person`]), approvals remembered ([`crate::approvals`]), and a
//! ledger line for every decision ([`crate::ledger`]), flushed to disk before anything is
//! sent. After the call, the `afterCall` hook sees the result before the model does.
//!
//! One implementation of that path, owned by the host and usable by anything that turns
//! proposals into calls: nothing in it knows about terminals or turns. The hooks' part is
//! in `hooked.rs`.

mod hooked;

use std::sync::{Mutex, MutexGuard};

use rmcp::model::JsonObject;
use serde_json::{Value, json};

use crate::{
    approvals::{ProjectFile, Remembered, Scope},
    catalog::{CatalogTool, Live, host_tools::runs_unasked},
    config::{Hooks, Settings},
    digest,
    ledger::{Entry, Ledger},
    model::ToolCall,
    person::{self, AnsweredBy, Person},
    policy::{self, Explanation, Refusal, Verdict},
    trace::{Outcome, Trace, Who},
};

/// Most characters of a proposed tool name a ledger line keeps: a name not in the catalog
/// is the model's text, of any length.
pub const MAX_RECORDED_NAME_CHARS: usize = 256;

/// What the gate keeps for a session: approvals remembered, the project's file, the
/// ledger and the hooks.
pub struct Gate {
    remembered: Mutex<Remembered>,
    project: Option<ProjectFile>,
    ledger: Option<Ledger>,
    keep_arguments: bool,
    hooks: Hooks,
}

/// Which proposal: the call, and where it stands in the session.
#[derive(Debug, Clone, Copy)]
pub struct Proposal<'a> {
    /// The call as the model wrote it.
    pub call: &'a ToolCall,
    /// The host's session.
    pub session: &'a str,
    /// The question's trace.
    pub trace_id: &'a str,
    /// The call's number in the turn.
    pub step: u64,
}

/// What the gate lets through.
#[derive(Debug)]
pub enum Admission {
    /// Send it: the tool and the arguments to send (a hook may have rewritten them).
    Send {
        /// The tool.
        tool: Box<CatalogTool>,
        /// The arguments, checked.
        arguments: JsonObject,
    },
    /// Nothing is sent; the model reads `text`.
    Refused {
        /// What the model reads.
        text: String,
        /// How the record says it ended.
        outcome: Outcome,
        /// The tool's server, or `-`.
        server: String,
    },
}

/// How a call that passed the policy goes on.
enum How {
    Run {
        rule: String,
        said: String,
    },
    Ask {
        rule: String,
        why: String,
        may_remember: bool,
    },
}

/// A call the policy did not refuse.
struct Decided {
    tool: CatalogTool,
    arguments: JsonObject,
    /// The model's own arguments, when a hook rewrote them.
    proposed: Option<JsonObject>,
    how: How,
}

impl Gate {
    /// The gate for a session with these settings: the project's remembered approvals read
    /// (those not sealed for this person are ignored, and the run says so), the ledger
    /// checked (a ledger that cannot be written is said at once: calls will be stopped).
    pub fn new(settings: &Settings, project: Option<ProjectFile>, trace: &Trace) -> Gate {
        let mut remembered = Remembered::default();
        if let Some(file) = &project {
            match file.load_into(&mut remembered) {
                Ok(0) => {}
                Ok(n) => trace.add(
                    Who::Host,
                    format!(
                        "warning: {n} approvals in {} are not sealed for you and are ignored",
                        file.path().display()
                    ),
                    json!({"ignored": n}),
                ),
                Err(e) => trace.add(
                    Who::Host,
                    format!("warning: remembered approvals are not used: {e}"),
                    json!({}),
                ),
            }
        }
        let ledger = settings
            .ledger
            .enabled
            .then(|| Ledger::new(settings.ledger.file()));
        if let Some(Err(e)) = ledger.as_ref().map(Ledger::check) {
            trace.add(
                Who::Host,
                format!("warning: {e}; calls will be stopped until it can be written"),
                json!({"ledger": "unwritable"}),
            );
        }
        Gate {
            remembered: Mutex::new(remembered),
            project,
            ledger,
            keep_arguments: settings.ledger.arguments,
            hooks: settings.hooks.clone(),
        }
    }

    /// The ledger, when there is one.
    pub fn ledger(&self) -> Option<&Ledger> {
        self.ledger.as_ref()
    }

    /// Explain the policy's verdict on `call` with the approvals remembered now.
    pub fn explain(&self, call: &ToolCall, live: &Live, settings: &Settings) -> Explanation {
        policy::explain(call, &live.current(), settings, &self.remembered())
    }

    fn remembered(&self) -> MutexGuard<'_, Remembered> {
        self.remembered.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Decide on one proposal: refused, or to be sent. Every decision is a ledger line; a
    /// call is sent only after its line is on disk.
    pub async fn admit(
        &self,
        p: &Proposal<'_>,
        live: &Live,
        settings: &Settings,
        person: &dyn Person,
        trace: &Trace,
    ) -> Admission {
        let decided = match self.decide(p.call, live, settings) {
            Ok(decided) => decided,
            Err(refused) => {
                let (refusal, tool) = *refused;
                return self.refused(p, tool.as_ref(), &refusal, trace).await;
            }
        };
        // The host's tools that read only its own state (`search_tools`, `read_result`) are
        // not calls out of the host: no hook, no ledger line, no step of their own.
        if runs_unasked(&decided.tool) {
            return Admission::Send {
                tool: Box::new(decided.tool),
                arguments: decided.arguments,
            };
        }
        let decided = match self.before_call(p, decided, settings, trace).await {
            Ok(decided) => decided,
            Err(refused) => return refused,
        };
        let (rule, answer) = match &decided.how {
            How::Run { rule, said } => {
                // The allow-list's step is the seed's own line; a rule's names the rule.
                let data = if rule.starts_with("allow[") {
                    json!({"decision": "auto"})
                } else {
                    json!({"decision": "auto", "rule": rule})
                };
                trace.add(Who::Host, said.clone(), data);
                (rule.clone(), None)
            }
            How::Ask {
                rule,
                why,
                may_remember,
            } => {
                let approval = self
                    .ask(&decided, why, *may_remember, live, person, trace)
                    .await;
                (rule.clone(), Some(approval))
            }
        };
        let mut entry = self.entry(p, Some(&decided.tool), Some(&decided.arguments), trace);
        entry.rule = Some(rule);
        entry.decision = if answer.is_some() { "asked" } else { "run" }.into();
        if decided.proposed.is_some() {
            entry.reason = Some("arguments rewritten by the beforeCall hook".into());
        }
        if let Some(approval) = answer {
            entry.answer = Some(if approval.yes { "yes" } else { "no" }.into());
            entry.by = Some(answered_by(approval.by).into());
            let offered = matches!(
                decided.how,
                How::Ask {
                    may_remember: true,
                    ..
                }
            );
            if let (true, true, Some(scope)) = (approval.yes, offered, approval.remember) {
                entry.reason = Some(format!("and approved this tool for the {}", scope.as_str()));
            }
            if !approval.yes {
                self.record_or_warn(entry, trace).await;
                let server = decided.tool.origin.label().to_owned();
                return refused_text("the person declined this call", Outcome::Declined, server);
            }
        }
        if let Err(e) = self.record(entry).await {
            trace.add(
                Who::Host,
                format!("stopped: {e}; a call is never sent unrecorded"),
                json!({"decision": "unrecorded"}),
            );
            let server = decided.tool.origin.label().to_owned();
            return refused_text(
                &format!("the call was not run: {e}"),
                Outcome::Refused,
                server,
            );
        }
        Admission::Send {
            tool: Box::new(decided.tool),
            arguments: decided.arguments,
        }
    }

    /// The policy's verdict, out of the catalog's lock (never held across an await).
    fn decide(
        &self,
        call: &ToolCall,
        live: &Live,
        settings: &Settings,
    ) -> Result<Decided, Box<(Refusal, Option<CatalogTool>)>> {
        let catalog = live.current();
        let verdict = policy::decide_remembering(call, &catalog, settings, &self.remembered());
        let (tool, arguments, how) = match verdict {
            Verdict::Run {
                tool,
                arguments,
                basis,
            } => (
                tool,
                arguments,
                How::Run {
                    rule: basis.label(),
                    said: basis.for_run(),
                },
            ),
            Verdict::Ask {
                tool,
                arguments,
                basis,
            } => (
                tool,
                arguments,
                How::Ask {
                    rule: basis.label(),
                    why: basis.for_ask(),
                    may_remember: basis.may_remember(),
                },
            ),
            Verdict::Refuse(refusal) => {
                return Err(Box::new((refusal, catalog.get(&call.name).cloned())));
            }
        };
        Ok(Decided {
            tool: tool.clone(),
            arguments,
            proposed: None,
            how,
        })
    }

    /// Ask the person, and remember the answer where they said so.
    async fn ask(
        &self,
        decided: &Decided,
        why: &str,
        may_remember: bool,
        live: &Live,
        person: &dyn Person,
        trace: &Trace,
    ) -> person::Approval {
        let tool = &decided.tool;
        let proposed = person::Proposed {
            server: tool.origin.label(),
            tool: &tool.name,
            arguments: &decided.arguments,
            annotations: tool.tool.annotations.as_ref(),
            may_remember,
            proposed: decided.proposed.as_ref(),
        };
        let approval = person::approve_call(person, trace, &proposed, why).await;
        if !approval.yes {
            return approval;
        }
        if tool.changed {
            live.mark_approved(&tool.name);
        }
        if let (true, Some(scope)) = (may_remember, approval.remember) {
            self.remember(scope, tool, trace).await;
        }
        approval
    }

    /// Remember an approval of `tool` at its current definition: for the session, and in
    /// the project's file for `A` (if that cannot be written, for the session, as said).
    async fn remember(&self, scope: Scope, tool: &CatalogTool, trace: &Trace) {
        let fingerprint = policy::definition_digest(&tool.tool);
        let mut kept = Scope::Session;
        if let (Scope::Project, Some(file)) = (scope, self.project.clone()) {
            let (name, fp) = (tool.name.clone(), fingerprint.clone());
            let written = tokio::task::spawn_blocking(move || {
                file.approve(&name, &fp, &crate::ledger::now())
            })
            .await
            .unwrap_or_else(|e| Err(e.to_string()));
            match written {
                Ok(()) => kept = Scope::Project,
                Err(e) => trace.add(
                    Who::Host,
                    format!("could not remember it in the project ({e}): remembered for this session only"),
                    json!({}),
                ),
            }
        }
        let mut remembered = self.remembered();
        remembered.remember(Scope::Session, &tool.name, &fingerprint);
        if kept == Scope::Project {
            remembered.remember(Scope::Project, &tool.name, &fingerprint);
        }
    }

    /// A refusal by a check or a deny rule: said, written down, and what the model reads.
    async fn refused(
        &self,
        p: &Proposal<'_>,
        tool: Option<&CatalogTool>,
        refusal: &Refusal,
        trace: &Trace,
    ) -> Admission {
        trace.add(Who::Host, refusal.for_person(), refusal.data());
        let mut entry = self.entry(p, tool, None, trace);
        let (decision, rule) = match refusal {
            Refusal::Denied { rule, .. } => ("denied", format!("rules[{rule}]")),
            other => ("refused", other.decision().to_owned()),
        };
        entry.decision = decision.into();
        entry.rule = Some(rule);
        entry.reason = Some(refusal.for_person());
        self.record_or_warn(entry, trace).await;
        let outcome = match refusal {
            Refusal::UnknownTool { .. } => Outcome::UnknownTool,
            _ => Outcome::Refused,
        };
        let server = match (refusal, tool) {
            (Refusal::UnknownTool { .. }, _) | (_, None) => "-".to_owned(),
            (_, Some(t)) => t.origin.label().to_owned(),
        };
        refused_text(&refusal.for_model(), outcome, server)
    }

    /// The ledger line for this proposal, before its decision is filled in.
    fn entry(
        &self,
        p: &Proposal<'_>,
        tool: Option<&CatalogTool>,
        arguments: Option<&JsonObject>,
        trace: &Trace,
    ) -> Entry {
        let text = match arguments {
            Some(a) => Value::Object(a.clone()).to_string(),
            None => p.call.arguments.clone(),
        };
        let kept = self.keep_arguments.then(|| {
            let mut v = serde_json::from_str(&text).unwrap_or(Value::String(text.clone()));
            trace.secrets().json(&mut v);
            v
        });
        Entry {
            session: p.session.to_owned(),
            trace_id: p.trace_id.to_owned(),
            step: p.step,
            server: tool.map_or("-", |t| t.origin.label()).to_owned(),
            tool: crate::text::clip(&p.call.name, MAX_RECORDED_NAME_CHARS).into_owned(),
            arguments_sha256: digest::sha256_hex(text.as_bytes()),
            arguments: kept,
            fingerprint: tool.map(|t| policy::definition_digest(&t.tool)),
            ..Entry::default()
        }
    }

    /// Append a line durably; `Ok` when there is no ledger.
    async fn record(&self, entry: Entry) -> Result<(), String> {
        let Some(ledger) = self.ledger.clone() else {
            return Ok(());
        };
        tokio::task::spawn_blocking(move || ledger.append(&entry).map(drop))
            .await
            .unwrap_or_else(|e| Err(format!("the ledger's writer failed: {e}")))
    }

    /// Append a line for a decision that sends nothing: a failure is said, not fatal.
    async fn record_or_warn(&self, entry: Entry, trace: &Trace) {
        if let Err(e) = self.record(entry).await {
            trace.add(
                Who::Host,
                format!("warning: {e}"),
                json!({"ledger": "unwritable"}),
            );
        }
    }
}

fn refused_text(text: &str, outcome: Outcome, server: String) -> Admission {
    Admission::Refused {
        text: text.to_owned(),
        outcome,
        server,
    }
}

fn answered_by(by: AnsweredBy) -> &'static str {
    match by {
        AnsweredBy::Option => "option",
        AnsweredBy::Terminal => "person",
        AnsweredBy::Nobody => "nobody",
    }
}
