//! Where the model's context came from, and so where a proposal's arguments came from.
//!
//! Everything the model reads is kept here with its origin and trust, as it enters the
//! context: the person's questions and answers, the host's own text, each result and each
//! server's definitions. A proposal's arguments are then traced ([`Flows::trace`]): each
//! value, and each identifier inside it, is looked for in that text after normalising
//! ([`evidence`]), and the argument is labelled from the person, from a trusted result,
//! only from an untrusted one, made by the model, or cannot tell. The policy reads the
//! labels (rule conditions `from`, the rule of two); the person and the ledger see them.
//!
//! Bounded for any session: at most [`MAX_FLOW_BYTES`] of text kept (the oldest dropped,
//! which only makes values look made by the model, never trusted), and once untrusted text
//! has entered, the session stays marked whatever is dropped. What cannot be told never
//! loosens the policy.

pub mod evidence;
mod provenance;

pub use provenance::{ArgumentFlow, Came, MAX_TRACED_ITEMS, MAX_TRACED_VALUES, Traced};

use std::{
    collections::{HashSet, VecDeque},
    sync::Mutex,
};

use serde::Serialize;

/// Most normalised text the session keeps to trace arguments to, in bytes.
pub const MAX_FLOW_BYTES: usize = 4 << 20;
/// Most pieces of text kept (results, questions, definitions).
pub const MAX_SOURCES: usize = 10_000;
/// Most normalised text a gateway keeps for one caller: it keeps many callers' at once
/// (`gateway::flows`), so each gets less than a host's session.
pub const MAX_CALLER_FLOW_BYTES: usize = 1 << 20;

/// Where a piece of the context came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    /// The person's question, in this turn of the session.
    Question {
        /// The turn, from 1.
        turn: u64,
    },
    /// The person's answer to a server's question.
    Answer {
        /// The server that asked.
        server: String,
    },
    /// The host's own text: the system prompt.
    Host,
    /// A tool's result, as the model read it.
    Result {
        /// The server (`host` for the host's own tools).
        server: String,
        /// The tool, as the model named it.
        tool: String,
        /// The turn, from 1.
        turn: u64,
        /// The call's number in its turn.
        step: u64,
    },
    /// A server's tool definitions, as the model was offered them.
    Definitions {
        /// The server.
        server: String,
    },
    /// A tool's result a gateway relayed to its caller.
    Relayed {
        /// The server.
        server: String,
        /// The tool, as the caller named it.
        tool: String,
        /// The gateway's call number.
        step: u64,
    },
}

impl Origin {
    /// In words, for the person: "`support__get_ticket`'s result at step 2 of turn 1".
    pub fn describe(&self) -> String {
        match self {
            Origin::Question { turn } => format!("the person's question (turn {turn})"),
            Origin::Answer { server } => format!("the person's answer to {server}"),
            Origin::Host => "the host's system prompt".into(),
            Origin::Result {
                tool, turn, step, ..
            } => format!("{tool}'s result at step {step} of turn {turn}"),
            Origin::Definitions { server } => format!("{server}'s tool descriptions"),
            Origin::Relayed { tool, step, .. } => {
                format!("{tool}'s result the gateway relayed to this caller (call {step})")
            }
        }
    }
}

/// How far a piece of the context is trusted: the person's own words, text the person
/// vouches for (the host's, a trusted server's results), or anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Trust {
    /// The person's words.
    Person,
    /// The host's text, or a result the person trusts.
    Trusted,
    /// Everything else: untrusted servers' results and descriptions.
    Untrusted,
}

struct Source {
    origin: Origin,
    trust: Trust,
    text: String,
}

#[derive(Default)]
struct Kept {
    sources: VecDeque<Source>,
    bytes: usize,
    /// The first untrusted text that entered: the session stays marked by it.
    tainted: Option<Origin>,
    /// Digests of text added once per session (definitions), bounded with the sources.
    once: HashSet<String>,
}

/// A session's context, labelled. Shared by the session's turns; cheap to lock.
pub struct Flows {
    kept: Mutex<Kept>,
    /// Most normalised text kept, in bytes.
    bound: usize,
    /// What a value found nowhere is: the model's, where the whole context is seen.
    nowhere: Came,
}

impl Default for Flows {
    /// A host's session: it sees the whole context.
    fn default() -> Flows {
        Flows {
            kept: Mutex::default(),
            bound: MAX_FLOW_BYTES,
            nowhere: Came::Model,
        }
    }
}

impl std::fmt::Debug for Flows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        f.debug_struct("Flows")
            .field("sources", &kept.sources.len())
            .field("bytes", &kept.bytes)
            .field("tainted", &kept.tainted)
            .finish()
    }
}

impl Flows {
    /// A gateway's caller: only what the gateway relayed is seen, never the caller's own
    /// conversation, so a value found nowhere cannot be told (the person's or the model's)
    /// and never counts as the person's.
    pub fn of_unseen_caller() -> Flows {
        Flows {
            kept: Mutex::default(),
            bound: MAX_CALLER_FLOW_BYTES,
            nowhere: Came::Unknown,
        }
    }

    /// `text` entered the model's context from `origin`, trusted so far.
    pub fn add(&self, origin: Origin, trust: Trust, text: &str) {
        let text = evidence::normalise(text);
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if trust == Trust::Untrusted && kept.tainted.is_none() && !text.is_empty() {
            kept.tainted = Some(origin.clone());
        }
        if text.len() > self.bound {
            return;
        }
        kept.bytes += text.len();
        kept.sources.push_back(Source {
            origin,
            trust,
            text,
        });
        while kept.bytes > self.bound || kept.sources.len() > MAX_SOURCES {
            let Some(old) = kept.sources.pop_front() else {
                break;
            };
            kept.bytes -= old.text.len();
        }
    }

    /// [`Flows::add`], once per session for the same origin and text (a server's
    /// definitions, offered on every model call).
    pub fn add_once(&self, origin: Origin, trust: Trust, text: &str) {
        let key = crate::digest::sha256_hex(format!("{origin:?}\n{text}").as_bytes());
        {
            let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
            if kept.once.contains(&key) {
                return;
            }
            // Past the bound the text is added again each time (the sources are bounded
            // anyway) rather than dropped: untrusted text must still mark the session.
            if kept.once.len() < MAX_SOURCES {
                kept.once.insert(key);
            }
        }
        self.add(origin, trust, text);
    }

    /// The first untrusted text that entered the context, if any has.
    pub fn tainted(&self) -> Option<Origin> {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.tainted.clone()
    }

    /// Where each of `arguments`' values came from.
    pub fn trace(&self, arguments: &serde_json::Value) -> Traced {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let find = |item: &str| best_source(&kept.sources, item);
        provenance::trace(arguments, &find, self.nowhere, kept.tainted.clone())
    }
}

/// The most trusted source that holds `item`, with its trust.
fn best_source(sources: &VecDeque<Source>, item: &str) -> Option<(Trust, Origin)> {
    let finder = memchr::memmem::Finder::new(item.as_bytes());
    let mut best: Option<&Source> = None;
    for s in sources {
        if best.is_some_and(|b| b.trust <= s.trust) {
            continue;
        }
        if finder.find(s.text.as_bytes()).is_some() {
            best = Some(s);
            if s.trust == Trust::Person {
                break;
            }
        }
    }
    best.map(|s| (s.trust, s.origin.clone()))
}

#[cfg(test)]
mod tests;
