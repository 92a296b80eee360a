//! What one start of a boxed server may touch, resolved by the host before the start and
//! handed to the launcher: the paths it may read (and run), those it may also write, the
//! network and the limits.
//!
//! Read-only by default: the system's folders (`/usr`, `/etc`, `/proc`…), each folder on
//! the server's `PATH` (and the one above a `bin` or a version manager's `shims`), the program's own installation (the folder above its `bin`, so a
//! virtualenv's packages or npm's own code come along), each existing file or folder its
//! arguments name (a file's folder, and for a script inside an npm install the outermost
//! `node_modules` it is in), and its working folder. Writable: a temporary folder of its own
//! (`TMPDIR`), `/dev/null` and the like, and its package runner's caches (npx: npm's
//! cache; uvx: uv's cache and tools; pipx: pip's cache and pipx's home). A default folder
//! that is the home folder itself, or holds a secret folder (`~/.ssh`, `~/.aws`…), the
//! host's own state, or a project's policy (its `.mcp.json`, its `.gatehouse`), is left
//! out: the box would let the server read it whole. What the
//! entry names in `read` and `write` is kept as written.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use crate::{
    config::Sandbox,
    connect::runner::{RunnerKind, package_runner},
};

/// The system's folders every boxed server may read (those that exist).
const SYSTEM_READ: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/proc", "/sys", "/opt",
];
/// The devices every boxed server may write.
const SYSTEM_WRITE: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/urandom",
    "/dev/random",
];
/// Folders under the home folder that hold secrets (or a browser's profile): never in a
/// box by default, nor any folder above them.
pub const SECRET_FOLDERS: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gcloud",
    ".azure",
    ".kube",
    ".docker",
    ".password-store",
    ".netrc",
    ".git-credentials",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".local/share/keyrings",
    ".cargo/credentials.toml",
    ".cargo/credentials",
    ".config/gh",
    ".npmrc",
    ".pypirc",
    ".config/gatehouse",
    ".local/state/gatehouse",
    ".gatehouse",
];

/// One start's box, as the launcher applies it: the entry's [`Sandbox`] with every path the
/// start may read and write in its folders.
pub type Plan = Sandbox;

/// What a start is made of, as the host knows it before it starts.
pub struct Start<'a> {
    /// The program, as the entry names it.
    pub command: &'a str,
    /// Its arguments.
    pub args: &'a [String],
    /// The folder it runs in (the host's own when the entry names none).
    pub cwd: &'a Path,
    /// Its environment (its `PATH`, `HOME`, cache variables).
    pub env: &'a BTreeMap<String, String>,
    /// Its own temporary folder, made writable.
    pub tmp: &'a Path,
    /// The person's home folder, whose secrets stay out.
    pub home: Option<&'a Path>,
}

/// The box of `start` under `sandbox`.
pub fn resolve(sandbox: &Sandbox, start: &Start<'_>) -> Plan {
    let keep = |p: &Path| !holds_a_secret(p, start.home);
    let mut read: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
    if let Some(path) = start.env.get("PATH") {
        for dir in std::env::split_paths(path).filter(|p| p.is_absolute()) {
            // A version manager's shims (pyenv, asdf) and a `bin` run what lies beside.
            if dir.file_name().is_some_and(|n| n == "shims" || n == "bin") {
                read.extend(dir.parent().map(Path::to_path_buf));
            }
            read.push(dir);
        }
    }
    if let Some(program) = find_program(start.command, start.env.get("PATH"), start.cwd) {
        read.extend(installation(&program));
        if let Ok(real) = program.canonicalize() {
            read.extend(installation(&real));
        }
    }
    for arg in start.args {
        let path = start.cwd.join(arg);
        if arg.starts_with('-') || !path.exists() {
            continue;
        }
        // A script inside an npm install needs the packages beside it.
        if let Some(modules) = top_node_modules(&path) {
            read.push(modules);
        }
        read.push(match path.is_dir() {
            true => path,
            false => path.parent().map(Path::to_path_buf).unwrap_or(path),
        });
    }
    read.push(start.cwd.to_path_buf());
    let mut write: Vec<PathBuf> = SYSTEM_WRITE.iter().map(PathBuf::from).collect();
    write.push(start.tmp.to_path_buf());
    write.extend(runner_caches(start));
    read.retain(|p| keep(p));
    write.retain(|p| keep(p));
    read.extend(sandbox.read.iter().cloned());
    write.extend(sandbox.write.iter().cloned());
    for list in [&mut read, &mut write] {
        list.sort();
        list.dedup();
    }
    Plan {
        read,
        write,
        ..sandbox.clone()
    }
}

/// What makes a project's policy: a folder that holds one of these holds the policy a
/// server must not read or rewrite (its servers file, its `.gatehouse`).
pub const POLICY_FILES: &[&str] = &[".gatehouse", ".mcp.json", "gatehouse.json"];

/// Is `path` the home folder, above a secret folder of it (or one itself), or a folder
/// that holds a project's policy?
pub(super) fn holds_a_secret(path: &Path, home: Option<&Path>) -> bool {
    if POLICY_FILES.iter().any(|f| path.join(f).exists()) {
        return true;
    }
    let Some(home) = home else {
        return false;
    };
    if home.starts_with(path) {
        return true;
    }
    SECRET_FOLDERS.iter().any(|s| {
        let secret = home.join(s);
        secret.starts_with(path) || path.starts_with(&secret)
    })
}

/// Does `command` name a program there is, as a start would look for it (itself when it
/// holds a `/`, else on its `PATH`)?
pub fn resolves(command: &str, env: &BTreeMap<String, String>, cwd: &Path) -> bool {
    find_program(command, env.get("PATH"), cwd).is_some_and(|p| p.is_file())
}

/// The program a command names: itself when it holds a `/`, else the first executable of
/// that name on `path` (the host's own when the server's environment has none, as a
/// program is looked for when started).
fn find_program(command: &str, path: Option<&String>, cwd: &Path) -> Option<PathBuf> {
    if command.contains('/') {
        return Some(cwd.join(command));
    }
    let path = path.cloned().or_else(|| std::env::var("PATH").ok())?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(command))
        .find(|p| p.is_file())
}

/// A program's installation: the folder above its `bin` (a virtualenv, a Node install,
/// npm's own package), else its folder.
fn installation(program: &Path) -> Option<PathBuf> {
    let dir = program.parent()?;
    match dir.file_name().and_then(|n| n.to_str()) {
        Some("bin") => dir.parent().map(Path::to_path_buf),
        _ => Some(dir.to_path_buf()),
    }
}

/// The outermost `node_modules` folder `path` is inside, where Node looks for the
/// packages a script inside it requires.
fn top_node_modules(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
        .last()
        .map(Path::to_path_buf)
}

/// The caches the start's package runner writes, from its environment (or the runner's
/// defaults under `HOME`).
fn runner_caches(start: &Start<'_>) -> Vec<PathBuf> {
    let Some(runner) = package_runner(start.command, start.args) else {
        return Vec::new();
    };
    let env = |name: &str| start.env.get(name).map(PathBuf::from);
    let home = env("HOME").or_else(|| start.home.map(Path::to_path_buf));
    let under_home = |rel: &str| home.as_ref().map(|h| h.join(rel));
    let xdg_cache = env("XDG_CACHE_HOME").or_else(|| under_home(".cache"));
    let xdg_data = env("XDG_DATA_HOME").or_else(|| under_home(".local/share"));
    let found: Vec<Option<PathBuf>> = match runner.kind {
        RunnerKind::Npx => vec![
            env("npm_config_cache")
                .or_else(|| env("NPM_CONFIG_CACHE"))
                .or_else(|| under_home(".npm")),
        ],
        RunnerKind::Uvx => vec![
            env("UV_CACHE_DIR").or_else(|| xdg_cache.as_ref().map(|c| c.join("uv"))),
            env("UV_TOOL_DIR").or_else(|| xdg_data.as_ref().map(|d| d.join("uv"))),
            env("UV_PYTHON_INSTALL_DIR"),
        ],
        RunnerKind::PipxRun => vec![
            env("PIP_CACHE_DIR").or_else(|| xdg_cache.as_ref().map(|c| c.join("pip"))),
            env("PIPX_HOME").or_else(|| xdg_data.as_ref().map(|d| d.join("pipx"))),
            xdg_cache.as_ref().map(|c| c.join("pipx")),
        ],
        RunnerKind::PnpmDlx => vec![
            xdg_cache.as_ref().map(|c| c.join("pnpm")),
            xdg_data.as_ref().map(|d| d.join("pnpm")),
        ],
        RunnerKind::Bunx => vec![env("BUN_INSTALL").or_else(|| under_home(".bun"))],
    };
    found
        .into_iter()
        .flatten()
        .filter(|p| p.is_absolute())
        .collect()
}

/// With the network off, the variables that tell the start's package runner so, for it to
/// use what its cache holds rather than wait on a registry it cannot reach (npm retries
/// for over a minute first).
pub fn offline(command: &str, args: &[String]) -> &'static [(&'static str, &'static str)] {
    match package_runner(command, args).map(|r| r.kind) {
        Some(RunnerKind::Npx) => &[("npm_config_offline", "true")],
        Some(RunnerKind::Uvx) => &[("UV_OFFLINE", "1")],
        Some(RunnerKind::PipxRun) => &[("PIP_NO_INDEX", "1")],
        Some(RunnerKind::PnpmDlx) => &[("npm_config_offline", "true")],
        Some(RunnerKind::Bunx) | None => &[],
    }
}
