//! Why a stdio server stopped, read from its last words on stderr, with the exact fix: a
//! package runner's cache left half-written (npx's `_npx` folder) or damaged (a file of the
//! environment uv keeps for a uvx server lost or cut short), a variable
//! the person has set that the server is not given, and the command to run it by hand
//! as the host runs it, pasteable into a shell.

use std::ffi::OsString;

use crate::{
    config::{EnvPass, ServerSpec, Transport},
    connect::runner::{self, RunnerKind},
    text::shell_word,
};

/// What a server's stderr says is wrong, when it is something the person can fix at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// npx left a package half-installed in its cache: the folder to remove.
    BrokenNpxCache {
        /// `…/_npx/HASH`, the one package's folder.
        folder: String,
    },
    /// uv's cache holds a damaged copy of the server's environment: Python could not
    /// import a module from it. uv links one copy of each file into every environment
    /// (removing the environment alone keeps the damaged file), so the fix clears the cache.
    BrokenUvCache {
        /// The cache folder, as the traceback's paths name it.
        cache: String,
        /// The `uv` program: beside the entry's `uvx` when that is a path, else `uv`.
        uv: String,
    },
    /// Variables the server names that are set where the host runs but not passed to it.
    NotPassed {
        /// Their names, in the order the server named them.
        names: Vec<String>,
    },
}

impl Cause {
    /// What to do, in words; `source` is the servers file, `server` the entry's name.
    pub fn fix(&self, server: &str, source: &str) -> String {
        match self {
            Cause::BrokenNpxCache { folder } => format!(
                "npx left the package half-installed in its cache (a first start was stopped during the download): remove that copy with `rm -rf {}` and start it again; the next start downloads it whole",
                shell_word(folder)
            ),
            Cause::BrokenUvCache { cache, uv } => format!(
                "uv's cache holds a damaged copy of this server's environment (Python could not import from it): clear that cache with `{} cache clean --cache-dir {}` and start it again; the next start downloads it whole",
                shell_word(uv),
                shell_word(cache)
            ),
            Cause::NotPassed { names } => {
                let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
                let flags: Vec<String> = names.iter().map(|n| format!("--pass-env {n}")).collect();
                format!(
                    "{} {} set in your shell but not passed to this server: add `\"passEnv\": [{}]` to {server} in {source} (or `gatehouse mcp add … {}`)",
                    names.join(", "),
                    if names.len() == 1 { "is" } else { "are" },
                    quoted.join(", "),
                    flags.join(" ")
                )
            }
        }
    }
}

/// What `stderr` (a failed start's last words) says is wrong with `spec`'s server, if it
/// says something the person can fix at once. `host_env` is the host's environment.
pub fn cause(
    spec: &ServerSpec,
    stderr: &[String],
    host_env: &[(OsString, OsString)],
) -> Option<Cause> {
    let Transport::Stdio {
        command,
        args,
        env,
        pass,
        ..
    } = &spec.transport
    else {
        return None;
    };
    if let Some(folder) = stderr.iter().find_map(|l| npx_folder(l)) {
        return Some(Cause::BrokenNpxCache { folder });
    }
    let uvx = runner::package_runner(command, args).is_some_and(|r| r.kind == RunnerKind::Uvx);
    if uvx
        && stderr.iter().any(|l| python_import_failed(l))
        && let Some(cache) = stderr.iter().find_map(|l| uv_cache(l))
    {
        return Some(Cause::BrokenUvCache {
            cache,
            uv: uv_beside(command),
        });
    }
    let names = not_passed(
        stderr,
        |name| env.contains_key(name) || passed(pass, name, host_env),
        host_env,
    );
    (!names.is_empty()).then_some(Cause::NotPassed { names })
}

/// The folder of the one package npx's cache lost a file of: `…/_npx/HASH` in a line
/// that says a package or module cannot be found.
fn npx_folder(line: &str) -> Option<String> {
    let missing = [
        "Cannot find package",
        "Cannot find module",
        "ERR_MODULE_NOT_FOUND",
    ];
    if !missing.iter().any(|m| line.contains(m)) {
        return None;
    }
    let at = line.find("/_npx/")?;
    let hash_len = line[at + 6..]
        .bytes()
        .take_while(u8::is_ascii_hexdigit)
        .count();
    if hash_len == 0 {
        return None;
    }
    path_ending_at(line, at, at + 6 + hash_len)
}

/// The absolute path in `line` that runs up to `end`, `at` being a position within it.
/// Node and Python quote a path, which may hold spaces (`Cannot find package '/…'`,
/// `File "/…"`), or give it after a space or a parenthesis (`imported from /…`).
fn path_ending_at(line: &str, at: usize, end: usize) -> Option<String> {
    let before = &line[..at];
    [before.rfind(['\'', '"']), before.rfind([' ', '('])]
        .into_iter()
        .flatten()
        .map(|i| &line[i + 1..end])
        .find(|path| path.starts_with('/') && !path.contains(['\'', '"']))
        .map(str::to_owned)
}

/// Python's last line when an import failed (the traceback's paths say where).
fn python_import_failed(line: &str) -> bool {
    ["ImportError: ", "ModuleNotFoundError: "]
        .iter()
        .any(|e| line.trim_start().starts_with(e))
}

/// The folders of uv's cache that hold the environments of uvx's tools (an environment
/// lives in `archive-vN`, linked from `environments-vN`).
const UV_ENVIRONMENT_FOLDERS: &[&str] = &["/archive-v", "/environments-v"];

/// The uv cache folder a line's path lies in: what comes before `/archive-vN/` (or
/// `/environments-vN/`) in an absolute path.
fn uv_cache(line: &str) -> Option<String> {
    UV_ENVIRONMENT_FOLDERS.iter().find_map(|folder| {
        let at = line.find(folder)?;
        let version = &line[at + folder.len()..];
        let digits = version.bytes().take_while(u8::is_ascii_digit).count();
        (digits > 0 && version[digits..].starts_with('/'))
            .then(|| path_ending_at(line, at, at))
            .flatten()
    })
}

/// The `uv` program that goes with the entry's command: `uv` itself (`uv tool run`), the
/// `uv` beside a `uvx` given by its path, else `uv` from the PATH.
fn uv_beside(command: &str) -> String {
    let path = std::path::Path::new(command);
    match path.file_name().and_then(|f| f.to_str()) {
        Some("uv") => command.to_owned(),
        Some("uvx") if path.parent().is_some_and(|p| !p.as_os_str().is_empty()) => {
            path.with_file_name("uv").to_string_lossy().into_owned()
        }
        _ => "uv".to_owned(),
    }
}

/// Does the host pass `name` to a server under `pass`?
fn passed(pass: &EnvPass, name: &str, host_env: &[(OsString, OsString)]) -> bool {
    let one: Vec<_> = host_env
        .iter()
        .filter(|(n, _)| n.to_str() == Some(name))
        .cloned()
        .collect();
    !one.is_empty() && !pass.select(one).is_empty()
}

/// The words of `stderr` shaped like a variable's name (`API_KEY`), set in `host_env`,
/// that the server is not given (`given` says no), each once.
fn not_passed(
    stderr: &[String],
    given: impl Fn(&str) -> bool,
    host_env: &[(OsString, OsString)],
) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for line in stderr {
        let words = line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
        for word in words {
            let shaped = word.len() >= 2
                && word.starts_with(|c: char| c.is_ascii_uppercase() || c == '_')
                && word
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
            if shaped
                && !names.iter().any(|n| n == word)
                && host_env.iter().any(|(n, _)| n.to_str() == Some(word))
                && !given(word)
            {
                names.push(word.to_owned());
            }
        }
    }
    names
}

/// The command that runs `spec`'s server by hand as the host runs it, for a POSIX shell:
/// in its folder, with only the environment it gets (`env -i`, the variables it is passed
/// read from the shell, its own `env` as written, a secret one read from the shell too).
pub fn by_hand(spec: &ServerSpec, host_env: &[(OsString, OsString)]) -> Option<String> {
    let Transport::Stdio {
        command,
        args,
        env,
        cwd,
        pass,
    } = &spec.transport
    else {
        return None;
    };
    let mut words: Vec<String> = Vec::new();
    if let Some(cwd) = cwd {
        words.push(format!("cd {} &&", shell_word(&cwd.to_string_lossy())));
    }
    if !pass.all {
        words.push("env -i".into());
        let mut names: Vec<String> = pass
            .select(host_env.to_vec())
            .into_iter()
            .filter_map(|(n, _)| n.into_string().ok())
            .filter(|n| !env.contains_key(n))
            .collect();
        names.sort();
        names.dedup();
        words.extend(names.iter().map(|n| format!("{n}=\"${n}\"")));
    } else if !env.is_empty() {
        words.push("env".into());
    }
    for (name, value) in env {
        if crate::redact::is_secret_name(name) {
            words.push(format!("{name}=\"${name}\""));
        } else {
            words.push(format!("{name}={}", shell_word(value)));
        }
    }
    words.push(shell_word(command).into_owned());
    words.extend(args.iter().map(|a| shell_word(a).into_owned()));
    Some(words.join(" "))
}

#[cfg(test)]
mod tests;
