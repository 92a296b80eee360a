//! Servers started through a package runner (`npx -y PKG`, `uvx PKG`, …), which download
//! the package on a first start before the server answers: such a start gets the
//! settings' `firstStartTimeoutMs` rather than `connectTimeoutMs`, and says that it is
//! still starting ("still starting after 12 s (npx may be downloading PKG on a first
//! start…)") every [`STILL_STARTING_NOTE_EVERY`]. Whether this start downloads is not
//! known: a warm start can be as slow (a Python server's imports, a loaded machine), and
//! the runners' caches are keyed by what they resolved, not by what the command names.
//!
//! A runner is told by the command's file name (and, for `pnpm`, `npm`, `bun` and
//! `pipx`, its first argument), never by running it.

use std::{future::Future, path::Path, time::Duration};

use tokio::time::Instant;

/// How often a start through a package runner says it is still starting.
pub const STILL_STARTING_NOTE_EVERY: Duration = Duration::from_secs(3);
/// The environment variable that sets that period, in milliseconds, from
/// [`MIN_NOTE_EVERY_MS`] to [`MAX_NOTE_EVERY_MS`] (a test whose download may be quick).
pub const NOTE_EVERY_ENV: &str = "GATEHOUSE_STILL_STARTING_NOTE_MS";
/// The shortest period [`NOTE_EVERY_ENV`] may set.
pub const MIN_NOTE_EVERY_MS: u64 = 100;
/// The longest period [`NOTE_EVERY_ENV`] may set.
pub const MAX_NOTE_EVERY_MS: u64 = 60_000;
/// The data key of the step that says so (its value: the package).
pub const STILL_STARTING_KEY: &str = "still_starting";

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

/// The period of the notes: [`NOTE_EVERY_ENV`]'s value `set`, else
/// [`STILL_STARTING_NOTE_EVERY`]; a value that is not a whole number of milliseconds in
/// range is refused with the reason.
pub fn note_every(set: Option<&str>) -> Result<Duration, String> {
    let Some(text) = set else {
        return Ok(STILL_STARTING_NOTE_EVERY);
    };
    match text.trim().parse::<u64>() {
        Ok(ms) if (MIN_NOTE_EVERY_MS..=MAX_NOTE_EVERY_MS).contains(&ms) => {
            Ok(Duration::from_millis(ms))
        }
        _ => Err(format!(
            "{NOTE_EVERY_ENV}={:?} is not a number of milliseconds from {MIN_NOTE_EVERY_MS} to {MAX_NOTE_EVERY_MS}: the notes of a slow start come every {}",
            crate::text::visible_line(text),
            crate::text::seconds(STILL_STARTING_NOTE_EVERY)
        )),
    }
}

/// What a start through `runner` that has not answered after `so_far` (of the `allowed`)
/// says: that it is still starting, and that the runner may be downloading, never that
/// it is.
pub fn still_starting(runner: &PackageRunner, so_far: Duration, allowed: Duration) -> String {
    let package = runner.package.as_deref().unwrap_or("its package");
    // In tenths: a note comes a few microseconds after its period.
    let shown = Duration::from_millis((so_far.as_millis() as u64 + 50) / 100 * 100);
    format!(
        "still starting after {} ({} may be downloading {package} on a first start; allowed {})",
        crate::text::seconds(shown),
        runner.kind.as_str(),
        crate::text::seconds(allowed),
    )
}

/// Run `attempt`, calling `note` with the time so far every `every` until it ends; an
/// attempt that ends at a note's time is not noted.
pub(crate) async fn noting_every<F: Future>(
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
