//! The ledger line of one decision, as the gate writes it before a call is sent (or
//! instead of it): the proposal's fields, digests and kept arguments, and the words of
//! [`crate::ledger`]'s typed fields for what was decided and who answered.

use rmcp::model::JsonObject;
use serde_json::{Value, json};

use super::{Gate, MAX_RECORDED_NAME_CHARS, Proposal};
use crate::{
    catalog::CatalogTool,
    digest,
    flow::Traced,
    ledger::{self, Entry},
    person::AnsweredBy,
    trace::{Trace, Who},
};

impl Gate {
    /// The ledger line for this proposal, before its decision is filled in.
    pub(super) fn entry(
        &self,
        p: &Proposal<'_>,
        tool: Option<&CatalogTool>,
        arguments: Option<&JsonObject>,
        trace: &Trace,
    ) -> Entry {
        if !self.keeper.keeps_lines() {
            // Nothing keeps the line: its digests would be made for nobody, on every call.
            return Entry {
                session: p.session.to_owned(),
                trace_id: p.trace_id.to_owned(),
                step: p.step,
                ..Entry::default()
            };
        }
        let text = match arguments {
            Some(a) => Value::Object(a.clone()).to_string(),
            None => p.call.arguments.clone(),
        };
        let kept = self.keep_arguments.then(|| {
            let mut v = serde_json::from_str(&text).unwrap_or(Value::String(text.clone()));
            trace.secrets().json(&mut v);
            v
        });
        Entry {
            session: p.session.to_owned(),
            trace_id: p.trace_id.to_owned(),
            step: p.step,
            server: tool.map_or("-", |t| t.origin.label()).to_owned(),
            tool: crate::text::clip(&p.call.name, MAX_RECORDED_NAME_CHARS).into_owned(),
            arguments_sha256: digest::sha256_hex(text.as_bytes()),
            arguments: kept,
            fingerprint: tool.map(|t| t.definition_digest().to_owned()),
            caller: p.caller.cloned(),
            confirmation: p.confirmation.map(str::to_owned),
            ..Entry::default()
        }
    }

    /// Where the arguments came from, as the ledger keeps it: the values looked for only
    /// when the arguments are kept too, and the host's secrets out of them.
    pub(super) fn flows_kept(&self, traced: &Traced, trace: &Trace) -> Value {
        let mut kept = traced.clone();
        for a in &mut kept.arguments {
            if !self.keep_arguments {
                a.evidence = None;
            }
        }
        let mut value = kept.to_json();
        trace.secrets().json(&mut value);
        value
    }

    /// Append a line for a decision that sends nothing: a failure is said, not fatal.
    pub(super) async fn record_or_warn(&self, entry: Entry, trace: &Trace) {
        if let Err(e) = self.keeper.append(entry).await {
            trace.add(
                Who::Host,
                format!("warning: {e}"),
                json!({"ledger": "unwritable"}),
            );
        }
    }
}

/// A call that was sent: asked about, or run without asking.
pub(super) fn sent_decision(asked: bool) -> ledger::Decision {
    match asked {
        true => ledger::Decision::Asked,
        false => ledger::Decision::Run,
    }
}

pub(super) fn answer_of(yes: bool) -> ledger::Answer {
    match yes {
        true => ledger::Answer::Yes,
        false => ledger::Answer::No,
    }
}

pub(super) fn answered_by(by: AnsweredBy) -> ledger::By {
    match by {
        AnsweredBy::Option => ledger::By::Option,
        AnsweredBy::Terminal | AnsweredBy::Browser | AnsweredBy::Page => ledger::By::Person,
        // The client's form: the client, or the model driving it, may have answered.
        AnsweredBy::Client => ledger::By::Client,
        AnsweredBy::Nobody => ledger::By::Nobody,
    }
}
