//! What the `gatehouse` binary does first, while it still has one thread: the process
//! made unreadable to the processes it starts (`dumpable`), and the secrets it does not
//! need taken out of its environment (`secrets`).

pub(crate) mod dumpable;
mod secrets;

pub(crate) use secrets::variable;

use crate::args::Command;

/// Harden this process before `command` runs. Called first in `main`, before any thread
/// starts: taking a variable out of the environment is only sound then.
pub(crate) fn process(command: &Command) {
    dumpable::forbid_or_warn("gatehouse");
    secrets::drop_unneeded(command);
}
