//! Servers in a box: a stdio server confined to what its entry's `sandbox` allows (the
//! folders it may read and write, the network, processes and open files), failing closed.
//!
//! The box is applied in a small re-exec step between the host and the server's program:
//! the host starts its own binary as the launcher (`gatehouse __box PLAN -- PROGRAM
//! ARGS…`, [`set_launcher`]), which confines itself ([`enter`]: a user and, with the
//! network off, a network namespace; resource limits; `no_new_privs`; Landlock, whose
//! rules bind the process and everything it execs) and then execs the program, its stdin
//! and stdout passed through untouched. Landlock confines the calling thread, and the host
//! is a many-threaded tokio program where nothing may allocate between fork and exec, so
//! the launcher is a fresh single-threaded process rather than a `pre_exec` hook.
//!
//! What is allowed is resolved by the host before the start ([`plan`]): the system's
//! read-only folders, the program's own installation, the files its arguments name, its
//! folder, a temporary folder of its own, its package runner's caches, and what the entry
//! adds. Nothing else of the person's home is in it (so neither `~/.ssh` nor the host's
//! own state), and a part this machine cannot apply stops the start with its name: never a
//! run without the box.

mod enter;
pub mod plan;
pub mod walls;

use std::{path::PathBuf, sync::OnceLock};

pub use enter::{BOX_ARG, exec_boxed, what_this_machine_applies};
pub use plan::Plan;

use crate::config::Sandbox;

/// How a boxed server is started: the launcher, its arguments (the plan, then the
/// server's own command line), and the server's temporary folder (its `TMPDIR`).
#[derive(Debug)]
pub struct Boxed {
    /// The launcher.
    pub program: PathBuf,
    /// `__box PLAN -- COMMAND ARGS…`.
    pub args: Vec<String>,
    /// Made for the server, writable in its box.
    pub tmp: PathBuf,
    /// Variables the server's environment gets besides (`TMPDIR`; with the network off,
    /// its package runner told to stay offline, [`plan::offline`]).
    pub env: Vec<(String, String)>,
}

/// The launcher's command line for server `server`'s start of `command` `args` in `cwd`
/// with `env`, boxed as `sandbox` says; the folders it writes made first (Landlock binds
/// a rule to a folder that exists). An error names what is missing.
pub fn boxed(
    sandbox: &Sandbox,
    server: &str,
    (command, args): (&str, &[String]),
    cwd: Option<&std::path::Path>,
    env: &std::collections::BTreeMap<String, String>,
) -> Result<Boxed, String> {
    let program = launcher()
        .cloned()
        .ok_or("this program cannot start servers in a box (no launcher is set)")?;
    let cwd = match cwd {
        Some(c) => c.to_path_buf(),
        None => std::env::current_dir().map_err(|e| format!("no working folder: {e}"))?,
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let tmp = box_tmp(server)?;
    let start = plan::Start {
        command,
        args,
        cwd: &cwd,
        env,
        tmp: &tmp,
        home: home.as_deref(),
    };
    let plan = plan::resolve(sandbox, &start);
    // The runner's caches are made as the runner would make them; what the entry names
    // may be a file, and is left as it is.
    for folder in plan.write.iter().filter(|f| !sandbox.write.contains(f)) {
        if !folder.exists() {
            std::fs::create_dir_all(folder)
                .map_err(|e| format!("cannot make {}: {e}", folder.display()))?;
        }
    }
    let mut env = vec![("TMPDIR".to_string(), tmp.display().to_string())];
    if plan.network == crate::config::Network::Off {
        let offline = plan::offline(command, args);
        env.extend(offline.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    }
    walls::remember(server, &plan);
    let plan = serde_json::to_string(&plan).map_err(|e| e.to_string())?;
    let mut line = vec![BOX_ARG.to_string(), plan, "--".into(), command.to_string()];
    line.extend(args.iter().cloned());
    Ok(Boxed {
        program,
        args: line,
        tmp,
        env,
    })
}

/// A server's own temporary folder: one per server name and person, 0700, under the
/// system's temporary folder, kept between starts (so its size is the server's own).
fn box_tmp(server: &str) -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let name: String = server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let root = std::env::temp_dir().join(format!("gatehouse-box-{uid}"));
    let tmp = root.join(name);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&tmp)
        .map_err(|e| format!("cannot make its temporary folder {}: {e}", tmp.display()))?;
    // Another user's folder of that name (made first to catch the server's files) is refused.
    let owner = std::os::unix::fs::MetadataExt::uid(
        &std::fs::symlink_metadata(&root).map_err(|e| e.to_string())?,
    );
    if owner != uid {
        return Err(format!("{} belongs to another user", root.display()));
    }
    Ok(tmp)
}

static LAUNCHER: OnceLock<PathBuf> = OnceLock::new();

/// The program that applies a box and then execs the server: the binary that embeds the
/// host, which answers [`BOX_ARG`] with [`exec_boxed`]. Set once, at its start.
pub fn set_launcher(path: PathBuf) {
    let _ = LAUNCHER.set(path);
}

/// The launcher, if the binary set one.
pub fn launcher() -> Option<&'static PathBuf> {
    LAUNCHER.get()
}

#[cfg(test)]
mod tests;
