//! What must hold of a task's run: its answer, the calls made and never made (with the
//! rules' own JSON Pointer conditions), the ledger's decisions, the run's size, and the
//! world afterwards (an MCP call made after the run, or a command given the run's JSON).

use globset::GlobMatcher;
use regex::Regex;
use serde_json::{Map, Value};

use super::seen::{Run, WorldSeen};
use crate::config::suggest::known_keys;
use crate::{
    config::HookSpec,
    rules::conditions::{self, Condition, Holds},
};

/// The keys that name a check's kind; exactly one per check.
const KINDS: &[&str] = &[
    "answerContains",
    "answerMatches",
    "answerLacks",
    "called",
    "notCalled",
    "decision",
    "modelCalls",
    "calls",
    "tokens",
    "world",
];
/// What a decision check may name of a ledger line.
const DECISIONS: &[&str] = &["run", "asked", "denied", "refused"];

/// A count's bounds, both ends included.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Count {
    /// The least, included.
    pub min: u64,
    /// The most, included.
    pub max: u64,
}

impl Count {
    fn holds(&self, n: u64) -> bool {
        (self.min..=self.max).contains(&n)
    }

    fn describe(&self) -> String {
        match (self.min, self.max) {
            (a, b) if a == b => format!("exactly {a}"),
            (0, b) => format!("at most {b}"),
            (a, u64::MAX) => format!("at least {a}"),
            (a, b) => format!("from {a} to {b}"),
        }
    }
}

/// One check, read from the suite.
#[derive(Debug, Clone)]
pub enum Check {
    /// The last answer holds this text.
    AnswerContains(String),
    /// The last answer has a match of this regex.
    AnswerMatches(Regex),
    /// The last answer does not hold this text.
    AnswerLacks(String),
    /// Calls of tools matching the glob, sent to their server, whose arguments meet every
    /// condition: this many (default at least one).
    Called {
        /// The tool (a glob over `server__tool` names, in a check).
        tool: GlobMatcher,
        /// The tool pattern as written.
        shown: String,
        /// Conditions the arguments must meet, every one.
        conditions: Vec<Condition>,
        /// How many times.
        times: Count,
    },
    /// No call of a tool matching the glob was sent to its server.
    NotCalled {
        /// The tool, a glob over `server__tool` names.
        tool: GlobMatcher,
        /// The pattern as written.
        shown: String,
    },
    /// The ledger's lines for the model's proposals of a tool: this decision (and rule,
    /// and answer, when given), this many times (default at least one).
    Decision {
        /// The tool (a glob over `server__tool` names, in a check).
        tool: GlobMatcher,
        /// The tool pattern as written.
        shown: String,
        /// The decision: run, asked, denied or refused.
        is: String,
        /// What decided (`rules[0]`, `allow[1]`, `default`…).
        rule: Option<String>,
        /// The person's answer: yes or no.
        answer: Option<String>,
        /// How many times.
        times: Count,
    },
    /// Model calls in the run.
    ModelCalls(Count),
    /// The model's proposals in the run.
    Calls(Count),
    /// Tokens the model reported in the run.
    Tokens(Count),
    /// A call made after the run, as the person, through the policy: its result must
    /// hold (`isError`, text, conditions on the result as the model would read it).
    WorldCall(WorldCall),
    /// A command given the run's JSON on stdin: exit status 0 passes.
    WorldCommand(HookSpec),
}

/// A `world` check's call.
#[derive(Debug, Clone)]
pub struct WorldCall {
    /// The tool (`server__tool`).
    pub tool: String,
    /// Its arguments, a JSON object.
    pub arguments: Value,
    /// Send the run's last answered round of the tool again, byte for byte, straight to
    /// its server (`{"resend": TOOL}`, [`super::resend`]), instead of a call as the person.
    pub resend: bool,
    /// For a `resend`: answers sent in place of the recorded ones (`inputResponses`), the
    /// state and arguments kept as recorded.
    pub responses: Option<Value>,
    /// The result must be an error (`true`) or not (`false`, the default).
    pub is_error: bool,
    /// Text the result must hold.
    pub contains: Option<String>,
    /// Conditions on the result as the model reads it (`{"tool", "result"}`: a
    /// structured result's fields under `/result/…`).
    pub conditions: Vec<Condition>,
}

impl Check {
    /// Read one check; the error names the key.
    pub fn parse(value: &Value) -> Result<Check, String> {
        let Value::Object(map) = value else {
            return Err(format!(
                "a check must be an object, one of: {}",
                KINDS.join(", ")
            ));
        };
        let kinds: Vec<&&str> = KINDS.iter().filter(|k| map.contains_key(**k)).collect();
        let kind = match kinds.as_slice() {
            [k] => **k,
            [] => {
                let key = map.keys().next().map(String::as_str).unwrap_or("");
                return Err(format!(
                    "no kind of check{} (one of: {})",
                    crate::config::suggest::hint(key, KINDS),
                    KINDS.join(", ")
                ));
            }
            _ => return Err("more than one kind of check; write one check each".into()),
        };
        let v = &map[kind];
        Ok(match kind {
            "answerContains" => Check::AnswerContains(text(v, kind)?),
            "answerLacks" => Check::AnswerLacks(text(v, kind)?),
            "answerMatches" => {
                only(map, &[kind])?;
                Check::AnswerMatches(conditions::regex(&text(v, kind)?)?)
            }
            "called" => {
                only(map, &[kind, "where", "times"])?;
                Check::Called {
                    tool: glob(v, kind)?,
                    shown: text(v, kind)?,
                    conditions: conditions_of(map.get("where"))?,
                    times: times(map.get("times"), 1, u64::MAX)?,
                }
            }
            "notCalled" => {
                only(map, &[kind])?;
                Check::NotCalled {
                    tool: glob(v, kind)?,
                    shown: text(v, kind)?,
                }
            }
            "decision" => {
                only(map, &[kind, "is", "rule", "answer", "times"])?;
                decision(map, v)?
            }
            "modelCalls" => Check::ModelCalls(count(v, kind)?),
            "calls" => Check::Calls(count(v, kind)?),
            "tokens" => Check::Tokens(count(v, kind)?),
            _ => world(v)?,
        })
    }

    /// Does the check hold of `run`? `Err` says why not, in a sentence.
    pub fn grade(&self, index: usize, run: &Run) -> Result<(), String> {
        let answer = run.answers.last().map(String::as_str).unwrap_or("");
        match self {
            Check::AnswerContains(t) if answer.contains(t.as_str()) => Ok(()),
            Check::AnswerContains(t) => Err(format!("the answer does not contain {t:?}")),
            Check::AnswerLacks(t) if !answer.contains(t.as_str()) => Ok(()),
            Check::AnswerLacks(t) => Err(format!("the answer contains {t:?}")),
            Check::AnswerMatches(r) if r.is_match(answer) => Ok(()),
            Check::AnswerMatches(r) => Err(format!("the answer has no match of /{r}/")),
            Check::Called {
                tool,
                shown,
                conditions,
                times,
            } => {
                let n = run
                    .calls
                    .iter()
                    .filter(|c| c.sent && !c.by_person && tool.is_match(&c.tool))
                    .filter(|c| {
                        conditions
                            .iter()
                            .all(|k| k.holds(&c.arguments) == Holds::Yes)
                    })
                    .count() as u64;
                let which = if conditions.is_empty() {
                    String::new()
                } else {
                    let said: Vec<String> = conditions.iter().map(Condition::describe).collect();
                    format!(" with {}", said.join(" and "))
                };
                holds(times, n, &format!("calls of {shown}{which}"))
            }
            Check::NotCalled { tool, shown } => {
                let n = run
                    .calls
                    .iter()
                    .filter(|c| c.sent && !c.by_person && tool.is_match(&c.tool))
                    .count();
                if n == 0 {
                    Ok(())
                } else {
                    Err(format!("{shown} was called {n} time(s)"))
                }
            }
            Check::Decision {
                tool,
                shown,
                is,
                rule,
                answer,
                times,
            } => {
                let n = run
                    .ledger
                    .iter()
                    .filter(|l| l.get("caller").is_none())
                    .filter(|l| l["tool"].as_str().is_some_and(|t| tool.is_match(t)))
                    .filter(|l| l["decision"] == is.as_str())
                    .filter(|l| rule.as_ref().is_none_or(|r| l["rule"] == r.as_str()))
                    .filter(|l| answer.as_ref().is_none_or(|a| l["answer"] == a.as_str()))
                    .count() as u64;
                holds(times, n, &format!("ledger lines \"{is}\" for {shown}"))
            }
            Check::ModelCalls(c) => holds(c, run.model_calls, "model calls"),
            Check::Calls(c) => holds(
                c,
                run.calls.iter().filter(|c| !c.by_person).count() as u64,
                "proposals",
            ),
            Check::Tokens(c) => holds(c, run.tokens, "tokens"),
            Check::WorldCall(w) => match run.world.get(&index) {
                Some(seen) => w.grade(seen),
                None => Err(format!("the call of {} after the run was not made", w.tool)),
            },
            Check::WorldCommand(_) => match run.commands.get(&index) {
                Some(Ok(())) => Ok(()),
                Some(Err(why)) => Err(why.clone()),
                None => Err("the command was not run".into()),
            },
        }
    }
}

impl WorldCall {
    fn grade(&self, seen: &WorldSeen) -> Result<(), String> {
        if let Some(why) = &seen.not_sent {
            return Err(why.clone());
        }
        let tool = if self.resend {
            format!("{}'s answered round, sent again,", self.tool)
        } else {
            format!("{} after the run", self.tool)
        };
        if seen.is_error != self.is_error {
            let was = if seen.is_error { "failed" } else { "succeeded" };
            return Err(format!(
                "{tool} {was}: {}",
                crate::text::clip(&seen.text, 300)
            ));
        }
        if let Some(t) = &self.contains
            && !seen.text.contains(t.as_str())
        {
            return Err(format!("{tool} did not return {t:?}"));
        }
        let result: Value = serde_json::from_str(&seen.text).unwrap_or(Value::Null);
        match self
            .conditions
            .iter()
            .find(|c| c.holds(&result) != Holds::Yes)
        {
            Some(c) => Err(format!("{tool}: not {}", c.describe())),
            None => Ok(()),
        }
    }
}

fn holds(count: &Count, n: u64, what: &str) -> Result<(), String> {
    if count.holds(n) {
        Ok(())
    } else {
        Err(format!("{n} {what}, expected {}", count.describe()))
    }
}

fn decision(map: &Map<String, Value>, tool: &Value) -> Result<Check, String> {
    let is = match map.get("is") {
        Some(Value::String(d)) if DECISIONS.contains(&d.as_str()) => d.clone(),
        _ => return Err(format!("\"is\" must be one of: {}", DECISIONS.join(", "))),
    };
    let optional = |key: &str| match map.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("\"{key}\" must be text")),
    };
    let answer = optional("answer")?;
    if answer.as_ref().is_some_and(|a| a != "yes" && a != "no") {
        return Err("\"answer\" must be yes or no".into());
    }
    Ok(Check::Decision {
        tool: glob(tool, "decision")?,
        shown: text(tool, "decision")?,
        is,
        rule: optional("rule")?,
        answer,
        times: times(map.get("times"), 1, u64::MAX)?,
    })
}

const WORLD_CALL_KEYS: &[&str] = &["call", "arguments", "isError", "contains", "where"];
const WORLD_RESEND_KEYS: &[&str] = &["resend", "inputResponses", "isError", "contains", "where"];

fn world(value: &Value) -> Result<Check, String> {
    let Value::Object(map) = value else {
        return Err("\"world\" must be an object: {\"call\": TOOL, …} or {\"command\": …}".into());
    };
    if map.contains_key("command") {
        return crate::config::policy::hook("check", value)
            .map(Check::WorldCommand)
            .map_err(|e| e.replace("\"hooks\".\"check\"", "\"world\""));
    }
    let resend = map.contains_key("resend");
    let keys = if resend {
        WORLD_RESEND_KEYS
    } else {
        WORLD_CALL_KEYS
    };
    known_keys(map, keys, "\"world\"")?;
    let tool = match map.get(if resend { "resend" } else { "call" }) {
        Some(Value::String(t)) if !t.is_empty() => t.clone(),
        _ => {
            return Err(
                "\"world\" needs \"call\" (a tool), \"resend\" (a tool) or \"command\"".into(),
            );
        }
    };
    let arguments = match map.get("arguments") {
        None => Value::Object(Map::new()),
        Some(a @ Value::Object(_)) => a.clone(),
        Some(_) => return Err("\"world\".\"arguments\" must be an object".into()),
    };
    let is_error = match map.get("isError") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("\"world\".\"isError\" must be true or false".into()),
    };
    let contains = match map.get("contains") {
        None => None,
        Some(v) => Some(text(v, "world\".\"contains")?),
    };
    let responses = match map.get("inputResponses") {
        None => None,
        Some(r @ Value::Object(_)) => Some(r.clone()),
        Some(_) => return Err("\"world\".\"inputResponses\" must be an object".into()),
    };
    Ok(Check::WorldCall(WorldCall {
        tool,
        arguments,
        resend,
        responses,
        is_error,
        contains,
        conditions: conditions_of(map.get("where"))?,
    }))
}

fn only(map: &Map<String, Value>, keys: &[&str]) -> Result<(), String> {
    known_keys(map, keys, "the check")
}

fn text(value: &Value, key: &str) -> Result<String, String> {
    match value {
        Value::String(s) if !s.is_empty() => Ok(s.clone()),
        _ => Err(format!("\"{key}\" must be non-empty text")),
    }
}

fn glob(value: &Value, key: &str) -> Result<GlobMatcher, String> {
    let t = text(value, key)?;
    conditions::glob(&t).map_err(|e| format!("\"{key}\" {t:?}: {e}"))
}

fn conditions_of(value: Option<&Value>) -> Result<Vec<Condition>, String> {
    match value {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) if items.len() <= conditions::MAX_VALUES => items
            .iter()
            .enumerate()
            .map(|(i, c)| Condition::parse(c).map_err(|e| format!("\"where\"[{i}]: {e}")))
            .collect(),
        Some(_) => Err("\"where\" must be a list of conditions".into()),
    }
}

/// `times`: a number (exactly), or `{min, max}`; absent, from `min` to `max`.
fn times(value: Option<&Value>, min: u64, max: u64) -> Result<Count, String> {
    match value {
        None => Ok(Count { min, max }),
        Some(v) => count(v, "times"),
    }
}

/// A count: a number (exactly), or `{min, max}` (either may be left out).
fn count(value: &Value, key: &str) -> Result<Count, String> {
    let bad = || format!("\"{key}\" must be a whole number or {{\"min\": N, \"max\": N}}");
    match value {
        Value::Number(n) => n.as_u64().map(|n| Count { min: n, max: n }).ok_or_else(bad),
        Value::Object(m) => {
            known_keys(m, &["min", "max"], &format!("\"{key}\""))?;
            let end = |k: &str, or: u64| match m.get(k) {
                None => Ok(or),
                Some(v) => v.as_u64().ok_or_else(bad),
            };
            let c = Count {
                min: end("min", 0)?,
                max: end("max", u64::MAX)?,
            };
            if c.min > c.max || m.is_empty() {
                return Err(bad());
            }
            Ok(c)
        }
        _ => Err(bad()),
    }
}
