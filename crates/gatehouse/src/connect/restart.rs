//! A stdio server that dies (exits, crashes, is killed) is started again under the same
//! connection, with backoff: the first restart after `firstDelayMs`, each failed one
//! waiting `factor` times longer up to `maxDelayMs`, and at most `attemptsPerWindow`
//! starts in any `windowMs` (the servers file's `"restart"`, [`Restart`]; defaults
//! [`RESTART_FIRST_DELAY`], [`RESTART_FACTOR`], [`RESTART_MAX_DELAY`],
//! [`RESTART_MAX_ATTEMPTS`], [`RESTART_WINDOW`]), so a server that dies at once on every
//! start is never restarted in a tight loop. While it is down its requests fail at once
//! with the reason; once it is back its tool list is read again.
//!
//! Only stdio servers are restarted: the host owns their process. An HTTP server's
//! lost session is the transport's business (rmcp initializes again on a 404).

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex, RwLock},
    time::Duration,
};

use futures::future::BoxFuture;
use serde_json::json;
// tokio's clock, not the system's: a test on a paused clock sees every wait and window.
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{HostHandler, Limits, Negotiation, Setup, session::Session};
pub use crate::config::restart::{
    RESTART_FACTOR, RESTART_FIRST_DELAY, RESTART_MAX_ATTEMPTS, RESTART_MAX_DELAY, RESTART_WINDOW,
};
use crate::{
    config::{Restart, ServerName, ServerSpec},
    person::Person,
    text,
    trace::{Trace, Who},
};

/// Most characters of a failed start's reason kept in the down state.
const MAX_REASON_CHARS: usize = 500;

/// The waits between restarts: pure, so its bounds are tested without a clock.
#[derive(Debug)]
pub(crate) struct Backoff {
    /// The bounds, from the settings.
    bounds: Restart,
    /// Restarts that failed (or died soon) in a row.
    failures: u32,
    /// When the recent starts were (planned), oldest first, at most the window's.
    starts: VecDeque<Instant>,
}

impl Backoff {
    /// No start made yet, waits bounded by `bounds`.
    pub(crate) fn new(bounds: Restart) -> Backoff {
        Backoff {
            bounds,
            failures: 0,
            starts: VecDeque::new(),
        }
    }

    /// How long to wait at `now` before the next start, which is recorded as made.
    pub(crate) fn next(&mut self, now: Instant) -> Duration {
        let b = self.bounds;
        let grown = b.factor.saturating_pow(self.failures.min(32));
        let delay = b.first_delay.saturating_mul(grown).min(b.max_delay);
        let mut at = now + delay;
        while self
            .starts
            .front()
            .is_some_and(|&s| at.duration_since(s) >= b.window)
        {
            self.starts.pop_front();
        }
        if self.starts.len() >= b.max_attempts
            && let Some(&oldest) = self.starts.front()
        {
            // The window is full: the next start waits until its oldest leaves it.
            at = at.max(oldest + b.window);
            self.starts.pop_front();
        }
        self.starts.push_back(at);
        self.failures = self.failures.saturating_add(1);
        at.duration_since(now)
    }

    /// A start was made at `at` outside the backoff (a server's first): it counts in its
    /// window, not as a failure.
    pub(crate) fn started(&mut self, at: Instant) {
        self.starts.push_back(at);
    }

    /// The server ran for `lasted` before it died: a long run starts the waits afresh.
    pub(crate) fn ran_for(&mut self, lasted: Duration) {
        if lasted >= self.bounds.window {
            self.failures = 0;
        }
    }
}

/// Why a server is down, and when the next start is.
struct Down {
    why: String,
    next: Option<Instant>,
}

/// The run of a server in use, and whether it is down: shared by the connection and the
/// task that restarts it.
pub(crate) struct Link {
    session: RwLock<Arc<Session>>,
    down: Mutex<Option<Down>>,
    closing: CancellationToken,
}

impl Link {
    pub(crate) fn new(session: Session) -> Arc<Link> {
        Arc::new(Link {
            session: RwLock::new(Arc::new(session)),
            down: Mutex::new(None),
            closing: CancellationToken::new(),
        })
    }

    /// The run in use (the last one, while the server is down).
    pub(crate) fn current(&self) -> Arc<Session> {
        self.session
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Why the server is down and when it is tried again, or `None` while it is up.
    pub(crate) fn down_reason(&self) -> Option<String> {
        let down = self.down.lock().unwrap_or_else(|e| e.into_inner());
        let down = down.as_ref()?;
        let next = match down.next {
            Some(at) => format!(
                "; the host starts it again in {}",
                text::seconds(at.saturating_duration_since(Instant::now()))
            ),
            None => String::new(),
        };
        Some(format!("the server is down ({}){next}", down.why))
    }

    /// No more restarts: the connection is closing.
    pub(crate) fn close(&self) {
        self.closing.cancel();
    }

    fn set_down(&self, why: String, next: Option<Instant>) {
        *self.down.lock().unwrap_or_else(|e| e.into_inner()) = Some(Down { why, next });
    }

    fn set_up(&self, session: Session) {
        *self.session.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(session);
        *self.down.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// One more run of a server, started as the first was: a stdio server's process
/// (`Setup::stdio_session`), or an in-process server's pipe (`connect::in_process`).
pub(crate) type StartAgain =
    Box<dyn Fn() -> BoxFuture<'static, Result<Session, String>> + Send + Sync>;

/// How to start the server again: as it was started the first time, on the revision it
/// agreed on, with the same handler (which `start` serves).
pub(crate) struct Restarter {
    /// The server's name, for what the run says.
    pub name: ServerName,
    /// Where the restarts are told.
    pub trace: Trace,
    /// The backoff's bounds (the servers file's `"restart"`).
    pub bounds: Restart,
    /// Told that the tool list may have changed once a new run is up.
    pub handler: HostHandler,
    /// Starts the next run.
    pub start: StartAgain,
}

impl Restarter {
    /// A stdio server's: its process started again as the first was
    /// (`Setup::stdio_session`), on `negotiation`, served by `handler`.
    pub(crate) fn stdio(
        spec: ServerSpec,
        (person, trace): (Arc<dyn Person>, Trace),
        limits: Limits,
        negotiation: Negotiation,
        handler: HostHandler,
    ) -> Restarter {
        let (name, told, serving) = (spec.name.clone(), trace.clone(), handler.clone());
        let start: StartAgain = Box::new(move || {
            let parts = (spec.clone(), person.clone(), trace.clone());
            Box::pin(stdio_again(parts, limits, negotiation, serving.clone()))
        });
        Restarter {
            name,
            trace: told,
            bounds: limits.restart,
            handler,
            start,
        }
    }

    fn say(&self, text: String, data: serde_json::Value) {
        self.trace.add(Who::Host, text, data);
    }
}

/// A stdio server's next run, started as [`Setup::stdio_session`] starts one.
async fn stdio_again(
    (spec, person, trace): (ServerSpec, Arc<dyn Person>, Trace),
    limits: Limits,
    negotiation: Negotiation,
    handler: HostHandler,
) -> Result<Session, String> {
    Setup::new(&spec, person, &trace, limits)
        .stdio_session(negotiation, &handler)
        .await
        .map(|(session, _)| session)
        .map_err(|e| e.to_string())
}

/// Watch the server's runs until the link closes: each time one ends, start another
/// after the backoff's wait, and have its tool list read again.
pub(crate) fn supervise(link: Arc<Link>, restarter: Restarter) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut backoff = Backoff::new(restarter.bounds);
        let mut started = Instant::now();
        loop {
            let session = link.current();
            tokio::select! {
                _ = session.health.ended() => {}
                _ = link.closing.cancelled() => return,
            }
            if link.closing.is_cancelled() {
                return;
            }
            backoff.ran_for(started.elapsed());
            let name = restarter.name.clone();
            let mut why = "it exited".to_owned();
            link.set_down(why.clone(), None);
            session.close().await;
            loop {
                let wait = backoff.next(Instant::now());
                link.set_down(why.clone(), Some(Instant::now() + wait));
                restarter.say(
                    format!("server {name} {why}; starting it again in {}", text::seconds(wait)),
                    json!({"server": name, "event": "restarting", "waitMs": wait.as_millis() as u64}),
                );
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = link.closing.cancelled() => return,
                }
                match (restarter.start)().await {
                    Ok(fresh) if link.closing.is_cancelled() => return fresh.close().await,
                    Ok(fresh) => {
                        link.set_up(fresh);
                        restarter.handler.mark_tools_changed();
                        started = Instant::now();
                        restarter.say(
                            format!("server {name} is running again"),
                            json!({"server": name, "event": "restarted"}),
                        );
                        break;
                    }
                    Err(e) => {
                        why = format!(
                            "it did not start again: {}",
                            text::clip(&text::visible_line(&e), MAX_REASON_CHARS)
                        )
                    }
                }
            }
        }
    })
}

#[cfg(test)]
mod tests;
