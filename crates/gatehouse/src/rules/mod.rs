//! The person's rules, written down (`"rules"` in the `gatehouse` part of the servers
//! file): an ordered list, each rule a glob over the namespaced tool name, conditions on
//! the arguments, and a decision, `allow`, `ask` or `deny`, with a reason.
//!
//! Read and checked once, when the file is read: a bad glob, regex or pointer is an error
//! naming the rule's index. Matching is pure and allocation-light: one glob set finds the
//! rules whose pattern matches a name, and only their conditions are tested. Precedence
//! (a deny wins, then the first match) is [`crate::policy`]'s; this module answers which
//! rules apply.

pub mod conditions;
pub mod path;
pub mod via;

#[cfg(test)]
mod tests;

use globset::{GlobMatcher, GlobSet, GlobSetBuilder};
use serde::Serialize;
use serde_json::Value;

pub use conditions::{Condition, Holds, Test};
pub use via::Via;

/// Most rules a servers file may hold.
pub const MAX_RULES: usize = 1_000;
/// Most conditions one rule may hold.
pub const MAX_CONDITIONS: usize = 32;
/// Longest reason a rule may give, in characters.
pub const MAX_REASON_CHARS: usize = 500;

/// What a rule decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Run it without asking.
    Allow,
    /// Show the person the call and ask.
    Ask,
    /// Refuse it: nothing is sent.
    Deny,
}

impl Decision {
    /// The word the servers file and the ledger use.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }

    /// The decision an object's `"decision"` names (`allow`, `ask`, `deny`), as rules and
    /// hooks write it; `None` when it names none.
    pub fn of(map: &serde_json::Map<String, Value>) -> Option<Decision> {
        let word = map.get("decision").and_then(Value::as_str)?;
        [Decision::Allow, Decision::Ask, Decision::Deny]
            .into_iter()
            .find(|d| d.as_str() == word)
    }
}

/// One rule of the list.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Its place in `rules` (from 0), as the person and the ledger name it: `rules[3]`.
    pub index: usize,
    /// The glob over the namespaced tool name (`files__*`), as written.
    pub tool: String,
    /// Every one must hold (see [`Holds`] for what cannot be told).
    pub conditions: Vec<Condition>,
    /// What it decides.
    pub decision: Decision,
    /// What the model reads for a deny, and the person for an ask.
    pub reason: Option<String>,
    /// For an ask: who must answer it, when the rule says (else the `approvals`
    /// setting's).
    pub via: Option<Via>,
    matcher: GlobMatcher,
}

impl Rule {
    /// `rules[3]`.
    pub fn label(&self) -> String {
        format!("rules[{}]", self.index)
    }

    /// Does the tool pattern match this name?
    pub fn matches_name(&self, tool: &str) -> bool {
        self.matcher.is_match(tool)
    }

    /// Does the rule apply to these arguments? An `allow` needs every condition to hold; an
    /// `ask` or a `deny` applies unless one surely does not.
    pub fn applies(&self, arguments: &Value) -> bool {
        self.applies_in(arguments, None)
    }

    /// [`Rule::applies`], for arguments that came as `traced` says (`from` conditions).
    pub fn applies_in(&self, arguments: &Value, traced: Option<&crate::flow::Traced>) -> bool {
        let strict = self.decision == Decision::Allow;
        self.conditions
            .iter()
            .all(|c| match c.holds_in(arguments, traced) {
                Holds::Yes => true,
                Holds::No => false,
                Holds::Unknown => !strict,
            })
    }

    /// A deny with no conditions: the tool is not offered to the model at all.
    pub fn hides(&self) -> bool {
        self.decision == Decision::Deny && self.conditions.is_empty()
    }
}

/// The rules of a servers file, compiled.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    rules: Vec<Rule>,
    names: GlobSet,
}

impl Rules {
    /// Read `"rules"`: a list of rule objects. The error names the rule (`rules[2]`) and
    /// what is wrong with it.
    pub fn parse(value: &Value) -> Result<Rules, String> {
        let Value::Array(items) = value else {
            return Err("\"rules\" must be a list of rules".into());
        };
        if items.len() > MAX_RULES {
            return Err(format!(
                "\"rules\" holds {} rules, at most {MAX_RULES}",
                items.len()
            ));
        }
        let rules = items
            .iter()
            .enumerate()
            .map(|(index, item)| rule(index, item).map_err(|e| format!("rules[{index}]: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        Rules::new(rules)
    }

    fn new(rules: Vec<Rule>) -> Result<Rules, String> {
        let mut set = GlobSetBuilder::new();
        for r in &rules {
            set.add(r.matcher.glob().clone());
        }
        let names = set
            .build()
            .map_err(|e| format!("\"rules\": the tool patterns do not compile together: {e}"))?;
        Ok(Rules { rules, names })
    }

    /// Every rule, in order.
    pub fn all(&self) -> &[Rule] {
        &self.rules
    }

    /// How many rules there are.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules whose tool pattern matches `tool`, in order.
    pub fn for_name<'r>(&'r self, tool: &str) -> impl Iterator<Item = &'r Rule> + 'r {
        let indices = if self.rules.is_empty() {
            Vec::new()
        } else {
            self.names.matches(tool)
        };
        indices.into_iter().map(move |i| &self.rules[i])
    }

    /// The deny rule that hides `tool` from the model, if one does.
    pub fn hiding(&self, tool: &str) -> Option<&Rule> {
        self.for_name(tool).find(|r| r.hides())
    }

    /// Could an `allow` rule run `tool` without asking (for some arguments)?
    pub fn may_allow(&self, tool: &str) -> bool {
        self.for_name(tool).any(|r| r.decision == Decision::Allow)
    }
}

/// One rule from the file.
fn rule(index: usize, value: &Value) -> Result<Rule, String> {
    let Value::Object(map) = value else {
        return Err("a rule must be an object".into());
    };
    if let Some(k) = map
        .keys()
        .find(|k| !["tool", "when", "decision", "reason", "via"].contains(&k.as_str()))
    {
        return Err(format!(
            "unknown key \"{k}\" (a rule has tool, when, decision, reason, via)"
        ));
    }
    let tool = match map.get("tool") {
        Some(Value::String(t))
            if !t.is_empty() && t.chars().count() <= conditions::MAX_PATTERN_CHARS =>
        {
            t
        }
        _ => return Err("\"tool\" must be a glob over tool names, such as \"files__*\"".into()),
    };
    let matcher = conditions::glob(tool).map_err(|e| format!("\"tool\" {tool:?}: {e}"))?;
    let Some(decision) = Decision::of(map) else {
        return Err("\"decision\" must be \"allow\", \"ask\" or \"deny\"".into());
    };
    let reason = match map.get("reason") {
        None => None,
        Some(Value::String(r)) if r.chars().count() <= MAX_REASON_CHARS => Some(r.clone()),
        Some(_) => {
            return Err(format!(
                "\"reason\" must be a string of at most {MAX_REASON_CHARS} characters"
            ));
        }
    };
    let conditions = match map.get("when") {
        None => Vec::new(),
        Some(Value::Object(_)) => vec![map["when"].clone()],
        Some(Value::Array(items)) if items.len() <= MAX_CONDITIONS => items.clone(),
        Some(_) => {
            return Err(format!(
                "\"when\" must be a condition or a list of at most {MAX_CONDITIONS}"
            ));
        }
    }
    .iter()
    .enumerate()
    .map(|(i, c)| Condition::parse(c).map_err(|e| format!("when[{i}]: {e}")))
    .collect::<Result<_, _>>()?;
    Ok(Rule {
        index,
        tool: tool.clone(),
        conditions,
        decision,
        reason,
        via: via::of_rule(map, decision)?,
        matcher,
    })
}
