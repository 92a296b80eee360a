//! The launcher's side of the box: confine this process as a [`Plan`] says, then exec the
//! server's program. Each step that cannot be applied stops the start with the step's name
//! on stderr (which the host shows as the server's last words) and exit status
//! [`CANNOT_BOX`]: never a run without the box.
//!
//! In order: a user namespace of its own (so the limits on processes count its processes
//! only) and, with the network off, a network namespace with nothing in it; the resource
//! limits; then Landlock with `no_new_privs`: file-system rights only beneath the plan's
//! paths, no TCP with the network off, and no abstract Unix socket or signal reaching
//! outside the box; last a seccomp filter that refuses to make a Unix socket (one reached
//! by its path, which Landlock does not govern). Landlock also keeps the box from `ptrace`
//! of any process outside it, and so from the host's `/proc/PID/environ` and memory.

use std::ffi::OsString;

use super::Plan;

/// The launcher's first argument: `gatehouse __box PLAN -- PROGRAM ARGS…`.
pub const BOX_ARG: &str = "__box";
/// The launcher's exit status when a part of the box cannot be applied (as a shell's for a
/// command that cannot run).
pub const CANNOT_BOX: i32 = 126;

/// Apply the box in `argv` (`[launcher, BOX_ARG, PLAN, "--", PROGRAM, ARGS…]`) and exec
/// the program; returns only by exiting.
pub fn exec_boxed(argv: Vec<OsString>) -> ! {
    let code = match boxed(argv) {
        Ok(never) => match never {},
        Err(why) => {
            eprintln!("gatehouse box: {why}; the server was not started");
            CANNOT_BOX
        }
    };
    std::process::exit(code)
}

fn boxed(argv: Vec<OsString>) -> Result<std::convert::Infallible, String> {
    let mut args = argv.into_iter().skip(2);
    let plan = args
        .next()
        .and_then(|p| p.into_string().ok())
        .ok_or("no plan given")?;
    let plan: Plan = serde_json::from_str(&plan).map_err(|e| format!("a bad plan: {e}"))?;
    if args.next().is_none_or(|dashes| dashes != "--") {
        return Err("no `--` before the program".into());
    }
    let program = args.next().ok_or("no program given")?;
    let rest: Vec<OsString> = args.collect();
    apply(&plan)?;
    let err =
        std::os::unix::process::CommandExt::exec(std::process::Command::new(&program).args(&rest));
    Err(format!(
        "cannot run {} in the box: {err}",
        program.to_string_lossy()
    ))
}

#[cfg(target_os = "linux")]
fn apply(plan: &Plan) -> Result<(), String> {
    linux::namespaces(plan.network)?;
    linux::limits(plan)?;
    linux::landlock(plan)?;
    linux::no_unix_sockets()
}

#[cfg(not(target_os = "linux"))]
fn apply(_plan: &Plan) -> Result<(), String> {
    Err(format!(
        "this platform ({}) has no sandbox Gatehouse can apply (Landlock is Linux's)",
        std::env::consts::OS
    ))
}

/// What this machine can apply, in words, one line a part (for `doctor`).
pub fn what_this_machine_applies() -> Vec<(String, Result<String, String>)> {
    #[cfg(target_os = "linux")]
    {
        linux::probe()
    }
    #[cfg(not(target_os = "linux"))]
    {
        vec![(
            "sandbox".into(),
            Err(format!("none on {}", std::env::consts::OS)),
        )]
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
        RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
    };

    use super::super::Plan;
    use crate::config::Network;

    /// The Landlock file-system rights asked for: those of ABI 5 (refer, truncate, device
    /// ioctls), each required.
    const FS_ABI: ABI = ABI::V5;

    pub(super) fn namespaces(network: Network) -> Result<(), String> {
        // SAFETY: geteuid and getegid cannot fail.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let mut flags = libc::CLONE_NEWUSER;
        if network == Network::Off {
            flags |= libc::CLONE_NEWNET;
        }
        // SAFETY: unshare takes flags only; the launcher is single-threaded here.
        if unsafe { libc::unshare(flags) } != 0 {
            let e = std::io::Error::last_os_error();
            let what = match network {
                Network::Off => "a user and a network namespace (network off)",
                Network::On => "a user namespace",
            };
            return Err(format!("cannot make {what}: {e}"));
        }
        // The person stays themselves inside: their own ids mapped to themselves.
        let write = |file: &str, text: String| {
            std::fs::write(format!("/proc/self/{file}"), text)
                .map_err(|e| format!("cannot write /proc/self/{file}: {e}"))
        };
        write("setgroups", "deny".into())?;
        write("uid_map", format!("{uid} {uid} 1"))?;
        write("gid_map", format!("{gid} {gid} 1"))
    }

    pub(super) fn limits(plan: &Plan) -> Result<(), String> {
        let mut set = vec![
            (libc::RLIMIT_NPROC, plan.processes, "processes"),
            (libc::RLIMIT_NOFILE, plan.open_files, "open files"),
        ];
        if let Some(mb) = plan.memory_mb {
            set.push((libc::RLIMIT_DATA, mb.saturating_mul(1 << 20), "memory"));
        }
        for (resource, value, what) in set {
            let limit = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            // SAFETY: a plain struct passed by pointer.
            if unsafe { libc::setrlimit(resource, &limit) } != 0 {
                let e = std::io::Error::last_os_error();
                return Err(format!("cannot bound {what} to {value}: {e}"));
            }
        }
        Ok(())
    }

    pub(super) fn landlock(plan: &Plan) -> Result<(), String> {
        let part = |what: &'static str| move |e: landlock::RulesetError| format!("{what}: {e}");
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(FS_ABI))
            .map_err(part("Landlock file-system rules (ABI 5) are not available"))?
            .scope(Scope::AbstractUnixSocket | Scope::Signal)
            .map_err(part(
                "Landlock's scoping of abstract Unix sockets and signals (ABI 6) is not available",
            ))?;
        if plan.network == Network::Off {
            ruleset = ruleset
                .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
                .map_err(part("Landlock's TCP rules (ABI 4) are not available"))?;
        }
        let existing = |paths: &[std::path::PathBuf]| -> Vec<std::path::PathBuf> {
            paths.iter().filter(|p| p.exists()).cloned().collect()
        };
        let status = ruleset
            .create()
            .map_err(part("cannot make a Landlock ruleset"))?
            .add_rules(path_beneath_rules(
                existing(&plan.read),
                AccessFs::from_read(FS_ABI),
            ))
            .map_err(part("cannot add the folders it may read"))?
            .add_rules(path_beneath_rules(
                existing(&plan.write),
                AccessFs::from_all(FS_ABI),
            ))
            .map_err(part("cannot add the folders it may write"))?
            .restrict_self()
            .map_err(part("cannot enforce the Landlock rules"))?;
        match (status.ruleset, status.no_new_privs) {
            (RulesetStatus::FullyEnforced, true) => Ok(()),
            (ruleset, no_new_privs) => Err(format!(
                "Landlock was not fully enforced ({ruleset:?}, no_new_privs {no_new_privs})"
            )),
        }
    }

    /// No Unix socket can be made: Landlock (to ABI 7) does not govern connecting to one by
    /// its path, so a boxed server could reach the Docker daemon, an SSH agent or the
    /// session bus. A pair of connected ones (`socketpair`, which runtimes use among their
    /// own threads and children) reaches nothing outside and stays allowed.
    pub(super) fn no_unix_sockets() -> Result<(), String> {
        use seccompiler::{
            BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
            SeccompFilter, SeccompRule, TargetArch,
        };
        let part =
            |e: &dyn std::fmt::Display| format!("cannot shut Unix sockets out with seccomp: {e}");
        let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| part(&e))?;
        let unix = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            libc::AF_UNIX as u64,
        )
        .map_err(|e| part(&e))?;
        let rule = SeccompRule::new(vec![unix]).map_err(|e| part(&e))?;
        let filter = SeccompFilter::new(
            [(libc::SYS_socket, vec![rule])].into(),
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EACCES as u32),
            arch,
        )
        .map_err(|e| part(&e))?;
        let program: BpfProgram = filter
            .try_into()
            .map_err(|e: seccompiler::BackendError| part(&e))?;
        seccompiler::apply_filter(&program).map_err(|e| part(&e))
    }

    /// Each part of the box, and whether this machine applies it.
    pub(super) fn probe() -> Vec<(String, Result<String, String>)> {
        // SAFETY: the documented way to ask the kernel for its Landlock ABI.
        let abi = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<u8>(),
                0usize,
                1u32, // LANDLOCK_CREATE_RULESET_VERSION
            )
        };
        let landlock = match abi {
            v if v >= 6 => Ok(format!("Landlock ABI {v}: files, TCP, sockets and signals")),
            v if v > 0 => Err(format!(
                "Landlock ABI {v}: the box needs ABI 6 (abstract sockets and signals scoped)"
            )),
            _ => Err(format!(
                "Landlock is not enabled in this kernel ({})",
                std::io::Error::last_os_error()
            )),
        };
        let userns = std::fs::read_to_string("/proc/sys/user/max_user_namespaces")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok());
        let namespaces = match userns {
            Some(n) if n > 0 => Ok(format!("user and network namespaces (up to {n})")),
            _ => Err("user namespaces are off (/proc/sys/user/max_user_namespaces)".into()),
        };
        vec![
            ("sandbox: Landlock".into(), landlock),
            ("sandbox: namespaces".into(), namespaces),
        ]
    }
}
