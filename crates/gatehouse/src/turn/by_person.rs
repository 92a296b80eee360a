//! A call the person makes themselves, with no model (`gatehouse call`, chat's `/call`):
//! the one path every proposal takes ([`Turn::propose`]: the gate with its policy, hooks,
//! person and ledger line, then dispatch with its time limit, `afterCall`, and the shaper
//! with its bound), in a turn of its own, named as the person's in the trace and the
//! ledger.
//!
//! The person who types a call is not thereby its approval: a rule that asks still asks
//! ("Run it?", or `--yes`), as it would for a model's proposal of the same call.

use super::Turn;
use crate::{
    host::Host,
    model::ToolCall,
    result::ForModel,
    trace::{Outcome, Who, random_hex},
};

use crate::caller::{CallerName, PERSON};

/// Who proposed a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Proposer {
    /// The model, in a turn's loop.
    Model,
    /// The person, by hand.
    Person,
}

impl Proposer {
    /// Who the trace says proposed it.
    pub(super) fn who(self) -> Who {
        match self {
            Proposer::Model => Who::Model,
            Proposer::Person => Who::Person,
        }
    }

    /// The step's verb: `[model] wants X`, `[person] calls X`.
    pub(super) fn verb(self) -> &'static str {
        match self {
            Proposer::Model => "wants",
            Proposer::Person => "calls",
        }
    }

    /// Did the model propose it (so where its arguments came from matters)?
    pub(super) fn is_model(self) -> bool {
        matches!(self, Proposer::Model)
    }

    /// The proposal's caller, as the gate writes it in the ledger line.
    pub(super) fn caller(self) -> Option<&'static CallerName> {
        match self {
            Proposer::Model => None,
            Proposer::Person => Some(&PERSON),
        }
    }
}

/// How a call ended: what a model reads of it (bounded by `maxResultChars`), and how.
#[derive(Debug, Clone, PartialEq)]
pub struct Called {
    /// The result, or the error, as the model would read it.
    pub shown: ForModel,
    /// How it ended (its `host.tool_call` record's outcome).
    pub outcome: Outcome,
}

impl Host {
    /// One call the person makes themselves, `tool` with `arguments` (JSON text, judged by
    /// the gate as a model's would be), in a turn of its own.
    pub async fn call_by_person(&self, tool: &str, arguments: &str) -> Called {
        let call = ToolCall {
            id: format!("person-{}", random_hex(4)),
            name: tool.to_owned(),
            arguments: arguments.to_owned(),
        };
        self.turn().call_by_person(&call).await
    }
}

impl Turn<'_> {
    /// One call the person makes themselves in this turn: [`Turn::propose`]'s path, the
    /// trace's step and the ledger line naming the person as the one who proposed it.
    pub async fn call_by_person(&mut self, call: &ToolCall) -> Called {
        self.proposed_by(call, Proposer::Person).await
    }
}
