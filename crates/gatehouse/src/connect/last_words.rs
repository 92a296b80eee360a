//! A server's last words on stderr, kept to explain a failed start: its last few lines,
//! and the first few lines that name a cause, however long the stack trace after them.
//!
//! Node prints `Error: Cannot find package 'zod' …` and then ten lines of stack and a
//! `code:` line; the last lines alone lose the one that says what went wrong.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
};

/// How many of a server's last stderr lines are kept.
pub const STDERR_TAIL_LINES: usize = 8;
/// How many of the first lines naming a cause are kept besides the tail.
pub const CAUSE_LINES: usize = 3;

/// Words that mark a line as naming a cause: a missing package or file, a refused
/// permission, a name that does not resolve, an error or exception by name.
const CAUSE_MARKS: &[&str] = &[
    "Cannot find package",
    "Cannot find module",
    "ERR!",
    "npm error",
    "Error:",
    "Error [",
    "error:",
    "ModuleNotFoundError",
    "ImportError",
    "No such file",
    "EACCES",
    "ENOTFOUND",
    "EAI_AGAIN",
    "ECONNREFUSED",
    "Permission denied",
    "not set",
    "is required",
];

/// Does a stderr line say what went wrong (rather than where, as a stack frame does)?
pub fn names_a_cause(line: &str) -> bool {
    let trimmed = line.trim_start();
    !trimmed.starts_with("at ") && CAUSE_MARKS.iter().any(|mark| line.contains(mark))
}

/// A server's last words: shared by the task that reads its stderr and the start that
/// reports a failure.
#[derive(Debug, Clone, Default)]
pub struct LastWords(Arc<Mutex<Kept>>);

#[derive(Debug, Default)]
struct Kept {
    /// The first lines that named a cause, at most [`CAUSE_LINES`].
    causes: Vec<String>,
    /// The last lines, at most [`STDERR_TAIL_LINES`].
    tail: VecDeque<String>,
}

impl LastWords {
    /// Keep one more line.
    pub fn push(&self, line: String) {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if kept.causes.len() < CAUSE_LINES && names_a_cause(&line) {
            kept.causes.push(line.clone());
        }
        if kept.tail.len() == STDERR_TAIL_LINES {
            kept.tail.pop_front();
        }
        kept.tail.push_back(line);
    }

    /// The lines to show: the causes the tail no longer holds, then the tail.
    pub fn lines(&self) -> Vec<String> {
        let kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut lines: Vec<String> = kept
            .causes
            .iter()
            .filter(|c| !kept.tail.contains(c))
            .cloned()
            .collect();
        lines.extend(kept.tail.iter().cloned());
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// npx's real words when its cache lost a package, then a long stack.
    #[test]
    fn the_line_naming_the_cause_outlives_a_long_stack_trace() {
        let words = LastWords::default();
        words.push("node:internal/modules/esm/resolve:215".into());
        words.push(
            "Error: Cannot find package '/home/u/.npm/_npx/15b0/node_modules/zod/index.js' imported from /home/u/.npm/_npx/15b0/node_modules/x/dist/index.js"
                .into(),
        );
        for n in 0..30 {
            words.push(format!("    at frame{n} (node:internal/x:{n}:1)"));
        }
        words.push("  code: 'ERR_MODULE_NOT_FOUND'".into());
        let lines = words.lines();
        assert_eq!(lines.len(), 1 + STDERR_TAIL_LINES, "{lines:#?}");
        assert!(lines[0].contains("Cannot find package"), "{lines:#?}");
        assert!(lines.last().unwrap().contains("ERR_MODULE_NOT_FOUND"));
    }

    #[test]
    fn causes_are_bounded_and_not_shown_twice() {
        let words = LastWords::default();
        for n in 0..10 {
            words.push(format!("Error: number {n}"));
        }
        let lines = words.lines();
        // The first three causes have left the tail of eight; each line once.
        assert_eq!(lines.len(), 2 + STDERR_TAIL_LINES, "{lines:#?}");
        assert_eq!(lines[0], "Error: number 0");
        assert_eq!(lines[1], "Error: number 1");
        assert_eq!(lines[2], "Error: number 2");
        let short = LastWords::default();
        short.push("Error: API_KEY is not set".into());
        assert_eq!(short.lines(), vec!["Error: API_KEY is not set".to_string()]);
    }

    #[test]
    fn stack_frames_name_no_cause() {
        assert!(!names_a_cause("    at Error: in frame (x.js:1:1)"));
        assert!(names_a_cause("ModuleNotFoundError: No module named 'mcp'"));
        assert!(names_a_cause("npm error code ENOTFOUND"));
        assert!(!names_a_cause(
            "Knowledge Graph MCP Server running on stdio"
        ));
    }
}
