//! Who proposes a call when it is not the host's own model, by name: a gateway's caller
//! (`user@tenant`, or `local`) or the person themselves. The gate decides whose approvals
//! hold by it, and the ledger line names it.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// A proposer's name, as the gate and the ledger know it: `user@tenant` for a gateway's
/// caller (each part JSON-quoted when it holds an `@` or a quote, so no user can pass for
/// another pair), `local` for the gateway's local user (nobody named: stdio), [`PERSON`]
/// for a call the person made themselves in a host. A model's proposals in a host have none.
///
/// Made only from a checked identity ([`CallerName::of`]), by its kind, or read back from
/// a store that was given one ([`CallerName::kept`]); never from a request's text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CallerName(Cow<'static, str>);

/// The name of the person's own calls (`gatehouse call`): no gateway's caller is named so
/// (theirs hold an `@`, or are `local`).
pub static PERSON: CallerName = CallerName(Cow::Borrowed("person"));
/// The name of a gateway's local user.
const LOCAL: &str = "local";

impl CallerName {
    /// The name of `user` acting in `tenant`, as an authenticated identity says; the
    /// local user's when `user` is empty (nobody named).
    pub fn of(user: &str, tenant: &str) -> CallerName {
        let part = |s: &str| {
            if s.contains('@') || s.contains('"') {
                serde_json::json!(s).to_string()
            } else {
                s.to_owned()
            }
        };
        if user.is_empty() {
            return CallerName::local();
        }
        CallerName(Cow::Owned(format!("{}@{}", part(user), part(tenant))))
    }

    /// The gateway's local user: whoever runs it on stdio.
    pub fn local() -> CallerName {
        CallerName(Cow::Borrowed(LOCAL))
    }

    /// A name as a store kept it: it was made by [`CallerName::of`] (or is `local` or
    /// `person`) before it was written.
    pub fn kept(name: String) -> CallerName {
        CallerName(Cow::Owned(name))
    }

    /// Is it the person, calling a tool themselves?
    pub fn is_person(&self) -> bool {
        *self == PERSON
    }

    /// The name as text: what a store keeps and the ledger line writes.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for CallerName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_user_passes_for_another_pair_nor_for_the_person() {
        let plain = CallerName::of("usr-sam", "larkfield");
        assert_eq!(plain.as_str(), "usr-sam@larkfield");
        let sly = CallerName::of("usr-sam@larkfield", "x");
        let other = CallerName::of("usr-sam", "larkfield@x");
        assert_ne!(sly, other);
        assert_ne!(sly, plain);
        assert_eq!(CallerName::of("", "larkfield"), CallerName::local());
        for user in ["person", "local", "\"person\""] {
            let named = CallerName::of(user, "t");
            assert!(
                !named.is_person() && named != CallerName::local(),
                "{named}"
            );
        }
        assert!(PERSON.is_person() && !CallerName::local().is_person());
        assert_eq!(
            serde_json::json!(plain),
            serde_json::json!("usr-sam@larkfield")
        );
    }
}
