//! Each argument's label: where its value, and every identifier inside it, was seen in
//! the context. The least trusted finding wins: one identifier seen only in an untrusted
//! result is enough to steer a call, and text the model made up is not the person's.

use serde::Serialize;
use serde_json::{Value, json};

use super::{Origin, Trust, evidence};

/// Most values (leaves of the arguments) traced in one proposal; past it, the rest cannot
/// be told, which never loosens the policy.
pub const MAX_TRACED_VALUES: usize = 256;
/// Most items (values and identifiers) looked for in one proposal: each is a search over
/// the kept text, so this bounds a proposal's work whatever its arguments. Past it, the
/// rest cannot be told.
pub const MAX_TRACED_ITEMS: usize = 512;

/// Where an argument came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Came {
    /// The person's words hold it.
    Person,
    /// A trusted result (or the host's text) holds it; the person's words do not.
    Trusted,
    /// Too short or common to tell, or past the bound.
    Unknown,
    /// Nowhere in the context: the model made it.
    Model,
    /// Only untrusted text holds it (or an identifier inside it).
    Untrusted,
}

impl Came {
    /// The words rule conditions and the ledger use.
    pub const WORDS: &[(&str, Came)] = &[
        ("person", Came::Person),
        ("trusted", Came::Trusted),
        ("unknown", Came::Unknown),
        ("model", Came::Model),
        ("untrusted", Came::Untrusted),
    ];

    /// Its word.
    pub fn as_str(self) -> &'static str {
        Came::WORDS
            .iter()
            .find(|(_, c)| *c == self)
            .map_or("unknown", |(w, _)| w)
    }
}

/// One argument's value and where it came from.
#[derive(Debug, Clone, Serialize)]
pub struct ArgumentFlow {
    /// The value's JSON Pointer in the arguments.
    pub pointer: String,
    /// Where it came from.
    pub came: Came,
    /// What was looked for and decided it (the value, or an identifier inside it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// Where that was seen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

impl ArgumentFlow {
    /// In words, for the approval: "`/recipient` us1330… appeared only in
    /// banking__read_file's result at step 2 of turn 1, untrusted".
    pub fn describe(&self) -> String {
        let what = self
            .evidence
            .as_deref()
            .map(|e| format!(" {}", crate::text::clip(e, 60)))
            .unwrap_or_default();
        let place = self
            .origin
            .as_ref()
            .map(Origin::describe)
            .unwrap_or_default();
        let p = &self.pointer;
        match self.came {
            Came::Person => format!("{p}{what} is from {place}"),
            Came::Trusted => format!("{p}{what} is from {place}, trusted"),
            Came::Untrusted => format!("{p}{what} appeared only in {place}, untrusted"),
            Came::Model => format!("{p}{what} appears nowhere in the context: the model made it"),
            // Found nowhere in what the gateway relayed: its caller's own context is unseen.
            Came::Unknown if self.evidence.is_some() => format!(
                "{p}{what} is in nothing relayed to this caller: whether the person or the \
                 model gave it cannot be told"
            ),
            Came::Unknown => format!("{p} is too short or common to tell where it came from"),
        }
    }
}

/// Where a proposal's arguments came from, and whether untrusted text is in the context.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Traced {
    /// Each value traced, in the arguments' order.
    pub arguments: Vec<ArgumentFlow>,
    /// More values than [`MAX_TRACED_VALUES`]: the rest could not be told.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
    /// The first untrusted text that entered the context, if any has.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tainted_by: Option<Origin>,
    /// Only part of the context is seen (a gateway's caller): a value found nowhere, or
    /// too short to tell, cannot be told.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unseen: bool,
}

impl Traced {
    /// Where the value at `pointer` came from: the least trusted of the values at it and
    /// under it; `None` when the arguments hold nothing there, or when it cannot be told
    /// (past the bound, or not seen), so that an `allow` on it does not apply and an ask
    /// or a deny does.
    pub fn came(&self, pointer: &str) -> Option<Came> {
        let under = format!("{pointer}/");
        let found = self
            .arguments
            .iter()
            .filter(|a| a.pointer == pointer || a.pointer.starts_with(&under) || pointer.is_empty())
            .map(|a| a.came)
            .max();
        let told = match (found, self.cut) {
            (Some(c), true) => Some(c.max(Came::Unknown)),
            (found, _) => found,
        };
        match told {
            Some(Came::Unknown) if self.cut || self.unseen => None,
            told => told,
        }
    }

    /// Are the arguments vouched for: none came only from untrusted text or from nowhere,
    /// and one at least came from the person or a trusted result? A value too short or
    /// common to tell (`unknown`) is neither for nor against, but a call of such values
    /// alone is anchored to nothing the person said, so it is not vouched for either.
    /// Unseen (a gateway's caller), a value found nowhere vouches for nothing: it may be
    /// the model's.
    pub fn all_vouched(&self) -> bool {
        !self.cut
            && self.arguments.iter().all(|a| match a.came {
                Came::Person | Came::Trusted => true,
                Came::Unknown => !(self.unseen && a.evidence.is_some()),
                Came::Model | Came::Untrusted => false,
            })
            && self
                .arguments
                .iter()
                .any(|a| matches!(a.came, Came::Person | Came::Trusted))
    }

    /// What keeps the arguments from being vouched for, in words.
    pub fn unvouched(&self) -> Vec<String> {
        let against: Vec<String> = self
            .arguments
            .iter()
            .filter(|a| match a.came {
                Came::Untrusted | Came::Model => true,
                // Unseen, a value found nowhere is named: it may be the model's.
                Came::Unknown => self.unseen && a.evidence.is_some(),
                Came::Person | Came::Trusted => false,
            })
            .map(ArgumentFlow::describe)
            .collect();
        if !against.is_empty() || self.all_vouched() {
            return against;
        }
        vec!["no argument is one the person gave or a trusted result holds".into()]
    }

    /// For the ledger line.
    pub fn to_json(&self) -> Value {
        json!(self)
    }
}

/// Finds the most trusted source that holds a normalised item.
type Find<'a> = &'a dyn Fn(&str) -> Option<(Trust, Origin)>;

/// Trace every value of `arguments` with `find`, which names the most trusted source
/// holding a normalised item.
pub(super) fn trace(
    arguments: &Value,
    find: Find<'_>,
    nowhere: Came,
    tainted_by: Option<Origin>,
) -> Traced {
    let unseen = nowhere == Came::Unknown;
    let mut leaves = Vec::new();
    let mut cut = !leaves_of(arguments, String::new(), &mut leaves);
    let mut budget = MAX_TRACED_ITEMS;
    let arguments = leaves
        .into_iter()
        .map(|(pointer, value)| {
            let flow = flow_of(pointer.clone(), &value, (find, nowhere), &mut budget);
            cut |= flow.is_none();
            flow.unwrap_or(ArgumentFlow {
                pointer,
                came: Came::Unknown,
                evidence: None,
                origin: None,
            })
        })
        .collect();
    Traced {
        arguments,
        cut,
        tainted_by,
        unseen,
    }
}

/// The strings and numbers in `value`, with their pointers; `false` when there were more
/// than [`MAX_TRACED_VALUES`].
fn leaves_of(value: &Value, at: String, out: &mut Vec<(String, String)>) -> bool {
    match value {
        Value::String(s) => push(out, at, s.clone()),
        Value::Number(n) => push(out, at, n.to_string()),
        Value::Bool(_) | Value::Null => true,
        Value::Array(items) => items
            .iter()
            .enumerate()
            .all(|(i, v)| leaves_of(v, format!("{at}/{i}"), out)),
        Value::Object(map) => map.iter().all(|(k, v)| {
            let key = k.replace('~', "~0").replace('/', "~1");
            leaves_of(v, format!("{at}/{key}"), out)
        }),
    }
}

fn push(out: &mut Vec<(String, String)>, at: String, value: String) -> bool {
    if out.len() >= MAX_TRACED_VALUES {
        return false;
    }
    out.push((at, value));
    true
}

/// One value's label: the least trusted finding among the value and its identifiers;
/// `None` when its items pass what is left of the proposal's `budget`.
fn flow_of(
    pointer: String,
    value: &str,
    (find, nowhere): (Find<'_>, Came),
    budget: &mut usize,
) -> Option<ArgumentFlow> {
    let normalised = evidence::normalise(value);
    let (_, items) = evidence::items(&normalised);
    if items.len() > *budget {
        *budget = 0;
        return None;
    }
    *budget -= items.len();
    let mut worst: Option<(Came, String, Option<Origin>)> = None;
    for item in items {
        let (came, origin) = match find(&item) {
            Some((Trust::Person, o)) => (Came::Person, Some(o)),
            Some((Trust::Trusted, o)) => (Came::Trusted, Some(o)),
            Some((Trust::Untrusted, o)) => (Came::Untrusted, Some(o)),
            None => (nowhere, None),
        };
        if worst.as_ref().is_none_or(|(w, _, _)| came > *w) {
            worst = Some((came, item, origin));
        }
    }
    // A long value is looked for by its identifiers only: the rest is the model's text
    // (or, unseen, the caller's, which cannot be told).
    if normalised.len() > evidence::MAX_WHOLE_BYTES
        && worst.as_ref().is_none_or(|(w, _, _)| *w < nowhere)
    {
        worst = Some((
            nowhere,
            crate::text::clip(&normalised, 200).into_owned(),
            None,
        ));
    }
    Some(match worst {
        Some((came, item, origin)) => ArgumentFlow {
            pointer,
            came,
            evidence: Some(item),
            origin,
        },
        None => ArgumentFlow {
            pointer,
            came: Came::Unknown,
            evidence: None,
            origin: None,
        },
    })
}
