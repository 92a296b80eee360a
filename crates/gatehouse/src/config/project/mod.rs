//! A project's servers file (`./.mcp.json` found without `--config`): what of it may run.
//!
//! A cloned repository's file is not the person's. It is read beside the person's own file
//! (never instead of it): its servers start only once the person has trusted each entry as
//! it is now ([`super::trust`]); its settings may tighten the person's policy (deny and ask
//! rules, smaller bounds) but never loosen it, unless the person trusted that setting by
//! name. Everything left out is listed in a [`Review`], for the person to see.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::behind::{self, Gated};
pub use super::read_document;
use super::trust::{Part, Trusted};
use super::{CONFIG_ENV, Config, ConfigError, Identity};

/// The settings a project may set without trust, each taken only where it is smaller than
/// the person's: a smaller bound only takes from what runs. Every other setting (`allow`,
/// `ledger`, `hooks`, `model`, …) would loosen the policy or send data elsewhere.
pub const TIGHTENING_SETTINGS: &[&str] = &[
    "maxArgumentChars",
    "maxResultChars",
    "maxSteps",
    "toolTimeoutMs",
    "toolMaxTimeoutMs",
    "connectTimeoutMs",
    "firstStartTimeoutMs",
    "maxInputRounds",
    "taskWaitMs",
    "toolBudgetBytes",
];

/// `--config builtin`: the built-in servers, even where a servers file would be found.
/// A file of that name is given as `./builtin`.
pub const BUILT_IN_NAME: &str = "builtin";

/// Which servers file a command uses when `--config` is not given, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// A file the person named: `--config` or `$GATEHOUSE_CONFIG`. Theirs, so trusted.
    Given(PathBuf),
    /// The person's own file (theirs, or Claude Desktop's; for another program's file whose
    /// servers are behind Gatehouse's gateway, the gateway's servers file), with no project
    /// file here.
    Own(PathBuf),
    /// A project's file in this folder, read beside the person's own file if they have one.
    Project {
        /// The project's file (`./.mcp.json`).
        file: PathBuf,
        /// The person's own file, if any.
        own: Option<PathBuf>,
    },
    /// No file at all: the built-in servers.
    BuiltIn,
}

impl Found {
    /// Look for the servers file as [`Config::search_paths`] orders them; `given` is
    /// `--config`, where [`BUILT_IN_NAME`] names the built-in servers.
    pub fn locate(given: Option<PathBuf>) -> Found {
        Found::locate_noting(given).0
    }

    /// [`Found::locate`], and what it made of another program's file that starts
    /// Gatehouse's gateway ([`Gated`]), for the person to be told: a file whose servers are
    /// behind the gateway stands for the gateway's servers file, which is found instead.
    pub fn locate_noting(given: Option<PathBuf>) -> (Found, Option<Gated>) {
        if let Some(path) = given {
            if path.as_os_str() == BUILT_IN_NAME {
                return (Found::BuiltIn, None);
            }
            return (Found::Given(path), None);
        }
        let paths = Config::search_paths();
        let from_env = std::env::var_os(CONFIG_ENV).filter(|p| !p.is_empty());
        let project = Config::project_path();
        if let Some(env) = from_env.map(PathBuf::from).filter(|p| p.is_file()) {
            return (Found::Given(env), None);
        }
        let (own, gated) = paths
            .iter()
            .filter(|p| **p != project)
            .find_map(|p| own_file(p))
            .map_or((None, None), |(own, gated)| (Some(own), gated));
        if project.is_file() {
            return (Found::Project { file: project, own }, gated);
        }
        (own.map_or(Found::BuiltIn, Found::Own), gated)
    }

    /// The files a command reads, for [`super::chain`].
    pub fn files(&self) -> Vec<PathBuf> {
        match self {
            Found::Given(p) | Found::Own(p) => vec![p.clone()],
            Found::Project { file, own } => {
                std::iter::once(file.clone()).chain(own.clone()).collect()
            }
            Found::BuiltIn => Vec::new(),
        }
    }
}

/// The person's own servers file at `path`, if it is one, and what was made of a gateway's
/// entry in it. Another program's file counts once it holds servers (Claude Code's
/// `~/.claude.json` exists as soon as it ran); one whose servers are behind Gatehouse's
/// gateway stands for the gateway's servers file.
fn own_file(path: &Path) -> Option<(PathBuf, Option<Gated>)> {
    if !path.is_file() {
        return None;
    }
    let Some(owner) = Config::owner_of(path) else {
        return Some((path.to_path_buf(), None));
    };
    let doc = read_document(path).ok()?;
    if !doc["mcpServers"].is_object() {
        return None;
    }
    let exe = std::env::current_exe().and_then(std::fs::canonicalize).ok();
    match behind::find(path, owner, &doc, exe.as_deref()) {
        Some(Gated::Behind(b)) => Some((b.servers_file.clone(), Some(Gated::Behind(b)))),
        gated => Some((path.to_path_buf(), gated)),
    }
}

/// One server of a project's file, as the person is shown it.
#[derive(Debug, Clone)]
pub struct ProjectServer {
    /// Its name in `mcpServers`.
    pub name: String,
    /// The entry as written (not shown with secret values: see `shown` by the caller).
    pub entry: Value,
    /// [`crate::digest::json_sha256`] of the entry: what trust is bound to.
    pub digest: String,
    /// Trusted at this digest.
    pub trusted: bool,
    /// Left out although trusted: one of the person's own servers has its name.
    pub shadowed: bool,
}

/// One setting of a project's file that would loosen the person's policy.
#[derive(Debug, Clone)]
pub struct ProjectSetting {
    /// Its key in `"gatehouse"` (`rules` stands for the file's allow rules).
    pub key: String,
    /// Its value as written.
    pub value: Value,
    /// What trust is bound to.
    pub digest: String,
    /// Trusted by name at this digest.
    pub trusted: bool,
}

/// What of a project's file runs and what is left out.
#[derive(Debug, Clone)]
pub struct Review {
    /// The project's file, as found.
    pub file: PathBuf,
    /// Its canonical path: what trust records name.
    pub canonical: String,
    /// The person's own file read beside it, if any.
    pub own: Option<PathBuf>,
    /// Every server entry that is not disabled.
    pub servers: Vec<ProjectServer>,
    /// Every setting that needs trust by name.
    pub settings: Vec<ProjectSetting>,
    /// What the project tightened without trust, in words ("2 deny or ask rules", …).
    pub tightened: Vec<String>,
}

impl Review {
    /// Read a project's file and judge it against the person's records. `own_doc` is the
    /// person's own file's document (for the names it already uses).
    pub fn of(file: &Path, doc: &Value, own: Option<(&Path, &Value)>, trusted: &Trusted) -> Review {
        let canonical = canonical(file);
        let own_names: Vec<&String> = own
            .and_then(|(_, d)| d.get("mcpServers").and_then(Value::as_object))
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        let servers = doc
            .get("mcpServers")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter(|(_, e)| e.get("disabled") != Some(&Value::Bool(true)))
            .map(|(name, entry)| {
                let digest = crate::digest::json_sha256(entry);
                ProjectServer {
                    trusted: trusted.covers(&canonical, Part::Server, name, &digest),
                    shadowed: own_names.contains(&name),
                    name: name.clone(),
                    entry: entry.clone(),
                    digest,
                }
            })
            .collect();
        let mut review = Review {
            file: file.to_path_buf(),
            canonical,
            own: own.map(|(p, _)| p.to_path_buf()),
            servers,
            settings: Vec::new(),
            tightened: Vec::new(),
        };
        if let Some(settings) = doc.get("gatehouse").and_then(Value::as_object) {
            review.read_settings(settings, trusted);
        }
        review
    }

    fn read_settings(&mut self, settings: &Map<String, Value>, trusted: &Trusted) {
        for (key, value) in settings {
            if TIGHTENING_SETTINGS.contains(&key.as_str()) {
                self.tightened.push(key.clone());
                continue;
            }
            if key == "rules" {
                let (tight, loose) = split_rules(value);
                if !tight.is_empty() {
                    self.tightened
                        .push(format!("{} deny or ask rules", tight.len()));
                }
                if loose.is_empty() {
                    continue;
                }
            }
            let digest = crate::digest::json_sha256(value);
            self.settings.push(ProjectSetting {
                trusted: trusted.covers(&self.canonical, Part::Setting, key, &digest),
                key: key.clone(),
                value: value.clone(),
                digest,
            });
        }
    }

    /// The servers that would start if the person trusted them.
    pub fn untrusted_servers(&self) -> impl Iterator<Item = &ProjectServer> {
        self.servers.iter().filter(|s| !s.trusted && !s.shadowed)
    }

    /// The settings that are ignored until trusted by name.
    pub fn untrusted_settings(&self) -> impl Iterator<Item = &ProjectSetting> {
        self.settings.iter().filter(|s| !s.trusted)
    }

    /// Count the servers and settings just trusted, as trust records' parts.
    pub fn parts(&self, servers: bool, settings: &[String]) -> Vec<(Part, String, String)> {
        let mut parts: Vec<(Part, String, String)> = Vec::new();
        if servers {
            parts.extend(
                self.servers
                    .iter()
                    .map(|s| (Part::Server, s.name.clone(), s.digest.clone())),
            );
        }
        parts.extend(
            self.settings
                .iter()
                .filter(|s| settings.contains(&s.key))
                .map(|s| (Part::Setting, s.key.clone(), s.digest.clone())),
        );
        parts
    }

    /// Mark what was just trusted, so the configuration built next includes it.
    pub fn mark_trusted(&mut self, parts: &[(Part, String, String)]) {
        for (part, name, digest) in parts {
            match part {
                Part::Server => self
                    .servers
                    .iter_mut()
                    .filter(|s| &s.name == name && &s.digest == digest)
                    .for_each(|s| s.trusted = true),
                Part::Setting => self
                    .settings
                    .iter_mut()
                    .filter(|s| &s.key == name && &s.digest == digest)
                    .for_each(|s| s.trusted = true),
            }
        }
    }

    /// The person's file and the project's, as one servers file: the person's own servers
    /// and settings, the project's trusted servers, its tightening rules first, and its
    /// trusted settings.
    pub fn merged(&self, own_doc: Option<&Value>, project_doc: &Value) -> Value {
        let mut doc = own_doc
            .cloned()
            .unwrap_or_else(|| json!({"mcpServers": {}}));
        if !doc.get("mcpServers").is_some_and(Value::is_object) {
            doc["mcpServers"] = json!({});
        }
        for server in self.servers.iter().filter(|s| s.trusted && !s.shadowed) {
            doc["mcpServers"][&server.name] = server.entry.clone();
        }
        let Some(project) = project_doc.get("gatehouse").and_then(Value::as_object) else {
            return doc;
        };
        if !doc.get("gatehouse").is_some_and(Value::is_object) {
            doc["gatehouse"] = json!({});
        }
        let own_settings = doc["gatehouse"].as_object_mut().expect("made an object");
        let trusted = |key: &str| self.settings.iter().any(|s| s.key == key && s.trusted);
        // The project's rules come first: a deny wins anywhere, and an ask that matches
        // first only takes a yes away.
        if let Some(rules) = project.get("rules") {
            let project_rules = if trusted("rules") {
                rules.as_array().cloned().unwrap_or_default()
            } else {
                split_rules(rules).0
            };
            let mut all = project_rules;
            if let Some(Value::Array(mine)) = own_settings.get("rules") {
                all.extend(mine.iter().cloned());
            }
            own_settings.insert("rules".into(), Value::Array(all));
        }
        for setting in self
            .settings
            .iter()
            .filter(|s| s.trusted && s.key != "rules")
        {
            let value = match (setting.key.as_str(), own_settings.get("allow")) {
                ("allow", Some(Value::Array(mine))) => {
                    let mut all = mine.clone();
                    all.extend(setting.value.as_array().cloned().unwrap_or_default());
                    Value::Array(all)
                }
                _ => setting.value.clone(),
            };
            own_settings.insert(setting.key.clone(), value);
        }
        doc
    }
}

/// A project's rules, as the ones that only tighten (deny, ask through the person's own
/// channel) and the rest.
fn split_rules(rules: &Value) -> (Vec<Value>, Vec<Value>) {
    let Some(items) = rules.as_array() else {
        // Not a list: the whole value is left to trust, and to the parser's error.
        return (Vec::new(), vec![rules.clone()]);
    };
    // An ask answered by the client (`"via": "client"`) would loosen a person's page-only
    // approvals: only an ask that keeps the person's own channel tightens.
    items
        .iter()
        .cloned()
        .partition(|rule| match rule.get("decision").and_then(Value::as_str) {
            Some("deny") => true,
            Some("ask") => rule.get("via").is_none_or(|v| v == "page"),
            _ => false,
        })
}

/// The smaller of each bound the project set and the person's: a project can take time,
/// steps and room away, never add them.
pub fn tighten(config: &mut Config, project_doc: &Value, source: &str) -> Result<(), ConfigError> {
    let Some(project) = project_doc.get("gatehouse").and_then(Value::as_object) else {
        return Ok(());
    };
    let bounds: Map<String, Value> = project
        .iter()
        .filter(|(k, _)| TIGHTENING_SETTINGS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if bounds.is_empty() {
        return Ok(());
    }
    let mut warnings = Vec::new();
    let theirs = super::settings::parse(&Value::Object(bounds.clone()), &mut warnings).map_err(
        |message| ConfigError::Invalid {
            path: source.into(),
            message: format!("\"gatehouse\": {message}"),
        },
    )?;
    let s = &mut config.settings;
    for key in bounds.keys() {
        match key.as_str() {
            "maxArgumentChars" => {
                s.max_argument_chars = s.max_argument_chars.min(theirs.max_argument_chars)
            }
            "maxResultChars" => {
                s.max_result_chars = s.max_result_chars.min(theirs.max_result_chars)
            }
            "maxSteps" => s.max_model_calls = s.max_model_calls.min(theirs.max_model_calls),
            "toolTimeoutMs" => s.tool_timeout = s.tool_timeout.min(theirs.tool_timeout),
            "toolMaxTimeoutMs" => {
                s.tool_max_timeout = s.tool_max_timeout.min(theirs.tool_max_timeout)
            }
            "connectTimeoutMs" => s.connect_timeout = s.connect_timeout.min(theirs.connect_timeout),
            "firstStartTimeoutMs" => {
                s.first_start_timeout = s.first_start_timeout.min(theirs.first_start_timeout)
            }
            "maxInputRounds" => {
                s.max_input_rounds = s.max_input_rounds.min(theirs.max_input_rounds)
            }
            "taskWaitMs" => s.task_wait = s.task_wait.min(theirs.task_wait),
            "toolBudgetBytes" => {
                s.tool_budget_bytes = s.tool_budget_bytes.min(theirs.tool_budget_bytes)
            }
            _ => {}
        }
    }
    // Progress extends a round's limit up to the maximum, never past it.
    s.tool_timeout = s.tool_timeout.min(s.tool_max_timeout);
    Ok(())
}

/// A path as trust records name it: canonical where it exists.
pub fn canonical(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

/// Load what a command runs with from a project's file beside the person's own, as
/// `review` says (after the person was asked, if they were).
pub fn load_reviewed(
    review: &Review,
    project_doc: &Value,
    own_doc: Option<&Value>,
    identity: &Identity,
) -> Result<Config, ConfigError> {
    let source = match &review.own {
        Some(own) => format!("{} with {}", own.display(), review.file.display()),
        None => review.file.display().to_string(),
    };
    let merged = review.merged(own_doc, project_doc);
    let mut config = Config::from_value(merged, &source, identity)?;
    tighten(&mut config, project_doc, &review.file.display().to_string())?;
    config.project = Some(review.clone());
    Ok(config)
}

#[cfg(test)]
mod tests;
