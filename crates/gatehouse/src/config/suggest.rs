//! "Did you mean": the nearest known key for a servers file's unknown one, and how to
//! write what other hosts spell their own way (`autoApprove`, `alwaysAllow`).

/// Largest edit distance (letters added, removed, changed or swapped) still offered as a
/// suggestion: a typo, not another word.
pub const MAX_SUGGESTION_DISTANCE: usize = 2;

/// Keys other hosts write in a server's entry, and how Gatehouse says the same.
const OTHER_HOSTS: &[(&str, &str)] = &[
    (
        "autoApprove",
        "Gatehouse runs a tool unasked when \"gatehouse\": {\"allow\": [\"SERVER__TOOL\", …]} names it",
    ),
    (
        "alwaysAllow",
        "Gatehouse runs a tool unasked when \"gatehouse\": {\"allow\": [\"SERVER__TOOL\", …]} names it",
    ),
    (
        "envFile",
        "give the variables in \"env\", or pass yours by name with \"passEnv\"",
    ),
    (
        "timeout",
        "the time limit of a call is \"gatehouse\": {\"toolTimeoutMs\": …}",
    ),
];

/// What to add to "unknown key `key`": a close known key, or how Gatehouse writes what
/// another host meant; empty when nothing is close.
pub fn hint(key: &str, known: &[&str]) -> String {
    if let Some((_, how)) = OTHER_HOSTS.iter().find(|(k, _)| *k == key) {
        return format!(" ({how})");
    }
    nearest(key, known.iter().copied(), MAX_SUGGESTION_DISTANCE)
        .map(|k| format!(" (did you mean \"{k}\"?)"))
        .unwrap_or_default()
}

/// The candidate nearest to `word` (case aside), if it is within `most` edits and within
/// half the word's length (one letter is near every short word); the first of equals.
pub fn nearest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    most: usize,
) -> Option<&'a str> {
    let lower = word.to_ascii_lowercase();
    let bound = most.min(word.chars().count() / 2);
    candidates
        .into_iter()
        .map(|c| {
            (
                strsim::damerau_levenshtein(&lower, &c.to_ascii_lowercase()),
                c,
            )
        })
        .filter(|(d, _)| *d <= bound)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Every key of `map` is one of `known`; else the first other, with the nearest known key.
pub fn known_keys(
    map: &serde_json::Map<String, serde_json::Value>,
    known: &[&str],
    at: &str,
) -> Result<(), String> {
    match map.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(format!(
            "{at}: unknown key {:?}{} (known: {})",
            crate::text::visible_line(k),
            hint(k, known),
            known.join(", ")
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::hint;

    #[test]
    fn a_typo_gets_the_nearest_key_and_another_word_gets_nothing() {
        let keys = ["args", "allow", "command", "env", "mcpServers"];
        assert_eq!(hint("arg", &keys), " (did you mean \"args\"?)");
        assert_eq!(hint("alow", &keys), " (did you mean \"allow\"?)");
        assert_eq!(hint("comand", &keys), " (did you mean \"command\"?)");
        assert_eq!(hint("mcpservers", &keys), " (did you mean \"mcpServers\"?)");
        assert_eq!(hint("colour", &keys), "");
        assert_eq!(
            hint("x", &keys),
            "",
            "one letter is close to every short word"
        );
        assert!(hint("autoApprove", &keys).contains("\"allow\""));
    }
}
