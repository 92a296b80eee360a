//! Another program's servers file whose servers are behind Gatehouse's gateway (`gatehouse
//! gateway connect`): the entry that starts this host's gateway over a Gatehouse servers
//! file is recognised, and that file checked, so that a command that finds the program's
//! file without `--config` reads the gateway's servers file instead of starting the gateway
//! as its one server (every call gated twice, every tool named `gatehouse__…`).
//!
//! The path in the entry is another program's data: bounded, made canonical, and used only
//! when it names a readable servers file of Gatehouse's own; otherwise the program's file is
//! read as it is, and the reason is told.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Config, ConfigError, read_document};

/// The gateway's arguments before its servers file, as `gatehouse gateway connect` writes
/// them: `gateway --config FILE`.
pub const GATEWAY_ARGS: [&str; 2] = ["gateway", "--config"];
/// The `gatehouse` binary's file name, without the platform's suffix.
pub const BINARY_NAME: &str = "gatehouse";
/// Longest path of a gateway's servers file taken from another program's file, in bytes
/// (Linux's `PATH_MAX`).
pub const MAX_GATEWAY_FILE_PATH_BYTES: usize = 4096;
/// The keys a gateway's entry may have (`env` only empty): any other one (a folder, an
/// environment of its own) makes it another entry than the one connect writes.
const ENTRY_KEYS: &[&str] = &["type", "command", "args", "env"];

/// The servers file, as written, that `entry` starts this host's gateway over: a stdio entry
/// whose command is a `gatehouse` binary (the running one, `exe`, canonical, or a file
/// named [`BINARY_NAME`]) and whose arguments are exactly `gateway --config FILE`, with
/// `FILE` absolute (a relative one would be relative to the other program's folder, which
/// is not known here). `None` for any other entry.
pub fn gateway_over<'a>(entry: &'a Value, exe: Option<&Path>) -> Option<&'a str> {
    let map = entry.as_object()?;
    if map.keys().any(|k| !ENTRY_KEYS.contains(&k.as_str()))
        || map.get("type").is_some_and(|t| t != "stdio")
        || map
            .get("env")
            .is_some_and(|e| e.as_object().is_none_or(|vars| !vars.is_empty()))
    {
        return None;
    }
    let command = map.get("command")?.as_str()?;
    if !is_gatehouse(Path::new(command), exe) {
        return None;
    }
    let [gateway, flag, file] = map.get("args")?.as_array()?.as_slice() else {
        return None;
    };
    if *gateway != GATEWAY_ARGS[0] || *flag != GATEWAY_ARGS[1] {
        return None;
    }
    let file = file.as_str()?;
    Path::new(file).is_absolute().then_some(file)
}

/// Is `command` a `gatehouse` binary: named so, or the running one (`exe`) by another name?
fn is_gatehouse(command: &Path, exe: Option<&Path>) -> bool {
    let name = format!("{BINARY_NAME}{}", std::env::consts::EXE_SUFFIX);
    command.file_name().is_some_and(|n| *n == *name)
        || (command.is_absolute()
            && exe.is_some_and(|exe| std::fs::canonicalize(command).is_ok_and(|c| c == exe)))
}

/// What a command found without `--config` makes of another program's file with an entry
/// that starts Gatehouse's gateway.
#[derive(Debug)]
pub enum Gated {
    /// Its servers are behind the gateway: the gateway's servers file is read instead.
    Behind(Behind),
    /// The gateway's servers file cannot be used: the program's file is read as it is.
    Refused(Refused),
}

/// Another program's servers behind Gatehouse's gateway, and the servers file they are in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Behind {
    /// The other program's file.
    pub client_file: PathBuf,
    /// Whose file it is ([`Config::owner_of`]).
    pub owner: &'static str,
    /// The gateway's servers file, canonical: the one read.
    pub servers_file: PathBuf,
    /// The other entries of the program's file (those connect could not carry): the
    /// program starts them itself, the host does not.
    pub not_started: Vec<String>,
}

/// A gateway's entry whose servers file is not used.
#[derive(Debug)]
pub struct Refused {
    /// The other program's file.
    pub client_file: PathBuf,
    /// Whose file it is.
    pub owner: &'static str,
    /// The gateway's servers file, as written (another program's text: shown made visible).
    pub servers_file: String,
    /// Why it is not used.
    pub why: Unusable,
}

/// Why the servers file a gateway's entry names is not read instead.
#[derive(Debug, thiserror::Error)]
pub enum Unusable {
    /// The path is too long to be a path.
    #[error("its path is longer than {MAX_GATEWAY_FILE_PATH_BYTES} bytes")]
    TooLong,
    /// It cannot be found or reached.
    #[error("it cannot be opened: {0}")]
    Unreachable(std::io::Error),
    /// It is a folder, a device, …
    #[error("it is not a file")]
    NotAFile,
    /// It is a program's file, not Gatehouse's.
    #[error("it is {0}'s file, not a Gatehouse servers file")]
    Owned(&'static str),
    /// It is the file that starts the gateway.
    #[error("it is the file that starts the gateway itself")]
    Itself,
    /// It cannot be read as JSON.
    #[error("{0}")]
    Unreadable(ConfigError),
    /// It is JSON, but not a servers file.
    #[error("it has no \"mcpServers\" object")]
    NoServers,
}

/// What comes of the entry of `doc` (the file at `path`, `owner`'s) that starts this host's
/// gateway (the first, in the file's order); `None` when no entry does. `exe` is the
/// running binary, canonical.
pub fn find(path: &Path, owner: &'static str, doc: &Value, exe: Option<&Path>) -> Option<Gated> {
    let servers = doc.get("mcpServers")?.as_object()?;
    let (entry, file) = servers
        .iter()
        .find_map(|(name, e)| gateway_over(e, exe).map(|file| (name, file)))?;
    Some(match usable(file, path) {
        Ok(servers_file) => Gated::Behind(Behind {
            client_file: path.to_path_buf(),
            owner,
            servers_file,
            not_started: servers
                .iter()
                .filter(|(name, e)| *name != entry && e.get("disabled") != Some(&Value::Bool(true)))
                .map(|(name, _)| name.clone())
                .collect(),
        }),
        Err(why) => Gated::Refused(Refused {
            client_file: path.to_path_buf(),
            owner,
            servers_file: file.to_owned(),
            why,
        }),
    })
}

/// `file`, canonical, when it is a readable servers file of Gatehouse's own other than
/// `client_file`, within [`MAX_GATEWAY_FILE_PATH_BYTES`] and
/// [`super::MAX_SERVERS_FILE_BYTES`].
fn usable(file: &str, client_file: &Path) -> Result<PathBuf, Unusable> {
    if file.len() > MAX_GATEWAY_FILE_PATH_BYTES {
        return Err(Unusable::TooLong);
    }
    let canonical = std::fs::canonicalize(file).map_err(Unusable::Unreachable)?;
    if !canonical.is_file() {
        return Err(Unusable::NotAFile);
    }
    if std::fs::canonicalize(client_file).is_ok_and(|c| c == canonical) {
        return Err(Unusable::Itself);
    }
    if let Some(owner) = Config::owner_of(&canonical) {
        return Err(Unusable::Owned(owner));
    }
    let doc = read_document(&canonical).map_err(Unusable::Unreadable)?;
    if !doc.get("mcpServers").is_some_and(Value::is_object) {
        return Err(Unusable::NoServers);
    }
    Ok(canonical)
}

#[cfg(test)]
mod tests;
