//! Why a stdio server stopped, read from its last words on stderr, with the exact fix: a
//! package runner's cache left half-written (npx's `_npx` folder, uv's cache), a variable
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
    /// uv's cache holds a broken copy of the package.
    BrokenUvCache {
        /// The package, as the command names it.
        package: Option<String>,
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
            Cause::BrokenUvCache { package } => format!(
                "uv's cache holds a broken copy of the package: `uv cache clean{}`, then start it again",
                package
                    .as_deref()
                    .map(|p| format!(" {}", shell_word(p)))
                    .unwrap_or_default()
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
    let runner = runner::package_runner(command, args);
    if let Some(runner) = runner.filter(|r| r.kind == RunnerKind::Uvx)
        && stderr.iter().any(|l| names_uv_cache(l))
    {
        return Some(Cause::BrokenUvCache {
            package: runner.package,
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
    // Node quotes the path, which may hold spaces (`Cannot find package '/…/_npx/…'`),
    // or gives it after a quoted name (`'zod' imported from /…/_npx/…`).
    let before = &line[..at];
    let end = at + 6 + hash_len;
    [before.rfind(['\'', '"']), before.rfind([' ', '('])]
        .into_iter()
        .flatten()
        .map(|i| &line[i + 1..end])
        .find(|folder| folder.starts_with('/') && !folder.contains(['\'', '"']))
        .map(str::to_owned)
}

/// Does a line name a folder of uv's cache (`archive-v0`, `wheels-v5`, …) in an error?
fn names_uv_cache(line: &str) -> bool {
    [
        "/uv/archive-v",
        "/uv/wheels-v",
        "/uv/builds-v",
        "/uv/environments-v",
    ]
    .iter()
    .any(|folder| line.contains(folder))
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
