//! Child processes, for every test that starts one: a run waited for within a time limit
//! (a stuck process fails its test instead of hanging it), or a server whose address is
//! read from the line it prints, kept running and stopped when dropped.

use std::{
    io::{BufRead, BufReader, Read},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex, mpsc},
    thread::JoinHandle,
    time::{Duration, Instant},
};

use serde_json::Value;

use super::{
    Ran,
    ports::{Taken, says_taken},
};

/// The longest a server may take to print its address, and a peer's run to end, unless
/// the test says otherwise.
pub const LIMIT: Duration = Duration::from_secs(30);

/// Which of its streams a server prints its address on.
#[derive(Clone, Copy, Debug)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// A command about to be started, and how its process is to be stopped.
pub struct Spawn {
    cmd: Command,
    what: String,
    group: bool,
    interrupt: Option<Duration>,
}

impl Spawn {
    /// `what` names the process in failures.
    pub fn new(cmd: Command, what: impl Into<String>) -> Spawn {
        Spawn {
            cmd,
            what: what.into(),
            group: false,
            interrupt: None,
        }
    }

    /// Start it in a process group of its own, and stop the whole group (a harness that
    /// starts clients and mocks of its own).
    pub fn group(mut self) -> Spawn {
        self.group = true;
        self
    }

    /// Stop it with SIGINT first, and kill it only if it has not exited within `grace`
    /// (the lab closes its servers on Ctrl-C).
    pub fn interrupt_first(mut self, grace: Duration) -> Spawn {
        self.interrupt = Some(grace);
        self
    }

    fn spawn(mut self) -> Process {
        if self.group {
            use std::os::unix::process::CommandExt;
            self.cmd.process_group(0);
        }
        let child = self
            .cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.what));
        Process {
            child,
            what: self.what,
            group: self.group,
            interrupt: self.interrupt,
            lines: Arc::default(),
            url: String::new(),
            reader: None,
        }
    }

    /// Start it with stdin closed and both streams piped, keeping the lines of `stream`
    /// as they come ([`Process::wait_for_line`]); [`Process::wait`] gives them as that
    /// stream's text.
    pub fn watched(mut self, stream: Stream) -> Process {
        self.cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut process = self.spawn();
        let read: Box<dyn Read + Send> = match stream {
            Stream::Stdout => Box::new(process.child.stdout.take().expect("stdout is piped")),
            Stream::Stderr => Box::new(process.child.stderr.take().expect("stderr is piped")),
        };
        let sink = process.lines.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(read).lines().map_while(Result::ok) {
                sink.lock().unwrap_or_else(|e| e.into_inner()).push(line);
            }
        });
        process.reader = Some((stream, reader));
        process
    }

    /// Start it with stdin closed and both streams piped, for [`Process::wait`].
    pub fn run(mut self) -> Process {
        self.cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        self.spawn()
    }

    /// Start it and wait, at most `limit`, for the address it prints on `stream`: the word
    /// after `marker` on the first line that holds it (`listening on ` for
    /// `gatehouse serve --http` and the peers, `gatehouse lab: ` for the lab). Stdin and
    /// the other stream are closed; the lines of this one are kept ([`Process::lines`]).
    pub fn serving(self, stream: Stream, marker: &str, limit: Duration) -> Process {
        let what = self.what.clone();
        self.try_serving(stream, marker, limit)
            .unwrap_or_else(|Taken| panic!("{what}: its port was taken"))
    }

    /// As [`Spawn::serving`], but [`Taken`] when the process exits first saying its port
    /// was taken (started again on another, [`super::ports::on_a_free_port`]).
    pub fn try_serving(
        mut self,
        stream: Stream,
        marker: &str,
        limit: Duration,
    ) -> Result<Process, Taken> {
        let (out, err) = match stream {
            Stream::Stdout => (Stdio::piped(), Stdio::null()),
            Stream::Stderr => (Stdio::null(), Stdio::piped()),
        };
        self.cmd.stdin(Stdio::null()).stdout(out).stderr(err);
        let mut process = self.spawn();
        let read: Box<dyn Read + Send> = match stream {
            Stream::Stdout => Box::new(process.child.stdout.take().expect("stdout is piped")),
            Stream::Stderr => Box::new(process.child.stderr.take().expect("stderr is piped")),
        };
        let (tx, rx) = mpsc::channel();
        let sink = process.lines.clone();
        let wanted = marker.to_owned();
        std::thread::spawn(move || {
            for line in BufReader::new(read).lines().map_while(Result::ok) {
                let at = line.find(&wanted).map(|at| at + wanted.len());
                if let Some(url) = at.and_then(|at| line[at..].split_whitespace().next()) {
                    let _ = tx.send(url.to_owned());
                }
                sink.lock().unwrap_or_else(|e| e.into_inner()).push(line);
            }
        });
        match rx.recv_timeout(limit) {
            Ok(url) => process.url = url,
            // Its stream ended before the line: it exited (or is exiting).
            Err(mpsc::RecvTimeoutError::Disconnected)
                if says_taken(&process.lines().join("\n")) =>
            {
                return Err(Taken);
            }
            Err(_) => panic!(
                "{} printed no `{marker}…` line within {limit:?}; it printed:\n{}",
                process.what,
                process.lines().join("\n")
            ),
        }
        assert!(
            process.url.starts_with("http://127.0.0.1:"),
            "{} is not on loopback: {}",
            process.what,
            process.url
        );
        Ok(process)
    }
}

/// A started process, stopped when dropped (interrupted first if its [`Spawn`] said so,
/// then killed, with its group if it has one).
pub struct Process {
    child: Child,
    what: String,
    group: bool,
    interrupt: Option<Duration>,
    lines: Arc<Mutex<Vec<String>>>,
    /// The address a server printed (empty for a run).
    pub url: String,
    /// The stream [`Spawn::watched`] reads line by line, and its reader.
    reader: Option<(Stream, JoinHandle<()>)>,
}

impl Process {
    /// The process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Every line a server printed on the stream its address came on, so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The JSON lines of those (a server's log records).
    pub fn records(&self) -> Vec<Value> {
        self.lines()
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Wait at most `limit` for a line of the watched stream ([`Spawn::watched`]) that
    /// holds `part`, and return every line so far; past the limit the test fails, saying
    /// what it printed.
    pub fn wait_for_line(&self, part: &str, limit: Duration) -> Vec<String> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(lines) = self.line_with(part, (deadline, limit)) {
                return lines;
            }
        }
    }

    /// As [`Process::wait_for_line`], but [`Taken`] when the process exits first saying,
    /// on either stream, that its port was taken.
    pub fn wait_for_line_or_taken(
        &mut self,
        part: &str,
        limit: Duration,
    ) -> Result<Vec<String>, Taken> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(lines) = self.line_with(part, (deadline, limit)) {
                return Ok(lines);
            }
            let Ok(Some(status)) = self.child.try_wait() else {
                continue;
            };
            let mut said = String::new();
            if let Some(mut out) = self.child.stdout.take() {
                let _ = out.read_to_string(&mut said);
            }
            if let Some(mut err) = self.child.stderr.take() {
                let _ = err.read_to_string(&mut said);
            }
            if let Some((_, reader)) = self.reader.take() {
                let _ = reader.join();
            }
            let said = format!("{said}\n{}", self.lines().join("\n"));
            if says_taken(&said) {
                return Err(Taken);
            }
            panic!(
                "{} exited ({status}) before a line with `{part}`:\n{said}",
                self.what
            );
        }
    }

    /// Every line so far once one holds `part`; else, after a pause, `None` (past the
    /// deadline the test fails, saying what the process printed).
    fn line_with(&self, part: &str, (deadline, limit): (Instant, Duration)) -> Option<Vec<String>> {
        let lines = self.lines();
        if lines.iter().any(|l| l.contains(part)) {
            return Some(lines);
        }
        assert!(
            Instant::now() < deadline,
            "{} printed no line with `{part}` within {limit:?}; it printed:\n{}",
            self.what,
            lines.join("\n")
        );
        std::thread::sleep(Duration::from_millis(10));
        None
    }

    /// Send it (its group, if it has one) a signal: `INT`, `TERM`, `KILL`; whether `kill`
    /// could.
    pub fn signal(&self, name: &str) -> bool {
        let target = if self.group {
            format!("-{}", self.id())
        } else {
            self.id().to_string()
        };
        Command::new("kill")
            .args([&format!("-{name}"), "--", &target])
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Wait at most `limit` for it to exit, reading both of its streams as it writes them;
    /// past the limit it is stopped and the test fails, saying what it printed.
    pub fn wait(self, limit: Duration) -> Ran {
        self.wait_watching(limit, |_| ())
    }

    /// As [`Process::wait`], calling `watch` with its id every 20 ms while it runs.
    pub fn wait_watching(mut self, limit: Duration, mut watch: impl FnMut(u32)) -> Ran {
        let out = drain(self.child.stdout.take());
        let err = drain(self.child.stderr.take());
        let started = Instant::now();
        let status = loop {
            watch(self.id());
            if let Some(status) = self.child.try_wait().expect("the child can be waited for") {
                break Some(status);
            }
            if started.elapsed() > limit {
                self.stop();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stdout = String::from_utf8_lossy(&out.join().unwrap_or_default()).into_owned();
        let mut stderr = String::from_utf8_lossy(&err.join().unwrap_or_default()).into_owned();
        if let Some((stream, reader)) = self.reader.take() {
            let _ = reader.join();
            let text = self.lines().iter().map(|l| format!("{l}\n")).collect();
            match stream {
                Stream::Stdout => stdout = text,
                Stream::Stderr => stderr = text,
            }
        }
        let Some(status) = status else {
            panic!(
                "{} took longer than {limit:?} and was killed\nstdout:\n{stdout}\nstderr:\n{stderr}",
                self.what
            );
        };
        Ran {
            status: status.code().unwrap_or(-1),
            stdout,
            stderr,
        }
    }

    /// Stop it now, as when it is dropped.
    pub fn stop(&mut self) {
        if !matches!(self.child.try_wait(), Ok(None)) {
            // It has exited (and been waited for): its id may be another's by now.
            return;
        }
        if let Some(grace) = self.interrupt.take() {
            self.signal("INT");
            let deadline = Instant::now() + grace;
            while Instant::now() < deadline {
                if matches!(self.child.try_wait(), Ok(Some(_))) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        if self.group {
            self.signal("KILL");
        } else {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Read a pipe to its end on a thread of its own, so a chatty process never blocks on it.
fn drain(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}
