//! The person's time that a server round leaves out of its time limit: the connection's
//! (the person signing in to the server for this call), the person answering an older
//! server's question inside the call (`elicitation/create`, the handler's `answering`),
//! and the call's own (a gateway's caller answering the server's question while the
//! gateway holds the call, `Relay`'s `person_time`). While the person is busy on any of
//! them, the round's clock stands still; once they are done, the limit moves on by the
//! time they took.

use std::time::Duration;

use tokio::sync::watch;

use crate::person::PersonTime;

/// One record watched: its receiver, and the person's time on it when last looked at.
type Watched = (watch::Receiver<(bool, Duration)>, Duration);

/// The person's records one round watches.
pub(super) struct Clocks {
    watched: Vec<Watched>,
}

impl Clocks {
    /// These records (the connection's, its questions', the call's own if it has one).
    pub(super) fn of<'a>(times: impl IntoIterator<Item = &'a PersonTime>) -> Clocks {
        let watched = times
            .into_iter()
            .map(|time| {
                let mut rx = time.watch();
                let spent = rx.borrow_and_update().1;
                (rx, spent)
            })
            .collect();
        Clocks { watched }
    }

    /// Is the person busy on any of them now?
    pub(super) fn busy(&self) -> bool {
        self.watched.iter().any(|(rx, _)| rx.borrow().0)
    }

    /// Wait for the person to become busy or done on any record: the time to add to the
    /// round's limits (what they took, once done; nothing while busy). A record whose
    /// owner went is no longer watched; with none left this never returns.
    pub(super) async fn changed(&mut self) -> Duration {
        loop {
            if self.watched.is_empty() {
                return std::future::pending().await;
            }
            let (i, gone) = {
                let changes =
                    self.watched.iter_mut().enumerate().map(|(i, (rx, _))| {
                        Box::pin(async move { (i, rx.changed().await.is_err()) })
                    });
                futures::future::select_all(changes).await.0
            };
            if gone {
                self.watched.swap_remove(i);
                continue;
            }
            let (rx, seen) = &mut self.watched[i];
            let (busy, spent) = *rx.borrow_and_update();
            if busy {
                return Duration::ZERO;
            }
            let paused = spent.saturating_sub(*seen);
            *seen = spent;
            return paused;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn either_record_stops_the_clock_and_gives_back_the_time_taken() {
        let (conn, call) = (PersonTime::default(), PersonTime::default());
        let mut clocks = Clocks::of([&conn, &call]);
        assert!(!clocks.busy());
        let busy = call.busy();
        assert_eq!(clocks.changed().await, Duration::ZERO);
        assert!(clocks.busy());
        tokio::time::sleep(Duration::from_millis(30)).await;
        drop(busy);
        let paused = clocks.changed().await;
        assert!(paused >= Duration::from_millis(30), "{paused:?}");
        assert!(!clocks.busy());
        let busy = conn.busy();
        assert_eq!(clocks.changed().await, Duration::ZERO);
        drop(busy);
        assert!(clocks.changed().await < Duration::from_millis(30));
    }
}
