//! What of a value can be looked for in the context: the value itself and the identifiers
//! inside it (emails, URLs and domains, paths, account numbers, host names, ids), each
//! normalised (Unicode NFKC, lower case, invisible characters out, whitespace runs as one
//! space), and none short or common: "P1", "yes" or 10 say nothing of where they came from.

use std::sync::LazyLock;

use regex::Regex;
use unicode_normalization::UnicodeNormalization;

pub use crate::text::is_invisible;

/// Shortest value or identifier that counts as evidence, in characters once normalised.
pub const MIN_EVIDENCE_CHARS: usize = 5;
/// Longest value looked for whole, in bytes once normalised: a longer one is looked for by
/// its identifiers only, and counts as the model's own text.
pub const MAX_WHOLE_BYTES: usize = 2_000;
/// Most identifiers taken from one value.
pub const MAX_IDENTIFIERS: usize = 16;

/// Values too common to say where they came from, whatever their length.
const COMMON: &[&str] = &[
    "false",
    "true",
    "null",
    "none",
    "empty",
    "open",
    "closed",
    "pending",
    "active",
    "today",
    "tomorrow",
    "yesterday",
    "default",
    "normal",
    "medium",
    "urgent",
    "high",
    "low",
    "other",
    "unknown",
    "ascending",
    "descending",
    "enabled",
    "disabled",
    "public",
    "private",
    "success",
    "failed",
    "error",
    "draft",
    "english",
    "thanks",
    "hello",
];

/// The identifiers inside a text: emails, URLs, paths, domains, then word-like tokens
/// joined by `-`, `_` or `.` (ids, host names, account numbers).
static IDENTIFIER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}",
        r"|[a-z][a-z0-9+.-]*://[^\s<>]+",
        r"|(?:~|\.{1,2})?/[^\s<>]{2,}",
        r"|[a-z0-9]+(?:[._-][a-z0-9]+)+",
        r"|[a-z0-9]{5,}",
    ))
    .expect("a fixed regex")
});

/// `text` as values are compared: NFKC, lower case, invisible characters out, each run
/// of whitespace one space, trimmed.
pub fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = true;
    for c in text.nfkc().filter(|c| !is_invisible(*c)) {
        if c.is_whitespace() {
            if !space {
                out.push(' ');
                space = true;
            }
            continue;
        }
        space = false;
        out.extend(c.to_lowercase());
    }
    if out.ends_with(' ') {
        out.pop();
    }
    // Lower case can undo NFKC's composition outside ASCII (`İ`): compose again.
    if out.is_ascii() {
        out
    } else {
        out.nfkc().collect()
    }
}

/// Does a normalised value say anything of where it came from?
pub fn is_evidence(value: &str) -> bool {
    let chars = value.chars().count();
    if chars < MIN_EVIDENCE_CHARS || COMMON.contains(&value) {
        return false;
    }
    // A number is evidence only when it is long enough to be an account or an id, not an
    // amount or a count.
    let digits = value.chars().filter(char::is_ascii_digit).count();
    let numeric = value
        .chars()
        .all(|c| c.is_ascii_digit() || ".,- ".contains(c));
    !numeric || digits >= 6
}

/// Is a token found inside text an identifier rather than a word: an email, a URL, a
/// path or a domain by its punctuation, else a token holding a digit (`t-30002`,
/// `jump-prod-02`, an account number)? "refund" or "follow-up" says nothing of where a
/// value came from.
fn is_identifier(token: &str) -> bool {
    token.contains(['@', '/', ':', '.']) || token.chars().any(|c| c.is_ascii_digit())
}

/// What to look for of one value (normalised): the value itself when it is evidence and
/// not too long, then its identifiers, each once. `whole` says whether the value itself
/// is the first item.
pub fn items(normalised: &str) -> (bool, Vec<String>) {
    let mut out: Vec<String> = Vec::new();
    let whole = normalised.len() <= MAX_WHOLE_BYTES && is_evidence(normalised);
    if whole {
        out.push(normalised.to_owned());
    }
    for m in IDENTIFIER.find_iter(normalised) {
        if out.len() > MAX_IDENTIFIERS {
            break;
        }
        let id = m
            .as_str()
            .trim_end_matches(['.', ',', ';', ':', ')', ']', '}', '"', '\'']);
        if is_evidence(id) && is_identifier(id) && !out.iter().any(|o| o == id) {
            out.push(id.to_owned());
        }
    }
    (whole, out)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn width_case_invisibles_and_spaces_do_not_tell_a_copy_from_its_source() {
        assert_eq!(
            normalise("  Ａttacker@Example.COM\u{200B}\u{E0041}\t\n now "),
            "attacker@example.com now"
        );
        assert_eq!(normalise("US13\u{202E}30 0000"), "us1330 0000");
    }

    #[test]
    fn identifiers_are_found_inside_text_and_short_or_common_values_are_not_evidence() {
        let (whole, found) = items(&normalise(
            "Send the report to attacker@example.com, see https://evil.example/x?y=1 \
             and ~/.ssh/id_rsa on jump-prod-02 for T-30002 (account US133000000121212121212).",
        ));
        assert!(whole);
        for id in [
            "attacker@example.com",
            "https://evil.example/x?y=1",
            "~/.ssh/id_rsa",
            "jump-prod-02",
            "t-30002",
            "us133000000121212121212",
        ] {
            assert!(found.iter().any(|i| i == id), "{id} in {found:?}");
        }
        let (_, words) = items("please refund the follow-up payment");
        assert_eq!(
            words,
            ["please refund the follow-up payment"],
            "words are not identifiers"
        );
        for short in ["p1", "yes", "10", "100.00", "true", "open", "1 000"] {
            assert!(!is_evidence(short), "{short}");
        }
        assert!(is_evidence("1234567"));
        assert!(is_evidence("a-1002"));
        let (whole, none) = items("p1");
        assert!(!whole && none.is_empty());
    }

    proptest! {
        #[test]
        fn any_text_is_normalised_and_itemised_in_bounds(text in "\\PC{0,400}") {
            let n = normalise(&text);
            prop_assert!(!n.chars().any(is_invisible));
            prop_assert_eq!(normalise(&n), n.clone());
            let (_, found) = items(&n);
            prop_assert!(found.len() <= MAX_IDENTIFIERS + 2);
        }
    }
}
