//! A suite file (`gatehouse eval SUITE`): its tasks, variants and threshold, read from JSON
//! or YAML and checked when read. Every error names the task (or variant) and the key.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use serde_json::{Map, Value};

use super::check::Check;
use crate::config::suggest::known_keys;
use crate::person::FormAnswer;

/// Most tasks one suite may hold.
pub const MAX_TASKS: usize = 10_000;
/// Most variants one suite may hold.
pub const MAX_VARIANTS: usize = 16;
/// Most times a task may be run (`repeat`, `--repeat`).
pub const MAX_REPEAT: u32 = 1_000;
/// Most turns (questions in order) one task may hold.
pub const MAX_TURNS: usize = 50;
/// Most checks one task may hold.
pub const MAX_CHECKS: usize = 100;
/// Longest question, in characters.
pub const MAX_QUESTION_CHARS: usize = 20_000;
/// Largest suite file read, in bytes.
pub const MAX_SUITE_BYTES: u64 = 8 << 20;
/// Longest task or variant name, in characters (it names files and report rows).
pub const MAX_NAME_CHARS: usize = 100;

/// The keys of a suite, of a task, of a variant, and of a task's `answers`.
const SUITE_KEYS: &[&str] = &[
    "name",
    "servers",
    "model",
    "user",
    "tenant",
    "repeat",
    "threshold",
    "tasks",
    "variants",
];
const TASK_KEYS: &[&str] = &[
    "id", "question", "turns", "user", "tenant", "servers", "model", "settings", "answers",
    "checks",
];
const VARIANT_KEYS: &[&str] = &[
    "name",
    "descriptions",
    "systemPrompt",
    "rules",
    "model",
    "toolSearch",
    "maxSteps",
    "flows",
];
const ANSWER_KEYS: &[&str] = &["approve", "forms", "declineForms"];

/// A suite, checked.
#[derive(Debug, Clone)]
pub struct Suite {
    /// Its name (`name`, else the file's stem).
    pub name: String,
    /// The tasks, in the file's order; their ids are distinct.
    pub tasks: Vec<Task>,
    /// The variants compared; one plain `baseline` when the file names none.
    pub variants: Vec<Variant>,
    /// Runs of each task under each variant (`repeat`, default 1).
    pub repeat: u32,
    /// The lowest pass rate (0 to 1) every variant must reach; the run fails below it.
    pub threshold: Option<f64>,
}

/// Which servers a task runs against.
#[derive(Debug, Clone, PartialEq)]
pub enum Servers {
    /// The built-in reference servers (`"builtin"`, the default).
    BuiltIn,
    /// A servers file, relative paths read from the suite's folder.
    File(PathBuf),
}

/// One task: the person's questions, who asks, how the person answers, and the checks.
#[derive(Debug, Clone)]
pub struct Task {
    /// Its name, unique in the suite.
    pub id: String,
    /// The questions, asked in order in one conversation.
    pub turns: Vec<String>,
    /// The user the servers are told about.
    pub user: String,
    /// The organization the user acts in.
    pub tenant: String,
    /// The servers.
    pub servers: Servers,
    /// The model (`scripted`, `playback:FILE`, `openai:MODEL`); a variant may change it.
    /// Unnamed, the servers file's `model`, else `scripted`, as for `ask`.
    pub model: Option<String>,
    /// Settings put over the servers file's `gatehouse` object for this task (`allow`,
    /// `rules`, …), read as the servers file reads them; a variant's go over these.
    pub settings: Map<String, Value>,
    /// How the person answers.
    pub answers: Answers,
    /// What must hold of the run.
    pub checks: Vec<Check>,
}

/// How the person answers, fixed beforehand: as `--yes`/`--no`, `--answer`, `--decline`.
#[derive(Debug, Clone, Default)]
pub struct Answers {
    /// `Some(true)` runs every asked call, `Some(false)` none; `None` answers no (nobody).
    pub approve: Option<bool>,
    /// Answers to servers' forms, `[SERVER:]FIELD=VALUE`.
    pub forms: Vec<FormAnswer>,
    /// Decline every form.
    pub decline_forms: bool,
}

/// A variant: what it changes of every task's run.
#[derive(Debug, Clone, Default)]
pub struct Variant {
    /// Its name, unique in the suite.
    pub name: String,
    /// Tool descriptions the model reads instead, by the tool's name (`server__tool`).
    pub descriptions: BTreeMap<String, String>,
    /// Settings put over the servers file's `gatehouse` object (`systemPrompt`, `rules`,
    /// `toolSearch`, `maxSteps`), read as the servers file reads them.
    pub settings: Map<String, Value>,
    /// The model instead of the task's.
    pub model: Option<String>,
}

/// Where the error is: `task "t-30002" (tasks[0])`, a variant, or the suite.
fn at_task(i: usize, id: Option<&str>) -> String {
    match id {
        Some(id) => format!("task {id:?} (tasks[{i}])"),
        None => format!("tasks[{i}]"),
    }
}

impl Suite {
    /// Read and check the suite at `path` (JSON by `.json`, else YAML, which JSON also is).
    pub fn load(path: &Path) -> Result<Suite, String> {
        let shown = path.display();
        let size = std::fs::metadata(path)
            .map_err(|e| format!("{shown}: {e}"))?
            .len();
        if size > MAX_SUITE_BYTES {
            return Err(format!(
                "{shown}: {size} bytes, more than a suite may hold ({MAX_SUITE_BYTES})"
            ));
        }
        let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
        let json = path.extension().is_some_and(|e| e == "json");
        let value: Value = if json {
            serde_json::from_str(&text).map_err(|e| format!("{shown}: not JSON: {e}"))?
        } else {
            serde_saphyr::from_str(&text).map_err(|e| format!("{shown}: not YAML: {e}"))?
        };
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        let dir = path.parent().unwrap_or(Path::new("."));
        Suite::from_value(&value, stem.as_deref().unwrap_or("suite"), dir)
            .map_err(|e| format!("{shown}: {e}"))
    }

    /// Check a suite already read; `dir` is where its relative paths start.
    pub fn from_value(value: &Value, stem: &str, dir: &Path) -> Result<Suite, String> {
        let doc = object(value, "the suite")?;
        known_keys(doc, SUITE_KEYS, "the suite")?;
        let name = match doc.get("name") {
            None => stem.to_owned(),
            Some(v) => name(v, "the suite's \"name\"")?,
        };
        let defaults = Task {
            id: String::new(),
            turns: Vec::new(),
            user: text_or(doc, "user", "the suite", "usr-sam")?,
            tenant: text_or(doc, "tenant", "the suite", "larkfield")?,
            servers: servers(doc.get("servers"), dir, "the suite")?,
            model: match doc.get("model") {
                None => None,
                Some(_) => Some(model_spec(text_or(doc, "model", "the suite", "")?, dir)),
            },
            settings: Map::new(),
            answers: Answers::default(),
            checks: Vec::new(),
        };
        let repeat = match doc.get("repeat") {
            None => 1,
            Some(v) => repeat(v).map_err(|e| format!("the suite's \"repeat\" {e}"))?,
        };
        let threshold = match doc.get("threshold") {
            None => None,
            Some(v) => Some(
                v.as_f64()
                    .filter(|t| (0.0..=1.0).contains(t))
                    .ok_or("the suite's \"threshold\" must be a pass rate from 0 to 1")?,
            ),
        };
        let Some(Value::Array(items)) = doc.get("tasks") else {
            return Err("the suite needs \"tasks\", a list of tasks".into());
        };
        if items.is_empty() || items.len() > MAX_TASKS {
            return Err(format!(
                "\"tasks\" must hold from 1 to {MAX_TASKS} tasks, not {}",
                items.len()
            ));
        }
        let mut tasks: Vec<Task> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let task = Task::parse(item, i, &defaults, dir)?;
            if tasks.iter().any(|t| t.id == task.id) {
                return Err(format!(
                    "{}: the id is used twice",
                    at_task(i, Some(&task.id))
                ));
            }
            tasks.push(task);
        }
        let variants = variants(doc.get("variants"))?;
        Ok(Suite {
            name,
            tasks,
            variants,
            repeat,
            threshold,
        })
    }
}

impl Task {
    fn parse(value: &Value, i: usize, defaults: &Task, dir: &Path) -> Result<Task, String> {
        let map = object(value, &at_task(i, None))?;
        let id = match map.get("id") {
            Some(v) => name(v, &format!("{}: \"id\"", at_task(i, None)))?,
            None => return Err(format!("{}: a task needs an \"id\"", at_task(i, None))),
        };
        let at = at_task(i, Some(&id));
        known_keys(map, TASK_KEYS, &at)?;
        let turns = match (map.get("question"), map.get("turns")) {
            (Some(q), None) => vec![question(q).map_err(|e| format!("{at}: \"question\" {e}"))?],
            (None, Some(Value::Array(qs))) if (1..=MAX_TURNS).contains(&qs.len()) => qs
                .iter()
                .enumerate()
                .map(|(n, q)| question(q).map_err(|e| format!("{at}: \"turns\"[{n}] {e}")))
                .collect::<Result<_, _>>()?,
            (None, Some(_)) => {
                return Err(format!(
                    "{at}: \"turns\" must be a list of 1 to {MAX_TURNS} questions"
                ));
            }
            (Some(_), Some(_)) => {
                return Err(format!("{at}: give \"question\" or \"turns\", not both"));
            }
            (None, None) => {
                return Err(format!("{at}: a task needs a \"question\" (or \"turns\")"));
            }
        };
        let checks = match map.get("checks") {
            Some(Value::Array(cs)) if (1..=MAX_CHECKS).contains(&cs.len()) => cs
                .iter()
                .enumerate()
                .map(|(n, c)| Check::parse(c).map_err(|e| format!("{at}: \"checks\"[{n}]: {e}")))
                .collect::<Result<_, _>>()?,
            _ => {
                return Err(format!(
                    "{at}: \"checks\" must be a list of 1 to {MAX_CHECKS} checks"
                ));
            }
        };
        Ok(Task {
            turns,
            user: text_or(map, "user", &at, &defaults.user)?,
            tenant: text_or(map, "tenant", &at, &defaults.tenant)?,
            servers: match map.get("servers") {
                None => defaults.servers.clone(),
                some => servers(some, dir, &at)?,
            },
            model: match map.get("model") {
                None => defaults.model.clone(),
                Some(_) => Some(model_spec(text_or(map, "model", &at, "")?, dir)),
            },
            settings: match map.get("settings") {
                None => Map::new(),
                Some(v) => object(v, &format!("{at}: \"settings\""))?.clone(),
            },
            answers: answers(map.get("answers"), &at)?,
            checks,
            id,
        })
    }
}

fn variants(value: Option<&Value>) -> Result<Vec<Variant>, String> {
    let items = match value {
        None => {
            return Ok(vec![Variant {
                name: "baseline".into(),
                ..Variant::default()
            }]);
        }
        Some(Value::Array(items)) if (1..=MAX_VARIANTS).contains(&items.len()) => items,
        Some(_) => {
            return Err(format!(
                "\"variants\" must be a list of 1 to {MAX_VARIANTS} variants"
            ));
        }
    };
    let mut out: Vec<Variant> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("variants[{i}]");
        let map = object(item, &at)?;
        let name = match map.get("name") {
            Some(v) => name(v, &format!("{at}: \"name\""))?,
            None => return Err(format!("{at}: a variant needs a \"name\"")),
        };
        let at = format!("variant {name:?} ({at})");
        known_keys(map, VARIANT_KEYS, &at)?;
        if out.iter().any(|v| v.name == name) {
            return Err(format!("{at}: the name is used twice"));
        }
        let descriptions = match map.get("descriptions") {
            None => BTreeMap::new(),
            Some(Value::Object(d)) => d
                .iter()
                .map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect::<Option<_>>()
                .ok_or(format!(
                    "{at}: \"descriptions\" must map tool names to text"
                ))?,
            Some(_) => {
                return Err(format!(
                    "{at}: \"descriptions\" must map tool names to text"
                ));
            }
        };
        let settings: Map<String, Value> =
            ["systemPrompt", "rules", "toolSearch", "maxSteps", "flows"]
                .iter()
                .filter_map(|k| map.get(*k).map(|v| ((*k).to_owned(), v.clone())))
                .collect();
        let model = match map.get("model") {
            None => None,
            Some(Value::String(m)) if !m.trim().is_empty() => Some(m.clone()),
            Some(_) => return Err(format!("{at}: \"model\" must name a model")),
        };
        out.push(Variant {
            name,
            descriptions,
            settings,
            model,
        });
    }
    Ok(out)
}

fn answers(value: Option<&Value>, at: &str) -> Result<Answers, String> {
    let Some(value) = value else {
        return Ok(Answers::default());
    };
    let map = object(value, &format!("{at}: \"answers\""))?;
    known_keys(map, ANSWER_KEYS, &format!("{at}: \"answers\""))?;
    let approve = match map.get("approve") {
        None => None,
        Some(Value::String(s)) if s == "yes" => Some(true),
        Some(Value::String(s)) if s == "no" => Some(false),
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(format!("{at}: \"answers\".\"approve\" must be yes or no")),
    };
    let forms = match map.get("forms") {
        None => Vec::new(),
        Some(Value::Object(fields)) => fields
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                FormAnswer::parse(&format!("{k}={v}"))
            })
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{at}: \"answers\".\"forms\": {e}"))?,
        Some(_) => {
            return Err(format!(
                "{at}: \"answers\".\"forms\" must map [SERVER:]FIELD to a value"
            ));
        }
    };
    let decline_forms = match map.get("declineForms") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(format!(
                "{at}: \"answers\".\"declineForms\" must be true or false"
            ));
        }
    };
    if decline_forms && !forms.is_empty() {
        return Err(format!(
            "{at}: \"answers\" gives \"forms\" and \"declineForms\"; give one"
        ));
    }
    Ok(Answers {
        approve,
        forms,
        decline_forms,
    })
}

fn servers(value: Option<&Value>, dir: &Path, at: &str) -> Result<Servers, String> {
    match value {
        None => Ok(Servers::BuiltIn),
        Some(Value::String(s)) if s == "builtin" => Ok(Servers::BuiltIn),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Servers::File(dir.join(s))),
        Some(_) => Err(format!(
            "{at}: \"servers\" must be \"builtin\" or a servers file's path"
        )),
    }
}

/// A model spec as written, a `playback:FILE` read from the suite's folder when relative.
fn model_spec(spec: String, dir: &Path) -> String {
    match spec.strip_prefix("playback:") {
        Some(file) if Path::new(file).is_relative() => {
            format!("playback:{}", dir.join(file).display())
        }
        _ => spec,
    }
}

fn repeat(value: &Value) -> Result<u32, String> {
    value
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| (1..=MAX_REPEAT).contains(n))
        .ok_or(format!("must be a whole number from 1 to {MAX_REPEAT}"))
}

/// `--repeat N` as the command line gives it, checked as the file's `repeat` is.
pub fn repeat_option(n: u32) -> Result<u32, String> {
    repeat(&Value::from(n)).map_err(|e| format!("--repeat {e}"))
}

fn question(value: &Value) -> Result<String, String> {
    match value {
        Value::String(q) if !q.trim().is_empty() && q.chars().count() <= MAX_QUESTION_CHARS => {
            Ok(q.clone())
        }
        _ => Err(format!(
            "must be a question: text of 1 to {MAX_QUESTION_CHARS} characters"
        )),
    }
}

fn name(value: &Value, what: &str) -> Result<String, String> {
    match value {
        Value::String(n)
            if !n.trim().is_empty()
                && n.chars().count() <= MAX_NAME_CHARS
                && !n.chars().any(char::is_control) =>
        {
            Ok(n.clone())
        }
        _ => Err(format!(
            "{what} must be text of 1 to {MAX_NAME_CHARS} characters, no control characters"
        )),
    }
}

fn text_or(map: &Map<String, Value>, key: &str, at: &str, default: &str) -> Result<String, String> {
    match map.get(key) {
        None => Ok(default.to_owned()),
        Some(v) => name(v, &format!("{at}: \"{key}\"")),
    }
}

fn object<'a>(value: &'a Value, what: &str) -> Result<&'a Map<String, Value>, String> {
    value
        .as_object()
        .ok_or_else(|| format!("{what} must be an object"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A YAML "billion laughs": ten aliases of ten, twelve deep, refused by the parser's
    /// budget before it grows, with what was breached.
    #[test]
    fn a_yaml_bomb_is_refused_by_the_budget_not_expanded() {
        let dir = tempfile::tempdir().unwrap();
        let mut lines = vec![r#"a: &a ["x","x","x","x","x","x","x","x","x","x"]"#.to_owned()];
        let names: Vec<char> = ('a'..='l').collect();
        for w in names.windows(2) {
            let (prev, name) = (w[0], w[1]);
            let refs = vec![format!("*{prev}"); 10].join(",");
            lines.push(format!("{name}: &{name} [{refs}]"));
        }
        lines.push("tasks: [{id: t, turns: *l, checks: [{calls: 1}]}]".into());
        let path = dir.path().join("bomb.yaml");
        std::fs::write(&path, lines.join("\n")).unwrap();
        let started = std::time::Instant::now();
        let err = Suite::load(&path).unwrap_err();
        assert!(err.contains("budget"), "{err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
    }

    #[test]
    fn a_relative_playback_model_is_read_from_the_suites_folder() {
        let doc = serde_json::json!({"model": "playback:model.json",
            "tasks": [{"id": "t", "question": "q", "checks": [{"calls": 1}],
                       "model": "playback:/abs/m.json"},
                      {"id": "u", "question": "q", "checks": [{"calls": 1}]}]});
        let suite = Suite::from_value(&doc, "s", Path::new("/suites")).unwrap();
        assert_eq!(
            suite.tasks[0].model.as_deref(),
            Some("playback:/abs/m.json")
        );
        assert_eq!(
            suite.tasks[1].model.as_deref(),
            Some("playback:/suites/model.json")
        );
    }
}
