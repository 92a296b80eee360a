//! Servers started through a package runner (`npx -y PKG`, `uvx PKG`, …), which download
//! the package on a first start before the server answers: such a start gets the
//! settings' `firstStartTimeoutMs` rather than `connectTimeoutMs`, and says what it waits
//! for ("installing PKG… 12 s") every [`INSTALLING_NOTE_EVERY`].
//!
//! A runner is told by the command's file name (and, for `pnpm`, `npm`, `bun` and
//! `pipx`, its first argument), never by running it.

use std::{future::Future, path::Path, time::Duration};

use tokio::time::Instant;

/// How often a start through a package runner says it is still installing.
pub const INSTALLING_NOTE_EVERY: Duration = Duration::from_secs(3);
/// The data key of the step that says so (its value: the package).
pub const INSTALLING_KEY: &str = "installing";

/// A package runner, by the program that runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunnerKind {
    /// `npx` (and `npm exec`, `npm x`), whose packages are kept in `_npx` of npm's cache.
    Npx,
    /// `uvx` (and `uv tool run`).
    Uvx,
    /// `pnpm dlx`.
    PnpmDlx,
    /// `bunx` (and `bun x`).
    Bunx,
    /// `pipx run`.
    PipxRun,
}

impl RunnerKind {
    /// The runner as a person types it.
    pub fn as_str(self) -> &'static str {
        match self {
            RunnerKind::Npx => "npx",
            RunnerKind::Uvx => "uvx",
            RunnerKind::PnpmDlx => "pnpm dlx",
            RunnerKind::Bunx => "bunx",
            RunnerKind::PipxRun => "pipx run",
        }
    }
}

/// A server command that runs a package through a runner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageRunner {
    /// Which runner.
    pub kind: RunnerKind,
    /// The package it runs, as the command names it (`@scope/name@1.2`), when it names one.
    pub package: Option<String>,
}

/// Options of the runners that take a value in the next word.
const OPTIONS_WITH_VALUE: &[&str] = &[
    "-p",
    "--package",
    "--from",
    "--with",
    "--python",
    "-c",
    "--call",
    "--spec",
    "--index-url",
    "--registry",
    "--cache",
    "--userconfig",
];

/// The first word of `args` that is not an option (nor an option's value).
fn first_operand(args: &[String]) -> Option<String> {
    let mut words = args.iter();
    let mut package = None;
    while let Some(word) = words.next() {
        if word == "--" {
            return words.next().cloned().or(package);
        }
        if OPTIONS_WITH_VALUE.contains(&word.as_str()) {
            let value = words.next();
            // `npx -p PKG cmd`, `uvx --from PKG cmd`: the package is the option's value.
            if matches!(word.as_str(), "-p" | "--package" | "--from") {
                package = value.cloned();
            }
            continue;
        }
        if word.starts_with('-') {
            continue;
        }
        return Some(package.unwrap_or_else(|| word.clone()));
    }
    package
}

/// Is `command` (with `args`) a package runner, and which package does it run?
pub fn package_runner(command: &str, args: &[String]) -> Option<PackageRunner> {
    let file = Path::new(command).file_name()?.to_str()?;
    let program = file
        .strip_suffix(".cmd")
        .or_else(|| file.strip_suffix(".exe"))
        .unwrap_or(file);
    let first = args.first().map(String::as_str);
    let (kind, rest) = match (program, first) {
        ("npx", _) => (RunnerKind::Npx, args),
        ("npm", Some("exec" | "x")) => (RunnerKind::Npx, &args[1..]),
        ("uvx", _) => (RunnerKind::Uvx, args),
        ("uv", Some("tool")) if args.get(1).map(String::as_str) == Some("run") => {
            (RunnerKind::Uvx, &args[2..])
        }
        ("pnpm", Some("dlx")) => (RunnerKind::PnpmDlx, &args[1..]),
        ("pnpx", _) => (RunnerKind::PnpmDlx, args),
        ("bunx", _) => (RunnerKind::Bunx, args),
        ("bun", Some("x")) => (RunnerKind::Bunx, &args[1..]),
        ("pipx", Some("run")) => (RunnerKind::PipxRun, &args[1..]),
        _ => return None,
    };
    Some(PackageRunner {
        kind,
        package: first_operand(rest),
    })
}

/// Run `attempt`, calling `note` with the time so far every [`INSTALLING_NOTE_EVERY`]
/// until it ends.
pub(crate) async fn noting<F: Future>(attempt: F, note: impl Fn(Duration)) -> F::Output {
    noting_every(attempt, INSTALLING_NOTE_EVERY, note).await
}

/// As [`noting`], every `every`; an attempt that ends at a note's time is not noted.
async fn noting_every<F: Future>(
    attempt: F,
    every: Duration,
    note: impl Fn(Duration),
) -> F::Output {
    tokio::pin!(attempt);
    let started = Instant::now();
    let mut ticks = tokio::time::interval_at(started + every, every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            biased;
            done = &mut attempt => return done,
            _ = ticks.tick() => note(started.elapsed()),
        }
    }
}

#[cfg(test)]
mod tests;
