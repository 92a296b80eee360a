//! A person who answers from a script and writes down everything shown to them: the
//! approvals asked, the servers' questions. Each answer can take the person a while (on a
//! paused clock, as long as the test says), so a test sees that their time is not counted.

use std::{collections::VecDeque, sync::Mutex, time::Duration};

use futures::future::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitResult};

use crate::person::{Answered, AnsweredBy, Approval, ApprovalRequest, Person, Question, decline};

/// What the person was shown, in order.
#[derive(Debug, Clone)]
pub enum Shown {
    /// Asked whether to run a call.
    Approval(Box<ApprovalRequest>),
    /// Asked a server's question: which server, and its message.
    Question {
        /// The server that asked.
        server: String,
        /// What it said.
        message: String,
    },
}

/// The scripted person. With the script run out, every answer is no (by nobody).
#[derive(Default)]
pub struct Scripted {
    approvals: Mutex<VecDeque<Approval>>,
    answers: Mutex<VecDeque<ElicitResult>>,
    thinking: Duration,
    shown: Mutex<Vec<Shown>>,
}

impl Scripted {
    /// A person who says no to everything, at once.
    pub fn new() -> Scripted {
        Scripted::default()
    }

    /// Say yes (at the terminal) to the next approval asked.
    pub fn approving(self) -> Scripted {
        self.approval(Approval::once(true, AnsweredBy::Terminal))
    }

    /// Give this answer to the next approval asked.
    pub fn approval(self, approval: Approval) -> Scripted {
        self.lock_approvals().push_back(approval);
        self
    }

    /// Give this answer to the next server's question.
    pub fn answer(self, answer: ElicitResult) -> Scripted {
        self.answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(answer);
        self
    }

    /// Take this long over each answer.
    pub fn thinking(mut self, time: Duration) -> Scripted {
        self.thinking = time;
        self
    }

    /// Everything shown so far.
    pub fn shown(&self) -> Vec<Shown> {
        self.shown.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The approvals asked so far.
    pub fn approvals_asked(&self) -> Vec<ApprovalRequest> {
        self.shown()
            .into_iter()
            .filter_map(|s| match s {
                Shown::Approval(request) => Some(*request),
                Shown::Question { .. } => None,
            })
            .collect()
    }

    fn lock_approvals(&self) -> std::sync::MutexGuard<'_, VecDeque<Approval>> {
        self.approvals.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn show(&self, shown: Shown) {
        self.shown
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(shown);
    }
}

impl Person for Scripted {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        self.show(Shown::Approval(Box::new(request.clone())));
        let next = self.lock_approvals().pop_front();
        Box::pin(async move {
            tokio::time::sleep(self.thinking).await;
            next.unwrap_or(Approval::once(false, AnsweredBy::Nobody))
        })
    }

    fn elicit<'a>(&'a self, server: &'a str, request: &'a ElicitRequestParams) -> Answered<'a> {
        let message = match Question::of(request) {
            Some(Question::Form { message, .. } | Question::Url { message, .. }) => message,
            None => "",
        };
        self.show(Shown::Question {
            server: server.to_owned(),
            message: message.to_owned(),
        });
        let next = self
            .answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front();
        Box::pin(async move {
            tokio::time::sleep(self.thinking).await;
            match next {
                Some(answer) => (answer, AnsweredBy::Terminal),
                None => (decline(), AnsweredBy::Nobody),
            }
        })
    }
}
