//! `gatehouse call`'s own reading: ARGS-JSON, and the nearest names of an unknown tool.

use super::*;

#[test]
fn arguments_are_a_json_object_or_nothing() {
    assert_eq!(arguments_text(None).unwrap(), "{}");
    let given = r#"{"ticket_id": "T-30002"}"#;
    assert_eq!(arguments_text(Some(given)).unwrap(), given);
    for (text, kind) in [
        ("[1, 2]", "an array"),
        ("\"T-30002\"", "a string"),
        ("3", "a number"),
        ("null", "null"),
        ("true", "a boolean"),
    ] {
        let e = arguments_text(Some(text)).unwrap_err().to_string();
        assert!(e.contains("must be a JSON object"), "{e}");
        assert!(e.ends_with(&format!("not {kind}")), "{e}");
    }
}

#[test]
fn a_syntax_error_names_its_line_and_column_and_points_at_it() {
    // The shell ate the quotes around the key.
    let e = arguments_text(Some("{ticket_id: 1}"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "ARGS-JSON is not valid JSON: key must be a string at line 1, column 2\n    {ticket_id: 1}\n     ^"
    );
    let e = arguments_text(Some("{\"a\": 1,\n \"b\" 2}"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("at line 2, column 6"), "{e}");
    assert!(e.ends_with("\n     \"b\" 2}\n         ^"), "{e:?}");
    // A long line is shown around the place only, and its controls made visible.
    let long = format!("{{\"a\": \"{}\u{1b}\" x}}", "y".repeat(500));
    let e = arguments_text(Some(&long)).unwrap_err().to_string();
    assert!(e.len() < 300, "{e}");
    assert!(!e.contains('\u{1b}'), "{e:?}");
}

#[test]
fn an_unknown_tool_gets_the_nearest_real_names() {
    let names = [
        "support__get_ticket",
        "support__search_knowledge",
        "cmdb__get_asset",
        "tickets__open_ticket",
        "tickets__list_tickets",
        "time__get_current_time",
    ];
    // A typo, a bare name, another host's prefix, a wrong server.
    assert_eq!(
        nearest("support__get_tiket", &names),
        ["support__get_ticket"]
    );
    assert_eq!(nearest("get_ticket", &names), ["support__get_ticket"]);
    assert_eq!(
        nearest("mcp__time__get_current_time", &names),
        ["time__get_current_time"]
    );
    assert_eq!(
        nearest("cmdb__get_ticket", &names)[0],
        "support__get_ticket"
    );
    // Another word altogether gets nothing.
    assert!(nearest("weather__forecast", &names).is_empty());
    // Never more than a few.
    let many: Vec<String> = (0..10).map(|i| format!("s{i}__echo")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    assert_eq!(nearest("echo", &many).len(), MAX_SUGGESTIONS);
}

#[test]
fn the_status_says_how_the_call_ended() {
    assert_eq!(status(Outcome::Ok), 0);
    for failed in [
        Outcome::ToolError,
        Outcome::Error,
        Outcome::Refused,
        Outcome::Declined,
        Outcome::Timeout,
        Outcome::Stopped,
    ] {
        assert_eq!(status(failed), EXIT_FAILED, "{failed:?}");
    }
    assert_eq!(status(Outcome::UnknownTool), EXIT_USAGE);
    assert_eq!(status(Outcome::Background), EXIT_STILL_RUNNING);
}
