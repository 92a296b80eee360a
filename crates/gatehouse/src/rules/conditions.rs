//! One condition of a rule: an argument, found by JSON Pointer, and a test on it.
//!
//! A test says yes, no, or cannot tell: the argument is missing, or of a type the test does
//! not apply to (a number for a glob). What cannot be told never loosens the policy: an
//! `allow` rule needs every condition to hold, an `ask` or `deny` rule applies unless one
//! surely does not.

use globset::{Glob, GlobMatcher};
use regex::{Regex, RegexBuilder};
use serde_json::{Map, Value};

use super::path::{Normalised, inside_any, normalise};
use crate::flow::{Came, Traced};

/// Longest JSON Pointer, glob or regex a condition may hold, in characters.
pub const MAX_PATTERN_CHARS: usize = 1_000;
/// Most memory a compiled regex may take (its program and its lazy DFA each), in bytes:
/// a regex runs in linear time, and this bounds its size too.
pub const MAX_REGEX_BYTES: usize = 1 << 20;
/// Most values a `oneOf` or an `inside` may list.
pub const MAX_VALUES: usize = 1_000;

/// What a condition found: it holds, it does not, or the argument cannot be tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holds {
    /// The test says yes.
    Yes,
    /// The test says no.
    No,
    /// The argument is missing, or the test does not apply to its type.
    Unknown,
}

/// A test on one argument.
#[derive(Debug, Clone)]
pub enum Test {
    /// `equals`: the same JSON value (numbers by value: `1` equals `1.0`).
    Equals(Value),
    /// `oneOf`: equal to one of these.
    OneOf(Vec<Value>),
    /// `glob`: a string matching this glob (`*`, `?`, `[a-z]`, `{a,b}`).
    Glob(GlobMatcher),
    /// `regex`: a string (or another value's JSON text) with a match anywhere.
    Regex(Regex),
    /// `min`, `max`: a number in this range, both ends included.
    Range(Option<f64>, Option<f64>),
    /// `minLength`, `maxLength`: a string of this many characters, both ends included.
    Length(Option<u64>, Option<u64>),
    /// `inside`: a path (normalised) in one of these folders or below.
    Inside(Vec<Normalised>),
    /// `present`: the argument is there (`true`) or is not (`false`).
    Present(bool),
    /// `from`: the argument came from one of these places ([`crate::flow`]: `person`,
    /// `trusted`, `untrusted`, `model`, `unknown`). Where the flow is not seen (`policy
    /// explain`, a gateway), cannot tell.
    From(Vec<Came>),
}

/// One condition: where the argument is, how it is read, and the test.
#[derive(Debug, Clone)]
pub struct Condition {
    /// The argument, as a JSON Pointer into the arguments (`/path`, `/items/0/sku`).
    pub pointer: String,
    /// `path`: read a string argument as a path, normalised, before the test.
    pub as_path: bool,
    /// `not`: the test's answer turned around (cannot tell stays cannot tell).
    pub negate: bool,
    /// The test.
    pub test: Test,
}

/// The keys of a condition that name its test; exactly one test per condition.
const TEST_KEYS: &[&[&str]] = &[
    &["equals"],
    &["oneOf"],
    &["glob"],
    &["regex"],
    &["min", "max"],
    &["minLength", "maxLength"],
    &["inside"],
    &["present"],
    &["from"],
];

impl Condition {
    /// Read one condition from the servers file; the error says what is wrong with it.
    pub fn parse(value: &Value) -> Result<Condition, String> {
        let Value::Object(map) = value else {
            return Err("a condition must be an object".into());
        };
        let known = ["pointer", "path", "not"];
        if let Some(k) = map.keys().find(|k| {
            !known.contains(&k.as_str()) && !TEST_KEYS.iter().any(|t| t.contains(&k.as_str()))
        }) {
            return Err(format!("unknown key \"{k}\" in a condition"));
        }
        let pointer = match map.get("pointer") {
            Some(Value::String(p)) => pointer(p)?,
            _ => {
                return Err(
                    "a condition needs \"pointer\", a JSON Pointer such as \"/path\"".into(),
                );
            }
        };
        let flag = |key: &str| match map.get(key) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(format!("\"{key}\" must be true or false")),
        };
        let (as_path, negate) = (flag("path")?, flag("not")?);
        let tests: Vec<&[&str]> = TEST_KEYS
            .iter()
            .copied()
            .filter(|keys| keys.iter().any(|k| map.contains_key(*k)))
            .collect();
        let test = match tests.as_slice() {
            [keys] => test(keys[0], map)?,
            [] => {
                return Err(format!(
                    "condition on {pointer} has no test ({})",
                    test_names()
                ));
            }
            _ => {
                return Err(format!(
                    "condition on {pointer} has more than one test; write one condition per test"
                ));
            }
        };
        Ok(Condition {
            pointer,
            as_path,
            negate,
            test,
        })
    }

    /// Does the condition hold for these arguments? A `from` test cannot tell here.
    pub fn holds(&self, arguments: &Value) -> Holds {
        self.holds_in(arguments, None)
    }

    /// Does the condition hold for these arguments, which came as `traced` says?
    pub fn holds_in(&self, arguments: &Value, traced: Option<&Traced>) -> Holds {
        let found = arguments.pointer(&self.pointer);
        let answer = match (&self.test, found) {
            (Test::Present(want), found) => yes(found.is_some() == *want),
            (Test::From(places), Some(_)) => traced
                .and_then(|t| t.came(&self.pointer))
                .map_or(Holds::Unknown, |c| yes(places.contains(&c))),
            (_, None) => Holds::Unknown,
            (test, Some(value)) => self.test_value(test, value),
        };
        match (answer, self.negate) {
            (Holds::Yes, true) => Holds::No,
            (Holds::No, true) => Holds::Yes,
            (answer, _) => answer,
        }
    }

    fn test_value(&self, test: &Test, value: &Value) -> Holds {
        let normalised;
        let value = match value {
            Value::String(s) if self.as_path => {
                normalised = Value::String(normalise(s).text());
                &normalised
            }
            other => other,
        };
        match (test, value) {
            (Test::Equals(want), v) => yes(same(want, v)),
            (Test::OneOf(wants), v) => yes(wants.iter().any(|w| same(w, v))),
            (Test::Glob(g), Value::String(s)) => yes(g.is_match(s)),
            (Test::Regex(r), Value::String(s)) => yes(r.is_match(s)),
            (Test::Regex(r), other) => yes(r.is_match(&other.to_string())),
            (Test::Range(min, max), Value::Number(n)) => match n.as_f64() {
                Some(x) => yes(min.is_none_or(|m| x >= m) && max.is_none_or(|m| x <= m)),
                None => Holds::Unknown,
            },
            (Test::Length(min, max), Value::String(s)) => {
                let n = s.chars().count() as u64;
                yes(min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m))
            }
            (Test::Inside(dirs), Value::String(s)) => {
                inside_any(s, dirs).map_or(Holds::Unknown, yes)
            }
            _ => Holds::Unknown,
        }
    }

    /// The condition in words, for `policy explain`.
    pub fn describe(&self) -> String {
        let test = match &self.test {
            Test::Equals(v) => format!("equals {v}"),
            Test::OneOf(vs) => format!("is one of {}", Value::Array(vs.clone())),
            Test::Glob(g) => format!("matches the glob {}", g.glob()),
            Test::Regex(r) => format!("matches the regex {}", r.as_str()),
            Test::Range(min, max) => bounds("is a number", *min, *max),
            Test::Length(min, max) => bounds(
                "is a string of length",
                min.map(|m| m as f64),
                max.map(|m| m as f64),
            ),
            Test::Inside(dirs) => format!(
                "is a path inside {}",
                dirs.iter()
                    .map(Normalised::text)
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
            Test::Present(true) => "is present".into(),
            Test::Present(false) => "is absent".into(),
            Test::From(places) => format!(
                "came from {}",
                places
                    .iter()
                    .map(|c| c.as_str())
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
        };
        let read = if self.as_path { " (as a path)" } else { "" };
        let not = if self.negate { "not: " } else { "" };
        format!("{not}{}{read} {test}", shown_pointer(&self.pointer))
    }
}

fn yes(b: bool) -> Holds {
    if b { Holds::Yes } else { Holds::No }
}

fn bounds(what: &str, min: Option<f64>, max: Option<f64>) -> String {
    match (min, max) {
        (Some(a), Some(b)) => format!("{what} from {a} to {b}"),
        (Some(a), None) => format!("{what} of at least {a}"),
        (None, Some(b)) => format!("{what} of at most {b}"),
        (None, None) => what.to_owned(),
    }
}

fn shown_pointer(p: &str) -> String {
    if p.is_empty() {
        "the arguments".into()
    } else {
        p.to_owned()
    }
}

fn test_names() -> String {
    TEST_KEYS
        .iter()
        .map(|k| k.join("/"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// JSON values compared as a person means them: numbers by value.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// A JSON Pointer (RFC 6901): empty, or `/`-separated parts with `~0` and `~1` escapes.
fn pointer(p: &str) -> Result<String, String> {
    if p.chars().count() > MAX_PATTERN_CHARS {
        return Err(format!(
            "\"pointer\" is longer than {MAX_PATTERN_CHARS} characters"
        ));
    }
    if !(p.is_empty() || p.starts_with('/')) {
        return Err(format!(
            "\"pointer\" {p:?} must be empty or start with /, as in \"/path\""
        ));
    }
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Err(format!("\"pointer\" {p:?} has a ~ that is not ~0 or ~1"));
        }
    }
    Ok(p.to_owned())
}

fn pattern<'a>(map: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    match map.get(key) {
        Some(Value::String(s)) if s.chars().count() <= MAX_PATTERN_CHARS => Ok(s),
        Some(Value::String(_)) => Err(format!(
            "\"{key}\" is longer than {MAX_PATTERN_CHARS} characters"
        )),
        _ => Err(format!("\"{key}\" must be a string")),
    }
}

/// One test from its keys.
fn test(key: &str, map: &Map<String, Value>) -> Result<Test, String> {
    Ok(match key {
        "equals" => Test::Equals(map["equals"].clone()),
        "oneOf" => match &map["oneOf"] {
            Value::Array(v) if !v.is_empty() && v.len() <= MAX_VALUES => Test::OneOf(v.clone()),
            _ => {
                return Err(format!(
                    "\"oneOf\" must be a list of 1 to {MAX_VALUES} values"
                ));
            }
        },
        "glob" => Test::Glob(glob(pattern(map, "glob")?).map_err(|e| format!("\"glob\": {e}"))?),
        "regex" => Test::Regex(regex(pattern(map, "regex")?)?),
        "min" => Test::Range(number(map, "min")?, number(map, "max")?),
        "minLength" => Test::Length(count(map, "minLength")?, count(map, "maxLength")?),
        "inside" => Test::Inside(folders(&map["inside"])?),
        "present" => match map["present"] {
            Value::Bool(b) => Test::Present(b),
            _ => return Err("\"present\" must be true or false".into()),
        },
        "from" => Test::From(places(&map["from"])?),
        other => return Err(format!("unknown test \"{other}\"")),
    })
    .and_then(|t| match &t {
        Test::Range(Some(a), Some(b)) if a > b => {
            Err(format!("\"min\" {a} is more than \"max\" {b}"))
        }
        Test::Length(Some(a), Some(b)) if a > b => {
            Err(format!("\"minLength\" {a} is more than \"maxLength\" {b}"))
        }
        _ => Ok(t),
    })
}

/// A glob as rules use it: `*` and `?` match any character, `/` included.
pub fn glob(text: &str) -> Result<GlobMatcher, String> {
    Glob::new(text)
        .map(|g| g.compile_matcher())
        .map_err(|e| e.kind().to_string())
}

/// A regex, bounded in size; it runs in linear time whatever it is given.
pub(crate) fn regex(text: &str) -> Result<Regex, String> {
    RegexBuilder::new(text)
        .size_limit(MAX_REGEX_BYTES)
        .dfa_size_limit(MAX_REGEX_BYTES)
        .build()
        .map_err(|e| format!("\"regex\" does not compile: {e}"))
}

fn number(map: &Map<String, Value>, key: &str) -> Result<Option<f64>, String> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(other) => Err(format!("\"{key}\" must be a number, not {other}")),
    }
}

fn count(map: &Map<String, Value>, key: &str) -> Result<Option<u64>, String> {
    match map.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("\"{key}\" must be a whole number, not {v}")),
    }
}

/// The folders of `inside`: absolute paths (or `~/…`, the home folder), one or a list.
fn folders(value: &Value) -> Result<Vec<Normalised>, String> {
    let items = match value {
        Value::String(_) => std::slice::from_ref(value),
        Value::Array(v) if !v.is_empty() && v.len() <= MAX_VALUES => v.as_slice(),
        _ => {
            return Err(format!(
                "\"inside\" must be a folder or a list of 1 to {MAX_VALUES} folders"
            ));
        }
    };
    items
        .iter()
        .map(|item| {
            let Some(text) = item.as_str() else {
                return Err(format!("\"inside\" holds folders (strings), not {item}"));
            };
            let expanded = match text.strip_prefix("~/") {
                Some(rest) => match std::env::var("HOME") {
                    Ok(home) => format!("{home}/{rest}"),
                    Err(_) => {
                        return Err(format!("\"inside\" {text:?} needs HOME, which is not set"));
                    }
                },
                None => text.to_owned(),
            };
            let dir = normalise(&expanded);
            if !dir.absolute {
                return Err(format!(
                    "\"inside\" {text:?} must be an absolute folder (or start with ~/)"
                ));
            }
            Ok(dir)
        })
        .collect()
}

/// `from`: one place or a list of them.
fn places(value: &Value) -> Result<Vec<Came>, String> {
    let words: Vec<&str> = Came::WORDS.iter().map(|(w, _)| *w).collect();
    let bad = || {
        format!(
            "\"from\" must be one of {} or a list of them",
            words.join(", ")
        )
    };
    let one = |v: &Value| {
        v.as_str()
            .and_then(|w| Came::WORDS.iter().find(|(k, _)| *k == w))
            .map(|(_, c)| *c)
            .ok_or_else(bad)
    };
    match value {
        Value::Array(items) if !items.is_empty() && items.len() <= Came::WORDS.len() => {
            items.iter().map(one).collect()
        }
        Value::Array(_) => Err(bad()),
        v => Ok(vec![one(v)?]),
    }
}
