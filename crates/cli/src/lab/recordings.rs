//! The lab's recordings: one per turn (turn 0 the start-up's handshakes and tool lists),
//! kept in memory within their bounds for the explorer, each line as `crate::record`
//! writes a run's.

use std::{sync::Mutex, time::Instant};

use gatehouse::trace::WireEvent;
use serde_json::{Value, json};

use crate::record::{Summaries, ms_since, stderr_line};

/// Most turns the lab keeps recordings of: past it the oldest (after the start-up's) go.
pub const MAX_RECORDED_TURNS: usize = 200;
/// Most lines one turn's recording keeps: past it lines are counted, not kept.
pub const MAX_LINES_PER_TURN: usize = 20_000;

/// One recorded turn of the lab (turn 0 is the start-up: handshakes and tool lists).
pub struct Recording {
    pub turn: u64,
    pub label: String,
    start: Instant,
    pub lines: Vec<Value>,
    /// Lines past [`MAX_LINES_PER_TURN`], not kept.
    pub cut: u64,
}

/// The lab's recordings, one per turn, in order, within [`MAX_RECORDED_TURNS`].
#[derive(Default)]
pub struct Recordings {
    turns: Mutex<Vec<Recording>>,
    summaries: Summaries,
}

impl Recordings {
    /// The recordings with the start-up one open.
    pub fn new() -> Self {
        let r = Recordings::default();
        r.begin(0, "start-up");
        r
    }

    /// Start recording a new turn; messages go to it until the next one begins.
    pub fn begin(&self, turn: u64, label: &str) {
        let mut turns = self.turns.lock().unwrap_or_else(|e| e.into_inner());
        if turns.len() >= MAX_RECORDED_TURNS {
            // The start-up's recording stays: it is what every later turn's servers said
            // first.
            let oldest = usize::from(turns.first().is_some_and(|r| r.turn == 0));
            let last = turns.len() - 1;
            turns.remove(oldest.min(last));
        }
        turns.push(Recording {
            turn,
            label: label.to_owned(),
            start: Instant::now(),
            lines: Vec::new(),
            cut: 0,
        });
    }

    fn push(&self, line: impl FnOnce(f64) -> Value) {
        let mut turns = self.turns.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(last) = turns.last_mut() {
            if last.lines.len() >= MAX_LINES_PER_TURN {
                last.cut += 1;
                return;
            }
            let l = line(ms_since(last.start));
            last.lines.push(l);
        }
    }

    /// Record one JSON-RPC message in the current turn.
    pub fn wire(&self, event: &WireEvent) {
        self.push(|t| self.summaries.wire_line(t, event));
    }

    /// Record one server stderr line in the current turn.
    pub fn stderr(&self, server: &str, line: &str) {
        self.push(|t| stderr_line(t, server, line));
    }

    /// Every turn: number, label and how many lines it holds.
    pub fn list(&self) -> Vec<Value> {
        self.turns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(
                |r| json!({"turn": r.turn, "label": r.label, "lines": r.lines.len(), "cut": r.cut}),
            )
            .collect()
    }

    /// One turn's recording as JSON lines, the format `--record` writes.
    pub fn jsonl(&self, turn: u64) -> Option<String> {
        let turns = self.turns.lock().unwrap_or_else(|e| e.into_inner());
        let r = turns.iter().find(|r| r.turn == turn)?;
        let mut out = String::new();
        for line in &r.lines {
            out.push_str(&line.to_string());
            out.push('\n');
        }
        if r.cut > 0 {
            let note = json!({"cut": r.cut, "why": format!(
                "a turn's recording keeps {MAX_LINES_PER_TURN} lines; {} more were not kept", r.cut)});
            out.push_str(&note.to_string());
            out.push('\n');
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recordings_keep_within_their_bounds_and_say_what_they_cut() {
        let r = Recordings::new();
        for i in 0..MAX_LINES_PER_TURN + 5 {
            r.stderr("s", &i.to_string());
        }
        let listed = r.list();
        assert_eq!(listed[0]["lines"], MAX_LINES_PER_TURN);
        assert_eq!(listed[0]["cut"], 5);
        let text = r.jsonl(0).unwrap();
        assert!(
            text.lines()
                .last()
                .unwrap()
                .contains("5 more were not kept")
        );
        for turn in 1..=(MAX_RECORDED_TURNS as u64 + 3) {
            r.begin(turn, "q");
        }
        let listed = r.list();
        assert_eq!(listed.len(), MAX_RECORDED_TURNS);
        // The start-up stays; the oldest turns after it went.
        assert_eq!(listed[0]["turn"], 0);
        assert_eq!(listed[1]["turn"], 5);
    }

    #[test]
    fn turns_are_recorded_apart() {
        let r = Recordings::new();
        r.stderr("a", "before");
        r.begin(1, "question");
        r.stderr("a", "during");
        assert_eq!(r.jsonl(0).unwrap().lines().count(), 1);
        assert!(r.jsonl(1).unwrap().contains("during"));
        assert!(r.jsonl(2).is_none());
        assert_eq!(r.list()[1]["label"], "question");
    }
}
