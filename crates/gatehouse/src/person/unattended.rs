//! Nobody at the host: every answer is fixed beforehand. Probing uses it to say no to
//! everything; a harness uses it to say yes and fill forms its own way.

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::Value;

use super::{Answered, AnsweredBy, Approval, ApprovalRequest, Person, Question, decline};

/// A person whose answers are set when it is made: runs every call or none, fills a form
/// with `fill` (or declines it), declines every URL. All its answers are `by`.
#[derive(Debug, Clone, Copy)]
pub struct Unattended {
    /// Run every call?
    pub run: bool,
    /// Who the run says answered.
    pub by: AnsweredBy,
    /// How a form's content is made from its schema; `None` declines forms.
    pub fill: Option<fn(&Value) -> Value>,
}

impl Unattended {
    /// Nobody: no to every call, every question declined, answered by [`AnsweredBy::Nobody`].
    pub const NOBODY: Unattended = Unattended {
        run: false,
        by: AnsweredBy::Nobody,
        fill: None,
    };

    /// The answer to one question.
    pub fn answer(&self, question: Option<Question<'_>>) -> ElicitResult {
        match (question, self.fill) {
            (Some(Question::Form { schema, .. }), Some(fill)) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(fill(&schema))
            }
            _ => decline(),
        }
    }
}

impl Person for Unattended {
    fn approve<'a>(
        &'a self,
        _request: &'a ApprovalRequest,
    ) -> futures::future::BoxFuture<'a, Approval> {
        Box::pin(async move { Approval::once(self.run, self.by) })
    }

    fn elicit<'a>(&'a self, _server: &'a str, request: &'a ElicitRequestParams) -> Answered<'a> {
        Box::pin(async move { (self.answer(Question::of(request)), self.by) })
    }
}
