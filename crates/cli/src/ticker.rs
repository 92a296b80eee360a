//! A server round that says nothing for a second, shown as the time so far on the terminal
//! (`[testbed] sleep … 3 s`), so a long wait is never a blank screen; progress from the
//! server draws its own bar instead. One thread per screen, started on the first round
//! and asleep between ticks, however many rounds there are (a gateway makes thousands).

use std::{
    io::Write,
    sync::{
        Arc, Mutex, OnceLock,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use gatehouse::{text::visible_line, trace::Waiting};

/// How often the time so far is drawn, and how long a round may be quiet before it is.
pub const TICK: Duration = Duration::from_secs(1);

/// The round shown: its label and when it began.
struct Round {
    label: String,
    started: Instant,
}

#[derive(Default)]
struct State {
    /// The round in flight, if any (the last one begun).
    round: Option<Round>,
    /// When the server last reported progress (its bar is on the screen then).
    progressed: Option<Instant>,
}

/// The time so far of the round in flight, drawn on stderr by a thread of its own.
#[derive(Default)]
pub struct Ticker {
    state: Arc<Mutex<State>>,
    thread: OnceLock<()>,
}

impl Ticker {
    /// A round began: after a quiet [`TICK`], its time so far is drawn every [`TICK`] until
    /// it ends, `bar` marked so the next line clears it first.
    pub fn start(&self, round: &Waiting<'_>, bar: Arc<AtomicBool>) {
        let label = format!(
            "[{}] {}",
            visible_line(round.server),
            visible_line(round.tool)
        );
        {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.round = Some(Round {
                label,
                started: Instant::now(),
            });
            state.progressed = None;
        }
        self.thread.get_or_init(|| {
            let state = self.state.clone();
            std::thread::spawn(move || tick(&state, &bar));
        });
    }

    /// The server reported progress: its bar shows instead of the time.
    pub fn progressed(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.progressed = Some(Instant::now());
    }

    /// The round ended: nothing is drawn for it any more.
    pub fn stop(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.round = None;
    }
}

/// The screen's one ticking thread: each [`TICK`], the round in flight that has been
/// quiet for a tick is drawn.
fn tick(state: &Mutex<State>, bar: &AtomicBool) {
    loop {
        std::thread::sleep(TICK);
        let state = state.lock().unwrap_or_else(|e| e.into_inner());
        let Some(round) = &state.round else {
            continue;
        };
        let quiet = round.started.elapsed() >= TICK
            && state.progressed.is_none_or(|at| at.elapsed() >= TICK);
        if !quiet {
            continue;
        }
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2K{} … {} s",
            round.label,
            round.started.elapsed().as_secs()
        );
        let _ = err.flush();
        bar.store(true, Ordering::SeqCst);
    }
}
