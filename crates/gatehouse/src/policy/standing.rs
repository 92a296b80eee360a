//! What the policy does with a tool before its arguments are known, for a person choosing
//! one (the lab's manual panel): the rules that name it tried every way their conditions
//! can come out, each through the very precedence that decides a call ([`super::rule_for`]),
//! so the words here never drift from what a call would meet.

use super::{Basis, Refusal, rule_for_when};
use crate::{
    approvals::Remembered,
    catalog::CatalogTool,
    config::Settings,
    rules::{Decision, Rule},
};

/// Most rules with conditions naming one tool that [`standing`] tries every way (2^N
/// ways); past it the tool's standing only names them ([`Standing::Depends`]).
pub const MAX_CONDITIONAL_RULES: usize = 8;

/// The policy on every call of one tool, as far as it can be told without the arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Every call runs without asking: why, as the run's step says it.
    Allowed(String),
    /// Every call is put to the person first: why, as the run's step says it.
    Asked(String),
    /// Every call is refused: the refusal, as the person reads it.
    Denied(String),
    /// The arguments decide, through these rules' conditions.
    Depends {
        /// The rules with conditions (`rules[2]`), in order.
        rules: Vec<String>,
        /// Each standing the arguments can lead to, the one where no rule with conditions
        /// applies first; empty past [`MAX_CONDITIONAL_RULES`].
        outcomes: Vec<Standing>,
    },
}

impl Standing {
    /// Its kind, as the lab's data names it: `allowed`, `asked`, `denied`, `depends`.
    pub fn kind(&self) -> &'static str {
        match self {
            Standing::Allowed(_) => "allowed",
            Standing::Asked(_) => "asked",
            Standing::Denied(_) => "denied",
            Standing::Depends { .. } => "depends",
        }
    }

    /// In words: `denied by rules[1]: writes only inside the project`, `depends on the
    /// arguments (rules[1]): denied by rules[1]: …; or not on the allow-list: ask the
    /// person`.
    pub fn words(&self) -> String {
        match self {
            Standing::Allowed(why) | Standing::Asked(why) | Standing::Denied(why) => why.clone(),
            Standing::Depends { rules, outcomes } => {
                let mut text = format!("depends on the arguments ({})", rules.join(", "));
                if outcomes.is_empty() {
                    text.push_str(": `gatehouse policy explain TOOL ARGS` says which decides");
                } else {
                    let each: Vec<String> = outcomes.iter().map(Standing::words).collect();
                    text = format!("{text}: {}", each.join("; or "));
                }
                text
            }
        }
    }

    fn of(tool: &CatalogTool, settings: &Settings, (decision, basis): (Decision, Basis)) -> Self {
        match (decision, basis) {
            (Decision::Allow, basis) => Standing::Allowed(basis.for_run()),
            (Decision::Ask, basis) => Standing::Asked(basis.for_ask()),
            (Decision::Deny, Basis::Rule { index, reason }) => Standing::Denied(
                Refusal::Denied {
                    name: tool.name.clone(),
                    rule: index,
                    reason,
                    hidden: settings.rules.hiding(&tool.name).is_some(),
                }
                .for_person(),
            ),
            (Decision::Deny, other) => Standing::Denied(format!("denied by {}", other.label())),
        }
    }
}

/// What the policy does with `tool` whatever its arguments, with the approvals
/// `remembered`: one standing when every way its rules' conditions can come out leads to
/// it, else [`Standing::Depends`] with each one they can lead to.
pub fn standing(tool: &CatalogTool, settings: &Settings, remembered: &Remembered) -> Standing {
    let conditional: Vec<usize> = settings
        .rules
        .for_name(&tool.name)
        .filter(|r| !r.conditions.is_empty())
        .map(|r| r.index)
        .collect();
    let rules: Vec<String> = conditional.iter().map(|i| format!("rules[{i}]")).collect();
    if conditional.len() > MAX_CONDITIONAL_RULES {
        return Standing::Depends {
            rules,
            outcomes: Vec::new(),
        };
    }
    let mut outcomes: Vec<Standing> = Vec::new();
    // Way 0 is the one where no rule with conditions applies.
    for way in 0u32..1 << conditional.len() {
        let applies = |rule: &Rule| match conditional.iter().position(|i| *i == rule.index) {
            Some(bit) => way & (1 << bit) != 0,
            None => true,
        };
        let decided = rule_for_when(tool, settings, remembered, &|_| true, applies);
        let outcome = Standing::of(tool, settings, decided);
        if !outcomes.contains(&outcome) {
            outcomes.push(outcome);
        }
    }
    match outcomes.len() {
        1 => outcomes.remove(0),
        _ => Standing::Depends { rules, outcomes },
    }
}
