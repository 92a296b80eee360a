//! Servers added to and removed from a servers file, as `gatehouse mcp add|remove` do it.
//!
//! The file stays the person's: its other keys, their order and its indentation are kept,
//! values are stored as given (a `${VAR}` stays a reference, never expanded), and every
//! entry is checked before it is written. The file is replaced at once (a temporary file
//! beside it, then a rename), keeping its permissions; a new file is readable by the user
//! only.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::config::{self, ConfigError};

/// Longest name `mcp add` gives a server: it prefixes every tool name the model sees
/// (`server__tool`), and model APIs take tool names of at most 64 characters. A file
/// people bring may hold longer ones, up to [`config::MAX_SERVER_NAME_CHARS`].
pub const MAX_ADDED_NAME_CHARS: usize = 32;

/// Why a name cannot name a server `mcp add` adds, if it cannot: what the servers file
/// refuses ([`config::ServerName::parse`]), and beyond that anything but ASCII letters,
/// digits, `-` and `_`, so that the name is the tools' prefix unchanged.
pub fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("a server needs a name".into());
    }
    if name.chars().count() > MAX_ADDED_NAME_CHARS {
        return Some(format!(
            "the name {name:?} is longer than {MAX_ADDED_NAME_CHARS} characters"
        ));
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric())
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Some(format!(
            "the name {name:?} must start with a letter or digit and hold only letters, digits, - and _"
        ));
    }
    config::ServerName::parse(name).err()
}

/// A server to add, as the command line gives it.
#[derive(Debug, Clone, PartialEq)]
pub enum NewServer {
    /// A program the host starts and speaks to on stdio.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its variables, `KEY=VALUE` as given.
        env: Vec<(String, String)>,
        /// The host's variables it is given as they are (`passEnv`): names, or
        /// prefixes ending in `*`.
        pass_env: Vec<String>,
        /// Its box (`sandbox`: `true`, or an object), checked as the servers file is.
        sandbox: Option<Value>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint.
        url: String,
        /// Its headers, as given.
        headers: Vec<(String, String)>,
    },
}

impl NewServer {
    /// The entry as the file stores it, once it is checked; with the warnings worth telling
    /// the person (a secret stored as plain text).
    pub fn entry(&self) -> Result<(Value, Vec<String>), String> {
        let mut warnings = Vec::new();
        let mut entry = Map::new();
        match self {
            NewServer::Stdio {
                command,
                args,
                env,
                pass_env,
                sandbox,
            } => {
                if command.trim().is_empty() {
                    return Err("a stdio server needs a command to start it with".into());
                }
                checked_text("the command", command)?;
                for a in args {
                    checked_text("an argument", a)?;
                }
                entry.insert("command".into(), command.as_str().into());
                entry.insert("args".into(), args.clone().into());
                let vars = Pairs {
                    what: "variable",
                    check: &|key, _| {
                        if is_variable_name(key) {
                            Ok(())
                        } else {
                            Err(format!(
                                "{key:?} is not a variable name (letters, digits and _, not starting with a digit)"
                            ))
                        }
                    },
                    secret: &crate::redact::is_secret_name,
                    instead: &|key| format!("--env {key}='${{{key}}}'"),
                }
                .checked(env, &mut warnings)?;
                if !vars.is_empty() {
                    entry.insert("env".into(), Value::Object(vars));
                }
                if !pass_env.is_empty() {
                    entry.insert("passEnv".into(), pass_names(pass_env)?.into());
                }
                if let Some(sandbox) = sandbox {
                    // Checked as the host will read it, `~/` and variables left as written.
                    let as_read = |s: &str| -> Result<String, String> {
                        Ok(match s.starts_with("~/") || s.starts_with('$') {
                            true => format!("/{s}"),
                            false => s.to_owned(),
                        })
                    };
                    config::Sandbox::parse(Some(sandbox), &as_read)?;
                    entry.insert("sandbox".into(), sandbox.clone());
                }
            }
            NewServer::Http { url, headers } => {
                checked_text("the URL", url)?;
                check_url(url)?;
                entry.insert("type".into(), "http".into());
                entry.insert("url".into(), url.as_str().into());
                let named = Pairs {
                    what: "header",
                    check: &config::check_header,
                    secret: &is_secret_header,
                    instead: &|name| format!("--header '{name}: Bearer ${{TOKEN}}'"),
                }
                .checked(headers, &mut warnings)?;
                if !named.is_empty() {
                    entry.insert("headers".into(), Value::Object(named));
                }
            }
        }
        Ok((Value::Object(entry), warnings))
    }
}

/// How the named values of an entry (`env`, `headers`) are checked.
struct Pairs<'a> {
    /// What one is called in messages.
    what: &'a str,
    /// Is this name and value usable?
    check: &'a dyn Fn(&str, &str) -> Result<(), String>,
    /// Does the name say its value is a secret?
    secret: &'a dyn Fn(&str) -> bool,
    /// The option that would store a reference instead of the plain secret.
    instead: &'a dyn Fn(&str) -> String,
}

impl Pairs<'_> {
    /// The pairs checked and in their order; a secret given as plain text is warned about.
    fn checked(
        &self,
        pairs: &[(String, String)],
        warnings: &mut Vec<String>,
    ) -> Result<Map<String, Value>, String> {
        let mut out = Map::new();
        for (name, value) in pairs {
            (self.check)(name, value)?;
            checked_text(&format!("{} {name}", self.what), value)?;
            if (self.secret)(name) && !value.contains("${") {
                warnings.push(plain_secret(
                    &format!("{} {name}", self.what),
                    &(self.instead)(name),
                ));
            }
            out.insert(name.clone(), value.as_str().into());
        }
        Ok(out)
    }
}

/// `KEY=VALUE`, as `--env` takes it.
pub fn parse_env(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("{text:?} is not KEY=VALUE"))
}

/// `Name: value`, as `--header` takes it.
pub fn parse_header(text: &str) -> Result<(String, String), String> {
    text.split_once(':')
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .ok_or_else(|| format!("{text:?} is not a header (Name: value)"))
}

/// `--pass-env` names, each a variable's name or a prefix ending in `*`, each once.
fn pass_names(given: &[String]) -> Result<Vec<String>, String> {
    let mut names: Vec<String> = Vec::new();
    for name in given {
        let bare = name.strip_suffix('*').unwrap_or(name);
        if !is_variable_name(bare) {
            return Err(format!(
                "--pass-env {name:?}: give a variable's name (letters, digits and _, not starting with a digit), or a prefix ending in * (AWS_*)"
            ));
        }
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    Ok(names)
}

fn is_variable_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_secret_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower == "authorization" || lower == "cookie" || crate::redact::is_secret_name(name)
}

fn plain_secret(what: &str, instead: &str) -> String {
    format!(
        "{what} is stored in the file as plain text; {instead} stores a reference to a variable instead"
    )
}

/// A value with no line breaks or other control characters, and whose `${…}` parse.
fn checked_text(what: &str, text: &str) -> Result<(), String> {
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        return Err(format!(
            "{what} holds a control character (U+{:04X})",
            c as u32
        ));
    }
    config::references(text)
        .map(|_| ())
        .map_err(|e| format!("{what}: {e}"))
}

/// An http server's URL: http or https, with a host, unless a `${VAR}` gives that part.
fn check_url(url: &str) -> Result<(), String> {
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(format!(
            "the URL {:?} must start with http:// or https://",
            crate::redact::url(url)
        ));
    }
    if url.contains("${") {
        return Ok(());
    }
    match reqwest::Url::parse(url) {
        Ok(u) if u.host_str().is_some_and(|h| !h.is_empty()) => Ok(()),
        Ok(_) => Err("the URL has no host".into()),
        Err(e) => Err(format!(
            "the URL {:?} is not valid: {e}",
            crate::redact::url(url)
        )),
    }
}

/// What an add did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    /// A new entry, at the end of `mcpServers`.
    New,
    /// An entry of that name was replaced, in its place.
    Replaced,
}

/// A servers file open for changes.
#[derive(Debug, Clone)]
pub struct ServersFile {
    path: PathBuf,
    doc: Map<String, Value>,
    /// The file's own indentation, kept when it is written again.
    indent: String,
    existed: bool,
}

impl ServersFile {
    /// Open the file at `path`; a file that does not exist yet is an empty one.
    pub fn open(path: &Path) -> Result<ServersFile, ConfigError> {
        let shown = path.display().to_string();
        let text = config::read_text(path)?;
        let Some(text) = text else {
            return Ok(ServersFile {
                path: path.to_owned(),
                doc: Map::new(),
                indent: "  ".into(),
                existed: false,
            });
        };
        let value: Value =
            serde_json::from_str(&text).map_err(|e| ConfigError::syntax(&shown, &e))?;
        let Value::Object(doc) = value else {
            return Err(ConfigError::Invalid {
                path: shown,
                message: "the file must hold a JSON object".into(),
            });
        };
        let file = ServersFile {
            path: path.to_owned(),
            doc,
            indent: indentation(&text),
            existed: true,
        };
        file.servers()?;
        Ok(file)
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Did the file exist when it was opened?
    pub fn existed(&self) -> bool {
        self.existed
    }

    /// The whole file as it is now.
    pub fn document(&self) -> Value {
        Value::Object(self.doc.clone())
    }

    /// Its servers, by name, in the file's order.
    pub fn servers(&self) -> Result<Map<String, Value>, ConfigError> {
        match self.doc.get("mcpServers") {
            None => Ok(Map::new()),
            Some(Value::Object(m)) => Ok(m.clone()),
            Some(_) => Err(ConfigError::Invalid {
                path: self.path.display().to_string(),
                message: "\"mcpServers\" must be an object of servers".into(),
            }),
        }
    }

    /// One server's entry, as the file has it.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.doc.get("mcpServers")?.get(name)
    }

    fn entries(&mut self) -> &mut Map<String, Value> {
        let servers = self
            .doc
            .entry("mcpServers")
            .or_insert_with(|| Value::Object(Map::new()));
        if !servers.is_object() {
            *servers = Value::Object(Map::new());
        }
        servers.as_object_mut().expect("made an object above")
    }

    /// Add a server under `name`; one already there is refused unless `replace`, and then
    /// replaced in its place.
    pub fn add(&mut self, name: &str, entry: Value, replace: bool) -> Result<Added, String> {
        if let Some(problem) = name_problem(name) {
            return Err(problem);
        }
        let shown = self.path.display().to_string();
        let entries = self.entries();
        match entries.get_mut(name) {
            Some(_) if !replace => Err(format!(
                "{shown} has a server named {name} already; remove it first, or add it again with --replace"
            )),
            Some(old) => {
                *old = entry;
                Ok(Added::Replaced)
            }
            None => {
                entries.insert(name.to_owned(), entry);
                Ok(Added::New)
            }
        }
    }

    /// Remove the server `name`, keeping the others in order; its entry is returned.
    pub fn remove(&mut self, name: &str) -> Result<Value, String> {
        let shown = self.path.display().to_string();
        let entries = self.entries();
        entries.shift_remove(name).ok_or_else(|| {
            let names: Vec<&str> = entries.keys().map(String::as_str).collect();
            if names.is_empty() {
                format!("{shown} has no servers")
            } else {
                format!(
                    "{shown} has no server named {name}; it has {}",
                    names.join(", ")
                )
            }
        })
    }

    /// The file's text, in its own indentation, ending with a newline.
    pub fn text(&self) -> String {
        let mut out = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(self.indent.as_bytes());
        let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
        serde::Serialize::serialize(&self.doc, &mut ser).expect("a JSON map always serializes");
        let mut text = String::from_utf8(out).expect("JSON is UTF-8");
        text.push('\n');
        text
    }

    /// Write the file: a temporary file beside it, then a rename over it, so a reader sees
    /// the old file or the new one, never half of one. A file behind a link is written
    /// where the link points; the file keeps its permissions, and a new one (with any
    /// missing folder) is readable by the user only.
    pub fn save(&self) -> std::io::Result<()> {
        crate::files::replace_keeping(&self.path, self.text().as_bytes())
    }
}

/// The indentation a JSON file uses: the leading white space of its first indented line
/// (two spaces when it has none).
pub fn indentation(text: &str) -> String {
    text.lines()
        .skip(1)
        .map(|l| &l[..l.len() - l.trim_start().len()])
        .find(|ws| !ws.is_empty())
        .unwrap_or("  ")
        .to_owned()
}

#[cfg(test)]
#[path = "edit_tests.rs"]
mod tests;
