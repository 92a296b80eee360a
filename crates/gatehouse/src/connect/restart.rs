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
    time::{Duration, Instant},
};

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{HostHandler, Limits, Negotiation, Setup, session::Session};
pub use crate::config::restart::{
    RESTART_FACTOR, RESTART_FIRST_DELAY, RESTART_MAX_ATTEMPTS, RESTART_MAX_DELAY, RESTART_WINDOW,
};
use crate::{
    config::{Restart, ServerSpec},
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

/// How to start the server again: as it was started the first time, on the revision it
/// agreed on, with the same handler.
pub(crate) struct Restarter {
    pub spec: ServerSpec,
    pub person: Arc<dyn Person>,
    pub trace: Trace,
    pub limits: Limits,
    pub negotiation: Negotiation,
    pub handler: HostHandler,
}

impl Restarter {
    async fn start(&self) -> Result<Session, String> {
        let setup = Setup {
            spec: &self.spec,
            person: self.person.clone(),
            trace: &self.trace,
            limits: self.limits,
        };
        setup
            .stdio_session(self.negotiation, &self.handler)
            .await
            .map(|(session, _)| session)
            .map_err(|e| e.to_string())
    }

    fn say(&self, text: String, data: serde_json::Value) {
        self.trace.add(Who::Host, text, data);
    }
}

/// Watch the server's runs until the link closes: each time one ends, start another
/// after the backoff's wait, and have its tool list read again.
pub(crate) fn supervise(link: Arc<Link>, restarter: Restarter) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut backoff = Backoff::new(restarter.limits.restart);
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
            let name = restarter.spec.name.clone();
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
                match restarter.start().await {
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
mod tests {
    use super::*;

    /// The waits of `n` starts in a row, each made the moment the last wait ended.
    fn waits(n: usize) -> Vec<Duration> {
        let mut backoff = Backoff::new(Restart::default());
        let mut now = Instant::now();
        (0..n)
            .map(|_| {
                let wait = backoff.next(now);
                now += wait;
                wait
            })
            .collect()
    }

    #[test]
    fn waits_grow_by_the_factor_from_the_first_delay_up_to_the_cap() {
        let w = waits(12);
        // Until the window is full, each wait is the factor times the last.
        let mut expected = RESTART_FIRST_DELAY;
        for &wait in &w[..RESTART_MAX_ATTEMPTS] {
            assert_eq!(wait, expected, "{w:?}");
            expected *= RESTART_FACTOR;
        }
        // A full window may hold one start back longer; none waits past the window.
        let longest = RESTART_WINDOW.max(RESTART_MAX_DELAY);
        assert!(w.iter().all(|&d| d <= longest), "{w:?}");
        assert_eq!(*w.last().unwrap(), RESTART_MAX_DELAY, "{w:?}");
    }

    /// The starts of a server that dies at once after each, 40 of them, under `bounds`.
    fn starts_dying_at_once(bounds: Restart) -> Vec<Instant> {
        let mut backoff = Backoff::new(bounds);
        let mut now = Instant::now();
        let mut starts = Vec::new();
        for _ in 0..40 {
            now += backoff.next(now);
            starts.push(now);
            backoff.ran_for(Duration::ZERO);
        }
        starts
    }

    /// No window of `bounds` holds more starts than its bound.
    fn assert_windows_hold(starts: &[Instant], bounds: Restart) {
        for (i, &s) in starts.iter().enumerate() {
            let within = starts[i..]
                .iter()
                .filter(|&&t| t.duration_since(s) < bounds.window)
                .count();
            assert!(within <= bounds.max_attempts, "{within} starts in a window");
        }
    }

    #[test]
    fn no_window_holds_more_starts_than_the_bound() {
        let starts = starts_dying_at_once(Restart::default());
        assert_windows_hold(&starts, Restart::default());
    }

    #[test]
    fn the_settings_bounds_are_honoured() {
        let bounds = Restart {
            first_delay: Duration::from_millis(100),
            factor: 3,
            max_delay: Duration::from_millis(1_000),
            max_attempts: 3,
            window: Duration::from_secs(5),
        };
        let starts = starts_dying_at_once(bounds);
        // The waits after the first start (100 ms): 3 times longer each, then the full
        // window holds the fourth start back past the longest delay.
        let waits: Vec<Duration> = starts.windows(2).map(|w| w[1] - w[0]).collect();
        let ms = |d: Duration| d.as_millis();
        assert_eq!(ms(waits[0]), 300, "{waits:?}");
        assert_eq!(ms(waits[1]), 900, "{waits:?}");
        assert_eq!(ms(waits[2]), 3_800, "{waits:?}");
        assert!(waits.iter().all(|&w| w <= bounds.window), "{waits:?}");
        assert_windows_hold(&starts, bounds);
        // A factor of 1 waits the first delay every time, until the window is full.
        let flat = Restart {
            factor: 1,
            ..bounds
        };
        let mut backoff = Backoff::new(flat);
        let now = Instant::now();
        assert_eq!(backoff.next(now), flat.first_delay);
        assert_eq!(backoff.next(now + flat.first_delay), flat.first_delay);
    }

    #[test]
    fn a_long_run_starts_the_waits_afresh_and_a_short_one_does_not() {
        let mut backoff = Backoff::new(Restart::default());
        let now = Instant::now();
        backoff.next(now);
        backoff.ran_for(Duration::from_millis(10));
        assert_eq!(backoff.next(now), RESTART_FIRST_DELAY * RESTART_FACTOR);
        backoff.ran_for(RESTART_WINDOW);
        let later = now + RESTART_WINDOW * 3;
        assert_eq!(backoff.next(later), RESTART_FIRST_DELAY);
    }
}
