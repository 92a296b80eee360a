//! `gatehouse policy explain`: which rule decides a call, and why. The verdict is the one
//! [`super::decide_remembering`] gives (the same code the host runs); beside it, every rule
//! whose tool pattern matches the name, and what each of its conditions found.

use serde::Serialize;
use serde_json::{Value, json};

use super::{Basis, Refusal, Verdict, decide_remembering};
use crate::{
    approvals::Remembered,
    catalog::Catalog,
    config::Settings,
    model::ToolCall,
    rules::{Decision, Holds},
};

/// One rule whose tool pattern matches the name, and what its conditions found.
#[derive(Debug, Clone, Serialize)]
pub struct RuleCheck {
    /// `rules[2]`.
    pub rule: String,
    /// Its tool pattern.
    pub tool: String,
    /// What it decides when it applies.
    pub decision: Decision,
    /// Each condition in words, with `yes`, `no` or `cannot tell`.
    pub conditions: Vec<(String, &'static str)>,
    /// Does it apply to these arguments?
    pub applies: bool,
}

/// What the policy says about one call, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    /// `run`, `ask` or `refuse`.
    pub verdict: &'static str,
    /// What decided: `rules[2]`, `allow[0]`, `session`, `project`, `default`, `changed`,
    /// or the check that refused (`unknown_tool`, `denied`, `invalid_arguments`, …).
    pub by: String,
    /// The verdict in a sentence, as the run would show it.
    pub because: String,
    /// The rules whose pattern matches the tool's name, in order.
    pub rules: Vec<RuleCheck>,
}

/// Explain the verdict on `call`.
pub fn explain(
    call: &ToolCall,
    catalog: &Catalog,
    settings: &Settings,
    remembered: &Remembered,
) -> Explanation {
    let arguments: Value = serde_json::from_str(&call.arguments).unwrap_or(json!({}));
    let rules = settings
        .rules
        .for_name(&call.name)
        .map(|rule| RuleCheck {
            rule: rule.label(),
            tool: rule.tool.clone(),
            decision: rule.decision,
            conditions: rule
                .conditions
                .iter()
                .map(|c| {
                    let found = match c.holds(&arguments) {
                        Holds::Yes => "yes",
                        Holds::No => "no",
                        Holds::Unknown => "cannot tell",
                    };
                    (c.describe(), found)
                })
                .collect(),
            applies: rule.applies(&arguments),
        })
        .collect();
    let (verdict, by, because) = match decide_remembering(call, catalog, settings, remembered) {
        Verdict::Run { basis, .. } => ("run", basis.label(), basis.for_run()),
        Verdict::Ask { basis, .. } => ("ask", basis.label(), basis.for_ask()),
        Verdict::Refuse(refusal) => ("refuse", refused_by(&refusal), refusal.for_person()),
    };
    Explanation {
        verdict,
        by,
        because,
        rules,
    }
}

fn refused_by(refusal: &Refusal) -> String {
    match refusal {
        Refusal::Denied { rule, .. } => Basis::Rule {
            index: *rule,
            reason: None,
        }
        .label(),
        other => other.decision().into(),
    }
}
