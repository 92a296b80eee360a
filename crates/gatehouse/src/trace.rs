//! What happened, step by step: the record a person reads (`[host] …`) and a script checks
//! (`--json`). Every stage of a turn writes here, and an observer can show each step the
//! moment it happens.

use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::Value;

/// Who a step is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Who {
    Host,
    Model,
    Server,
    Person,
}

impl Who {
    pub fn as_str(self) -> &'static str {
        match self {
            Who::Host => "host",
            Who::Model => "model",
            Who::Server => "server",
            Who::Person => "person",
        }
    }
}

/// One line of the run: who, a sentence, and the data behind it.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub who: Who,
    pub text: String,
    pub data: Value,
}

/// Something that wants to see a run as it happens (the terminal printer, the lab).
pub trait Observer: Send + Sync {
    /// A step was recorded.
    fn step(&self, step: &Step);
    /// A server wrote a line on its stderr. It is the server's, not the host's.
    fn server_stderr(&self, server: &str, line: &str);
}

/// An observer that shows nothing; the steps are still recorded.
pub struct Quiet;

impl Observer for Quiet {
    fn step(&self, _step: &Step) {}
    fn server_stderr(&self, _server: &str, _line: &str) {}
}

/// The steps of one run, shared by the stages that write them.
#[derive(Clone)]
pub struct Trace {
    steps: Arc<Mutex<Vec<Step>>>,
    observer: Arc<dyn Observer>,
}

impl Trace {
    pub fn new(observer: Arc<dyn Observer>) -> Self {
        Trace {
            steps: Arc::new(Mutex::new(Vec::new())),
            observer,
        }
    }

    /// Record a step and show it to the observer.
    pub fn add(&self, who: Who, text: impl Into<String>, data: Value) {
        let step = Step {
            who,
            text: text.into(),
            data,
        };
        self.observer.step(&step);
        self.steps
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(step);
    }

    /// The observer, for stages that report more than steps (server stderr).
    pub fn observer(&self) -> Arc<dyn Observer> {
        self.observer.clone()
    }

    /// Take the steps recorded so far, leaving the trace empty for the next turn.
    pub fn take(&self) -> Vec<Step> {
        std::mem::take(&mut *self.steps.lock().unwrap_or_else(|e| e.into_inner()))
    }
}
