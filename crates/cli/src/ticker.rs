//! A server round that says nothing for a second, shown as the time so far on the terminal
//! (`[testbed] sleep … 3 s`), so a long wait is never a blank screen; progress
//! from the server draws its own bar instead.

use std::{
    io::Write,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use gatehouse::{text::visible_line, trace::Waiting};

/// How often the time so far is drawn, and how long a round may be quiet before it is.
pub const TICK: Duration = Duration::from_secs(1);

#[derive(Default)]
struct State {
    /// Which round is shown: each start and stop moves it on, so an old thread ends.
    generation: u64,
    /// When the server last reported progress (its bar is on the screen then).
    progressed: Option<Instant>,
}

/// The time so far of the round in flight, drawn on stderr by a thread of its own.
#[derive(Default)]
pub struct Ticker {
    state: Arc<Mutex<State>>,
}

impl Ticker {
    /// A round began: after a quiet [`TICK`], draw its time so far every [`TICK`] until
    /// it ends, marking `bar` so the next line clears it first.
    pub fn start(&self, round: &Waiting, bar: Arc<AtomicBool>) {
        let generation = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.generation += 1;
            state.progressed = None;
            state.generation
        };
        let state = self.state.clone();
        let label = format!(
            "[{}] {}",
            visible_line(&round.server),
            visible_line(&round.tool)
        );
        let started = Instant::now();
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(TICK);
                let state = state.lock().unwrap_or_else(|e| e.into_inner());
                if state.generation != generation {
                    return;
                }
                if state.progressed.is_some_and(|at| at.elapsed() < TICK) {
                    continue;
                }
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r\x1b[2K{label} … {} s", started.elapsed().as_secs());
                let _ = err.flush();
                bar.store(true, Ordering::SeqCst);
            }
        });
    }

    /// The server reported progress: its bar shows instead of the time.
    pub fn progressed(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.progressed = Some(Instant::now());
    }

    /// The round ended: its thread stops drawing.
    pub fn stop(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.generation += 1;
    }
}
