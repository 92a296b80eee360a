//! The scripted model's plans for the seed's questions, and any text it may be given.

use super::*;

fn spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: String::new(),
        parameters: Default::default(),
        strict: false,
    }
}

/// `find` gives each text's expected part, or nothing.
/// What each finder finds in each text: (finder, text, what it should find).
type Finds<'a> = &'a [(fn(&str) -> Option<String>, &'a str, Option<&'a str>)];

fn finds(cases: Finds<'_>) {
    for (find, text, want) in cases {
        assert_eq!(find(text).as_deref(), *want, "{text}");
    }
}

#[test]
fn finds_ticket_ids_hostnames_and_order_ids_only_as_whole_words() {
    finds(&[
        (
            ticket_id,
            "Draft a reply to ticket T-30002",
            Some("T-30002"),
        ),
        (ticket_id, "XT-30002 or T-300021", None),
        (ticket_id, "T-40003.", Some("T-40003")),
        (
            hostname,
            "who owns jump-prod-02? Open",
            Some("jump-prod-02"),
        ),
        (hostname, "T-30002 and LK-182074", None),
        (
            hostname,
            "customer-db-prod-01's disk",
            Some("customer-db-prod-01"),
        ),
        (order_id, "When will A-1002 arrive?", Some("A-1002")),
        (order_id, "BA-1002 or A-10021", None),
    ]);
}

#[test]
fn a_ticket_question_starts_with_the_ticket_then_searches_its_subject() {
    let tools = [
        spec("support__search_knowledge"),
        spec("support__get_ticket"),
    ];
    let mut msgs = vec![Message::User("Draft a reply to ticket T-30002".into())];
    let d = plan_after(
        &mut msgs,
        &tools,
        "support__get_ticket",
        json!({"subject": "Charged twice", "customer_name": "Hugo"}),
    );
    assert_eq!(d.tool_calls[0].arguments, r#"{"query":"Charged twice"}"#);
}

#[test]
fn ticket_requests_are_recognised() {
    assert_eq!(
        summary_of("who owns x? Open a ticket for it: brute force then a login"),
        "brute force then a login"
    );
    assert!(wants_new_ticket("Open a ticket for it"));
    assert!(wants_ticket_list("please list tickets for jump-prod-02"));
}

#[test]
fn the_seed_question_looks_up_the_host_then_opens_a_ticket() {
    let tools = [spec("cmdb__get_asset"), spec("tickets__open_ticket")];
    let q =
        "who owns jump-prod-02? Open a ticket for it: brute force then a login from 203.0.113.77";
    let mut msgs = vec![Message::User(q.into())];
    let d = plan_after(
        &mut msgs,
        &tools,
        "cmdb__get_asset",
        json!({"hostname": "jump-prod-02", "owner_name": "Camille Michel"}),
    );
    assert_eq!(d.tool_calls[0].name, "tickets__open_ticket");
    assert_eq!(
        serde_json::from_str::<Value>(&d.tool_calls[0].arguments).unwrap(),
        json!({"host": "jump-prod-02", "summary": "brute force then a login from 203.0.113.77"})
    );
}

#[test]
fn an_order_question_asks_for_the_order_status() {
    assert_eq!(long_date("2026-10-18"), "18 October 2026");
    let tools = [spec("orders__get_order_status")];
    let d = Scripted::plan(&[Message::User("When will A-1002 arrive?".into())], &tools);
    assert_eq!(d.tool_calls[0].arguments, r#"{"order_id":"A-1002"}"#);
}

#[test]
fn a_missing_tool_is_said_not_invented() {
    let tools = [spec("cmdb__get_asset")];
    let q = "Open a ticket for jump-prod-02: disk full";
    let mut msgs = vec![Message::User(q.into())];
    let d = plan_after(
        &mut msgs,
        &tools,
        "cmdb__get_asset",
        json!({"hostname": "jump-prod-02"}),
    );
    assert!(d.text.unwrap().contains("I cannot open a ticket"));
}

#[test]
fn no_fitting_tool_is_said_plainly() {
    let d = Scripted::plan(&[Message::User("hello there".into())], &[]);
    assert!(d.text.unwrap().contains("None of my tools"));
}

use proptest::prelude::*;

fn all_tools() -> Vec<ToolSpec> {
    [
        "support__search_knowledge",
        "support__get_ticket",
        "cmdb__get_asset",
        "tickets__open_ticket",
        "tickets__list_tickets",
        "orders__get_order_status",
    ]
    .map(spec)
    .to_vec()
}

proptest! {
    /// Any question, and anything a tool sends back, gives a decision: no panic, and
    /// only tools that were offered are proposed.
    #[test]
    fn any_text_gives_a_decision(
        question in any::<String>(),
        words in prop::collection::vec(prop_oneof![
            Just("T-30002".to_string()), Just("A-1002".to_string()),
            Just("jump-prod-02".to_string()), Just("open a ticket:".to_string()),
            Just("İ".to_string()), Just("list tickets".to_string()), any::<String>()
        ], 0..6),
        replies in prop::collection::vec(any::<String>(), 0..5),
    ) {
        let tools = all_tools();
        let q = format!("{question} {}", words.join(" "));
        let mut msgs = vec![Message::User(q)];
        for (i, reply) in replies.iter().enumerate() {
            let d = Scripted::plan(&msgs, &tools);
            let Some(call) = d.tool_calls.first() else { break };
            prop_assert!(tools.iter().any(|t| t.name == call.name));
            msgs.push(Message::Tool {
                call_id: format!("c{i}"),
                name: call.name.clone(),
                content: reply.clone(),
                media: vec![],
            });
        }
        let _ = Scripted::plan(&msgs, &tools);
    }
}

proptest! {
    /// Text whose lowercase has other byte lengths (İ, Ⱥ, ẞ) around the words the
    /// model looks for: the summary is always a piece of the question.
    #[test]
    fn summaries_are_cut_at_character_boundaries(
        parts in prop::collection::vec(prop_oneof![
            Just("İ"), Just("Ⱥ"), Just("ẞ"), Just("ticket"), Just("TICKET"),
            Just("incident"), Just(":"), Just(" "), Just("é"), Just("x")
        ], 0..40),
    ) {
        let q: String = parts.concat();
        let summary = summary_of(&q);
        prop_assert!(q.contains(summary.as_str()));
    }
}

#[test]
fn non_ascii_questions_do_not_panic() {
    let q = "İİİİİİİ open a ticketé: brute force on jump-prod-02";
    assert_eq!(summary_of(q), "brute force on jump-prod-02");
    assert_eq!(summary_of("İncident TİCKET"), "İncident TİCKET");
}

/// The conversation after the model called `name` with `arguments` and got `result`.
fn answered(msgs: &mut Vec<Message>, d: &Decision, result: Value) {
    msgs.push(Message::Assistant {
        text: None,
        tool_calls: d.tool_calls.clone(),
    });
    let call = &d.tool_calls[0];
    result_of(msgs, &call.id, &call.name, result);
}

/// Plan, check that the first call is `tool`, answer it with `result`, and plan again.
fn plan_after(msgs: &mut Vec<Message>, tools: &[ToolSpec], tool: &str, result: Value) -> Decision {
    let d = Scripted::plan(msgs, tools);
    assert_eq!(d.tool_calls[0].name, tool);
    result_of(msgs, "c", tool, result);
    Scripted::plan(msgs, tools)
}

/// The search `d` asked for found `tool`: it joins the tools on offer; plan again.
fn found(msgs: &mut Vec<Message>, tools: &mut Vec<ToolSpec>, d: &Decision, tool: &str) -> Decision {
    answered(msgs, d, json!({"tools": [{"name": tool}]}));
    tools.push(spec(tool));
    Scripted::plan(msgs, tools)
}

/// The conversation after call `id` of `tool` came back with `result`.
fn result_of(msgs: &mut Vec<Message>, id: &str, tool: &str, result: Value) {
    msgs.push(Message::Tool {
        call_id: id.into(),
        name: tool.into(),
        content: json!({"tool": tool, "result": result}).to_string(),
        media: vec![],
    });
}

#[test]
fn over_a_searched_catalog_it_searches_for_each_tool_it_needs_first() {
    let mut msgs = vec![Message::User("Draft a reply to ticket T-30002".into())];
    let mut tools = vec![spec("search_tools")];
    let d = Scripted::plan(&msgs, &tools);
    assert_eq!(d.tool_calls[0].name, "search_tools");
    let args: Value = serde_json::from_str(&d.tool_calls[0].arguments).unwrap();
    assert_eq!(args["query"], "look up a support ticket by its id");
    let d = found(&mut msgs, &mut tools, &d, "support__get_ticket");
    assert_eq!(d.tool_calls[0].name, "search_tools");
    assert!(d.tool_calls[0].arguments.contains("knowledge base"));
    // Both found: the plan goes on as with the whole catalog, searches not counted.
    let d = found(&mut msgs, &mut tools, &d, "support__search_knowledge");
    assert_eq!(d.tool_calls[0].name, "support__get_ticket");
    answered(
        &mut msgs,
        &d,
        json!({"subject": "Charged twice", "customer_name": "Hugo"}),
    );
    let d = Scripted::plan(&msgs, &tools);
    assert_eq!(d.tool_calls[0].name, "support__search_knowledge");
    assert_eq!(d.tool_calls[0].arguments, r#"{"query":"Charged twice"}"#);
}

#[test]
fn a_search_that_finds_nothing_is_not_repeated() {
    let mut msgs = vec![Message::User("What is the refund policy?".into())];
    let tools = vec![spec("search_tools")];
    let d = Scripted::plan(&msgs, &tools);
    assert_eq!(d.tool_calls[0].name, "search_tools");
    answered(&mut msgs, &d, json!({"tools": []}));
    let d = Scripted::plan(&msgs, &tools);
    assert!(d.tool_calls.is_empty(), "{d:?}");
    assert!(d.text.unwrap().contains("None of my tools fits"));
}
