//! The secrets the host reads for itself (the model endpoint's key) taken out of its own
//! environment at start: kept in memory for the model client when the command has one,
//! else forgotten.
//!
//! The rule: a secret variable leaves the environment unless a servers file this command
//! may read names it (a `passEnv` pattern, `inheritEnv: true`, or a `${VAR}`), because
//! stdio servers and hooks take their variables from the host's environment at every start
//! and restart, and a file's `${VAR}` is read after this point. `gatehouse doctor` keeps
//! the variable, as it checks the endpoint with it, and so does `gatehouse serve`, a server
//! whose environment is what its entry passed it; everything else that needs it asks
//! [`variable`].

use std::{ffi::OsString, path::PathBuf, sync::OnceLock};

use gatehouse::config::{Config, EnvPass};
use serde_json::Value;

use crate::args::Command;

/// The variables holding secrets the host reads for itself, which nothing it starts gets
/// unless a servers file names them.
pub(crate) const SECRETS: &[&str] = &[gatehouse::model::openai::API_KEY_ENV];

/// The secrets taken out of the environment that the command still needs (its model's
/// key), by name.
static KEPT: OnceLock<Vec<(&'static str, String)>> = OnceLock::new();

/// A variable as the host itself reads it: a secret kept in memory, else the environment.
pub(crate) fn variable(name: &str) -> Option<String> {
    KEPT.get()
        .and_then(|kept| kept.iter().find(|(n, _)| *n == name))
        .map(|(_, value)| value.clone())
        .or_else(|| std::env::var(name).ok())
}

/// Take [`SECRETS`] out of the environment as the rule says (the module's opening), keeping
/// them in memory for a command that starts a model. Only sound while this process has one
/// thread.
pub(super) fn drop_unneeded(command: &Command) {
    // `serve` is a server: what its environment holds is what its entry passed it on
    // purpose, and it makes no model.
    if matches!(command, Command::Doctor(_) | Command::Serve(_)) {
        return;
    }
    let keeps_model = matches!(
        command,
        Command::Ask(_) | Command::Chat(_) | Command::Lab(_) | Command::Eval(_)
    );
    let files = servers_files();
    let mut kept = Vec::new();
    for &name in SECRETS {
        if std::env::var_os(name).is_none() || files.iter().any(|f| f.names(name)) {
            continue;
        }
        if let Some(value) = take(name)
            && keeps_model
        {
            kept.push((name, value));
        }
    }
    let _ = KEPT.set(kept);
}

/// The servers files a command may read: every `--config` on the command line, and every
/// place one is looked for without it.
fn servers_files() -> Vec<Servers> {
    let mut paths: Vec<PathBuf> = Vec::new();
    let mut args = std::env::args_os();
    while let Some(arg) = args.next() {
        if arg == "--config" {
            paths.extend(args.next().map(PathBuf::from));
        } else if let Some(path) = arg.to_str().and_then(|a| a.strip_prefix("--config=")) {
            paths.push(PathBuf::from(path));
        }
    }
    paths.extend(Config::search_paths());
    paths
        .into_iter()
        .filter(|p| p.exists())
        .map(|p| Servers::read(&p))
        .chain([Servers::built_in()])
        .collect()
}

/// One servers file as far as the rule reads it.
enum Servers {
    /// Its JSON.
    Read(Value),
    /// There, but unreadable or not JSON: it may name anything.
    Unknown,
}

impl Servers {
    fn read(path: &std::path::Path) -> Servers {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .map_or(Servers::Unknown, Servers::Read)
    }

    /// The built-in servers' file, as far as what it passes on goes.
    fn built_in() -> Servers {
        #[cfg(feature = "built-in-servers")]
        let pass = gatehouse_servers::built_in::BUILT_IN_PASS_ENV;
        #[cfg(not(feature = "built-in-servers"))]
        let pass: &[&str] = &[];
        Servers::Read(serde_json::json!({ "passEnv": pass }))
    }

    /// Does this file pass `name` on to what it starts, or use it as `${name}`?
    fn names(&self, name: &str) -> bool {
        match self {
            Servers::Unknown => true,
            Servers::Read(value) => names(value, name),
        }
    }
}

/// Does `value`, anywhere in it, pass `name` on (`passEnv`, `inheritEnv`) or use it?
fn names(value: &Value, name: &str) -> bool {
    match value {
        Value::String(s) => {
            s.contains(&format!("${{{name}}}")) || s.contains(&format!("${{{name}:-"))
        }
        Value::Array(items) => items.iter().any(|v| names(v, name)),
        Value::Object(map) => {
            map.get("inheritEnv") == Some(&Value::Bool(true))
                || map.get("passEnv").is_some_and(|p| passes(p, name))
                || map.values().any(|v| names(v, name))
        }
        _ => false,
    }
}

/// Does a `passEnv` value hold a pattern that matches `name`?
fn passes(pass_env: &Value, name: &str) -> bool {
    let patterns = pass_env.as_array().into_iter().flatten();
    let pass = EnvPass {
        names: patterns
            .filter_map(|p| p.as_str().map(str::to_owned))
            .collect(),
        all: false,
    };
    !pass
        .select([(OsString::from(name), OsString::new())])
        .is_empty()
}

/// Take `name` out of the environment, its bytes overwritten where the environment held
/// them (`/proc/PID/environ` shows that block to whoever may read it); its value, if text.
fn take(name: &str) -> Option<String> {
    let value = std::env::var_os(name)?;
    scrub(name);
    // SAFETY: called from `main` before any thread starts (`super::process`): nothing
    // reads or changes the environment at the same time.
    unsafe { std::env::remove_var(name) };
    value.into_string().ok()
}

/// Overwrite the value of `name` with zeros where the environment keeps it.
#[cfg(unix)]
fn scrub(name: &str) {
    let Ok(c_name) = std::ffi::CString::new(name) else {
        return;
    };
    // SAFETY: one thread (see `take`). `getenv` points at the value inside this process's
    // environment (the block the kernel copied at exec, or a copy `setenv` made), valid
    // until the variable is changed; its bytes up to the terminating NUL are ours to
    // overwrite, and the variable is removed right after, so nothing reads them again.
    unsafe {
        let value = libc::getenv(c_name.as_ptr());
        if !value.is_null() {
            std::ptr::write_bytes(value, 0, libc::strlen(value));
        }
    }
}

/// Windows keeps the environment out of the process's reach: removing it is all there is.
#[cfg(not(unix))]
fn scrub(_name: &str) {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_file_names_a_variable_it_passes_inherits_or_uses() {
        let key = "OPENAI_API_KEY";
        let of = |v: Value| Servers::Read(v).names(key);
        assert!(of(
            json!({"mcpServers": {"a": {"command": "x", "passEnv": [key]}}})
        ));
        assert!(of(
            json!({"mcpServers": {"a": {"command": "x", "passEnv": ["OPENAI_*"]}}})
        ));
        assert!(of(
            json!({"mcpServers": {"a": {"command": "x", "inheritEnv": true}}})
        ));
        assert!(of(
            json!({"mcpServers": {"a": {"env": {"K": "${OPENAI_API_KEY}"}}}})
        ));
        assert!(of(
            json!({"gatehouse": {"hooks": {"afterCall": {"passEnv": [key]}}}})
        ));
        assert!(of(json!({"x": "${OPENAI_API_KEY:-none}"})));
        assert!(Servers::Unknown.names(key));
        assert!(!of(
            json!({"mcpServers": {"a": {"command": "x", "passEnv": ["OPENAI_BASE_URL"], "inheritEnv": false}}})
        ));
        assert!(!of(
            json!({"x": "${OPENAI_API_KEY_2}", "y": "$OPENAI_API_KEY"})
        ));
        assert!(!Servers::built_in().names(key));
    }
}
