//! The process made unreadable to the processes it starts: not dumpable, so its `/proc`
//! files (`environ`, `mem`, `maps`, `fd`…) belong to root and `ptrace` is refused to
//! anyone of the same user without `CAP_SYS_PTRACE`. A server started with `execve` is
//! dumpable again (the kernel resets the flag), so only this process is closed.
//!
//! Shared, by path, by the `gatehouse` binary and the `gatehouse-servers` binary.

/// Make this process not dumpable (Linux: `prctl(PR_SET_DUMPABLE, 0)`). It also means no
/// core file is written if the process crashes, and a debugger or `perf` attaching to it
/// needs root. On other systems nothing is done; the error is the kernel's refusal.
pub(crate) fn forbid() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: PR_SET_DUMPABLE takes one integer argument and touches no memory of ours.
        let status = unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
        if status != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// [`forbid`], a refusal said on stderr: the process still runs, its `/proc` files as
/// readable as any process's of its user.
pub(crate) fn forbid_or_warn(program: &str) {
    if let Err(e) = forbid() {
        eprintln!(
            "{program}: cannot make this process unreadable to its servers (PR_SET_DUMPABLE: {e}); they can read its memory and environment"
        );
    }
}
