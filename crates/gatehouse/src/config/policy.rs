//! The settings of the person's policy beside the rules: where the ledger of decisions is
//! written (`ledger`), and the commands run before and after calls (`hooks`). Every bound
//! is a named constant, checked when the file is read.

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

use globset::GlobMatcher;
use serde_json::Value;

use super::EnvPass;

/// The ledger's file name in the state folder, when `ledger.path` does not say.
pub const LEDGER_FILE: &str = "ledger.jsonl";
/// How long a hook may take when its entry does not say (`timeoutMs`).
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest `timeoutMs` a hook may be given: ten minutes.
pub const MAX_HOOK_TIMEOUT_MS: u64 = 600_000;
/// Most bytes a hook may print on stdout; more is a failure (and so a deny).
pub const MAX_HOOK_OUTPUT_BYTES: usize = 4 << 20;

/// Where the ledger is written, and what it keeps.
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerSettings {
    /// Record decisions at all (`"ledger": false` turns the ledger off).
    pub enabled: bool,
    /// The file (`path`); by default `ledger.jsonl` in the state folder ([`state_dir`]).
    pub path: Option<PathBuf>,
    /// Keep each call's arguments too (`arguments: true`), not only their SHA-256.
    pub arguments: bool,
}

impl Default for LedgerSettings {
    fn default() -> Self {
        LedgerSettings {
            enabled: true,
            path: None,
            arguments: false,
        }
    }
}

impl LedgerSettings {
    /// Read `"ledger"`: `true`, `false`, or `{"path": FILE, "arguments": BOOL}`.
    pub fn parse(value: &Value) -> Result<LedgerSettings, String> {
        let mut out = LedgerSettings::default();
        let map = match value {
            Value::Bool(on) => {
                out.enabled = *on;
                return Ok(out);
            }
            Value::Object(map) => map,
            _ => return Err("\"ledger\" must be true, false or {\"path\", \"arguments\"}".into()),
        };
        for (key, v) in map {
            match key.as_str() {
                "path" => match v.as_str() {
                    Some(p) if !p.is_empty() => out.path = Some(PathBuf::from(p)),
                    _ => return Err("\"ledger\".\"path\" must be a file path".into()),
                },
                "arguments" => {
                    out.arguments = v
                        .as_bool()
                        .ok_or("\"ledger\".\"arguments\" must be true or false")?
                }
                "enabled" => {
                    out.enabled = v
                        .as_bool()
                        .ok_or("\"ledger\".\"enabled\" must be true or false")?
                }
                other => {
                    return Err(format!(
                        "\"ledger\": unknown key \"{other}\" (path, arguments, enabled)"
                    ));
                }
            }
        }
        Ok(out)
    }

    /// The ledger's file: `path`, else `ledger.jsonl` in [`state_dir`].
    pub fn file(&self) -> PathBuf {
        self.path
            .clone()
            .unwrap_or_else(|| state_dir().join(LEDGER_FILE))
    }
}

/// The person's state folder for Gatehouse: `$XDG_STATE_HOME/gatehouse`, else
/// `~/.local/state/gatehouse` (the ledger, the key that seals remembered approvals).
pub fn state_dir() -> PathBuf {
    super::user_dir("XDG_STATE_HOME", ".local/state")
        .unwrap_or_else(std::env::temp_dir)
        .join("gatehouse")
}

/// The hooks of the servers file.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    /// `beforeCall`: given the proposed call, answers allow, deny or ask, and may rewrite
    /// the arguments.
    pub before_call: Option<HookSpec>,
    /// `afterCall`: given the result before the model reads it, may replace it.
    pub after_call: Option<HookSpec>,
}

/// One hook: a command, as a server's entry gives one, with a time limit.
#[derive(Debug, Clone)]
pub struct HookSpec {
    /// `beforeCall` or `afterCall`, for messages.
    pub name: &'static str,
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its own variables (`env`); of the host's, only [`super::BASE_ENV`] and `passEnv`.
    pub env: BTreeMap<String, String>,
    /// Which of the host's variables it also gets.
    pub pass: EnvPass,
    /// The folder it runs in (`cwd`).
    pub cwd: Option<PathBuf>,
    /// How long it may take (`timeoutMs`).
    pub timeout: Duration,
    /// Only the tools this glob matches (`tools`); every tool without it.
    pub tools: Option<GlobMatcher>,
}

impl HookSpec {
    /// Does this hook run for `tool`?
    pub fn applies_to(&self, tool: &str) -> bool {
        self.tools.as_ref().is_none_or(|g| g.is_match(tool))
    }
}

impl Hooks {
    /// Read `"hooks"`: `{"beforeCall": HOOK, "afterCall": HOOK}`.
    pub fn parse(value: &Value, warnings: &mut Vec<String>) -> Result<Hooks, String> {
        let Value::Object(map) = value else {
            return Err("\"hooks\" must be an object (beforeCall, afterCall)".into());
        };
        let mut hooks = Hooks::default();
        for (key, v) in map {
            match key.as_str() {
                "beforeCall" => hooks.before_call = Some(hook("beforeCall", v)?),
                "afterCall" => hooks.after_call = Some(hook("afterCall", v)?),
                other => warnings.push(format!("gatehouse: unknown hook \"{other}\" is ignored")),
            }
        }
        Ok(hooks)
    }
}

const HOOK_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "passEnv",
    "inheritEnv",
    "timeoutMs",
    "tools",
];

/// One hook entry (or an eval's `world` command, in the same shape), checked; `name` names it.
pub(crate) fn hook(name: &'static str, value: &Value) -> Result<HookSpec, String> {
    let err = |m: String| format!("\"hooks\".\"{name}\": {m}");
    let Value::Object(map) = value else {
        return Err(err("must be an object with a \"command\"".into()));
    };
    if let Some(k) = map.keys().find(|k| !HOOK_KEYS.contains(&k.as_str())) {
        return Err(err(format!(
            "unknown key \"{k}\" ({})",
            HOOK_KEYS.join(", ")
        )));
    }
    let command = match map.get("command") {
        Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
        _ => return Err(err("\"command\" must be a non-empty string".into())),
    };
    let args =
        strings(map.get("args")).ok_or_else(|| err("\"args\" must be a list of strings".into()))?;
    let env = match map.get("env") {
        None => BTreeMap::new(),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
            .collect::<Option<_>>()
            .ok_or_else(|| err("\"env\" must be an object of strings".into()))?,
        Some(_) => return Err(err("\"env\" must be an object of strings".into())),
    };
    let cwd = match map.get("cwd") {
        None => None,
        Some(Value::String(c)) => Some(PathBuf::from(c)),
        Some(_) => return Err(err("\"cwd\" must be a folder".into())),
    };
    let timeout = match map.get("timeoutMs") {
        None => HOOK_TIMEOUT,
        Some(v) => Duration::from_millis(
            v.as_u64()
                .filter(|n| (1..=MAX_HOOK_TIMEOUT_MS).contains(n))
                .ok_or_else(|| err(format!("\"timeoutMs\" must be a whole number from 1 to {MAX_HOOK_TIMEOUT_MS}, not {v}")))?,
        ),
    };
    let tools = match map.get("tools") {
        None => None,
        Some(Value::String(t)) => Some(
            crate::rules::conditions::glob(t).map_err(|e| err(format!("\"tools\" {t:?}: {e}")))?,
        ),
        Some(_) => return Err(err("\"tools\" must be a glob over tool names".into())),
    };
    let pass = super::env_pass(map).map_err(err)?;
    Ok(HookSpec {
        name,
        command,
        args,
        env,
        pass,
        cwd,
        timeout,
        tools,
    })
}

fn strings(value: Option<&Value>) -> Option<Vec<String>> {
    match value {
        None => Some(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_owned))
            .collect(),
        Some(_) => None,
    }
}
