//! A server as a child process on stdio: started with only the environment its entry
//! names, in a process group of its own, read with bounds on every line, and stopped the
//! way the revision says (close its stdin, wait, then the group's SIGTERM, then SIGKILL:
//! [`super::group`]).
//!
//! Both of its output streams are hostile. A message on stdout longer than
//! [`MAX_MESSAGE_BYTES`] ends the connection at once, with that reason, rather than being
//! dropped while the call waits out its time limit; a line on stderr is cut at
//! [`MAX_STDERR_LINE_BYTES`], so a server that never writes a newline costs nothing.

use std::ffi::OsString;
use std::{
    pin::Pin,
    process::Stdio,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use rmcp::{
    RoleClient,
    model::{ErrorData, JsonRpcMessage},
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::{Transport, async_rw::AsyncRwTransport},
};
use tokio::{
    io::{AsyncRead, AsyncReadExt, ReadBuf},
    process::{ChildStdin, ChildStdout},
};

use super::{
    ConnectError,
    group::{Group, Stopper},
    last_words::LastWords,
    lines::{Lines, Read},
};
use crate::{
    config::{ServerName, ServerSpec, Transport as ServerTransport},
    trace::Trace,
};

/// Longest JSON-RPC message (one line) the host reads from a server: rmcp's own bound.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// Longest stderr line relayed; the rest of a longer line is counted, not kept.
pub const MAX_STDERR_LINE_BYTES: usize = 8 * 1024;
/// How long the host waits, at shutdown, for a server's last stderr lines.
pub const STDERR_DRAIN: Duration = Duration::from_secs(1);
/// At shutdown: how long a server gets to exit once its stdin is closed, before its group
/// is stopped ([`super::group::STOP_GRACE`] after SIGTERM, then SIGKILL).
pub const EXIT_GRACE: Duration = Duration::from_secs(2);

/// What went wrong on a connection that rmcp only sees as "closed", and whether the
/// server's output has ended (it exited, or closed its stdout).
#[derive(Debug, Default)]
pub struct Health {
    oversized: AtomicBool,
    ended: tokio_util::sync::CancellationToken,
}

impl Health {
    /// Wait until the server's output ends: the process exited or closed its stdout.
    pub async fn ended(&self) {
        self.ended.cancelled().await
    }

    /// The server's output has ended (an in-process server's pipe closed).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn end(&self) {
        self.ended.cancel();
    }

    /// Has the server's output ended?
    pub fn has_ended(&self) -> bool {
        self.ended.is_cancelled()
    }

    /// Why the connection broke, when the host broke it.
    pub fn broken_reason(&self) -> Option<String> {
        self.oversized.load(Ordering::SeqCst).then(|| {
            format!(
                "the server sent a message longer than {} MiB; the host closed the connection",
                MAX_MESSAGE_BYTES / (1024 * 1024)
            )
        })
    }
}

/// A server's stdout, read as rmcp reads it, but failing (which ends the connection)
/// as soon as one line passes [`MAX_MESSAGE_BYTES`].
struct BoundedLines<R> {
    inner: R,
    since_newline: usize,
    health: Arc<Health>,
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let fresh = &buf.filled()[before..];
            // The longest run without a newline: before the first, between two, after
            // the last (carried to the next read).
            let (mut longest, mut start) = (0, 0);
            let mut run = self.since_newline;
            for at in memchr::memchr_iter(b'\n', fresh) {
                longest = longest.max(run + at - start);
                (run, start) = (0, at + 1);
            }
            run += fresh.len() - start;
            if longest.max(run) > MAX_MESSAGE_BYTES {
                self.health.oversized.store(true, Ordering::SeqCst);
                // A failed read hands over nothing.
                buf.set_filled(before);
                return Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "a message longer than the host reads",
                )));
            }
            self.since_newline = run;
        }
        polled
    }
}

/// The transport to a child process: its stdout read as JSON lines ([`Lines`]), its stdin
/// written by rmcp's transport, and the process.
pub struct ChildTransport {
    lines: Lines<BoundedLines<ChildStdout>>,
    writer: AsyncRwTransport<RoleClient, tokio::io::Empty, ChildStdin>,
    /// A line that was JSON but no message is answered with an invalid-request error, as
    /// rmcp answers it; kept until sent, so a receive cut off half-way still sends it.
    answer_invalid: bool,
    group: Group,
    health: Arc<Health>,
}

impl ChildTransport {
    /// The server's process id.
    pub fn id(&mut self) -> Option<u32> {
        self.group.child().id()
    }
}

impl Drop for ChildTransport {
    /// A server whose output ended is on its way out, and may still be saying why on
    /// stderr: its group lets it exit before any signal ([`Group::leaving`]).
    fn drop(&mut self) {
        if self.health.has_ended() {
            self.group.leaving();
        }
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.lines.sent(&item);
        self.writer.send(item)
    }

    /// The next message; at the end of the server's output the connection's [`Health`]
    /// says so, which is what a restart waits for.
    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            if self.answer_invalid {
                let invalid = ErrorData::invalid_request("Invalid request", None);
                if self
                    .writer
                    .send(JsonRpcMessage::error(invalid, None))
                    .await
                    .is_err()
                {
                    self.health.ended.cancel();
                    return None;
                }
                self.answer_invalid = false;
            }
            match self.lines.next().await {
                Read::Message(message) => return Some(*message),
                Read::Skip => {}
                Read::Invalid => self.answer_invalid = true,
                Read::End => {
                    self.health.ended.cancel();
                    return None;
                }
            }
        }
    }

    /// Close stdin and let the server exit; then stop its group (SIGTERM, then SIGKILL).
    async fn close(&mut self) -> Result<(), Self::Error> {
        let closed = self.writer.close().await;
        if closed.is_ok()
            && tokio::time::timeout(EXIT_GRACE, self.group.wait())
                .await
                .is_ok()
        {
            return Ok(());
        }
        self.group.stop().await
    }
}

/// A started server process: its transport, the task that reads its stderr, and what
/// stops its group from outside.
pub(crate) struct Spawned {
    pub transport: ChildTransport,
    pub stderr_reader: tokio::task::JoinHandle<()>,
    pub stopper: Stopper,
}

/// Start a stdio server with the environment its entry names.
pub(crate) fn spawn(
    spec: &ServerSpec,
    trace: &Trace,
    tail: &LastWords,
    health: &Arc<Health>,
) -> Result<Spawned, ConnectError> {
    let ServerTransport::Stdio {
        command,
        args,
        env,
        cwd,
        pass,
    } = &spec.transport
    else {
        return Err(ConnectError::Spawn {
            server: spec.name.clone(),
            command: String::new(),
            reason: "not a stdio server".into(),
        });
    };
    let (mut cmd, environment) = command_of(spec, command, args, cwd.as_deref(), (env, pass))?;
    cmd.env_clear()
        .envs(&environment)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    let mut group = Group::spawn(&mut cmd).map_err(|e| ConnectError::Spawn {
        server: spec.name.clone(),
        command: command.clone(),
        reason: match e.kind() {
            std::io::ErrorKind::NotFound => "no such command".into(),
            std::io::ErrorKind::PermissionDenied => "permission denied".into(),
            _ => e.to_string(),
        },
    })?;
    let child = group.child();
    let pipes = (child.stdout.take(), child.stdin.take(), child.stderr.take());
    let (Some(stdout), Some(stdin), Some(stderr)) = pipes else {
        return Err(ConnectError::Spawn {
            server: spec.name.clone(),
            command: command.clone(),
            reason: "its standard streams could not be opened".into(),
        });
    };
    let stdout = BoundedLines {
        inner: stdout,
        since_newline: 0,
        health: health.clone(),
    };
    // rmcp's transport writes; the lines are read here, bounded by `BoundedLines`.
    let writer = AsyncRwTransport::new(tokio::io::empty(), stdin);
    let stderr_reader = tokio::spawn(relay_stderr(
        stderr,
        spec.name.clone(),
        trace.clone(),
        tail.clone(),
    ));
    Ok(Spawned {
        stopper: group.stopper(),
        transport: ChildTransport {
            lines: Lines::new(stdout),
            writer,
            answer_invalid: false,
            group,
            health: health.clone(),
        },
        stderr_reader,
    })
}

/// The command that starts `spec`'s server, and its environment: the program itself, or
/// the launcher of its box ([`crate::sandbox`]) when its entry asks for one.
fn command_of(
    spec: &ServerSpec,
    command: &String,
    args: &[String],
    cwd: Option<&std::path::Path>,
    (env, pass): (
        &std::collections::BTreeMap<String, String>,
        &crate::config::EnvPass,
    ),
) -> Result<
    (
        tokio::process::Command,
        std::collections::BTreeMap<OsString, OsString>,
    ),
    ConnectError,
> {
    // The server's environment is what its entry says: the base set, the names it passes
    // through, its own `env`; never the host's credentials by accident.
    let mut environment: std::collections::BTreeMap<OsString, OsString> =
        pass.select(std::env::vars_os()).into_iter().collect();
    environment.extend(env.iter().map(|(k, v)| (k.into(), v.into())));
    let cmd = match &spec.sandbox {
        None => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args);
            cmd
        }
        // In its box: the launcher confines itself, then runs the command (`sandbox`).
        Some(sandbox) => {
            // The plan reads `PATH`, `HOME` and the runners' cache variables as text.
            let readable = environment
                .iter()
                .filter_map(|(k, v)| Some((k.to_str()?.to_owned(), v.to_str()?.to_owned())))
                .collect();
            // A command that is not there is said as it is without a box, not as the
            // launcher's failure to exec it.
            let here = std::env::current_dir().unwrap_or_default();
            if !super::sandbox::plan::resolves(command, &readable, cwd.unwrap_or(&here)) {
                return Err(ConnectError::Spawn {
                    server: spec.name.clone(),
                    command: command.clone(),
                    reason: "no such command".into(),
                });
            }
            let boxed = super::sandbox::boxed(sandbox, &spec.name, (command, args), cwd, &readable)
                .map_err(|reason| ConnectError::Spawn {
                    server: spec.name.clone(),
                    command: command.clone(),
                    reason: format!("its sandbox cannot be set up: {reason}"),
                })?;
            environment.extend(boxed.env.into_iter().map(|(k, v)| (k.into(), v.into())));
            let mut cmd = tokio::process::Command::new(&boxed.program);
            cmd.args(&boxed.args);
            cmd
        }
    };
    Ok((cmd, environment))
}

/// Relay a server's stderr to the observer line by line, each cut at
/// [`MAX_STDERR_LINE_BYTES`], keeping its last words for error messages.
async fn relay_stderr(
    mut stderr: tokio::process::ChildStderr,
    server: ServerName,
    trace: Trace,
    tail: LastWords,
) {
    let observer = trace.observer();
    let mut chunk = vec![0u8; 8 * 1024];
    let mut line: Vec<u8> = Vec::new();
    let mut cut = 0usize;
    // A line's bytes become its text without a copy when they are UTF-8 (nearly always),
    // and its secrets are replaced only where one is found: this runs for every line a
    // server logs, one or more per call.
    let emit = |line: &mut Vec<u8>, cut: &mut usize| {
        let mut text = match String::from_utf8(std::mem::take(line)) {
            Ok(text) => text,
            Err(bad) => String::from_utf8_lossy(bad.as_bytes()).into_owned(),
        };
        if *cut > 0 {
            text.push_str(&format!(" … ({} more bytes)", *cut));
        }
        if let std::borrow::Cow::Owned(clean) = trace.secrets().text(&text) {
            text = clean;
        }
        observer.server_stderr(&server, &text);
        super::sandbox::walls::tell(&trace, &server, &text);
        tail.push(text);
        line.clear();
        *cut = 0;
    };
    loop {
        let n = match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut rest = &chunk[..n];
        loop {
            let end = memchr::memchr(b'\n', rest);
            let part = &rest[..end.unwrap_or(rest.len())];
            let room = MAX_STDERR_LINE_BYTES.saturating_sub(line.len());
            line.extend_from_slice(&part[..part.len().min(room)]);
            cut += part.len().saturating_sub(room);
            match end {
                Some(at) => {
                    emit(&mut line, &mut cut);
                    rest = &rest[at + 1..];
                }
                None => break,
            }
        }
    }
    if !line.is_empty() || cut > 0 {
        emit(&mut line, &mut cut);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_line_past_the_bound_fails_the_read_and_says_why() {
        let health = Arc::new(Health::default());
        let mut data = vec![b'{'; MAX_MESSAGE_BYTES];
        data.push(b'\n');
        data.extend(vec![b'x'; MAX_MESSAGE_BYTES + 1]);
        let mut reader = BoundedLines {
            inner: &data[..],
            since_newline: 0,
            health: health.clone(),
        };
        let mut first = vec![0u8; MAX_MESSAGE_BYTES + 1];
        reader.read_exact(&mut first).await.unwrap();
        assert!(
            health.broken_reason().is_none(),
            "a line at the bound passes"
        );
        let mut sink = Vec::new();
        let err = reader.read_to_end(&mut sink).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
        assert!(health.broken_reason().unwrap().contains("16 MiB"));
    }

    #[tokio::test]
    async fn a_line_is_measured_across_reads_that_cut_it_anywhere() {
        // Lines of the bound exactly, then one byte over, read 4,093 bytes at a time so
        // that newlines fall at every offset of a read and runs carry from one to the next.
        let health = Arc::new(Health::default());
        let mut data = Vec::new();
        for _ in 0..2 {
            data.extend(vec![b'a'; MAX_MESSAGE_BYTES]);
            data.push(b'\n');
        }
        let good = data.len();
        data.extend(vec![b'b'; MAX_MESSAGE_BYTES + 1]);
        let mut reader = BoundedLines {
            inner: &data[..],
            since_newline: 0,
            health: health.clone(),
        };
        let mut chunk = vec![0u8; 4_093];
        let mut read = 0;
        let err = loop {
            match reader.read(&mut chunk).await {
                Ok(0) => panic!("the long line was read whole"),
                Ok(n) => read += n,
                Err(e) => break e,
            }
        };
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
        assert!(
            read >= good,
            "lines at the bound pass ({read} of {good} bytes)"
        );
        assert!(read <= good + MAX_MESSAGE_BYTES, "{read}");
    }
}
