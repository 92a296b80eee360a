//! Where a proposal is refused, run at once, or put to the person.
//!
//! The checks run in this order, and none sends anything anywhere: is the tool in this
//! host's catalog, and not hidden by a deny rule; are its arguments a JSON object of
//! bounded size that fits the tool's input schema; then the person's policy
//! ([`crate::rules`]): a matching `deny` wins, then the first matching rule, then the
//! `allow` list, then an approval remembered for this definition, else ask. Annotations
//! from a server are shown to the person, never trusted: a `readOnlyHint` is a hint for a
//! user interface, not a permission.
//!
//! Pure: no I/O but the symbolic links an `inside` condition resolves where its path exists
//! (no file is opened), so it is cheap and easy to test, and the host, `policy explain`
//! and a gateway all decide with this one code.

mod explain;
mod flows;
pub mod names;
mod standing;

pub use explain::{Explanation, RuleCheck, explain};
pub use flows::result_trust;
pub use standing::{MAX_CONDITIONAL_RULES, Standing, standing};

use rmcp::model::JsonObject;
use serde_json::{Value, json};

use crate::{
    approvals::{Remembered, Scope},
    catalog::{Catalog, CatalogTool, host_tools::runs_unasked},
    config::Settings,
    flow::{Flows, Traced},
    model::ToolCall,
    rules::Decision,
    schema,
};

/// The host's decision on one proposed call.
#[derive(Debug)]
pub enum Verdict<'c> {
    /// Allowed (by a rule, the allow-list or a remembered approval): run it without asking.
    Run {
        /// The tool in the catalog.
        tool: &'c CatalogTool,
        /// Its arguments, checked.
        arguments: JsonObject,
        /// What allowed it.
        basis: Basis,
    },
    /// Show the person the exact call and ask.
    Ask {
        /// The tool in the catalog.
        tool: &'c CatalogTool,
        /// Its arguments, checked.
        arguments: JsonObject,
        /// Why the person is asked.
        basis: Basis,
    },
    /// Refused: nothing is sent, and the model is told why.
    Refuse(Refusal),
}

/// Why a proposal was refused before anything was sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// The name is not in the catalog (invented, mistyped, or filtered out).
    UnknownTool {
        /// The name the model gave.
        name: String,
    },
    /// The arguments are longer than the bound.
    TooLarge {
        /// How long they are.
        chars: usize,
        /// The bound.
        max: usize,
    },
    /// The arguments are not JSON.
    NotJson {
        /// The parser's words.
        error: String,
    },
    /// The arguments are JSON, but not an object.
    NotAnObject {
        /// What they are instead.
        found: &'static str,
    },
    /// The arguments do not fit the tool's input schema.
    InvalidArguments {
        /// Every problem, in plain words.
        problems: Vec<String>,
    },
    /// A deny rule matched.
    Denied {
        /// The tool, as the model named it.
        name: String,
        /// The rule's index in `rules`.
        rule: usize,
        /// The rule's reason, which the model reads.
        reason: Option<String>,
        /// A deny without conditions: the tool is not offered, and the model is told no
        /// more than for a tool that does not exist.
        hidden: bool,
    },
}

/// What decided a call that runs or is asked about.
#[derive(Debug, Clone, PartialEq)]
pub enum Basis {
    /// A rule of `rules`, by its index, with its reason.
    Rule {
        /// Its index in `rules`.
        index: usize,
        /// Its reason.
        reason: Option<String>,
    },
    /// The `allow` list, by the name's index in it.
    AllowList {
        /// Its index in `allow`.
        index: usize,
    },
    /// An approval the person gave for this definition of the tool.
    Remembered(Scope),
    /// One of the host's own tools that reads only the host's state (`search_tools`,
    /// `read_result`): it runs unasked, whatever the rules say of servers' tools.
    Host,
    /// No rule decided: ask.
    Default,
    /// A rule or the allow-list would run it, but the tool's definition changed since the
    /// session decided on it: ask.
    Changed {
        /// What would have allowed it (`allow[0]`, `rules[2]`, `a remembered approval`).
        was: String,
        /// What changed, in words ([`crate::catalog::change::Change::describe`]).
        what: String,
    },
    /// The rule of two ([`flows`]): untrusted text is in the context and the tool is
    /// consequential, and not every argument is the person's or a trusted result's: ask.
    Flow {
        /// What would have allowed it (`allow[0]`, `rules[2]`, `session`).
        was: String,
        /// Why, in words: what entered the context, and the arguments not vouched for.
        why: String,
    },
}

impl Basis {
    /// How the ledger and `policy explain` name it: `rules[2]`, `allow[0]`, `session`,
    /// `project`, `default`, `changed`.
    pub fn label(&self) -> String {
        match self {
            Basis::Rule { index, .. } => format!("rules[{index}]"),
            Basis::AllowList { index } => format!("allow[{index}]"),
            Basis::Remembered(scope) => scope.as_str().into(),
            Basis::Host => "host".into(),
            Basis::Default => "default".into(),
            Basis::Changed { .. } => "changed".into(),
            Basis::Flow { .. } => "flows".into(),
        }
    }

    /// The step the run shows for a call that runs on this basis.
    pub fn for_run(&self) -> String {
        match self {
            Basis::AllowList { .. } => "on the allow-list: run it".into(),
            Basis::Host => "the host's own tool: run it".into(),
            Basis::Rule { index, .. } => format!("allowed by rules[{index}]: run it"),
            Basis::Remembered(Scope::Session) => "approved for this session: run it".into(),
            Basis::Remembered(Scope::Project) => "approved in this project: run it".into(),
            other => format!("{}: run it", other.label()),
        }
    }

    /// The step the run shows before the person is asked, with the rule's reason.
    pub fn for_ask(&self) -> String {
        match self {
            Basis::Default => "not on the allow-list: ask the person".into(),
            Basis::Changed { was, what } if was.starts_with("allow[") => {
                format!("changed since it was put on the allow-list ({what}): ask the person")
            }
            Basis::Changed { was, what } => {
                format!("changed since {was} allowed it ({what}): ask the person")
            }
            Basis::Flow { why, .. } => format!("{why}: ask the person"),
            Basis::Rule { index, reason } => match reason {
                Some(r) => format!("rules[{index}] says ask the person: {r}"),
                None => format!("rules[{index}] says ask the person"),
            },
            other => format!("{}: ask the person", other.label()),
        }
    }

    /// May the person's answer be remembered (`a`, `A`)? Only where no rule said to ask:
    /// a rule that asks asks every time, until the person changes it in the file.
    pub fn may_remember(&self) -> bool {
        matches!(self, Basis::Default | Basis::Changed { .. })
    }
}

impl Refusal {
    /// The short name of the decision, as the run records it.
    pub fn decision(&self) -> &'static str {
        match self {
            Refusal::UnknownTool { .. } => "unknown_tool",
            Refusal::TooLarge { .. } => "too_large",
            Refusal::NotJson { .. } => "invalid_arguments",
            Refusal::NotAnObject { .. } => "invalid_arguments",
            Refusal::InvalidArguments { .. } => "invalid_arguments",
            Refusal::Denied { .. } => "denied",
        }
    }

    /// What the model reads instead of a result.
    pub fn for_model(&self) -> String {
        match self {
            Refusal::UnknownTool { name } => {
                format!("unknown tool {name}: it is not among the tools offered to you")
            }
            Refusal::TooLarge { chars, max } => {
                format!("arguments too large: {chars} characters, at most {max}; send less")
            }
            Refusal::NotJson { error } => {
                format!("the arguments were not valid JSON ({error}); send a JSON object")
            }
            Refusal::NotAnObject { found } => {
                format!("the arguments must be a JSON object, not {found}")
            }
            Refusal::InvalidArguments { problems } => format!(
                "the arguments do not fit the tool's input schema: {}",
                problems.join("; ")
            ),
            Refusal::Denied {
                name, hidden: true, ..
            } => {
                format!("unknown tool {name}: it is not among the tools offered to you")
            }
            Refusal::Denied { reason, .. } => format!(
                "denied by the host's policy: {}; nothing was sent",
                reason.as_deref().unwrap_or("this call is not allowed")
            ),
        }
    }

    /// What the person reads in the run.
    pub fn for_person(&self) -> String {
        match self {
            Refusal::UnknownTool { name } => format!("refused: {name} is not a tool of this host"),
            Refusal::TooLarge { chars, max } => {
                format!("refused: arguments too large ({chars} characters, at most {max})")
            }
            Refusal::NotJson { .. } => "refused: the arguments are not valid JSON".into(),
            Refusal::NotAnObject { found } => {
                format!("refused: the arguments are {found}, not a JSON object")
            }
            Refusal::InvalidArguments { problems } => format!(
                "refused: the arguments do not fit the schema ({})",
                problems.join("; ")
            ),
            Refusal::Denied {
                rule,
                reason,
                hidden,
                ..
            } => {
                let hidden = if *hidden {
                    ", a tool hidden from the model"
                } else {
                    ""
                };
                match reason {
                    Some(r) => format!("denied by rules[{rule}]{hidden}: {r}"),
                    None => format!("denied by rules[{rule}]{hidden}"),
                }
            }
        }
    }

    /// The data of the refusal's step.
    pub fn data(&self) -> Value {
        match self {
            Refusal::TooLarge { chars, max } => {
                json!({"decision": self.decision(), "chars": chars, "max": max})
            }
            Refusal::NotJson { error } => json!({"decision": self.decision(), "error": error}),
            Refusal::InvalidArguments { problems } => {
                json!({"decision": self.decision(), "problems": problems})
            }
            Refusal::Denied {
                rule,
                reason,
                hidden,
                ..
            } => json!({"decision": self.decision(),
                "rule": format!("rules[{rule}]"), "reason": reason, "hidden": hidden}),
            _ => json!({"decision": self.decision()}),
        }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Decide on one proposed call, with no approval remembered. Pure (see the module).
pub fn decide<'c>(call: &ToolCall, catalog: &'c Catalog, settings: &Settings) -> Verdict<'c> {
    decide_remembering(call, catalog, settings, &Remembered::default())
}

/// Decide on one proposed call, with the approvals the person gave. Pure (see the module).
pub fn decide_remembering<'c>(
    call: &ToolCall,
    catalog: &'c Catalog,
    settings: &Settings,
    remembered: &Remembered,
) -> Verdict<'c> {
    decide_flowing(call, catalog, settings, remembered, None).0
}

/// Decide on one proposed call, with the approvals the person gave, in a session whose
/// context `flows` labels (`None` where it is not seen: `from` conditions cannot tell, and
/// the rule of two has nothing to go on). Also where each argument came from.
pub fn decide_flowing<'c>(
    call: &ToolCall,
    catalog: &'c Catalog,
    settings: &Settings,
    remembered: &Remembered,
    flows: Option<&Flows>,
) -> (Verdict<'c>, Option<Traced>) {
    let (tool, arguments) = match checked(call, catalog, settings) {
        Ok(checked) => checked,
        Err(refusal) => return (Verdict::Refuse(refusal), None),
    };
    let arguments = Value::Object(arguments);
    let traced = flows.map(|f| f.trace(&arguments));
    let present = |name: &str| catalog.get(name).is_some();
    let (decision, basis) = rule_for_when(tool, settings, remembered, &present, |rule| {
        rule.applies_in(&arguments, traced.as_ref())
    });
    let (decision, basis) = flows::rule_of_two(tool, settings, traced.as_ref(), decision, basis);
    let Value::Object(arguments) = arguments else {
        unreachable!("the arguments were an object a moment ago")
    };
    (verdict(tool, arguments, decision, basis), traced)
}

fn verdict(
    tool: &CatalogTool,
    arguments: JsonObject,
    decision: Decision,
    basis: Basis,
) -> Verdict<'_> {
    match (decision, basis) {
        (Decision::Allow, basis) => Verdict::Run {
            tool,
            arguments,
            basis,
        },
        (Decision::Ask, basis) => Verdict::Ask {
            tool,
            arguments,
            basis,
        },
        (Decision::Deny, Basis::Rule { index, reason }) => Verdict::Refuse(Refusal::Denied {
            name: tool.name.clone(),
            rule: index,
            reason,
            hidden: false,
        }),
        (Decision::Deny, _) => unreachable!("only a rule denies"),
    }
}

/// The checks before the policy: in the catalog and not hidden, arguments a bounded JSON
/// object that fits the tool's input schema.
pub fn checked<'c>(
    call: &ToolCall,
    catalog: &'c Catalog,
    settings: &Settings,
) -> Result<(&'c CatalogTool, JsonObject), Refusal> {
    let Some(tool) = catalog.get(&call.name) else {
        return Err(Refusal::UnknownTool {
            name: call.name.clone(),
        });
    };
    if let Some(rule) = settings.rules.hiding(&tool.name) {
        return Err(Refusal::Denied {
            name: call.name.clone(),
            rule: rule.index,
            reason: rule.reason.clone(),
            hidden: true,
        });
    }
    let raw = if call.arguments.trim().is_empty() {
        "{}"
    } else {
        call.arguments.as_str()
    };
    let chars = raw.chars().count();
    if chars > settings.max_argument_chars {
        return Err(Refusal::TooLarge {
            chars,
            max: settings.max_argument_chars,
        });
    }
    let value = match serde_json::from_str::<Value>(raw) {
        Err(e) => {
            return Err(Refusal::NotJson {
                error: e.to_string(),
            });
        }
        Ok(value) => value,
    };
    let problems = schema::problems(&tool.input, &value);
    match value {
        Value::Object(_) if !problems.is_empty() => Err(Refusal::InvalidArguments { problems }),
        Value::Object(arguments) => Ok((tool, arguments)),
        other => Err(Refusal::NotAnObject {
            found: kind(&other),
        }),
    }
}

/// The person's policy on one call whose arguments passed the checks: a matching deny
/// wins, then the first matching rule, then the allow-list, then a remembered approval of
/// this very definition, else ask. A tool whose definition changed after the session
/// decided to run it is asked about.
pub fn rule_for(
    tool: &CatalogTool,
    arguments: &Value,
    settings: &Settings,
    remembered: &Remembered,
) -> (Decision, Basis) {
    rule_for_when(tool, settings, remembered, &|_| true, |rule| {
        rule.applies(arguments)
    })
}

/// [`rule_for`], where `applies` says which of the rules naming the tool apply: to some
/// arguments, or (for [`standing`]) to arguments not known yet; `present` says which
/// names the catalog holds (a renamed tool keeps its approval, [`Remembered::covers_definition`]).
fn rule_for_when(
    tool: &CatalogTool,
    settings: &Settings,
    remembered: &Remembered,
    present: &dyn Fn(&str) -> bool,
    applies: impl Fn(&crate::rules::Rule) -> bool,
) -> (Decision, Basis) {
    if runs_unasked(tool) {
        return (Decision::Allow, Basis::Host);
    }
    let mut first = None;
    for rule in settings.rules.for_name(&tool.name) {
        if !applies(rule) {
            continue;
        }
        if rule.decision == Decision::Deny {
            return (Decision::Deny, rule_basis(rule));
        }
        first.get_or_insert(rule);
    }
    let allowed = match first {
        Some(rule) if rule.decision == Decision::Ask => return (Decision::Ask, rule_basis(rule)),
        Some(rule) => Some(rule_basis(rule)),
        None => settings
            .allow
            .iter()
            .position(|a| a == &tool.name)
            .map(|index| Basis::AllowList { index }),
    };
    let what = || {
        tool.change
            .as_ref()
            .map_or_else(|| "its definition".to_owned(), |c| c.describe())
    };
    let server = tool.origin.server().map_or("", |s| s.as_str());
    match allowed {
        Some(basis) if tool.changed => (
            Decision::Ask,
            Basis::Changed {
                was: basis.label(),
                what: what(),
            },
        ),
        Some(basis) => (Decision::Allow, basis),
        // An approval follows the definition it was given for: a tool renamed with the
        // same definition keeps it, a name whose definition changed does not.
        None => match remembered.covers_definition(
            &tool.name,
            server,
            tool.definition_digest(),
            present,
        ) {
            Some(scope) => (Decision::Allow, Basis::Remembered(scope)),
            None if remembered.names(&tool.name) => (
                Decision::Ask,
                Basis::Changed {
                    was: "a remembered approval".into(),
                    what: what(),
                },
            ),
            None => (Decision::Ask, Basis::Default),
        },
    }
}

fn rule_basis(rule: &crate::rules::Rule) -> Basis {
    Basis::Rule {
        index: rule.index,
        reason: rule.reason.clone(),
    }
}

/// Leave out of the model's tools those a deny rule without conditions hides.
pub fn offered(tools: &mut Vec<crate::catalog::ToolSpec>, settings: &Settings) {
    if !settings.rules.is_empty() {
        tools.retain(|t| settings.rules.hiding(&t.name).is_none());
    }
}

/// Could the policy run `name` without asking, for some arguments? Never a tool a deny
/// rule hides, whatever the allow-list says. The catalog flags such a tool when its
/// definition changes, so the person is asked before its next call.
pub fn may_run_unasked(name: &str, settings: &Settings) -> bool {
    settings.rules.hiding(name).is_none()
        && (settings.allow.iter().any(|a| a == name) || settings.rules.may_allow(name))
}

#[cfg(test)]
mod tests;
