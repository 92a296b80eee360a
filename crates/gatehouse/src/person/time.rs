//! The person's time, kept out of the host's time limits: while the person signs in to a
//! server (a browser, a password, a second factor), the limits of that server's start, of
//! its tool lists and of the call that needed the sign-in stand still.

use std::{sync::Arc, time::Duration};

// tokio's clock, which the limits this time extends run on: on a paused test clock the
// person's time is what the test advances, as it is the real time otherwise.
use tokio::{sync::watch, time::Instant};

/// One connection's record of the person's time: whether the person is busy now, and how
/// long they have been in all. Cheap to clone; clones share the record.
#[derive(Clone)]
pub struct PersonTime {
    state: Arc<watch::Sender<(bool, Duration)>>,
}

impl Default for PersonTime {
    fn default() -> Self {
        PersonTime {
            state: Arc::new(watch::channel((false, Duration::ZERO)).0),
        }
    }
}

impl std::fmt::Debug for PersonTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (busy, total) = *self.state.borrow();
        f.debug_struct("PersonTime")
            .field("busy", &busy)
            .field("total", &total)
            .finish()
    }
}

/// The person is busy until this is dropped.
#[must_use = "the person is busy only while this is held"]
pub struct Busy {
    time: PersonTime,
    since: Instant,
}

impl Drop for Busy {
    fn drop(&mut self) {
        let spent = self.since.elapsed();
        self.time
            .state
            .send_modify(|(busy, total)| (*busy, *total) = (false, *total + spent));
    }
}

impl PersonTime {
    /// The person is busy from now until the guard is dropped.
    pub fn busy(&self) -> Busy {
        self.state.send_modify(|(busy, _)| *busy = true);
        Busy {
            time: self.clone(),
            since: Instant::now(),
        }
    }

    /// Whether the person is busy now, and their time so far.
    pub fn now(&self) -> (bool, Duration) {
        *self.state.borrow()
    }

    /// A receiver that wakes when the person becomes busy or done.
    pub fn watch(&self) -> watch::Receiver<(bool, Duration)> {
        self.state.subscribe()
    }

    /// Run `work` within `limit` of the host's own time: the person's time while it runs
    /// does not count. `Err(())` when the limit passed first.
    pub async fn within<F: Future>(&self, limit: Duration, work: F) -> Result<F::Output, ()> {
        let started = tokio::time::Instant::now();
        let mut rx = self.watch();
        let before = rx.borrow_and_update().1;
        tokio::pin!(work);
        loop {
            let (busy, total) = *rx.borrow_and_update();
            let deadline = started + limit + total.saturating_sub(before);
            tokio::select! {
                out = &mut work => return Ok(out),
                _ = tokio::time::sleep_until(deadline), if !busy => return Err(()),
                changed = rx.changed() => {
                    if changed.is_err() {
                        // The record is gone: no one can be busy any more.
                        return tokio::time::timeout_at(deadline, work).await.map_err(|_| ());
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_persons_time_does_not_count() {
        let time = PersonTime::default();
        let ms = Duration::from_millis;
        // 0.2 s of the host's time and 1.5 s of the person's: within a 1 s limit.
        let t = time.clone();
        let work = async move {
            tokio::time::sleep(ms(100)).await;
            let busy = t.busy();
            tokio::time::sleep(ms(1_500)).await;
            drop(busy);
            tokio::time::sleep(ms(100)).await;
            "done"
        };
        assert_eq!(time.within(ms(1_000), work).await, Ok("done"));
        let (busy, spent) = time.now();
        assert!(!busy && spent >= ms(1_500), "{spent:?}");
        // The host's time alone still runs out, and the person's time before does not count.
        let slow = tokio::time::sleep(ms(1_500));
        assert_eq!(time.within(ms(500), slow).await, Err(()));
    }
}
