//! Readings and assertions over what a run printed that many tests share: a list of texts
//! holds one, two fields of each record side by side, the item of a JSON list with a field.

use serde_json::Value;

/// `text` (a run's stderr, a screen) says `part`.
#[track_caller]
pub fn says(text: &str, part: &str) {
    assert!(text.contains(part), "{part:?} is not in:\n{text}");
}

/// `texts` holds `want`, exactly.
pub fn assert_has(texts: &[String], want: &str) {
    assert!(texts.iter().any(|t| t == want), "{want}: {texts:#?}");
}

/// Some text of `texts` is `what`: `holds` says so of it.
pub fn assert_any(texts: &[String], what: &str, holds: impl Fn(&str) -> bool) {
    assert!(texts.iter().any(|t| holds(t)), "{what}: {texts:#?}");
}

/// Fields `a` and `b` of each record, side by side (a missing field reads as "").
pub fn pairs(records: &[Value], a: &str, b: &str) -> Vec<(String, String)> {
    records
        .iter()
        .map(|r| {
            let field = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            (field(a), field(b))
        })
        .collect()
}

/// The items of a JSON list (panics, showing it, when `list` is not one).
pub fn items(list: &Value) -> &[Value] {
    list.as_array()
        .unwrap_or_else(|| panic!("not a JSON list: {list}"))
}

/// The first item of the JSON list `list` whose `key` is `value`, if any.
pub fn item_with<'a>(list: &'a Value, key: &str, value: &str) -> Option<&'a Value> {
    find(items(list), key, value)
}

/// The first record whose `key` is `value`, if any.
pub fn find<'a>(records: &'a [Value], key: &str, value: &str) -> Option<&'a Value> {
    records.iter().find(|r| r[key] == value)
}

/// Each item's `name`, from a `--json` list on stdout.
pub fn names_listed(stdout: &str) -> Vec<String> {
    let list: Value = serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    items(&list)
        .iter()
        .map(|item| item["name"].as_str().unwrap().to_owned())
        .collect()
}
