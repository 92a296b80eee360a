//! Why a server could not be used, in words a person can act on. A URL is shown without
//! its credentials; a server's last stderr lines explain a failed start.

use crate::config::ServerName;

/// Why a server could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The command could not be started.
    #[error("server {server}: cannot start `{command}`: {reason}")]
    Spawn {
        /// The server's name.
        server: ServerName,
        /// The command, as the servers file gives it.
        command: String,
        /// Why it did not start.
        reason: String,
    },
    /// It started but the start-up exchange failed.
    #[error("server {server}: {reason}{}", tail_text(.stderr))]
    Handshake {
        /// The server's name.
        server: ServerName,
        /// What went wrong, in words.
        reason: String,
        /// Its last stderr lines.
        stderr: Vec<String>,
    },
    /// An HTTP server could not be reached or refused.
    #[error("server {server} at {}: {reason}", crate::redact::url(.url))]
    Http {
        /// The server's name.
        server: ServerName,
        /// Its URL (shown without credentials).
        url: String,
        /// What went wrong, in words.
        reason: String,
    },
    /// No answer in time; its processes were stopped.
    #[error("server {server}: no answer within {seconds:.1} s of starting{}{}", runner_text(.runner), tail_text(.stderr))]
    Timeout {
        /// The server's name.
        server: ServerName,
        /// The time limit that passed.
        seconds: f64,
        /// The package runner it was started through, if any.
        runner: Option<super::runner::RunnerKind>,
        /// Its last stderr lines.
        stderr: Vec<String>,
    },
}

fn runner_text(runner: &Option<super::runner::RunnerKind>) -> String {
    match runner {
        Some(kind) => format!(
            " through {}, which may still have been downloading the package",
            kind.as_str()
        ),
        None => String::new(),
    }
}

fn tail_text(lines: &[String]) -> String {
    if lines.is_empty() {
        String::new()
    } else {
        format!("; its last words on stderr: {}", lines.join(" | "))
    }
}
