//! The person of an eval: answers fixed by the task (as `--yes`/`--no`, `--answer`,
//! `--decline` give them), never a terminal; what no answer covers is no. The suite's own
//! checks of the world, made after the run, are let through as the person's calls.

use std::sync::atomic::{AtomicBool, Ordering};

use futures::future::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};

use super::suite::Answers;
use crate::person::{
    Answered, AnsweredBy, Approval, ApprovalRequest, Person, Question, decline,
    form::{answers_for, fill_from_options, form_fields},
};

/// Answers a task fixed beforehand.
pub struct EvalPerson {
    answers: Answers,
    /// Set while the suite's own checks call tools after the run.
    checking: AtomicBool,
}

impl EvalPerson {
    /// The person answering as `answers` say.
    pub fn new(answers: Answers) -> Self {
        EvalPerson {
            answers,
            checking: AtomicBool::new(false),
        }
    }

    /// From now on, the suite's checks are calling: their calls are the person's own.
    pub fn checking(&self) {
        self.checking.store(true, Ordering::SeqCst);
    }

    fn form(&self, server: &str, schema: &serde_json::Value) -> (ElicitResult, AnsweredBy) {
        let fields = form_fields(schema);
        let Some(given) = answers_for(&self.answers.forms, server, &fields) else {
            return (decline(), AnsweredBy::Nobody);
        };
        match fill_from_options(&fields, &given) {
            Ok(content) => (
                ElicitResult::new(ElicitationAction::Accept).with_content(content),
                AnsweredBy::Option,
            ),
            Err(_) => (decline(), AnsweredBy::Option),
        }
    }
}

impl Person for EvalPerson {
    fn approve<'a>(&'a self, _request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            if self.checking.load(Ordering::SeqCst) {
                return Approval::once(true, AnsweredBy::Option);
            }
            match self.answers.approve {
                Some(yes) => Approval::once(yes, AnsweredBy::Option),
                None => Approval::once(false, AnsweredBy::Nobody),
            }
        })
    }

    fn elicit<'a>(&'a self, server: &'a str, request: &'a ElicitRequestParams) -> Answered<'a> {
        Box::pin(async move {
            if self.answers.decline_forms {
                return (decline(), AnsweredBy::Option);
            }
            match Question::of(request) {
                Some(Question::Form { schema, .. }) => self.form(server, &schema),
                _ => (decline(), AnsweredBy::Nobody),
            }
        })
    }
}
