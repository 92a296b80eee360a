//! What one attempt of an eval saw: each question's answer, every proposal and how it
//! ended, the ledger's lines, the `world` calls' results. The run makes it; the checks
//! grade it.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::trace::Outcome;

/// One proposal of the run, as the host and its ledger saw it.
#[derive(Debug, Clone, Serialize)]
pub struct CallSeen {
    /// The tool (a glob over `server__tool` names, in a check).
    pub tool: String,
    /// Its server.
    pub server: String,
    /// The arguments, as the ledger kept them (`null` when none was written).
    pub arguments: Value,
    /// How it ended.
    pub outcome: Outcome,
    /// Was it sent to its server?
    pub sent: bool,
    /// A call of the suite's own checks, after the run.
    pub by_person: bool,
}

/// What a `world` call returned.
#[derive(Debug, Clone, Serialize)]
pub struct WorldSeen {
    /// Was it an error?
    pub is_error: bool,
    /// The result as the model would read it.
    pub text: String,
    /// Nothing could be sent (a `resend` with no answered round in the run): why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_sent: Option<String>,
}

/// One attempt's run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Run {
    /// The answer to each question, in order.
    pub answers: Vec<String>,
    /// Every proposal, in order.
    pub calls: Vec<CallSeen>,
    /// The ledger's lines for the attempt, as written.
    pub ledger: Vec<Value>,
    /// Model calls.
    pub model_calls: u64,
    /// Tokens the model reported.
    pub tokens: u64,
    /// Bytes of the definitions the model calls carried, in all.
    pub definition_bytes: u64,
    /// From the servers' start to the last answer, in milliseconds.
    pub ms: f64,
    /// The `world` calls' results, by the check's index.
    pub world: BTreeMap<usize, WorldSeen>,
    /// The `world` commands' verdicts, by the check's index.
    #[serde(skip)]
    pub commands: BTreeMap<usize, Result<(), String>>,
    /// The run could not be made at all (servers file, model): why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}
