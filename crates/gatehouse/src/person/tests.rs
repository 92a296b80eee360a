//! Forms filled and checked, answers that fill only their forms, calls shown whole.

use super::*;
use std::collections::BTreeMap;

#[test]
fn answers_are_checked_against_the_whole_field_schema() {
    let schema = json!({"type": "object", "properties": {
        "count": {"type": "integer", "minimum": 1, "maximum": 100},
        "email": {"type": "string", "format": "email"},
        "hero": {"type": "string", "oneOf": [{"const": "sup", "title": "Superman"}, {"const": "bat", "title": "Batman"}]},
        "instruments": {"type": "array", "items": {"type": "string", "enum": ["Piano", "Guitar"]}}
    }});
    let fields = form_fields(&schema);
    let field = |n: &str| fields.iter().find(|f| f.name == n).unwrap();
    assert!(
        field("count")
            .parse("500")
            .unwrap_err()
            .contains("at most 100")
    );
    assert!(
        field("email")
            .parse("not-an-email")
            .unwrap_err()
            .contains("email")
    );
    assert_eq!(
        field("email").parse("sam@example.com").unwrap(),
        json!("sam@example.com")
    );
    assert!(
        field("hero").parse("Batman").is_err(),
        "titles are not values"
    );
    assert_eq!(field("hero").parse("bat").unwrap(), json!("bat"));
    assert_eq!(
        field("instruments").parse("Piano, Guitar").unwrap(),
        json!(["Piano", "Guitar"])
    );
    assert!(field("instruments").parse("Drums").is_err());
}

#[test]
fn forms_are_filled_from_options_and_checked() {
    let schema = json!({"type": "object",
        "properties": {"priority": {"type": "string", "enum": ["P1", "P2", "P3"]},
                       "count": {"type": "integer"}},
        "required": ["priority"]});
    let fields = form_fields(&schema);
    let mut given = BTreeMap::new();
    given.insert("priority".to_string(), "P1".to_string());
    assert_eq!(
        fill_from_options(&fields, &given).unwrap(),
        json!({"priority": "P1"})
    );
    given.insert("priority".to_string(), "P9".to_string());
    assert!(
        fill_from_options(&fields, &given)
            .unwrap_err()
            .contains("one of P1, P2, P3")
    );
    given.clear();
    assert!(
        fill_from_options(&fields, &given)
            .unwrap_err()
            .contains("priority")
    );
    given.insert("priority".into(), "P2".into());
    given.insert("count".into(), "x".into());
    assert!(
        fill_from_options(&fields, &given)
            .unwrap_err()
            .contains("whole number")
    );
}

#[test]
fn answers_fill_only_the_forms_they_name() {
    let fields = form_fields(&json!({"type": "object",
        "properties": {"priority": {"type": "string"}, "note": {"type": "string"}}}));
    let given = vec![
        FormAnswer::parse("priority=P1").unwrap(),
        FormAnswer::parse("tickets:note=urgent").unwrap(),
    ];
    let tickets = answers_for(&given, "tickets", &fields).unwrap();
    assert_eq!(tickets["priority"], "P1");
    assert_eq!(tickets["note"], "urgent");
    let other = answers_for(&given, "other", &fields).unwrap();
    assert!(
        !other.contains_key("note"),
        "a server-qualified answer is that server's"
    );
    let unrelated =
        form_fields(&json!({"type": "object", "properties": {"confirm": {"type": "boolean"}}}));
    assert_eq!(answers_for(&given, "tickets", &unrelated), None);
    assert_eq!(answers_for(&[], "tickets", &fields), None);
    assert!(FormAnswer::parse("=x").is_err());
    assert!(FormAnswer::parse(":a=x").is_err());
    assert!(FormAnswer::parse("novalue").is_err());
}

#[test]
fn a_described_call_shows_everything_and_nothing_acts_on_the_terminal() {
    let arguments = json!({"host": "db-01", "summary": "\u{1b}[2Jall clear"});
    let why = "not on the allow-list: ask the person";
    let text = describe_call(&ApprovalRequest {
        annotations: json!({"read_only_hint": false}),
        may_remember: true,
        ..ApprovalRequest::new("tickets", "tickets__open_ticket", arguments, why)
    });
    assert!(text.contains("tickets__open_ticket on tickets"), "{text}");
    assert!(
        text.contains("db-01") && text.contains("read_only_hint"),
        "{text}"
    );
    assert!(!text.contains('\u{1b}'), "{text}");
}

#[test]
fn a_and_capital_a_remember_only_where_offered() {
    use crate::approvals::Scope;
    use terminal::approval_answer as answer;
    assert_eq!(answer("a", true).remember, Some(Scope::Session));
    assert_eq!(answer("A", true).remember, Some(Scope::Project));
    assert!(answer("A", true).yes && answer("y", true).yes && answer("Y", false).yes);
    assert_eq!(answer("y", true).remember, None);
    // Where a rule asks, `a` and `A` are not offered: they are no, as any other answer.
    assert!(!answer("a", false).yes && !answer("A", false).yes);
    assert!(!answer("", true).yes && !answer("always", true).yes);
}
