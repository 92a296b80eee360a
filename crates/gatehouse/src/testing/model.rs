//! A model that plays the decisions a test gives it, in order, then the last one again
//! for ever, and writes down the tools it was offered and what it read each time.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
};

use crate::{
    catalog::ToolSpec,
    model::{Decided, Decision, Message, Model},
};

/// What the model saw at one decision: the tools offered, the conversation so far.
#[derive(Debug, Clone)]
pub struct Asked {
    /// The tools' names, as offered.
    pub tools: Vec<String>,
    /// The conversation.
    pub messages: Vec<Message>,
}

/// The playing model. Its clones share what it saw.
#[derive(Clone)]
pub struct Plays {
    decisions: Arc<Mutex<VecDeque<Decision>>>,
    asked: Arc<Mutex<Vec<Asked>>>,
}

impl Plays {
    /// Play `decisions` in order; past the last, play it again (none: answer "done").
    pub fn new(decisions: Vec<Decision>) -> Plays {
        Plays {
            decisions: Arc::new(Mutex::new(decisions.into())),
            asked: Arc::default(),
        }
    }

    /// Every decision's view so far.
    pub fn asked(&self) -> Vec<Asked> {
        self.asked.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Model for Plays {
    fn name(&self) -> String {
        "plays".into()
    }

    fn decide<'a>(&'a mut self, messages: &'a [Message], tools: &'a [ToolSpec]) -> Decided<'a> {
        self.asked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Asked {
                tools: tools.iter().map(|t| t.name.clone()).collect(),
                messages: messages.to_vec(),
            });
        let mut decisions = self.decisions.lock().unwrap_or_else(|e| e.into_inner());
        let next = match decisions.len() {
            0 => Decision::answer("done"),
            1 => decisions[0].clone(),
            _ => decisions.pop_front().unwrap_or_default(),
        };
        Box::pin(async move { Ok(next) })
    }
}
