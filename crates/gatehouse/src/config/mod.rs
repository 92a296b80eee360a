//! The servers file and the host's own settings.
//!
//! The file is the `mcpServers` JSON that `.mcp.json` and Claude Desktop use
//! (`command`, `args`, `env`, `cwd`), so people can bring the file they have. Gatehouse's
//! own settings (allow-list, bounds, model) live in the same file under `"gatehouse"`.
//! One broken server entry never takes the others down: it is reported and skipped.
//!
//! - [`settings`]: the bounds, each a named constant, validated when read;
//! - [`environment`]: what of the host's environment a stdio server gets;
//! - [`oauth`]: how the host signs in to an HTTP server that asks for it;
//! - [`policy`]: where the ledger is written, and the hooks' commands;
//! - [`tools`]: which of a server's tools are offered, and which always sent in full;
//! - `variables`: `${VAR}` and `${VAR:-default}` in the file's values;
//! - [`behind`]: another program's file whose servers are behind Gatehouse's gateway.
//!
//! Servers are added to and removed from a file by [`crate::edit`].

pub mod behind;
pub mod chain;
pub mod command_line;
mod entry;
mod environment;
pub mod name;
mod number;
pub mod oauth;
pub mod policy;
pub mod project;
pub mod restart;
pub mod sandbox;
pub mod settings;
pub mod suggest;
pub mod tools;
pub mod trust;
mod variables;

#[cfg(test)]
mod tests;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use serde_json::{Map, Value};

pub(crate) use entry::check_header;
pub(super) use entry::env_pass;
use entry::server_spec;
pub use environment::{BASE_ENV, EnvPass};
pub use name::{MAX_SERVER_NAME_CHARS, ServerName};
pub use oauth::{AssertionSource, Grant, IdentityProvider, OAuthConfig, SigningAlgorithm};
pub use policy::{HookSpec, Hooks, LedgerSettings, MAX_HOOK_OUTPUT_BYTES, state_dir};
pub use restart::Restart;
pub use sandbox::{Network, Sandbox};
pub use settings::*;
pub use tools::{Pattern, ToolRules};
use variables::Variables;
pub use variables::references;

/// Between the server's name and the tool's.
pub const NAMESPACE_SEPARATOR: &str = "__";

/// A project's servers file's name.
pub const PROJECT_FILE: &str = ".mcp.json";
/// Most folders looked at, from the current one up, for a project's [`PROJECT_FILE`].
pub const MAX_PROJECT_DEPTH: usize = 64;

/// Environment variable naming the servers file to use when `--config` is not given.
pub const CONFIG_ENV: &str = "GATEHOUSE_CONFIG";

/// The variable that carries the person's user name (`--user`) into the servers file.
pub const USER_VAR: &str = "GATEHOUSE_USER";
/// The variable that carries the person's organization (`--tenant`) into the servers file.
pub const TENANT_VAR: &str = "GATEHOUSE_TENANT";

/// Who the person at the host is, as given by `--user` and `--tenant`.
#[derive(Debug, Clone)]
pub struct Identity {
    /// The user the servers are told about (`GATEHOUSE_USER`).
    pub user: String,
    /// The organization the user acts in (`GATEHOUSE_TENANT`).
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
    /// The server's name in the servers file: the namespace of its tools.
    pub name: ServerName,
    /// How to start or reach it.
    pub transport: Transport,
    /// Which of its tools are offered, and which always sent in full.
    pub tools: ToolRules,
    /// [`crate::digest::json_sha256`] of its entry as written: what a cached catalog of
    /// its tools is kept under ([`crate::catalog::cached`]).
    pub entry_digest: String,
    /// The box a stdio server runs in, when its entry asks for one ([`crate::connect::sandbox`]).
    pub sandbox: Option<Sandbox>,
}

/// A server is a child process on stdio, or a Streamable HTTP endpoint.
#[derive(Clone, PartialEq)]
pub enum Transport {
    /// A child process the host starts and speaks to on stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// The entry's own variables, substituted.
        env: BTreeMap<String, String>,
        /// The folder it runs in.
        cwd: Option<PathBuf>,
        /// Which of the host's own variables the server also gets.
        pass: EnvPass,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint (never shown with its credentials).
        url: String,
        /// Sent with every request (e.g. `Authorization`). Values are secrets: they are
        /// never printed, logged or recorded.
        headers: BTreeMap<String, String>,
        /// How to sign in when the server answers 401; `None` when the entry sends its
        /// own `Authorization` header or says `"oauth": false`.
        oauth: Option<OAuthConfig>,
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
            Transport::Http {
                url,
                headers,
                oauth,
            } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .field("oauth", oauth)
                .finish(),
        }
    }
}

/// A loaded configuration: the servers that parsed, the ones that did not, and settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// The servers that parsed, in the file's order.
    pub servers: Vec<ServerSpec>,
    /// Entries that could not be used, as (server name, reason). The host reports them.
    pub broken: Vec<(String, String)>,
    /// The host's settings (`"gatehouse"`).
    pub settings: Settings,
    /// Things worth telling the person that do not stop the host (unknown keys, ...).
    pub warnings: Vec<String>,
    /// Where the configuration came from, for messages.
    pub source: String,
    /// A project's servers file read beside the person's own, and what of it was left out
    /// ([`project::Review`]); `None` when the file was the person's own or given.
    pub project: Option<project::Review>,
}

/// A configuration that cannot be used at all.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    // The cause is said in the message and is not the error's `source()` too: a chain
    // printed whole (`{:#}`) would say it twice.
    #[error("cannot read {path}: {cause}")]
    /// The file could not be read.
    Read {
        /// The file, as given.
        path: String,
        /// Why it could not be read.
        cause: std::io::Error,
    },
    #[error("cannot read {path}: there is no such file")]
    /// The file named does not exist.
    Missing {
        /// The file, as given.
        path: String,
    },
    #[error("{path} is not valid JSON: {message} (line {line}, column {column})")]
    /// The file is not JSON.
    Syntax {
        /// The file, as given.
        path: String,
        /// The parser's words.
        message: String,
        /// Where: the line.
        line: usize,
        /// Where: the column.
        column: usize,
    },
    #[error("{path}: {message}")]
    /// The JSON is not a servers file: `message` says what is wrong in `path`.
    Invalid {
        /// The file, as given.
        path: String,
        /// What is wrong.
        message: String,
    },
}

impl ConfigError {
    /// The parser's error for the file `path`, with its line and column.
    pub(crate) fn syntax(path: &str, e: &serde_json::Error) -> ConfigError {
        ConfigError::Syntax {
            path: path.into(),
            message: e.to_string(),
            line: e.line(),
            column: e.column(),
        }
    }
}

/// Largest servers file read, in bytes: a project's file comes with a repository, and
/// Claude Code's keeps its history beside its servers.
pub const MAX_SERVERS_FILE_BYTES: u64 = 64 << 20;

/// The text of the servers file at `path`, within [`MAX_SERVERS_FILE_BYTES`]; `None` when
/// there is no file.
pub fn read_text(path: &Path) -> Result<Option<String>, ConfigError> {
    use std::io::Read;
    let shown = path.display().to_string();
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(cause) => {
            return Err(ConfigError::Read { path: shown, cause });
        }
    };
    let mut text = String::new();
    file.take(MAX_SERVERS_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|cause| ConfigError::Read {
            path: shown.clone(),
            cause,
        })?;
    if text.len() as u64 > MAX_SERVERS_FILE_BYTES {
        return Err(ConfigError::Invalid {
            path: shown,
            message: format!("the file is larger than {MAX_SERVERS_FILE_BYTES} bytes"),
        });
    }
    Ok(Some(text))
}

/// The JSON of the servers file at `path` (which must exist), without making a config.
pub fn read_document(path: &Path) -> Result<Value, ConfigError> {
    let shown = path.display().to_string();
    let text = read_text(path)?.ok_or_else(|| ConfigError::Missing {
        path: shown.clone(),
    })?;
    let mut value: Value =
        serde_json::from_str(&text).map_err(|e| ConfigError::syntax(&shown, &e))?;
    if let Some(dir) = path.parent() {
        entry::anchor_replays(&mut value, dir);
    }
    Ok(value)
}

impl Config {
    /// Where a servers file is looked for when `--config` is not given, in order:
    /// `$GATEHOUSE_CONFIG`, this project's `.mcp.json` ([`Config::project_path`]), then the
    /// person's own: `$XDG_CONFIG_HOME/gatehouse/servers.json`
    /// (`~/.config/gatehouse/servers.json`), Claude Code's `~/.claude.json`, Cursor's
    /// `~/.cursor/mcp.json`, Claude Desktop's file (`~/.config/Claude/claude_desktop_config.json`,
    /// or on macOS `~/Library/Application Support/Claude/claude_desktop_config.json`). A
    /// project's `.mcp.json` is read beside the first of the person's own, never instead of
    /// it: [`project::Found::locate`] says which are used.
    pub fn search_paths() -> Vec<PathBuf> {
        let mut paths = Vec::new();
        if let Some(p) = std::env::var_os(CONFIG_ENV).filter(|p| !p.is_empty()) {
            paths.push(PathBuf::from(p));
        }
        paths.push(Self::project_path());
        let home = std::env::var_os("HOME").map(PathBuf::from);
        if let Some(c) = config_home() {
            paths.push(c.join("gatehouse").join("servers.json"));
        }
        if let Some(h) = &home {
            paths.push(h.join(".claude.json"));
            paths.push(h.join(".cursor").join("mcp.json"));
        }
        if let Some(c) = config_home() {
            paths.push(c.join("Claude").join("claude_desktop_config.json"));
        }
        if let Some(h) = &home {
            paths.push(h.join("Library/Application Support/Claude/claude_desktop_config.json"));
        }
        paths
    }

    /// This project's servers file: the nearest `.mcp.json` at or above the current folder,
    /// looking no higher than the repository's root (a folder with `.git`) and at most
    /// [`MAX_PROJECT_DEPTH`] folders up; with none, `.mcp.json` at the repository's root
    /// (or here, outside a repository), where `gatehouse mcp add` writes it. Relative, so
    /// messages name it as the person would (`.mcp.json`, `../.mcp.json`).
    pub fn project_path() -> PathBuf {
        let depth = std::env::current_dir()
            .map(|c| c.ancestors().count().saturating_sub(1))
            .unwrap_or(0)
            .min(MAX_PROJECT_DEPTH);
        let mut up = PathBuf::new();
        for _ in 0..=depth {
            let file = up.join(PROJECT_FILE);
            if file.is_file() || up.join(".git").exists() {
                return file;
            }
            up.push("..");
        }
        PathBuf::from(PROJECT_FILE)
    }

    /// Which program a servers file belongs to, by its path: `None` for Gatehouse's own
    /// and for a project's, else the program whose file it is (its other keys are its own
    /// business: never warned about, and never to be edited from here).
    pub fn owner_of(path: &Path) -> Option<&'static str> {
        let text = path.to_string_lossy();
        if text.ends_with(".claude.json") {
            Some("Claude Code")
        } else if text.ends_with(".cursor/mcp.json") {
            Some("Cursor")
        } else if text.ends_with("claude_desktop_config.json") {
            Some("Claude Desktop")
        } else {
            None
        }
    }

    /// The user's own servers file: `$XDG_CONFIG_HOME/gatehouse/servers.json`, else
    /// `~/.config/gatehouse/servers.json`; `None` with neither variable set.
    pub fn user_path() -> Option<PathBuf> {
        config_home().map(|c| c.join("gatehouse").join("servers.json"))
    }

    /// Load a servers file.
    pub fn load(path: &Path, identity: &Identity) -> Result<Config, ConfigError> {
        let value = read_document(path)?;
        let shown = path.display().to_string();
        Config::from_value_of(value, &shown, identity, Config::owner_of(path))
    }

    /// Parse the text of a servers file; `source` names it in messages.
    pub fn parse(text: &str, source: &str, identity: &Identity) -> Result<Config, ConfigError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| ConfigError::syntax(source, &e))?;
        Config::from_value(value, source, identity)
    }

    /// Read a servers file already parsed as JSON; `source` names it in messages.
    pub fn from_value(
        value: Value,
        source: &str,
        identity: &Identity,
    ) -> Result<Config, ConfigError> {
        Config::from_value_of(value, source, identity, None)
    }

    /// [`Config::from_value`] for a file that belongs to `owner` (another program, whose
    /// other keys are its own business and which may have no servers yet), or to Gatehouse
    /// and the person (`None`).
    pub fn from_value_of(
        value: Value,
        source: &str,
        identity: &Identity,
        owner: Option<&str>,
    ) -> Result<Config, ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: source.into(),
            message,
        };
        let Value::Object(doc) = value else {
            return Err(invalid("the file must hold a JSON object".into()));
        };
        let mut warnings = Vec::new();
        if owner.is_none() {
            for key in doc.keys().filter(|k| !TOP_KEYS.contains(&k.as_str())) {
                let hint = suggest::hint(key, TOP_KEYS);
                warnings.push(format!("{source}: unknown key \"{key}\" is ignored{hint}"));
            }
        }
        let none = Value::Object(Map::new());
        let servers_value = match doc.get("mcpServers") {
            Some(servers) => servers,
            None if owner.is_some() => &none,
            None => return Err(invalid("no \"mcpServers\" object".into())),
        };
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
            let name = match ServerName::parse(name) {
                Ok(name) => name,
                Err(reason) => {
                    broken.push((name.clone(), reason));
                    continue;
                }
            };
            match server_spec(&name, entry, &vars, &mut warnings) {
                Ok(spec) => servers.push(spec),
                Err(reason) => broken.push((name.into(), reason)),
            }
        }
        let settings = match doc.get("gatehouse") {
            None => Settings::default(),
            Some(v) => settings::parse(v, &mut warnings)
                .map_err(|m| invalid(format!("\"gatehouse\": {m}")))?,
        };
        let named = entries.len()
            - entries
                .values()
                .filter(|e| e.get("disabled") == Some(&Value::Bool(true)))
                .count();
        if settings.gateway_names == GatewayNames::Unprefixed && named > 1 {
            // Two servers may offer the same name; one server's names are its own and
            // unique (the catalog keeps the first of a repeated one).
            return Err(invalid(format!(
                "\"gatehouse\": \"gatewayNames\": \"unprefixed\" needs exactly one server in \"mcpServers\" (there are {named}): with several, two could offer the same name"
            )));
        }
        Ok(Config {
            servers,
            broken,
            settings,
            warnings,
            source: source.into(),
            project: None,
        })
    }

    /// A copy of this configuration with only server `name` (its entry, or its broken
    /// entry), for a command about that one server (`mcp get NAME`, `call NAME__TOOL`):
    /// the settings, warnings, source and project review are the whole file's.
    pub fn narrowed_to(&self, name: &str) -> Config {
        let mut only = self.clone();
        only.servers.retain(|s| s.name == name);
        only.broken.retain(|(broken, _)| broken == name);
        only
    }

    /// The servers of this file, working or broken, other than `name`.
    pub fn servers_other_than(&self, name: &str) -> Vec<String> {
        let working = self.servers.iter().map(|s| s.name.as_str());
        let broken = self.broken.iter().map(|(n, _)| n.as_str());
        working
            .chain(broken)
            .filter(|n| *n != name)
            .map(str::to_owned)
            .collect()
    }
}

/// `$XDG_CONFIG_HOME`, else `~/.config`.
fn config_home() -> Option<PathBuf> {
    user_dir("XDG_CONFIG_HOME", ".config")
}

/// One of the person's base folders: the XDG variable `var` when it is set and not empty,
/// else `under_home` in `$HOME` (`.config`, `.local/state`, `.local/share`).
pub fn user_dir(var: &str, under_home: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(under_home)))
}

/// The keys of a servers file itself; others are warned about.
const TOP_KEYS: &[&str] = &["mcpServers", "gatehouse", "$schema"];
