//! One attempt at one task under one variant: the servers started afresh for it (a world
//! of its own: `GATEHOUSE_EVAL_DIR`), its questions asked through the host as `ask` asks
//! them, the person answering as the task says, then the world looked at and every check
//! graded. What the run was (answers, calls, the ledger's lines) is kept for the report.

use std::{
    collections::BTreeMap,
    path::Path,
    sync::{Arc, Mutex},
    time::Instant,
};

use serde::Serialize;
use serde_json::{Value, json};

use super::{
    check::Check,
    lens::Lens,
    person::EvalPerson,
    resend::{Rounds, resend},
    suite::{Servers, Task, Variant},
};
use crate::{
    config::{Config, Identity, read_document},
    host::Host,
    model::{self, Message},
    trace::{Observer, Outcome, Step, ToolEvent, Trace, WireEvent},
};

/// The variable every stdio server of an attempt gets: a folder of the attempt's own,
/// empty at its start, where a server that keeps state may keep it.
pub const EVAL_DIR_VAR: &str = "GATEHOUSE_EVAL_DIR";

/// The built-in servers file for an attempt whose own folder is the argument.
pub type BuiltIn = Box<dyn Fn(&Path) -> Result<Value, String> + Send + Sync>;
/// Reads a variable by name.
pub type Variables = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Wraps an attempt's observer in one that also records its run (the argument: the
/// recording's file stem, `TASK--VARIANT--N`).
pub type Recorder =
    Box<dyn Fn(&str, Arc<dyn Observer>) -> Result<Arc<dyn Observer>, String> + Send + Sync>;

/// What an eval needs of the program that runs it.
pub struct Setting {
    /// The built-in servers file for an attempt whose own folder is the argument.
    pub built_in: BuiltIn,
    /// The system prompt when neither the servers file nor the variant gives one.
    pub system_prompt: String,
    /// Reads a variable a model spec needs (`OPENAI_API_KEY`, …).
    pub variable: Variables,
    /// Record each attempt's messages (`--record DIR`).
    pub record: Option<Recorder>,
    /// Play each attempt's servers from the recordings in this folder (`--replay DIR`):
    /// `TASK--VARIANT--N.jsonl`, else the first run's, `TASK--VARIANT--1.jsonl`.
    pub replay: Option<std::path::PathBuf>,
}

/// The file stem of an attempt's recording: `TASK--VARIANT--N`, every character but
/// letters, digits, `.`, `_` and `-` written `_`.
pub fn recording_stem(task: &str, variant: &str, number: u32) -> String {
    let safe = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("{}--{}--{number}", safe(task), safe(variant))
}

/// The recording an attempt replays from `dir`: its own run's, else the first run's.
fn recording_for(
    dir: &Path,
    task: &Task,
    variant: &Variant,
    number: u32,
) -> Result<std::path::PathBuf, String> {
    let own = dir.join(format!(
        "{}.jsonl",
        recording_stem(&task.id, &variant.name, number)
    ));
    if own.exists() {
        return Ok(own);
    }
    let first = dir.join(format!(
        "{}.jsonl",
        recording_stem(&task.id, &variant.name, 1)
    ));
    if first.exists() {
        return Ok(first);
    }
    Err(format!(
        "no recording of this task and variant: {} (made by eval --record)",
        own.display()
    ))
}

pub use super::seen::{CallSeen, Run, WorldSeen};

/// One attempt, graded.
#[derive(Debug, Clone, Serialize)]
pub struct Attempt {
    /// The task.
    pub task: String,
    /// The variant.
    pub variant: String,
    /// Its number, from 1.
    pub number: u32,
    /// Its recording's file stem (`TASK--VARIANT--N`), under `eval --record DIR`.
    pub recording: String,
    /// How many passed.
    pub passed: bool,
    /// Each failed check: its index and why.
    pub failures: Vec<(usize, String)>,
    /// What the run was.
    pub run: Run,
}

/// The `host.tool_call` records of a run, as they come, and (when a check sends one
/// again) each tool's last answered round.
#[derive(Default)]
struct Collector {
    events: Mutex<Vec<ToolEvent>>,
    rounds: Option<Rounds>,
}

impl Observer for Collector {
    fn step(&self, _step: &Step) {}
    fn server_stderr(&self, _server: &str, _line: &str) {}
    fn tool_event(&self, event: &ToolEvent) {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event.clone());
    }
    fn wants_wire(&self) -> bool {
        self.rounds.is_some()
    }
    fn wire(&self, event: &WireEvent) {
        if let Some(rounds) = &self.rounds {
            rounds.see(event);
        }
    }
}

/// Run `task` once under `variant`, its files in `dir` (empty, the attempt's own), and
/// grade it.
pub async fn attempt(
    task: &Task,
    variant: &Variant,
    number: u32,
    dir: &Path,
    setting: &Setting,
) -> Attempt {
    let run = match run(task, variant, number, dir, setting).await {
        Ok(run) => run,
        Err(why) => Run {
            failed: Some(why),
            ..Run::default()
        },
    };
    let failures = match &run.failed {
        Some(why) => vec![(0, format!("the run could not be made: {why}"))],
        None => task
            .checks
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.grade(i, &run).err().map(|e| (i, e)))
            .collect(),
    };
    Attempt {
        task: task.id.clone(),
        variant: variant.name.clone(),
        recording: recording_stem(&task.id, &variant.name, number),
        number,
        passed: failures.is_empty(),
        failures,
        run,
    }
}

/// The configuration of an attempt: the task's servers, the task's settings over the
/// file's and the variant's over those, the ledger in the attempt's folder with arguments kept, every stdio server
/// given the folder.
pub fn config_for(
    task: &Task,
    variant: &Variant,
    number: u32,
    dir: &Path,
    setting: &Setting,
) -> Result<Config, String> {
    let (mut doc, source) = match &task.servers {
        Servers::BuiltIn => ((setting.built_in)(dir)?, "built-in servers".to_owned()),
        Servers::File(path) => (
            read_document(path).map_err(|e| e.to_string())?,
            path.display().to_string(),
        ),
    };
    let Value::Object(top) = &mut doc else {
        return Err(format!("{source}: the file must hold a JSON object"));
    };
    if let (Some(recordings), Some(Value::Object(servers))) =
        (&setting.replay, top.get_mut("mcpServers"))
    {
        let file = recording_for(recordings, task, variant, number)?;
        for entry in servers.values_mut() {
            *entry = replayed(entry, &file);
        }
    }
    if let Some(Value::Object(servers)) = top.get_mut("mcpServers") {
        for entry in servers.values_mut().filter(|e| e.get("command").is_some()) {
            let env = entry
                .as_object_mut()
                .map(|e| e.entry("env").or_insert_with(|| json!({})));
            if let Some(Value::Object(env)) = env {
                env.insert(EVAL_DIR_VAR.into(), json!(dir));
            }
        }
    }
    let settings = top.entry("gatehouse").or_insert_with(|| json!({}));
    let Value::Object(settings) = settings else {
        return Err(format!("{source}: \"gatehouse\" must be an object"));
    };
    settings.extend(task.settings.clone());
    settings.extend(variant.settings.clone());
    settings.insert(
        "ledger".into(),
        json!({"path": dir.join("ledger.jsonl"), "arguments": true}),
    );
    let identity = Identity {
        user: task.user.clone(),
        tenant: task.tenant.clone(),
    };
    let mut config = Config::from_value(doc, &source, &identity).map_err(|e| e.to_string())?;
    config
        .settings
        .system_prompt
        .get_or_insert_with(|| setting.system_prompt.clone());
    Ok(config)
}

async fn run(
    task: &Task,
    variant: &Variant,
    number: u32,
    dir: &Path,
    setting: &Setting,
) -> Result<Run, String> {
    let config = config_for(task, variant, number, dir, setting)?;
    let spec = variant
        .model
        .as_deref()
        .or(task.model.as_deref())
        .or(config.settings.model.as_deref())
        .unwrap_or("scripted");
    let mut inner = model::from_spec_with(spec, &*setting.variable)?;
    // Checked once for the whole suite (`eval::run_suite`), not per attempt.
    let mut lens = Lens::new(inner.as_mut());
    let resends = task
        .checks
        .iter()
        .any(|c| matches!(c, Check::WorldCall(w) if w.resend));
    let collector = Arc::new(Collector {
        rounds: resends.then(Rounds::default),
        ..Collector::default()
    });
    let person = Arc::new(EvalPerson::new(task.answers.clone()));
    let started = Instant::now();
    let observer: Arc<dyn Observer> = match &setting.record {
        Some(record) => record(
            &recording_stem(&task.id, &variant.name, number),
            collector.clone(),
        )?,
        None => collector.clone(),
    };
    let host = Host::start_in(&config, person.clone(), Trace::new(observer), None).await;
    if !variant.descriptions.is_empty() {
        host.live().describe_as(&variant.descriptions);
    }
    let mut run = Run::default();
    let mut conversation: Vec<Message> = Vec::new();
    for question in &task.turns {
        let (answer, usage) = host.ask(&mut lens, &mut conversation, question).await;
        run.answers.push(answer);
        run.tokens += usage.total_tokens;
    }
    run.ms = started.elapsed().as_secs_f64() * 1e3;
    run.model_calls = lens.calls;
    run.definition_bytes = lens.definition_bytes;
    person.checking();
    for (i, check) in task.checks.iter().enumerate() {
        let Check::WorldCall(w) = check else {
            continue;
        };
        let seen = match &collector.rounds {
            Some(rounds) if w.resend => resend(&host, &w.tool, w.responses.as_ref(), rounds)
                .await
                .unwrap_or_else(|why| WorldSeen {
                    is_error: false,
                    text: String::new(),
                    not_sent: Some(why),
                }),
            _ => {
                let called = host.call_by_person(&w.tool, &w.arguments.to_string()).await;
                WorldSeen {
                    is_error: !matches!(called.outcome, Outcome::Ok),
                    text: called.shown.text,
                    not_sent: None,
                }
            }
        };
        run.world.insert(i, seen);
    }
    host.shutdown().await;
    run.ledger = crate::ledger::read_entries(&dir.join("ledger.jsonl"))?;
    let events = std::mem::take(&mut *collector.events.lock().unwrap_or_else(|e| e.into_inner()));
    run.calls = calls_seen(&events, &run.ledger);
    let verdicts = commands(task, &run, dir).await;
    run.commands = verdicts;
    Ok(run)
}

/// The suite's `world` commands, each given the run as JSON on stdin, with the attempt's
/// own folder (`dir`, where its servers kept their state: `GATEHOUSE_EVAL_DIR`).
async fn commands(task: &Task, run: &Run, dir: &Path) -> BTreeMap<usize, Result<(), String>> {
    let mut out = BTreeMap::new();
    let input = json!({"task": task.id, "run": run, "dir": dir});
    for (i, check) in task.checks.iter().enumerate() {
        if let Check::WorldCommand(spec) = check {
            let verdict = match crate::hooks::exchange(spec, &input).await {
                Ok((status, _, _)) if status.success() => Ok(()),
                Ok((status, _, said)) => Err(format!(
                    "the command {} failed ({status}){said}",
                    spec.command
                )),
                Err(e) => Err(e),
            };
            out.insert(i, verdict);
        }
    }
    out
}

/// Each `host.tool_call` record, with the arguments of its ledger line (the same trace
/// and step).
fn calls_seen(events: &[ToolEvent], ledger: &[Value]) -> Vec<CallSeen> {
    events
        .iter()
        .map(|e| {
            let line = ledger
                .iter()
                .rev()
                .find(|l| l["trace_id"] == e.trace_id.as_str() && l["step"] == e.step);
            let by_person = line.is_some_and(|l| l.get("caller").is_some());
            CallSeen {
                tool: e.tool.clone(),
                server: e.server.clone(),
                arguments: line.map(|l| l["arguments"].clone()).unwrap_or(Value::Null),
                outcome: e.outcome,
                sent: e.approved_by.is_some(),
                by_person,
            }
        })
        .collect()
}

/// A server's entry played from `file` instead: its tool filters kept (they are the
/// person's), everything that started or reached the server dropped.
fn replayed(entry: &Value, file: &Path) -> Value {
    let mut out = serde_json::Map::new();
    out.insert("replay".into(), json!(file));
    for key in ["enabledTools", "disabledTools", "alwaysLoad"] {
        if let Some(v) = entry.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    Value::Object(out)
}
