//! The servers file and the host's own settings.
//!
//! The file is the `mcpServers` JSON that `.mcp.json` and Claude Desktop use
//! (`command`, `args`, `env`, `cwd`), so people can bring the file they have. Gatehouse's
//! own settings (allow-list, bounds, model) live in the same file under `"gatehouse"`.
//! One broken server entry never takes the others down: it is reported and skipped.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::Duration,
};

use serde_json::{Map, Value};

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
/// Most pages of `tools/list` the host follows for one server.
pub const MAX_LIST_PAGES: usize = 100;

/// The largest `maxArgumentChars` a servers file may set.
pub const MAX_ARGUMENT_CHARS_LIMIT: usize = 1_000_000;
/// The largest `maxSteps` a servers file may set (`--max-steps` too).
pub const MAX_STEPS_LIMIT: usize = 1_000;
/// The largest time limit a servers file may set for a call (`toolTimeoutMs`,
/// `toolMaxTimeoutMs`): one day.
pub const MAX_TIMEOUT_MS: u64 = 86_400_000;
/// The largest `connectTimeoutMs`: ten minutes.
pub const MAX_CONNECT_TIMEOUT_MS: u64 = 600_000;
/// The largest `maxInputRounds`.
pub const MAX_INPUT_ROUNDS_LIMIT: usize = 100;

/// Environment variable naming the servers file to use when `--config` is not given.
pub const CONFIG_ENV: &str = "GATEHOUSE_CONFIG";

/// The substitution variables carrying the caller's identity into the servers file.
pub const USER_VAR: &str = "GATEHOUSE_USER";
pub const TENANT_VAR: &str = "GATEHOUSE_TENANT";
/// Server-side variables the reference servers read the caller from.
pub const SERVER_USER_ENV: &str = "MCP_USER";
pub const SERVER_TENANT_ENV: &str = "MCP_TENANT";

/// Who the person at the host is, as given by `--user` and `--tenant`.
#[derive(Debug, Clone)]
pub struct Identity {
    pub user: String,
    pub tenant: String,
}

impl Default for Identity {
    fn default() -> Self {
        Identity {
            user: "usr-sam".into(),
            tenant: "larkfield".into(),
        }
    }
}

/// How to reach one server, after variables were substituted.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    pub name: String,
    pub transport: Transport,
}

/// A server is a child process on stdio, or a Streamable HTTP endpoint.
#[derive(Clone, PartialEq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        /// The entry's own variables, substituted.
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
        /// Which of the host's own variables the server also gets.
        pass: EnvPass,
    },
    Http {
        url: String,
        /// Sent with every request (e.g. `Authorization`). Values are secrets: they are
        /// never printed, logged or recorded.
        headers: BTreeMap<String, String>,
    },
}

impl std::fmt::Debug for Transport {
    /// Header values and environment values stay out of debug output: they hold secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
                pass,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .field("pass", pass)
                .finish(),
            Transport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// Which of the host's environment variables a stdio server gets, besides the `env` of its
/// entry: [`BASE_ENV`] always, the names in `passEnv`, or everything with `inheritEnv`.
/// A server gets none of the host's secrets (API keys, tokens) unless its entry names them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvPass {
    /// `passEnv`: exact names, or prefixes ending in `*` (`AWS_*`).
    pub names: Vec<String>,
    /// `inheritEnv: true`: the host's whole environment, as other hosts used to pass.
    pub all: bool,
}

/// What every stdio server gets from the host's environment: where programs are, a home,
/// a user, a shell, a terminal type, a language and a temporary folder. No credentials.
#[cfg(not(windows))]
pub const BASE_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_*", "TMPDIR", "TZ",
];
/// What every stdio server gets from the host's environment (Windows' equivalents).
#[cfg(windows)]
pub const BASE_ENV: &[&str] = &[
    "PATH",
    "PATHEXT",
    "APPDATA",
    "LOCALAPPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "USERPROFILE",
    "USERNAME",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "WINDIR",
    "COMSPEC",
    "TEMP",
    "TMP",
    "PROGRAMFILES",
    "PROCESSOR_ARCHITECTURE",
];

/// Does `name` match `pattern`: the same name, or a prefix pattern ending in `*`?
fn env_matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

impl EnvPass {
    /// The variables of `host` (the host's environment) a server started with this policy
    /// gets, before its own `env` is added.
    pub fn select<I>(&self, host: I) -> Vec<(std::ffi::OsString, std::ffi::OsString)>
    where
        I: IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
    {
        host.into_iter()
            .filter(|(name, _)| {
                self.all
                    || name.to_str().is_some_and(|name| {
                        BASE_ENV
                            .iter()
                            .copied()
                            .chain(self.names.iter().map(String::as_str))
                            .any(|p| env_matches(p, name))
                    })
            })
            .collect()
    }
}

/// The host's own limits and lists. Every bound has a named default above.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Tools the host runs without asking, by their namespaced name (`server__tool`).
    pub allow: Vec<String>,
    pub max_argument_chars: usize,
    pub max_result_chars: usize,
    pub max_steps: usize,
    pub tool_timeout: Duration,
    /// Progress extends `tool_timeout` up to this.
    pub tool_max_timeout: Duration,
    pub connect_timeout: Duration,
    pub max_input_rounds: usize,
    /// The model to use when `--model` is not given.
    pub model: Option<String>,
    /// Where binary result blocks are saved for the person (default: a folder per
    /// session under the system's temporary folder).
    pub save_dir: Option<PathBuf>,
    /// Pass images and audio to the model as input parts (for models that take them);
    /// otherwise the model reads a short description of each.
    pub model_accepts_media: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            allow: Vec::new(),
            max_argument_chars: MAX_ARGUMENT_CHARS,
            max_result_chars: MAX_RESULT_CHARS,
            max_steps: MAX_STEPS,
            tool_timeout: HOST_TOOL_TIMEOUT,
            tool_max_timeout: HOST_TOOL_MAX_TIMEOUT,
            connect_timeout: CONNECT_TIMEOUT,
            max_input_rounds: MAX_INPUT_ROUNDS,
            model: None,
            save_dir: None,
            model_accepts_media: false,
        }
    }
}

/// A loaded configuration: the servers that parsed, the ones that did not, and settings.
#[derive(Debug, Clone)]
pub struct Config {
    pub servers: Vec<ServerSpec>,
    /// Entries that could not be used, as (server name, reason). The host reports them.
    pub broken: Vec<(String, String)>,
    pub settings: Settings,
    /// Things worth telling the person that do not stop the host (unknown keys, ...).
    pub warnings: Vec<String>,
    /// Where the configuration came from, for messages.
    pub source: String,
}

/// A configuration that cannot be used at all.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not valid JSON: {message} (line {line}, column {column})")]
    Syntax {
        path: String,
        message: String,
        line: usize,
        column: usize,
    },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

/// The reference servers built into the host's own binary, started as `EXE serve NAME`.
pub const BUILT_IN_SERVERS: &[&str] = &["support", "cmdb", "tickets", "orders"];

/// The read-only tools of the built-in servers: the default allow-list. `open_ticket`
/// is not on it: the person approves the call before the server asks its own question.
pub const BUILT_IN_ALLOW: &[&str] = &[
    "support__search_knowledge",
    "support__get_ticket",
    "cmdb__get_asset",
    "cmdb__find_assets",
    "tickets__list_tickets",
    "orders__get_order_status",
    "orders__export_report",
    "read_resource",
];

/// What the built-in servers read from the host's environment beyond [`BASE_ENV`]: the
/// tickets server's store, its sealing key and confirmation lifetime, and where data lives.
pub const BUILT_IN_PASS_ENV: &[&str] = &[
    "GATEHOUSE_TICKETS_DB",
    "GATEHOUSE_TICKETS_KEY",
    "GATEHOUSE_TICKETS_CONFIRM_TTL_MS",
    "XDG_DATA_HOME",
];

/// The reference servers' own binary, installed beside `gatehouse`.
pub const SERVERS_BINARY: &str = "gatehouse-servers";

/// How the built-in servers are started: `program ARGS… NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    pub program: String,
    pub args: Vec<String>,
}

/// How to start a built-in server, given the host's binary: the small `gatehouse-servers`
/// beside it when it is there (a server process then maps only server code, about half the
/// memory), else the host binary's own `serve` command, which runs the same servers.
pub fn built_in_launcher(host_exe: &Path) -> Launcher {
    let servers =
        host_exe.with_file_name(format!("{SERVERS_BINARY}{}", std::env::consts::EXE_SUFFIX));
    if servers.is_file() {
        Launcher {
            program: servers.to_string_lossy().into_owned(),
            args: Vec::new(),
        }
    } else {
        Launcher {
            program: host_exe.to_string_lossy().into_owned(),
            args: vec!["serve".into()],
        }
    }
}

impl Config {
    /// The embedded default: the built-in servers, each started as `launcher NAME` (see
    /// [`built_in_launcher`]).
    pub fn built_in(launcher: &Launcher, identity: &Identity) -> Config {
        let mut doc = Map::new();
        let mut servers = Map::new();
        for name in BUILT_IN_SERVERS {
            let mut args = launcher.args.clone();
            args.push((*name).into());
            servers.insert(
                (*name).into(),
                serde_json::json!({
                    "command": launcher.program,
                    "args": args,
                    "env": {
                        SERVER_USER_ENV: format!("${{{USER_VAR}}}"),
                        SERVER_TENANT_ENV: format!("${{{TENANT_VAR}}}"),
                    },
                    "passEnv": BUILT_IN_PASS_ENV,
                }),
            );
        }
        doc.insert("mcpServers".into(), Value::Object(servers));
        doc.insert(
            "gatehouse".into(),
            serde_json::json!({ "allow": BUILT_IN_ALLOW }),
        );
        Config::from_value(Value::Object(doc), "built-in servers", identity)
            .expect("the built-in configuration is valid")
    }

    /// Where a servers file is looked for when `--config` is not given, in order:
    /// `$GATEHOUSE_CONFIG`, `./.mcp.json`, `$XDG_CONFIG_HOME/gatehouse/servers.json`
    /// (`~/.config/gatehouse/servers.json`), then Claude Desktop's file
    /// (`~/.config/Claude/claude_desktop_config.json`, or on macOS
    /// `~/Library/Application Support/Claude/claude_desktop_config.json`).
    pub fn search_paths() -> Vec<PathBuf> {
        let mut paths = Vec::new();
        if let Some(p) = std::env::var_os(CONFIG_ENV).filter(|p| !p.is_empty()) {
            paths.push(PathBuf::from(p));
        }
        paths.push(PathBuf::from(".mcp.json"));
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let config_home = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".config")));
        if let Some(c) = &config_home {
            paths.push(c.join("gatehouse").join("servers.json"));
            paths.push(c.join("Claude").join("claude_desktop_config.json"));
        }
        if let Some(h) = &home {
            paths.push(h.join("Library/Application Support/Claude/claude_desktop_config.json"));
        }
        paths
    }

    /// The first servers file found in [`Config::search_paths`], if any.
    pub fn find() -> Option<PathBuf> {
        Self::search_paths().into_iter().find(|p| p.is_file())
    }

    /// Load a servers file.
    pub fn load(path: &Path, identity: &Identity) -> Result<Config, ConfigError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: shown.clone(),
            source,
        })?;
        Config::parse(&text, &shown, identity)
    }

    /// Parse the text of a servers file; `source` names it in messages.
    pub fn parse(text: &str, source: &str, identity: &Identity) -> Result<Config, ConfigError> {
        let value: Value = serde_json::from_str(text).map_err(|e| ConfigError::Syntax {
            path: source.into(),
            message: e.to_string(),
            line: e.line(),
            column: e.column(),
        })?;
        Config::from_value(value, source, identity)
    }

    fn from_value(value: Value, source: &str, identity: &Identity) -> Result<Config, ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: source.into(),
            message,
        };
        let Value::Object(doc) = value else {
            return Err(invalid("the file must hold a JSON object".into()));
        };
        let mut warnings = Vec::new();
        for key in doc.keys() {
            if !["mcpServers", "gatehouse", "$schema"].contains(&key.as_str()) {
                warnings.push(format!("{source}: unknown key \"{key}\" is ignored"));
            }
        }
        let servers_value = doc
            .get("mcpServers")
            .ok_or_else(|| invalid("no \"mcpServers\" object".into()))?;
        let Value::Object(entries) = servers_value else {
            return Err(invalid(
                "\"mcpServers\" must be an object of servers".into(),
            ));
        };
        let vars = Variables::new(identity);
        let mut servers = Vec::new();
        let mut broken = Vec::new();
        for (name, entry) in entries {
            if entry.get("disabled") == Some(&Value::Bool(true)) {
                warnings.push(format!("server {name} is disabled in {source}"));
                continue;
            }
            match server_spec(name, entry, &vars, &mut warnings) {
                Ok(spec) => servers.push(spec),
                Err(reason) => broken.push((name.clone(), reason)),
            }
        }
        let settings = match doc.get("gatehouse") {
            None => Settings::default(),
            Some(v) => {
                settings(v, &mut warnings).map_err(|m| invalid(format!("\"gatehouse\": {m}")))?
            }
        };
        Ok(Config {
            servers,
            broken,
            settings,
            warnings,
            source: source.into(),
        })
    }
}

/// Resolves `${VAR}` and `${VAR:-default}`: identity first, then the host's environment.
struct Variables {
    identity: Identity,
}

impl Variables {
    fn new(identity: &Identity) -> Self {
        Variables {
            identity: identity.clone(),
        }
    }

    fn lookup(&self, name: &str) -> Option<String> {
        match name {
            USER_VAR => Some(self.identity.user.clone()),
            TENANT_VAR => Some(self.identity.tenant.clone()),
            _ => std::env::var(name).ok(),
        }
    }

    /// Substitute every `${…}` in `text`. A missing variable without a default is an error
    /// naming it.
    fn expand(&self, text: &str) -> Result<String, String> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let end = after
                .find('}')
                .ok_or_else(|| format!("unclosed \"${{\" in {text:?}"))?;
            let inner = &after[..end];
            let (name, default) = match inner.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (inner, None),
            };
            let valid =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(format!("\"${{{inner}}}\" is not a variable name"));
            }
            match (self.lookup(name), default) {
                (Some(v), _) if !v.is_empty() || default.is_none() => out.push_str(&v),
                (_, Some(d)) => out.push_str(d),
                (None, None) => {
                    return Err(format!(
                        "variable {name} is not set and has no default (write ${{{name}:-value}})"
                    ));
                }
                (Some(v), None) => out.push_str(&v),
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }
}

/// The transports a servers file may name in `type`.
const STDIO_TYPES: &[&str] = &["stdio"];
const HTTP_TYPES: &[&str] = &["http", "streamable-http", "streamableHttp"];

fn strings(
    name: &str,
    value: Option<&Value>,
    vars: &Variables,
) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    match value {
        None => {}
        Some(Value::Object(map)) => {
            for (k, v) in map {
                let Value::String(v) = v else {
                    return Err(format!("{name} {k} must be a string"));
                };
                out.insert(
                    k.clone(),
                    vars.expand(v).map_err(|e| format!("{name} {k}: {e}"))?,
                );
            }
        }
        Some(_) => return Err(format!("\"{name}\" must be an object of strings")),
    }
    Ok(out)
}

fn server_spec(
    name: &str,
    entry: &Value,
    vars: &Variables,
    warnings: &mut Vec<String>,
) -> Result<ServerSpec, String> {
    let Value::Object(entry) = entry else {
        return Err("the entry must be an object".into());
    };
    for key in entry.keys() {
        let known = [
            "command",
            "args",
            "env",
            "cwd",
            "type",
            "url",
            "headers",
            "disabled",
            "passEnv",
            "inheritEnv",
        ];
        if !known.contains(&key.as_str()) {
            warnings.push(format!("server {name}: unknown key \"{key}\" is ignored"));
        }
    }
    let kind = match entry.get("type") {
        None => None,
        Some(Value::String(t)) => Some(t.as_str()),
        Some(_) => return Err("\"type\" must be a string".into()),
    };
    let is_http = match kind {
        Some(t) if HTTP_TYPES.contains(&t) => true,
        Some(t) if STDIO_TYPES.contains(&t) => false,
        Some("sse") => {
            return Err("the old HTTP+SSE transport (\"type\": \"sse\") is not supported; give the server's Streamable HTTP endpoint with \"type\": \"http\"".into());
        }
        Some(other) => {
            return Err(format!(
                "unknown transport type \"{other}\" (use stdio or http)"
            ));
        }
        None => entry.contains_key("url") && !entry.contains_key("command"),
    };
    if is_http {
        let url = match entry.get("url") {
            Some(Value::String(u)) => vars.expand(u)?,
            Some(_) => return Err("\"url\" must be a string".into()),
            None => return Err("an http server needs a \"url\"".into()),
        };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(format!(
                "\"url\" must start with http:// or https://, not {url:?}"
            ));
        }
        let headers = strings("headers", entry.get("headers"), vars)?;
        for (k, v) in &headers {
            if k.is_empty()
                || !k
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return Err(format!("header name {k:?} is not a valid HTTP header name"));
            }
            if v.bytes().any(|b| b == b'\r' || b == b'\n') {
                return Err(format!("header {k} has a line break in its value"));
            }
            // The value is a credential: the error names the header, never the value.
            if !v.bytes().all(|b| b == b'\t' || (0x20..0x7f).contains(&b)) {
                return Err(format!(
                    "header {k} has a value that is not valid in HTTP (visible ASCII only; the value is not shown)"
                ));
            }
        }
        return Ok(ServerSpec {
            name: name.into(),
            transport: Transport::Http { url, headers },
        });
    }
    let command = match entry.get("command") {
        Some(Value::String(c)) if !c.trim().is_empty() => vars.expand(c)?,
        Some(_) => return Err("\"command\" must be a non-empty string".into()),
        None => {
            return Err(
                "no \"command\" to start the server with (or \"url\" for an http server)".into(),
            );
        }
    };
    let args = match entry.get("args") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|a| match a {
                Value::String(s) => vars.expand(s),
                other => Err(format!("\"args\" must hold strings, found {other}")),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("\"args\" must be an array of strings".into()),
    };
    let env = strings("env", entry.get("env"), vars)?;
    let cwd = match entry.get("cwd") {
        None => None,
        Some(Value::String(c)) => Some(PathBuf::from(vars.expand(c)?)),
        Some(_) => return Err("\"cwd\" must be a string".into()),
    };
    let pass = env_pass(entry)?;
    Ok(ServerSpec {
        name: name.into(),
        transport: Transport::Stdio {
            command,
            args,
            env,
            cwd,
            pass,
        },
    })
}

/// `passEnv` and `inheritEnv` of a stdio entry.
fn env_pass(entry: &Map<String, Value>) -> Result<EnvPass, String> {
    let names = match entry.get("passEnv") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| match i.as_str() {
                Some(n)
                    if !n.is_empty()
                        && n.trim_end_matches('*')
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_')
                        && n.find('*').is_none_or(|i| i == n.len() - 1) =>
                {
                    Ok(n.to_owned())
                }
                _ => Err(format!(
                    "\"passEnv\" holds variable names (or prefixes ending in *), not {i}"
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("\"passEnv\" must be an array of variable names".into()),
    };
    let all = match entry.get("inheritEnv") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("\"inheritEnv\" must be true or false".into()),
    };
    Ok(EnvPass { names, all })
}

fn settings(value: &Value, warnings: &mut Vec<String>) -> Result<Settings, String> {
    let Value::Object(map) = value else {
        return Err("must be an object".into());
    };
    let mut s = Settings::default();
    for (key, v) in map {
        let bounded = |range: std::ops::RangeInclusive<u64>| whole_number(key, v, range);
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
            "maxArgumentChars" => {
                s.max_argument_chars = bounded(1..=MAX_ARGUMENT_CHARS_LIMIT as u64)? as usize
            }
            "maxResultChars" => {
                s.max_result_chars = bounded(
                    crate::result::MIN_RESULT_CHARS as u64
                        ..=crate::result::MAX_RESULT_CHARS_LIMIT as u64,
                )? as usize
            }
            "maxSteps" => s.max_steps = bounded(1..=MAX_STEPS_LIMIT as u64)? as usize,
            "toolTimeoutMs" => s.tool_timeout = Duration::from_millis(bounded(1..=MAX_TIMEOUT_MS)?),
            "toolMaxTimeoutMs" => {
                s.tool_max_timeout = Duration::from_millis(bounded(1..=MAX_TIMEOUT_MS)?)
            }
            "connectTimeoutMs" => {
                s.connect_timeout = Duration::from_millis(bounded(1..=MAX_CONNECT_TIMEOUT_MS)?)
            }
            "maxInputRounds" => {
                s.max_input_rounds = bounded(1..=MAX_INPUT_ROUNDS_LIMIT as u64)? as usize
            }
            "model" => {
                s.model = Some(
                    v.as_str()
                        .ok_or_else(|| "\"model\" must be a string".to_string())?
                        .into(),
                )
            }
            "modelAcceptsMedia" => {
                s.model_accepts_media = v
                    .as_bool()
                    .ok_or_else(|| "\"modelAcceptsMedia\" must be true or false".to_string())?
            }
            "saveDir" => {
                s.save_dir = Some(PathBuf::from(
                    v.as_str()
                        .ok_or_else(|| "\"saveDir\" must be a path".to_string())?,
                ))
            }
            other => warnings.push(format!("gatehouse: unknown setting \"{other}\" is ignored")),
        }
    }
    Ok(s)
}

/// A setting that must be a whole number in `range`: zero, negative, fractional, too
/// large or not a number at all is an error naming the key and the range.
fn whole_number(key: &str, v: &Value, range: std::ops::RangeInclusive<u64>) -> Result<u64, String> {
    v.as_u64().filter(|n| range.contains(n)).ok_or_else(|| {
        format!(
            "\"{key}\" must be a whole number from {} to {}, not {v}",
            range.start(),
            range.end()
        )
    })
}

/// The tool time limit from [`HOST_TOOL_TIMEOUT_ENV`], if set; a bad value is an error.
pub fn tool_timeout_from_env() -> Result<Option<Duration>, String> {
    seconds_from_env(HOST_TOOL_TIMEOUT_ENV)
}

/// The hard maximum from [`HOST_TOOL_MAX_TIMEOUT_ENV`], if set; a bad value is an error.
pub fn tool_max_timeout_from_env() -> Result<Option<Duration>, String> {
    seconds_from_env(HOST_TOOL_MAX_TIMEOUT_ENV)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> Identity {
        Identity {
            user: "usr-omar".into(),
            tenant: "larkfield".into(),
        }
    }

    #[test]
    fn built_in_config_carries_identity_into_env() {
        let launcher = built_in_launcher(Path::new("/nonexistent/gatehouse"));
        assert_eq!(launcher.program, "/nonexistent/gatehouse");
        assert_eq!(launcher.args, ["serve"]);
        let c = Config::built_in(&launcher, &id());
        let Transport::Stdio {
            command, args, env, ..
        } = &c.servers[0].transport
        else {
            panic!("stdio")
        };
        assert_eq!(command, "/nonexistent/gatehouse");
        assert_eq!(args, &vec!["serve", "support"]);
        assert_eq!(env["MCP_USER"], "usr-omar");
        assert_eq!(env["MCP_TENANT"], "larkfield");
        assert_eq!(c.settings.allow, BUILT_IN_ALLOW);
    }

    #[test]
    fn built_in_servers_start_from_their_own_binary_when_it_is_installed() {
        let dir = std::env::temp_dir().join(format!("gatehouse-launcher-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let servers = dir.join(format!("{SERVERS_BINARY}{}", std::env::consts::EXE_SUFFIX));
        std::fs::write(&servers, b"").unwrap();
        let launcher = built_in_launcher(&dir.join("gatehouse"));
        assert_eq!(launcher.program, servers.to_string_lossy());
        assert!(launcher.args.is_empty());
        let c = Config::built_in(&launcher, &id());
        let Transport::Stdio { command, args, .. } = &c.servers[1].transport else {
            panic!("stdio")
        };
        assert_eq!(command, &servers.to_string_lossy());
        assert_eq!(args, &vec![BUILT_IN_SERVERS[1]]);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn syntax_errors_name_line_and_column() {
        let err = Config::parse("{\n  \"mcpServers\": {,}\n}", "x.json", &id()).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("line 2"), "{text}");
        assert!(text.contains("column"), "{text}");
    }

    #[test]
    fn one_broken_entry_keeps_the_others() {
        let c = Config::parse(
            r#"{"mcpServers": {"good": {"command": "x"}, "bad": {"args": []}},
                "gatehouse": {"maxSteps": 3, "colour": "blue"}}"#,
            "f",
            &id(),
        )
        .unwrap();
        assert_eq!(c.servers.len(), 1);
        assert_eq!(c.broken[0].0, "bad");
        assert!(c.broken[0].1.contains("command"));
        assert_eq!(c.settings.max_steps, 3);
        assert!(c.warnings.iter().any(|w| w.contains("colour")));
    }

    #[test]
    fn claude_desktop_files_with_http_servers_and_variables() {
        // SAFETY: tests in this module do not read this variable concurrently.
        unsafe { std::env::set_var("GATEHOUSE_TEST_TOKEN", "s3cret") };
        let c = Config::parse(
            r#"{"mcpServers": {
                "remote": {"type": "http", "url": "http://127.0.0.1:${GATEHOUSE_TEST_PORT:-8931}/mcp",
                           "headers": {"Authorization": "Bearer ${GATEHOUSE_TEST_TOKEN}"}},
                "bare": {"url": "https://example.com/mcp"},
                "old": {"type": "sse", "url": "http://x/sse"},
                "missing": {"type": "http", "url": "http://x/mcp", "headers": {"Authorization": "Bearer ${GATEHOUSE_TEST_UNSET_TOKEN}"}},
                "local": {"command": "x", "cwd": "/tmp"}
            }}"#,
            "claude_desktop_config.json",
            &id(),
        )
        .unwrap();
        let Transport::Http { url, headers } = &c.servers[0].transport else {
            panic!("http")
        };
        assert_eq!(url, "http://127.0.0.1:8931/mcp");
        assert_eq!(headers["Authorization"], "Bearer s3cret");
        assert!(
            !format!("{:?}", c.servers[0]).contains("s3cret"),
            "secrets stay out of debug output"
        );
        assert!(matches!(c.servers[1].transport, Transport::Http { .. }));
        assert!(matches!(
            &c.servers[2].transport,
            Transport::Stdio { cwd: Some(_), .. }
        ));
        let broken: Vec<&str> = c.broken.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(broken, vec!["old", "missing"]);
        assert!(c.broken[0].1.contains("not supported"));
        assert!(c.broken[1].1.contains("GATEHOUSE_TEST_UNSET_TOKEN"));
        assert!(!c.broken[1].1.contains("s3cret"));
    }

    #[test]
    fn variables_expand_with_defaults_and_fail_by_name() {
        let v = Variables::new(&id());
        assert_eq!(v.expand("${GATEHOUSE_USER}@x").unwrap(), "usr-omar@x");
        assert_eq!(
            v.expand("${GATEHOUSE_SURELY_UNSET_VAR:-fallback}").unwrap(),
            "fallback"
        );
        let err = v.expand("${GATEHOUSE_SURELY_UNSET_VAR}").unwrap_err();
        assert!(err.contains("GATEHOUSE_SURELY_UNSET_VAR"));
        assert!(v.expand("${bad name}").is_err());
    }

    #[test]
    fn bounds_out_of_range_are_errors_naming_the_key_and_range() {
        for (key, value) in [
            ("maxResultChars", "30"),
            ("maxResultChars", "0"),
            ("maxResultChars", "-5"),
            ("maxResultChars", "4000.5"),
            ("maxResultChars", "\"4000\""),
            ("maxArgumentChars", "0"),
            ("maxSteps", "1000000"),
            ("toolTimeoutMs", "-1"),
            ("maxInputRounds", "0"),
        ] {
            let text = format!(r#"{{"mcpServers": {{}}, "gatehouse": {{"{key}": {value}}}}}"#);
            let err = Config::parse(&text, "f.json", &id())
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(&format!("\"{key}\" must be a whole number from")),
                "{err}"
            );
            assert!(err.contains(&format!("not {value}")), "{err}");
        }
        let ok = Config::parse(
            r#"{"mcpServers": {}, "gatehouse": {"maxResultChars": 400, "maxSteps": 1000}}"#,
            "f.json",
            &id(),
        )
        .unwrap();
        assert_eq!(ok.settings.max_result_chars, 400);
    }

    use proptest::prelude::*;

    /// One piece of a value in a servers file, and what it expands to.
    fn piece() -> impl Strategy<Value = (String, String)> {
        prop_oneof![
            "[^$]{0,12}".prop_map(|t| (t.clone(), t)),
            Just(("${GATEHOUSE_USER}".to_string(), "usr-omar".to_string())),
            Just((
                "${GATEHOUSE_TENANT:-x}".to_string(),
                "larkfield".to_string()
            )),
            "[a-z ]{0,8}".prop_map(|d| (format!("${{GATEHOUSE_SURELY_UNSET_VAR:-{d}}}"), d)),
        ]
    }

    proptest! {
        /// Any text gives an expansion or an error, never a panic; text made of literals
        /// and variables expands to exactly what they stand for.
        #[test]
        fn variables_expand_exactly(pieces in prop::collection::vec(piece(), 0..8), junk in any::<String>()) {
            let v = Variables::new(&id());
            let text: String = pieces.iter().map(|(t, _)| t.as_str()).collect();
            let want: String = pieces.iter().map(|(_, e)| e.as_str()).collect();
            prop_assert_eq!(v.expand(&text).unwrap(), want);
            let _ = v.expand(&junk);
        }
    }

    #[test]
    fn a_server_gets_only_the_base_environment_and_what_its_entry_names() {
        let host: Vec<(std::ffi::OsString, std::ffi::OsString)> = [
            ("PATH", "/bin"),
            ("HOME", "/home/sam"),
            ("LC_ALL", "C"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("GITHUB_TOKEN", "ghp_secret"),
            ("AWS_SECRET_ACCESS_KEY", "aws"),
            ("AWS_REGION", "eu-west-1"),
        ]
        .iter()
        .map(|(k, v)| ((*k).into(), (*v).into()))
        .collect();
        let names = |pass: &EnvPass| -> Vec<String> {
            pass.select(host.clone())
                .into_iter()
                .map(|(k, _)| k.into_string().unwrap())
                .collect()
        };
        assert_eq!(names(&EnvPass::default()), ["PATH", "HOME", "LC_ALL"]);
        let some = EnvPass {
            names: vec!["GITHUB_TOKEN".into(), "AWS_*".into()],
            all: false,
        };
        assert_eq!(
            names(&some),
            [
                "PATH",
                "HOME",
                "LC_ALL",
                "GITHUB_TOKEN",
                "AWS_SECRET_ACCESS_KEY",
                "AWS_REGION"
            ]
        );
        let all = EnvPass {
            names: vec![],
            all: true,
        };
        assert_eq!(names(&all).len(), host.len());
        let c = Config::parse(
            r#"{"mcpServers": {"a": {"command": "x", "passEnv": ["GITHUB_TOKEN", "AWS_*"]},
                               "b": {"command": "x", "inheritEnv": true},
                               "c": {"command": "x", "passEnv": ["A*B"]},
                               "d": {"command": "x", "passEnv": "ALL"}}}"#,
            "f",
            &id(),
        )
        .unwrap();
        let Transport::Stdio { pass, .. } = &c.servers[0].transport else {
            panic!("stdio")
        };
        assert_eq!(pass, &some);
        let Transport::Stdio { pass, .. } = &c.servers[1].transport else {
            panic!("stdio")
        };
        assert!(pass.all);
        assert_eq!(c.broken.len(), 2, "{:?}", c.broken);
        assert!(c.broken[0].1.contains("passEnv"));
    }
}
