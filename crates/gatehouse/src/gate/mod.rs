//! The gate: one proposal's whole decision, written down. The policy's verdict
//! ([`crate::policy`]), the `beforeCall` hook ([`crate::hooks`]), the person when they
//! must be asked ([`crate::person`]), approvals remembered ([`crate::approvals`]), and a
//! ledger line for every decision ([`crate::ledger`]), flushed to disk before anything is
//! sent. After the call, the `afterCall` hook sees the result before the model does.
//!
//! One implementation of that path, owned by the host and used by anything that turns
//! proposals into calls: nothing in it knows about terminals or turns. A host asks its
//! person in the middle ([`Gate::admit`]); a gateway asks through its caller's client,
//! in a later request perhaps served by another replica, so the path is also open in its
//! two halves: [`Gate::judge`] (the checks, the policy, the hook) and [`Gate::settle`]
//! (the answer, what is remembered, the ledger line). Where approvals and the ledger are
//! kept is the [`Keeper`]'s (`keeper.rs`); the hooks' part is in `hooked.rs`.

mod hooked;
mod keeper;
mod line;
#[cfg(test)]
mod tests;

use line::{answer_of, answered_by, sent_decision};

pub use keeper::{Keeper, LocalKeeper};

use std::sync::Arc;

use rmcp::model::JsonObject;
use serde_json::json;

use crate::{
    approvals::{ProjectFile, Remembered},
    caller::CallerName,
    catalog::{Catalog, CatalogTool, Live, host_tools::runs_unasked},
    config::{Hooks, Settings},
    flow::{Flows, Traced},
    ledger::{self},
    model::ToolCall,
    person::{self, AnsweredBy, Person},
    policy::{self, Basis, Explanation, Refusal, Verdict},
    trace::{ApprovedBy, Outcome, Trace, Who},
};

/// Most characters of a proposed tool name a ledger line keeps: a name not in the catalog
/// is the model's text, of any length.
pub const MAX_RECORDED_NAME_CHARS: usize = 256;

/// Why a call the person said no to was not run, as its caller is told.
pub const DECLINED: &str = "the person declined this call";
/// Why a call was not run when the person closed its question without answering (a
/// client's `cancel` of a gateway's form).
pub const DISMISSED: &str =
    "the person dismissed the question without answering; the call was not run";

/// What the gate keeps for a session: where approvals and the ledger live, and the hooks.
pub struct Gate {
    keeper: Arc<dyn Keeper>,
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
    /// Who proposes, as a gateway's caller (`user@tenant`): whose approvals hold, and
    /// named in the ledger line. In a host, `None` for its model's proposals and
    /// [`crate::caller::PERSON`] for a call the person made themselves (a host's
    /// keeper holds one person's approvals, whoever proposes).
    pub caller: Option<&'a CallerName>,
    /// The confirmation a gateway's second round uses up (its nonce): named in the line,
    /// which the keeper appends only once.
    pub confirmation: Option<&'a str>,
    /// The session's context, labelled ([`crate::flow`]): where the arguments came from.
    /// `None` where the proposer's context is not seen (a gateway's caller).
    pub flows: Option<&'a Flows>,
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
        /// Who let it through: the policy's basis, the hook, or who said yes.
        approved_by: ApprovedBy,
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
#[derive(Debug)]
enum How {
    Run {
        rule: String,
        said: String,
        by: ApprovedBy,
    },
    Ask {
        rule: String,
        why: String,
        may_remember: bool,
    },
}

impl How {
    /// Run, as the policy's `basis` allows.
    fn run(basis: &Basis) -> How {
        let by = match basis {
            Basis::Rule { .. } => ApprovedBy::Rule,
            Basis::AllowList { .. } => ApprovedBy::AllowList,
            Basis::Remembered(_) => ApprovedBy::Remembered,
            // The policy runs nothing unasked on a default, a changed definition or a flow.
            Basis::Host | Basis::Default | Basis::Changed { .. } | Basis::Flow { .. } => {
                ApprovedBy::Host
            }
        };
        How::Run {
            rule: basis.label(),
            said: basis.for_run(),
            by,
        }
    }

    /// Ask the person first, as the policy's `basis` says.
    fn ask(basis: &Basis) -> How {
        How::Ask {
            rule: basis.label(),
            why: basis.for_ask(),
            may_remember: basis.may_remember(),
        }
    }
}

/// A call the policy did not refuse.
#[derive(Debug)]
struct Decided {
    tool: CatalogTool,
    arguments: JsonObject,
    /// The model's own arguments, when a hook rewrote them.
    proposed: Option<JsonObject>,
    how: How,
    /// Where the arguments came from, where the flow is seen.
    traced: Option<Traced>,
}

/// A call the checks, the policy and the `beforeCall` hook let through, not yet written
/// down: it runs, or the person must be asked first ([`Judged::asks`]). Nothing is sent
/// before [`Gate::settle`] writes its line.
#[derive(Debug)]
pub struct Judged {
    decided: Decided,
}

impl Judged {
    /// The tool.
    pub fn tool(&self) -> &CatalogTool {
        &self.decided.tool
    }

    /// The arguments to send (a hook may have rewritten the model's).
    pub fn arguments(&self) -> &JsonObject {
        &self.decided.arguments
    }

    /// What decided, as the ledger names it: `rules[2]`, `allow[0]`, `default`, `hook`.
    pub fn rule(&self) -> &str {
        match &self.decided.how {
            How::Run { rule, .. } | How::Ask { rule, .. } => rule,
        }
    }

    /// When the person must be asked: why, in words.
    pub fn asks(&self) -> Option<&str> {
        match &self.decided.how {
            How::Ask { why, .. } => Some(why),
            How::Run { .. } => None,
        }
    }

    /// The call as the person is shown it.
    pub fn proposed(&self) -> person::Proposed<'_> {
        let tool = &self.decided.tool;
        person::Proposed {
            server: tool.origin.label(),
            tool: &tool.name,
            arguments: &self.decided.arguments,
            annotations: tool.tool.annotations.as_ref(),
            may_remember: matches!(
                self.decided.how,
                How::Ask {
                    may_remember: true,
                    ..
                }
            ),
            proposed: self.decided.proposed.as_ref(),
            by: person::ProposedBy::Model,
            flows: self.decided.traced.as_ref(),
        }
    }

    /// Where the arguments came from, where the flow is seen.
    pub fn traced(&self) -> Option<&Traced> {
        self.decided.traced.as_ref()
    }
}

impl Gate {
    /// The gate for a session with these settings: approvals and the ledger kept as a
    /// host keeps them ([`LocalKeeper`]).
    pub fn new(settings: &Settings, project: Option<ProjectFile>, trace: &Trace) -> Gate {
        let keeper = LocalKeeper::new(settings, project, trace);
        Gate::with_keeper(settings, Arc::new(keeper))
    }

    /// The gate with approvals and the ledger kept by `keeper` (a gateway's shared store).
    pub fn with_keeper(settings: &Settings, keeper: Arc<dyn Keeper>) -> Gate {
        Gate {
            keeper,
            keep_arguments: settings.ledger.arguments,
            hooks: settings.hooks.clone(),
        }
    }

    /// Explain the policy's verdict on `call` to a tool of `catalog` (the running host's,
    /// or a cached one: explaining grants nothing) with the approvals remembered now.
    pub async fn explain(
        &self,
        call: &ToolCall,
        catalog: &Catalog,
        settings: &Settings,
    ) -> Explanation {
        policy::explain(call, catalog, settings, &self.remembered().await)
    }

    /// The approvals remembered now, as the policy reads them for the person's own calls:
    /// what [`Gate::explain`] and a tool's [`policy::standing`] take.
    pub async fn remembered(&self) -> Remembered {
        self.keeper.remembered(None).await
    }

    /// Decide on one proposal: refused, or to be sent, asking `person` when the policy
    /// says so. Every decision is a ledger line; a call is sent only after its line is on
    /// disk.
    pub async fn admit(
        &self,
        p: &Proposal<'_>,
        live: &Live,
        settings: &Settings,
        person: &dyn Person,
        trace: &Trace,
    ) -> Admission {
        let judged = match self.judge(p, live, settings, trace).await {
            Ok(judged) => judged,
            Err(refused) => return refused,
        };
        let approval = match judged.asks() {
            Some(why) => {
                let mut proposed = judged.proposed();
                if p.caller.is_some_and(CallerName::is_person) {
                    proposed.by = person::ProposedBy::Person;
                }
                Some(person::approve_call(person, trace, &proposed, why).await)
            }
            None => None,
        };
        self.settle(p, judged, approval, live, trace).await
    }

    /// The first half: the checks, the policy and the `beforeCall` hook. A refusal is
    /// written down here and is the model's answer; anything else is [`Judged`], for
    /// [`Gate::settle`].
    pub async fn judge(
        &self,
        p: &Proposal<'_>,
        live: &Live,
        settings: &Settings,
        trace: &Trace,
    ) -> Result<Judged, Admission> {
        let remembered = self.keeper.remembered(p.caller).await;
        let mut decided = self.decide(p, live, settings, &remembered);
        if matches!(&decided, Ok(d) if matches!(d.how, How::Ask { .. }))
            && let Some(now) = self.keeper.remembered_now(p.caller).await
        {
            // The keeper answered from a cache: before the person is asked, its approvals
            // as they stand now (one given on another replica since counts).
            decided = self.decide(p, live, settings, &now);
        }
        let decided = match decided {
            Ok(decided) => decided,
            Err(refused) => {
                let (refusal, tool) = *refused;
                return Err(self.refused(p, tool.as_ref(), &refusal, trace).await);
            }
        };
        // The host's tools that read only its own state (`search_tools`, `read_result`) are
        // not calls out of the host: no hook, no ledger line, no step of their own. Their
        // admission is decided here, as a refusal's is.
        if runs_unasked(&decided.tool) {
            return Err(Admission::Send {
                tool: Box::new(decided.tool),
                arguments: decided.arguments,
                approved_by: ApprovedBy::Host,
            });
        }
        let decided = self.before_call(p, decided, settings, trace).await?;
        if let How::Run { rule, said, .. } = &decided.how {
            // The allow-list's step is the seed's own line; a rule's names the rule.
            let data = if rule.starts_with("allow[") {
                json!({"decision": "auto"})
            } else {
                json!({"decision": "auto", "rule": rule})
            };
            trace.add(Who::Host, said.clone(), data);
        }
        Ok(Judged { decided })
    }

    /// The second half: the person's answer (for a call that asks; none is a no), what
    /// they said to remember, and the ledger line, synced before the call may be sent.
    pub async fn settle(
        &self,
        p: &Proposal<'_>,
        judged: Judged,
        answer: Option<person::Approval>,
        live: &Live,
        trace: &Trace,
    ) -> Admission {
        let decided = judged.decided;
        let (rule, answer, approved_by) = match &decided.how {
            How::Run { rule, by, .. } => (rule.clone(), None, *by),
            How::Ask { rule, .. } => {
                let approval =
                    answer.unwrap_or_else(|| person::Approval::once(false, AnsweredBy::Nobody));
                let by = match approval.by {
                    AnsweredBy::Option => ApprovedBy::Option,
                    AnsweredBy::Client => ApprovedBy::Client,
                    AnsweredBy::Terminal
                    | AnsweredBy::Browser
                    | AnsweredBy::Page
                    | AnsweredBy::Nobody => ApprovedBy::Person,
                };
                (rule.clone(), Some(approval), by)
            }
        };
        let mut entry = self.entry(p, Some(&decided.tool), Some(&decided.arguments), trace);
        entry.flows = decided
            .traced
            .as_ref()
            .filter(|_| self.keeper.keeps_lines())
            .map(|t| self.flows_kept(t, trace));
        entry.rule = Some(rule);
        entry.decision = sent_decision(answer.is_some());
        if decided.proposed.is_some() {
            entry.reason = Some("arguments rewritten by the beforeCall hook".into());
        }
        if let Some(approval) = answer {
            entry.answer = Some(answer_of(approval.yes));
            entry.by = Some(answered_by(approval.by));
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
                entry.dismissed = approval.dismissed;
                self.record_or_warn(entry, trace).await;
                let server = decided.tool.origin.label().to_owned();
                let text = match approval.dismissed {
                    true => DISMISSED,
                    false => DECLINED,
                };
                return refused_text(text, Outcome::Declined, server);
            }
        }
        if let Err(e) = self.keeper.append(entry).await {
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
        // Remembered only once the yes is written down (a confirmation used twice is not).
        if let (How::Ask { may_remember, .. }, Some(approval)) = (&decided.how, answer) {
            self.approved(p, &decided.tool, *may_remember, approval, live, trace)
                .await;
        }
        Admission::Send {
            tool: Box::new(decided.tool),
            arguments: decided.arguments,
            approved_by,
        }
    }

    /// The person said yes: a changed tool's new definition is the one decided on, and an
    /// approval remembered where they said so (and the request offered it).
    async fn approved(
        &self,
        p: &Proposal<'_>,
        tool: &CatalogTool,
        may_remember: bool,
        approval: person::Approval,
        live: &Live,
        trace: &Trace,
    ) {
        if tool.changed {
            live.mark_approved(&tool.name);
        }
        if let (true, Some(scope)) = (may_remember, approval.remember) {
            let fingerprint = tool.definition_digest();
            self.keeper
                .remember(p.caller, scope, &tool.name, fingerprint, trace)
                .await;
        }
    }

    /// The policy's verdict, out of the catalog's lock (never held across an await).
    fn decide(
        &self,
        p: &Proposal<'_>,
        live: &Live,
        settings: &Settings,
        remembered: &Remembered,
    ) -> Result<Decided, Box<(Refusal, Option<CatalogTool>)>> {
        let (call, catalog) = (p.call, live.current());
        let (verdict, traced) =
            policy::decide_flowing(call, &catalog, settings, remembered, p.flows);
        let (tool, arguments, how) = match verdict {
            Verdict::Run {
                tool,
                arguments,
                basis,
            } => (tool, arguments, How::run(&basis)),
            Verdict::Ask {
                tool,
                arguments,
                basis,
            } => (tool, arguments, How::ask(&basis)),
            Verdict::Refuse(refusal) => {
                return Err(Box::new((refusal, catalog.get(&call.name).cloned())));
            }
        };
        Ok(Decided {
            tool: tool.clone(),
            arguments,
            proposed: None,
            how,
            traced,
        })
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
            Refusal::Denied { rule, .. } => (ledger::Decision::Denied, format!("rules[{rule}]")),
            other => (ledger::Decision::Refused, other.decision().to_owned()),
        };
        entry.decision = decision;
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
}

fn refused_text(text: &str, outcome: Outcome, server: String) -> Admission {
    Admission::Refused {
        text: text.to_owned(),
        outcome,
        server,
    }
}
