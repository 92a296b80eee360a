//! The hooks' part of the gate: `beforeCall` deciding how a call goes on (its rewritten
//! arguments checked again), `afterCall` seeing the result before the model does.

use rmcp::model::JsonObject;
use serde_json::{Value, json};

use super::{Admission, Decided, Gate, How, Proposal, refused_text};
use crate::{
    approvals::Remembered,
    catalog::CatalogTool,
    config::Settings,
    dispatch::CallEnd,
    hooks, person,
    policy::{self, Basis, Refusal},
    rules::Decision,
    trace::{ApprovedBy, Outcome, Trace, Who},
};

impl Gate {
    /// Run `beforeCall` where it applies; its answer decides how the call goes on. A hook
    /// that fails is a deny. Rewritten arguments are checked again: size, schema, and the
    /// deny rules.
    pub(super) async fn before_call(
        &self,
        p: &Proposal<'_>,
        mut decided: Decided,
        settings: &Settings,
        trace: &Trace,
    ) -> Result<Decided, Admission> {
        let Some(hook) = self
            .hooks
            .before_call
            .as_ref()
            .filter(|h| h.applies_to(&decided.tool.name))
        else {
            return Ok(decided);
        };
        let input = self.hook_input(p, &decided);
        let answer = match hooks::before_call(hook, &input).await {
            Ok(answer) => answer,
            Err(e) => {
                return Err(self
                    .hook_denied(
                        p,
                        &decided,
                        &format!("{e} (a hook that fails denies)"),
                        trace,
                    )
                    .await);
            }
        };
        if let Some(arguments) = answer.arguments {
            if let Err(problem) = rewritten(&decided.tool, &arguments, settings) {
                return Err(self.hook_denied(p, &decided, &problem, trace).await);
            }
            let args = Value::Object(arguments.clone());
            let none = Remembered::default();
            if let (Decision::Deny, basis) = policy::rule_for(&decided.tool, &args, settings, &none)
            {
                let refusal = deny_refusal(&decided.tool, basis);
                return Err(self.refused(p, Some(&decided.tool), &refusal, trace).await);
            }
            decided.proposed = Some(std::mem::replace(&mut decided.arguments, arguments));
        }
        let reason = answer
            .reason
            .as_ref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default();
        decided.how = match answer.decision {
            Decision::Allow => How::Run {
                rule: "hook".into(),
                said: format!("the beforeCall hook allows it{reason}: run it"),
                by: ApprovedBy::Hook,
            },
            Decision::Ask => How::Ask {
                rule: "hook".into(),
                why: format!("the beforeCall hook asks the person{reason}"),
                may_remember: false,
            },
            Decision::Deny => {
                let why = answer.reason.unwrap_or_else(|| "no reason given".into());
                return Err(self.hook_denied(p, &decided, &why, trace).await);
            }
        };
        Ok(decided)
    }

    fn hook_input(&self, p: &Proposal<'_>, decided: &Decided) -> Value {
        let (decision, rule) = match &decided.how {
            How::Run { rule, .. } => ("allow", rule),
            How::Ask { rule, .. } => ("ask", rule),
        };
        json!({
            "hook": "beforeCall", "session": p.session, "trace_id": p.trace_id, "step": p.step,
            "server": decided.tool.origin.label(), "tool": decided.tool.name,
            "arguments": decided.arguments,
            "annotations": person::annotations_for_display(decided.tool.tool.annotations.as_ref()),
            "policy": {"decision": decision, "rule": rule},
        })
    }

    async fn hook_denied(
        &self,
        p: &Proposal<'_>,
        decided: &Decided,
        why: &str,
        trace: &Trace,
    ) -> Admission {
        let server = decided.tool.origin.label().to_owned();
        trace.add(
            Who::Host,
            format!("denied by the beforeCall hook: {why}"),
            json!({"decision": "denied", "rule": "hook"}),
        );
        let mut entry = self.entry(p, Some(&decided.tool), Some(&decided.arguments), trace);
        entry.decision = crate::ledger::Decision::Denied;
        entry.rule = Some("hook".into());
        entry.reason = Some(why.to_owned());
        self.record_or_warn(entry, trace).await;
        refused_text(
            &format!("denied by the host's policy: {why}; nothing was sent"),
            Outcome::Refused,
            server,
        )
    }

    /// Run `afterCall` on a result, where it applies: the result it gives instead, or the
    /// result withheld when it fails (it may be there to redact).
    pub async fn after_call(
        &self,
        p: &Proposal<'_>,
        tool: &CatalogTool,
        arguments: &JsonObject,
        end: CallEnd,
        trace: &Trace,
    ) -> CallEnd {
        let Some(hook) = self
            .hooks
            .after_call
            .as_ref()
            .filter(|h| h.applies_to(&tool.name))
        else {
            return end;
        };
        let CallEnd::Result(result) = end else {
            return end;
        };
        let input = json!({
            "hook": "afterCall", "session": p.session, "trace_id": p.trace_id, "step": p.step,
            "server": tool.origin.label(), "tool": tool.name, "arguments": arguments, "result": result,
        });
        match hooks::after_call(hook, &input).await {
            Ok(None) => CallEnd::Result(result),
            Ok(Some(replaced)) => {
                trace.add(
                    Who::Host,
                    "the afterCall hook replaced the result",
                    json!({"hook": "afterCall"}),
                );
                CallEnd::Result(replaced)
            }
            Err(e) => {
                trace.add(
                    Who::Host,
                    format!("the result is withheld: {e}"),
                    json!({"hook": "afterCall"}),
                );
                CallEnd::Failed(format!("the result was withheld by the host: {e}"))
            }
        }
    }
}

/// Rewritten arguments must fit as the model's had to: the size bound and the schema.
fn rewritten(
    tool: &CatalogTool,
    arguments: &JsonObject,
    settings: &Settings,
) -> Result<(), String> {
    let value = Value::Object(arguments.clone());
    let chars = value.to_string().chars().count();
    if chars > settings.max_argument_chars {
        return Err(format!(
            "it rewrote the arguments to {chars} characters, more than {}",
            settings.max_argument_chars
        ));
    }
    let problems = crate::schema::problems(&tool.input, &value);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "it rewrote the arguments into something the tool's schema refuses: {}",
            problems.join("; ")
        ))
    }
}

fn deny_refusal(tool: &CatalogTool, basis: Basis) -> Refusal {
    let Basis::Rule { index, reason } = basis else {
        unreachable!("only a rule denies")
    };
    Refusal::Denied {
        name: tool.name.clone(),
        rule: index,
        reason,
        hidden: false,
    }
}
