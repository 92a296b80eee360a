//! A stdio server's processes as one group: started in a process group of its own, and
//! stopped as a whole and gently — SIGTERM to every process of the group, [`STOP_GRACE`]
//! to exit, then SIGKILL — so that a package runner stopped in the middle of a download
//! (npx, uvx) gets the chance to leave its cache whole, and nothing it started is left
//! behind. A group dropped without a stop is stopped the same way by a task of its own;
//! one whose output has ended ([`Group::leaving`]) is first let exit by itself, so what it
//! still says on stderr about why it stopped is heard, not cut off by a SIGTERM.

use std::{io, process::ExitStatus, time::Duration};

use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

/// How long a server's processes get to exit after SIGTERM before they are killed.
pub const STOP_GRACE: Duration = Duration::from_secs(3);

/// A started server: its first process, which leads the group.
#[derive(Debug)]
pub(crate) struct Group {
    child: Option<Child>,
    /// The group's id (the first process's pid); none once it could not be read.
    pgid: Option<i32>,
    /// Cancelled once the first process has been waited for.
    reaped: CancellationToken,
    /// Its output has ended: the server is on its way out ([`Group::leaving`]).
    leaving: bool,
}

/// Stops a group from outside the transport that owns it (a start that ran out of time).
#[derive(Debug, Clone)]
pub(crate) struct Stopper {
    pgid: Option<i32>,
    reaped: CancellationToken,
}

/// Send `signal` to every process of the group `pgid`.
fn signal_group(pgid: Option<i32>, signal: i32) {
    #[cfg(unix)]
    if let Some(pgid) = pgid.filter(|p| *p > 1) {
        // SAFETY: `kill` only sends a signal. The group is the one this host started
        // (its leader's pid, held by the kernel while any member lives); a negative id
        // names the group, never another process.
        unsafe {
            libc::kill(-pgid, signal);
        }
    }
    #[cfg(not(unix))]
    let _ = (pgid, signal);
}

#[cfg(unix)]
const TERM: i32 = libc::SIGTERM;
#[cfg(unix)]
const KILL: i32 = libc::SIGKILL;
#[cfg(not(unix))]
const TERM: i32 = 15;
#[cfg(not(unix))]
const KILL: i32 = 9;

impl Group {
    /// Start `command` as the leader of a new process group.
    pub(crate) fn spawn(command: &mut Command) -> io::Result<Group> {
        #[cfg(unix)]
        command.process_group(0);
        let child = command.spawn()?;
        let pgid = child.id().and_then(|id| i32::try_from(id).ok());
        Ok(Group {
            child: Some(child),
            pgid,
            reaped: CancellationToken::new(),
            leaving: false,
        })
    }

    /// The first process, for its pipes and its id.
    pub(crate) fn child(&mut self) -> &mut Child {
        self.child
            .as_mut()
            .expect("a group has its child until dropped")
    }

    /// Wait for the first process to exit.
    pub(crate) async fn wait(&mut self) -> io::Result<ExitStatus> {
        let status = self.child().wait().await;
        self.reaped.cancel();
        status
    }

    /// SIGTERM to the whole group.
    pub(crate) fn terminate(&self) {
        signal_group(self.pgid, TERM);
    }

    /// SIGTERM to the group, [`STOP_GRACE`] for its first process to exit, then SIGKILL
    /// to whatever of the group is left.
    pub(crate) async fn stop(&mut self) -> io::Result<()> {
        self.terminate();
        let _ = tokio::time::timeout(STOP_GRACE, self.wait()).await;
        signal_group(self.pgid, KILL);
        self.wait().await.map(drop)
    }

    /// The server's output has ended (it closed its stdout, or is exiting): when dropped
    /// before its first process has been reaped, the group is not signalled at once, but
    /// its first process gets [`STOP_GRACE`] to exit by itself. Between closing its stdout
    /// and being reapable an exiting process is neither gone nor running, and a SIGTERM
    /// then killed the rest of its group before it said why on stderr.
    pub(crate) fn leaving(&mut self) {
        self.leaving = true;
    }

    /// A handle that stops the group from elsewhere.
    pub(crate) fn stopper(&self) -> Stopper {
        Stopper {
            pgid: self.pgid,
            reaped: self.reaped.clone(),
        }
    }
}

impl Stopper {
    /// Stop the group unless its first process is gone already: SIGTERM, [`STOP_GRACE`]
    /// for it to be waited for (by the task of a dropped [`Group`]), then SIGKILL.
    pub(crate) async fn stop(&self) {
        if self.reaped.is_cancelled() {
            return;
        }
        signal_group(self.pgid, TERM);
        if tokio::time::timeout(STOP_GRACE, self.reaped.cancelled())
            .await
            .is_err()
        {
            signal_group(self.pgid, KILL);
        }
    }
}

impl Drop for Group {
    /// The group is stopped by a task: a first process still running gets SIGTERM with
    /// its group now, and whatever is left gets SIGKILL after [`STOP_GRACE`]. When the
    /// first process has exited already, the rest of its group keeps the grace to finish
    /// (a last line on stderr) before SIGKILL; when it is leaving, it gets the grace to
    /// exit first (then the same), and SIGTERM only if it does not. Without a runtime,
    /// SIGKILL at once.
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let (pgid, reaped, leaving) = (self.pgid, self.reaped.clone(), self.leaving);
        let mut exited = reaped.is_cancelled() || matches!(child.try_wait(), Ok(Some(_)));
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            signal_group(pgid, KILL);
            let _ = child.start_kill();
            return;
        };
        if !exited && !leaving {
            signal_group(pgid, TERM);
        }
        runtime.spawn(async move {
            if leaving && !exited {
                exited = tokio::time::timeout(STOP_GRACE, child.wait()).await.is_ok();
                if !exited {
                    // Its stdout closed, yet it stays: stopped as any other.
                    signal_group(pgid, TERM);
                }
            }
            if exited {
                tokio::time::sleep(STOP_GRACE).await;
            } else {
                let _ = tokio::time::timeout(STOP_GRACE, child.wait()).await;
            }
            signal_group(pgid, KILL);
            let _ = child.wait().await;
            reaped.cancel();
        });
    }
}

#[cfg(all(test, unix))]
mod tests;
