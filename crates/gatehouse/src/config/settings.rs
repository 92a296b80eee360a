//! The host's own settings (`"gatehouse"` in the servers file): the allow-list and every
//! bound, each a named constant, validated when the file is read. A gateway's
//! `approvals` is read in `settings/approving.rs`.

mod approving;
mod flows;
mod written;

use std::{path::PathBuf, time::Duration};

pub use approving::Approvals;
pub use flows::{FlowSettings, MAX_FLOW_PATTERNS};
pub use written::{PathKind, WrittenPath};

use serde_json::Value;

/// Longest a proposed call's arguments may be, in characters of JSON text.
pub const MAX_ARGUMENT_CHARS: usize = 2_000;
/// Most characters of a tool's result that go back into the model's context.
pub const MAX_RESULT_CHARS: usize = 4_000;
/// Most model calls in one turn.
pub const MAX_STEPS: usize = 6;
/// How long one server round of a tool call may take.
pub const HOST_TOOL_TIMEOUT: Duration = Duration::from_secs(10);
/// Environment variable overriding [`HOST_TOOL_TIMEOUT`], in seconds (fractions allowed).
pub const HOST_TOOL_TIMEOUT_ENV: &str = "HOST_TOOL_TIMEOUT";
/// Progress extends a call's time limit, up to this.
pub const HOST_TOOL_MAX_TIMEOUT: Duration = Duration::from_secs(120);
/// Environment variable overriding [`HOST_TOOL_MAX_TIMEOUT`], in seconds.
pub const HOST_TOOL_MAX_TIMEOUT_ENV: &str = "HOST_TOOL_MAX_TIMEOUT";
/// How long a server may take from spawn to a ready catalog.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
/// Most `input_required` rounds one call may take before the host gives up.
pub const MAX_INPUT_ROUNDS: usize = 10;
/// How long the person has to finish a sign-in in the browser.
pub const SIGN_IN_TIMEOUT: Duration = Duration::from_secs(300);
/// The shortest and longest `signInTimeoutMs`.
pub const SIGN_IN_TIMEOUT_MS_RANGE: std::ops::RangeInclusive<u64> = 5_000..=3_600_000;
/// How long a turn waits on a call the server runs as a task (the person's thinking not
/// counted); then the task goes on in the background and the model is told its id.
pub const HOST_TASK_WAIT: Duration = Duration::from_secs(60);
/// Environment variable overriding [`HOST_TASK_WAIT`], in seconds (fractions allowed).
pub const HOST_TASK_WAIT_ENV: &str = "HOST_TASK_WAIT";

/// The smallest bound a result may be given (`maxResultChars`): room for the longest frame
/// (a cut result's, with the longest tool name and its note) and some of the result.
pub const MIN_RESULT_CHARS: usize = 400;
/// The largest bound a result may be given.
pub const MAX_RESULT_CHARS_LIMIT: usize = 10_000_000;
/// The largest `maxArgumentChars` a servers file may set.
pub const MAX_ARGUMENT_CHARS_LIMIT: usize = 1_000_000;
/// The largest `maxSteps` a servers file may set (`--max-steps` too).
pub const MAX_STEPS_LIMIT: usize = 1_000;
/// The largest time limit a servers file may set for a call (`toolTimeoutMs`,
/// `toolMaxTimeoutMs`): one day.
pub const MAX_TIMEOUT_MS: u64 = 86_400_000;
/// The largest `connectTimeoutMs`: ten minutes.
pub const MAX_CONNECT_TIMEOUT_MS: u64 = 600_000;
/// How long a server started through a package runner (`npx`, `uvx`, …) may take to
/// answer (`firstStartTimeoutMs`, at most [`MAX_CONNECT_TIMEOUT_MS`]): a first start
/// downloads the package.
pub const FIRST_START_TIMEOUT: Duration = Duration::from_secs(180);
/// The largest `maxInputRounds`.
pub const MAX_INPUT_ROUNDS_LIMIT: usize = 100;

/// Most bytes of tool definitions one model call carries before the host offers
/// `search_tools` instead of every definition (`toolBudgetBytes`): about 4,000 tokens, a
/// quarter of a small model's 16K context.
pub const DEFAULT_TOOL_BUDGET_BYTES: usize = 16_384;
/// The smallest `toolBudgetBytes`: `search_tools` itself and a few tools found.
pub const MIN_TOOL_BUDGET_BYTES: usize = 2_048;
/// The largest `toolBudgetBytes`.
pub const MAX_TOOL_BUDGET_BYTES: usize = 10_000_000;
/// The share of a configured context (`contextTokens`) tool definitions may take, in percent.
pub const TOOL_BUDGET_SHARE_PERCENT: usize = 10;
/// Bytes of JSON per token, roughly, for turning a context size into a byte budget.
pub const BYTES_PER_TOKEN: usize = 4;
/// The smallest `contextTokens`.
pub const MIN_CONTEXT_TOKENS: usize = 2_048;
/// The largest `contextTokens`.
pub const MAX_CONTEXT_TOKENS: usize = 10_000_000;
/// Most entries of a `schemaDialect` object (model pattern → dialect).
pub const MAX_DIALECT_RULES: usize = 64;

/// When the host offers `search_tools` instead of every definition (`toolSearch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolSearch {
    /// When the definitions to offer pass the budget (`"auto"`, the default).
    #[default]
    Auto,
    /// On every turn, whatever the catalog's size (`"always"`).
    Always,
    /// Never: every definition on every call, as large as it is (`"never"`).
    Never,
}

/// The words the settings file gives a choice with, each beside the value it stands for.
macro_rules! words {
    ($kind:ident: $($word:literal => $value:ident),+) => {
        impl $kind {
            /// The words of the settings file for each.
            pub const WORDS: &[(&str, $kind)] = &[$(($word, $kind::$value)),+];
        }
    };
}

words!(ToolSearch: "auto" => Auto, "always" => Always, "never" => Never);

/// The JSON Schema a model's API accepts for a tool's parameters (`schemaDialect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SchemaDialect {
    /// The server's schema as it is (`"json-schema"`, the default).
    #[default]
    JsonSchema,
    /// OpenAI's strict function calling (`"openai-strict"`).
    OpenAiStrict,
    /// Gemini's function declarations, an OpenAPI subset (`"gemini"`).
    Gemini,
}

impl SchemaDialect {
    /// The dialect a servers file names.
    pub fn parse(name: &str) -> Option<SchemaDialect> {
        match name {
            "json-schema" => Some(SchemaDialect::JsonSchema),
            "openai-strict" => Some(SchemaDialect::OpenAiStrict),
            "gemini" => Some(SchemaDialect::Gemini),
            _ => None,
        }
    }

    /// Its name in a servers file.
    pub fn name(self) -> &'static str {
        match self {
            SchemaDialect::JsonSchema => "json-schema",
            SchemaDialect::OpenAiStrict => "openai-strict",
            SchemaDialect::Gemini => "gemini",
        }
    }
}

/// `schemaDialect`: one dialect for every model, or one per model (by a pattern on the
/// model's name as `--model` gives it, `openai:gemini-*`), the first match winning.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dialects {
    /// The models' patterns and their dialects, in the file's order.
    pub by_model: Vec<(super::Pattern, SchemaDialect)>,
    /// For a model no pattern matches.
    pub otherwise: SchemaDialect,
}

impl Dialects {
    /// The dialect of the model named `model` (`openai:gpt-4o`, `scripted`).
    pub fn for_model(&self, model: &str) -> SchemaDialect {
        self.by_model
            .iter()
            .find(|(p, _)| p.matches(model))
            .map_or(self.otherwise, |(_, d)| *d)
    }
}

/// The host's own limits and lists. Every bound has a named default above.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Tools the host runs without asking, by their namespaced name (`server__tool`): a
    /// shorthand for `allow` rules, after `rules`.
    pub allow: Vec<String>,
    /// The person's rules over tools and their arguments (`rules`), checked when read.
    pub rules: crate::rules::Rules,
    /// The ledger of decisions (`ledger`).
    pub ledger: super::policy::LedgerSettings,
    /// The commands run before and after calls (`hooks`).
    pub hooks: super::policy::Hooks,
    /// Longest arguments a proposal may have, in characters (`maxArgumentChars`).
    pub max_argument_chars: usize,
    /// Most characters of a result the model reads (`maxResultChars`).
    pub max_result_chars: usize,
    /// Most model calls in one question (`maxSteps`: the seed's "steps").
    pub max_model_calls: usize,
    /// How long one server round may take (`toolTimeoutMs`, `HOST_TOOL_TIMEOUT`).
    pub tool_timeout: Duration,
    /// Progress extends `tool_timeout` up to this.
    pub tool_max_timeout: Duration,
    /// How long a server may take from start to a ready catalog (`connectTimeoutMs`).
    pub connect_timeout: Duration,
    /// How long a package runner's start may take (`firstStartTimeoutMs`).
    pub first_start_timeout: Duration,
    /// Most `input_required` rounds in one call (`maxInputRounds`).
    pub max_input_rounds: usize,
    /// What the model is told first in every conversation (`systemPrompt`); none when
    /// `None`. The command line gives its own default.
    pub system_prompt: Option<String>,
    /// The model to use when `--model` is not given.
    pub model: Option<String>,
    /// Where binary result blocks are saved for the person (default: a folder per
    /// session under the system's temporary folder).
    pub save_dir: Option<PathBuf>,
    /// Pass images and audio to the model as input parts (for models that take them);
    /// otherwise the model reads a short description of each.
    pub model_accepts_media: bool,
    /// Where every record of a run is added as JSON lines (`logFile`; `--log` overrides).
    pub log_file: Option<PathBuf>,
    /// How long the person has to finish a sign-in (`signInTimeoutMs`).
    pub sign_in_timeout: Duration,
    /// Open the sign-in page in the browser by itself (`openBrowser`); otherwise the
    /// address is only shown.
    pub open_browser: bool,
    /// Where sign-in secrets are kept (`credentialStore`).
    pub credential_store: CredentialStore,
    /// How long a turn waits on a task before it goes on in the background (`taskWaitMs`,
    /// `HOST_TASK_WAIT`).
    pub task_wait: Duration,
    /// Where the host keeps its records of tasks (`tasksFile`; default
    /// [`crate::tasks::default_path`]).
    pub tasks_file: Option<PathBuf>,
    /// Most bytes of tool definitions per model call before the host searches instead
    /// (`toolBudgetBytes`, or a share of `contextTokens`).
    pub tool_budget_bytes: usize,
    /// The model's context, in tokens, when the file gives it (`contextTokens`).
    pub context_tokens: Option<usize>,
    /// When to offer `search_tools` (`toolSearch`).
    pub tool_search: ToolSearch,
    /// The schema dialect of each model (`schemaDialect`).
    pub schema_dialect: Dialects,
    /// How the gateway names its servers' tools and prompts (`gatewayNames`).
    pub gateway_names: GatewayNames,
    /// The backoff of a stdio server's restarts, and of a gateway's later tries at a
    /// server that failed its first start (`restart`).
    pub restart: super::restart::Restart,
    /// How a gateway takes the person's approval (`approvals`).
    pub approvals: Approvals,
    /// Whose results are trusted, which tools are consequential (`flows`).
    pub flows: FlowSettings,
}

/// Where sign-in secrets are kept (`credentialStore`: `auto`, `keychain` or `file`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CredentialStore {
    /// The operating system's keychain when one runs, else a file readable by the user only.
    #[default]
    Auto,
    /// The keychain, or an error when none runs.
    Keychain,
    /// The file (0600) in the data folder.
    File,
}

words!(CredentialStore: "auto" => Auto, "keychain" => Keychain, "file" => File);

/// How the gateway names what its servers offer (`gatewayNames`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GatewayNames {
    /// `SERVER__NAME`, as the host names tools (`"prefixed"`, the default).
    #[default]
    Prefixed,
    /// Each server's own names (`"unprefixed"`): allowed only with one server in the
    /// file, where no two names can collide (`Config::from_value` checks it).
    Unprefixed,
}

words!(GatewayNames: "prefixed" => Prefixed, "unprefixed" => Unprefixed);

impl Default for Settings {
    fn default() -> Self {
        Settings {
            allow: Vec::new(),
            rules: crate::rules::Rules::default(),
            ledger: super::policy::LedgerSettings::default(),
            hooks: super::policy::Hooks::default(),
            max_argument_chars: MAX_ARGUMENT_CHARS,
            max_result_chars: MAX_RESULT_CHARS,
            max_model_calls: MAX_STEPS,
            tool_timeout: HOST_TOOL_TIMEOUT,
            tool_max_timeout: HOST_TOOL_MAX_TIMEOUT,
            connect_timeout: CONNECT_TIMEOUT,
            first_start_timeout: FIRST_START_TIMEOUT,
            max_input_rounds: MAX_INPUT_ROUNDS,
            system_prompt: None,
            model: None,
            save_dir: None,
            model_accepts_media: false,
            log_file: None,
            sign_in_timeout: SIGN_IN_TIMEOUT,
            open_browser: false,
            credential_store: CredentialStore::Auto,
            task_wait: HOST_TASK_WAIT,
            tasks_file: None,
            tool_budget_bytes: DEFAULT_TOOL_BUDGET_BYTES,
            context_tokens: None,
            tool_search: ToolSearch::Auto,
            schema_dialect: Dialects::default(),
            gateway_names: GatewayNames::Prefixed,
            restart: super::restart::Restart::default(),
            approvals: Approvals::default(),
            flows: FlowSettings::default(),
        }
    }
}

/// Every key of the `"gatehouse"` object, for "did you mean" (a test holds it to [`parse`]).
pub const SETTING_KEYS: &[&str] = &[
    "allow",
    "rules",
    "ledger",
    "hooks",
    "maxArgumentChars",
    "maxResultChars",
    "maxSteps",
    "systemPrompt",
    "toolTimeoutMs",
    "toolMaxTimeoutMs",
    "connectTimeoutMs",
    "firstStartTimeoutMs",
    "maxInputRounds",
    "model",
    "modelAcceptsMedia",
    "saveDir",
    "logFile",
    "tasksFile",
    "gatewayNames",
    "taskWaitMs",
    "restart",
    "signInTimeoutMs",
    "openBrowser",
    "credentialStore",
    "toolBudgetBytes",
    "contextTokens",
    "toolSearch",
    "schemaDialect",
    "approvals",
    "flows",
];

/// Read the `"gatehouse"` object of a servers file.
pub(super) fn parse(value: &Value, warnings: &mut Vec<String>) -> Result<Settings, String> {
    let Value::Object(map) = value else {
        return Err("must be an object".into());
    };
    let mut s = Settings::default();
    for (key, v) in map {
        let bounded =
            |range: std::ops::RangeInclusive<u64>| super::number::whole_number(key, v, range);
        match key.as_str() {
            "allow" => {
                let Value::Array(items) = v else {
                    return Err("\"allow\" must be an array of tool names".into());
                };
                s.allow = items
                    .iter()
                    .map(|i| {
                        i.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| "\"allow\" must hold strings".to_string())
                    })
                    .collect::<Result<_, _>>()?;
            }
            "rules" => s.rules = crate::rules::Rules::parse(v)?,
            "ledger" => s.ledger = super::policy::LedgerSettings::parse(v)?,
            "hooks" => s.hooks = super::policy::Hooks::parse(v, warnings)?,
            "maxArgumentChars" => {
                s.max_argument_chars = bounded(1..=MAX_ARGUMENT_CHARS_LIMIT as u64)? as usize
            }
            "maxResultChars" => {
                s.max_result_chars =
                    bounded(MIN_RESULT_CHARS as u64..=MAX_RESULT_CHARS_LIMIT as u64)? as usize
            }
            "maxSteps" => s.max_model_calls = bounded(1..=MAX_STEPS_LIMIT as u64)? as usize,
            "systemPrompt" => s.system_prompt = Some(text(key, v)?),
            "toolTimeoutMs" => s.tool_timeout = Duration::from_millis(bounded(1..=MAX_TIMEOUT_MS)?),
            "toolMaxTimeoutMs" => {
                s.tool_max_timeout = Duration::from_millis(bounded(1..=MAX_TIMEOUT_MS)?)
            }
            "connectTimeoutMs" => {
                s.connect_timeout = Duration::from_millis(bounded(1..=MAX_CONNECT_TIMEOUT_MS)?)
            }
            "firstStartTimeoutMs" => {
                s.first_start_timeout = Duration::from_millis(bounded(1..=MAX_CONNECT_TIMEOUT_MS)?)
            }
            "maxInputRounds" => {
                s.max_input_rounds = bounded(1..=MAX_INPUT_ROUNDS_LIMIT as u64)? as usize
            }
            "model" => s.model = Some(text(key, v)?),
            "modelAcceptsMedia" => s.model_accepts_media = flag(key, v)?,
            "saveDir" => s.save_dir = Some(path(key, v)?),
            "logFile" => s.log_file = Some(path(key, v)?),
            "tasksFile" => s.tasks_file = Some(path(key, v)?),
            "gatewayNames" => s.gateway_names = one_of(key, v, GatewayNames::WORDS)?,
            "taskWaitMs" => s.task_wait = Duration::from_millis(bounded(1..=MAX_TIMEOUT_MS)?),
            "restart" => s.restart = super::restart::parse(v, warnings)?,
            "approvals" => s.approvals = Approvals::parse(v)?,
            "flows" => s.flows = FlowSettings::parse(v)?,
            other => {
                if !catalog_setting(&mut s, other, v)? && !sign_in_setting(&mut s, other, v)? {
                    warnings.push(format!(
                        "gatehouse: unknown setting \"{other}\" is ignored{}",
                        super::suggest::hint(other, SETTING_KEYS)
                    ))
                }
            }
        }
    }
    if !map.contains_key("toolBudgetBytes")
        && let Some(tokens) = s.context_tokens
    {
        s.tool_budget_bytes = (tokens * BYTES_PER_TOKEN * TOOL_BUDGET_SHARE_PERCENT / 100)
            .clamp(MIN_TOOL_BUDGET_BYTES, MAX_TOOL_BUDGET_BYTES);
    }
    Ok(s)
}

/// The settings of signing in to servers; `false` for a key that is not one.
fn sign_in_setting(s: &mut Settings, key: &str, v: &Value) -> Result<bool, String> {
    match key {
        "signInTimeoutMs" => {
            s.sign_in_timeout = Duration::from_millis(super::number::whole_number(
                key,
                v,
                SIGN_IN_TIMEOUT_MS_RANGE,
            )?)
        }
        "openBrowser" => s.open_browser = flag(key, v)?,
        "credentialStore" => s.credential_store = one_of(key, v, CredentialStore::WORDS)?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// A setting that is true or false.
fn flag(key: &str, v: &Value) -> Result<bool, String> {
    v.as_bool()
        .ok_or_else(|| format!("\"{key}\" must be true or false"))
}

/// A setting that is one of a few words: `"key" must be "a", "b" or "c", not V` otherwise.
fn one_of<T: Copy>(key: &str, v: &Value, choices: &[(&str, T)]) -> Result<T, String> {
    if let Some(&(_, chosen)) = choices.iter().find(|(word, _)| v.as_str() == Some(word)) {
        return Ok(chosen);
    }
    let quoted: Vec<String> = choices.iter().map(|(w, _)| format!("\"{w}\"")).collect();
    let (last, rest) = quoted.split_last().expect("a setting has choices");
    let listed = if rest.is_empty() {
        last.clone()
    } else {
        format!("{} or {last}", rest.join(", "))
    };
    Err(format!("\"{key}\" must be {listed}, not {v}"))
}

/// A setting that is a string.
fn text(key: &str, v: &Value) -> Result<String, String> {
    v.as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("\"{key}\" must be a string"))
}

/// A setting that names a place: a string that is not empty.
fn path(key: &str, v: &Value) -> Result<PathBuf, String> {
    v.as_str()
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| format!("\"{key}\" must be a path"))
}

/// The settings of the catalog as the model gets it; `false` for a key that is not one.
fn catalog_setting(s: &mut Settings, key: &str, v: &Value) -> Result<bool, String> {
    let bounded = |range: std::ops::RangeInclusive<usize>| {
        super::number::whole_number(key, v, *range.start() as u64..=*range.end() as u64)
            .map(|n| n as usize)
    };
    match key {
        "toolBudgetBytes" => {
            s.tool_budget_bytes = bounded(MIN_TOOL_BUDGET_BYTES..=MAX_TOOL_BUDGET_BYTES)?
        }
        "contextTokens" => {
            s.context_tokens = Some(bounded(MIN_CONTEXT_TOKENS..=MAX_CONTEXT_TOKENS)?)
        }
        "toolSearch" => s.tool_search = one_of(key, v, ToolSearch::WORDS)?,
        "schemaDialect" => s.schema_dialect = dialects(v)?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// `schemaDialect`: a dialect's name, or an object of model patterns and dialect names.
fn dialects(v: &Value) -> Result<Dialects, String> {
    let one = |v: &Value| {
        v.as_str().and_then(SchemaDialect::parse).ok_or_else(|| {
            format!("\"schemaDialect\" names json-schema, openai-strict or gemini, not {v}")
        })
    };
    match v {
        Value::Object(rules) => {
            if rules.len() > MAX_DIALECT_RULES {
                return Err(format!(
                    "\"schemaDialect\" may hold at most {MAX_DIALECT_RULES} models"
                ));
            }
            let by_model = rules
                .iter()
                .map(|(model, d)| Ok((super::Pattern::parse(model)?, one(d)?)))
                .collect::<Result<_, String>>()?;
            Ok(Dialects {
                by_model,
                otherwise: SchemaDialect::JsonSchema,
            })
        }
        other => Ok(Dialects {
            by_model: Vec::new(),
            otherwise: one(other)?,
        }),
    }
}

/// The tool time limit from [`HOST_TOOL_TIMEOUT_ENV`], if set; a bad value is an error.
pub fn tool_timeout_from_env() -> Result<Option<Duration>, String> {
    seconds_from_env(HOST_TOOL_TIMEOUT_ENV)
}

/// The hard maximum from [`HOST_TOOL_MAX_TIMEOUT_ENV`], if set; a bad value is an error.
pub fn tool_max_timeout_from_env() -> Result<Option<Duration>, String> {
    seconds_from_env(HOST_TOOL_MAX_TIMEOUT_ENV)
}

/// The task wait from [`HOST_TASK_WAIT_ENV`], if set; a bad value is an error.
pub fn task_wait_from_env() -> Result<Option<Duration>, String> {
    seconds_from_env(HOST_TASK_WAIT_ENV)
}

fn seconds_from_env(name: &str) -> Result<Option<Duration>, String> {
    match std::env::var(name) {
        Err(_) => Ok(None),
        Ok(v) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s > 0.0 && *s < 86_400.0)
            .map(|s| Some(Duration::from_secs_f64(s)))
            .ok_or_else(|| format!("{name}={v:?} is not a number of seconds (e.g. 10 or 0.5)")),
    }
}
