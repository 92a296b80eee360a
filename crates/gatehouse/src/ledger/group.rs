//! Group commit: decisions made at the same time share one write and one sync.
//!
//! Each append joins a queue and waits. One of the waiters, the leader, takes the whole
//! queue (at most [`MAX_GROUP_LINES`]), chains its lines in queue order after the file's
//! last line, writes them in one write, syncs once, and hands every waiter its own line's
//! number and hash; while it syncs, later appends queue for the next leader. So an append
//! still returns only once its own line is on disk, the chain stays one chain in one
//! order, and N decisions at once cost one sync instead of N. A group that cannot be
//! written fails for each of its appends: none of their calls is sent.
//!
//! The queue is per [`super::Ledger`] value and its clones (one process); other
//! processes sharing the file take turns on its lock as before.

use std::{
    collections::HashMap,
    sync::{Condvar, Mutex, MutexGuard},
};

use super::{Appended, Entry};

/// Most lines one group writes: a leader takes at most this many from the queue, so one
/// write stays bounded. The head names a group before its lines are written (`pending`),
/// so a crash between them leaves at most that group past the head, which `verify` takes
/// for an interrupted append; lines added past a head that named none are still found.
pub const MAX_GROUP_LINES: usize = 256;

/// Most appends one ledger holds waiting for a group: past it an append is refused at
/// once with an error that says to try again (its call is not sent), so the queue never
/// grows without bound however many calls arrive together.
pub const MAX_WAITING_LINES: usize = 4_096;

/// The queue of appends waiting for a group, and their outcomes.
#[derive(Debug, Default)]
pub(super) struct Group {
    state: Mutex<State>,
    /// Woken when a group is written (or failed): its waiters find their outcome.
    written: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// The next append's ticket.
    next: u64,
    /// Appends waiting for a leader, in arrival order.
    queue: Vec<(u64, Entry)>,
    /// Whether a leader is writing a group now.
    writing: bool,
    /// Outcomes not yet taken by their appends, by ticket.
    done: HashMap<u64, Result<Appended, String>>,
    /// How many groups were written (each one write and one sync), for tests and benches.
    groups: u64,
}

impl Group {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many appends wait for a group now.
    pub(super) fn waiting(&self) -> usize {
        self.lock().queue.len()
    }

    /// Append `entry` with whichever group takes it; `write` writes one group, durably,
    /// and gives each of its lines' number and hash in order (or why none was written).
    pub(super) fn append(
        &self,
        entry: &Entry,
        write: impl Fn(&[Entry]) -> Result<Vec<Appended>, String>,
    ) -> Result<Appended, String> {
        let mut state = self.lock();
        if state.queue.len() >= MAX_WAITING_LINES {
            return Err(format!(
                "{MAX_WAITING_LINES} ledger lines are waiting to be written; try again shortly"
            ));
        }
        let ticket = state.next;
        state.next += 1;
        state.queue.push((ticket, entry.clone()));
        loop {
            if let Some(outcome) = state.done.remove(&ticket) {
                return outcome;
            }
            if state.writing {
                state = self.written.wait(state).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            // Lead: take the queue (bounded), write it with the lock released, so that
            // later appends queue for the next group meanwhile.
            state.writing = true;
            let take = state.queue.len().min(MAX_GROUP_LINES);
            let (group, entries): (Vec<u64>, Vec<Entry>) = state.queue.drain(..take).unzip();
            drop(state);
            let written =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| write(&entries)))
                    .unwrap_or_else(|_| Err("the ledger's writer panicked".into()));
            state = self.lock();
            state.writing = false;
            state.groups += 1;
            match written {
                Ok(lines) if lines.len() == group.len() => {
                    for (ticket, line) in group.iter().zip(lines) {
                        state.done.insert(*ticket, Ok(line));
                    }
                }
                Ok(lines) => {
                    let why = format!(
                        "the ledger's writer gave {} lines for {} entries",
                        lines.len(),
                        group.len()
                    );
                    for ticket in &group {
                        state.done.insert(*ticket, Err(why.clone()));
                    }
                }
                Err(why) => {
                    for ticket in &group {
                        state.done.insert(*ticket, Err(why.clone()));
                    }
                }
            }
            self.written.notify_all();
        }
    }

    /// How many groups were written so far.
    pub(super) fn groups(&self) -> u64 {
        self.lock().groups
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, mpsc};

    use super::*;

    fn entry(step: u64) -> Entry {
        Entry {
            step,
            ..Entry::default()
        }
    }

    /// A full queue refuses the next append at once, writing nothing, with an error that
    /// says to try again; once it drains, appends go through again.
    #[test]
    fn an_append_past_a_full_queue_is_refused_at_once() {
        let group = Group::default();
        let wrote = Mutex::new(0usize);
        let writer = |entries: &[Entry]| {
            *wrote.lock().unwrap() += entries.len();
            Ok(entries
                .iter()
                .map(|e| Appended {
                    seq: e.step,
                    hash: String::new(),
                })
                .collect())
        };
        {
            // As if a leader were writing, with the queue full behind it.
            let mut state = group.lock();
            state.writing = true;
            state.queue = (0..MAX_WAITING_LINES as u64)
                .map(|t| (t, entry(t)))
                .collect();
        }
        let refused = group.append(&entry(9), writer).unwrap_err();
        assert!(refused.contains("try again"), "{refused}");
        assert_eq!(*wrote.lock().unwrap(), 0);
        assert_eq!(group.waiting(), MAX_WAITING_LINES);
        {
            let mut state = group.lock();
            state.writing = false;
            state.queue.clear();
        }
        assert_eq!(group.append(&entry(9), writer).unwrap().seq, 9);
    }

    /// Appends that arrive while a group is being written wait, then go together in the
    /// next group, each with its own line, in the order they came.
    #[test]
    fn appends_waiting_on_a_write_share_the_next_one() {
        let group = Arc::new(Group::default());
        let lines = Arc::new(Mutex::new(0u64));
        let (release, hold) = mpsc::channel::<()>();
        let hold = Arc::new(Mutex::new(hold));
        let writer = {
            let (lines, hold) = (lines.clone(), hold.clone());
            move |entries: &[Entry]| {
                // The first group waits until the test lets it go.
                if entries.first().is_some_and(|e| e.step == 0) {
                    hold.lock().unwrap().recv().unwrap();
                }
                let mut n = lines.lock().unwrap();
                Ok(entries
                    .iter()
                    .map(|e| {
                        *n += 1;
                        Appended {
                            seq: *n,
                            hash: format!("step {}", e.step),
                        }
                    })
                    .collect())
            }
        };
        std::thread::scope(|s| {
            let first = {
                let (mine, writer) = (group.clone(), writer.clone());
                s.spawn(move || mine.append(&entry(0), writer).unwrap())
            };
            // The first append leads, and its write is held: wait for it to have taken
            // the queue, then queue four more behind it, one at a time.
            while group.waiting() != 0 || !group.lock().writing {
                std::thread::yield_now();
            }
            let mut later = Vec::new();
            for step in 1..=4 {
                let (mine, writer) = (group.clone(), writer.clone());
                later.push(s.spawn(move || mine.append(&entry(step), writer).unwrap()));
                while group.waiting() != step as usize {
                    std::thread::yield_now();
                }
            }
            release.send(()).unwrap();
            assert_eq!(first.join().unwrap().seq, 1);
            for (step, t) in (1..).zip(later) {
                let line = t.join().unwrap();
                assert_eq!(line.hash, format!("step {step}"), "each gets its own line");
                assert_eq!(line.seq, step + 1, "in the order they came");
            }
        });
        assert_eq!(group.groups(), 2, "five appends, two writes");
    }

    #[test]
    fn a_group_that_cannot_be_written_fails_every_append_in_it_and_the_next_goes_on() {
        let group = Group::default();
        let err = group
            .append(&entry(1), |_| Err("disk full".into()))
            .unwrap_err();
        assert_eq!(err, "disk full");
        let wrong = group.append(&entry(2), |_| Ok(Vec::new())).unwrap_err();
        assert!(wrong.contains("0 lines for 1"), "{wrong}");
        let panicked = group.append(&entry(3), |_| panic!("boom")).unwrap_err();
        assert!(panicked.contains("panicked"), "{panicked}");
        let fine = group
            .append(&entry(4), |e| {
                Ok(vec![Appended {
                    seq: e[0].step,
                    hash: String::new(),
                }])
            })
            .unwrap();
        assert_eq!(fine.seq, 4);
    }
}
