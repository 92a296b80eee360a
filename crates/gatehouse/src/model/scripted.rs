//! The built-in scripted model: deterministic, no network, and the default. It behaves as
//! a careful support assistant would, so the whole host can be shown and tested without
//! a real model:
//!
//! - a ticket id (T-30002) → `get_ticket`, then `search_knowledge` with the ticket's
//!   subject, then a draft reply to the customer by first name naming the policy;
//! - otherwise → `search_knowledge` with the question, then the best policy passage;
//! - a tool error → "I could not use X: …"; no relevant policy → "I found no policy about this."
//!
//! It only proposes tools its catalog offers, and says so when none fits.

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{Decision, Message, Model, ModelError};
use crate::catalog::ToolSpec;

/// The longest query the scripted model sends (the support server's own bound).
const MAX_QUERY_CHARS: usize = 200;
/// The shortest query the support server accepts.
const MIN_QUERY_CHARS: usize = 3;
/// A turn never goes past this many tool calls, whatever comes back.
const MAX_CALLS_PER_TURN: usize = 4;

/// The scripted model (see the module's text for what it does).
pub struct Scripted;

/// A tool of the catalog by its server-side name (`get_ticket` matches `support__get_ticket`).
fn find_tool<'a>(tools: &'a [ToolSpec], short: &str) -> Option<&'a str> {
    tools
        .iter()
        .find(|t| t.name == short || t.name.ends_with(&format!("__{short}")))
        .map(|t| t.name.as_str())
}

/// The tool's name without the server prefix, as a person would say it.
fn short_name(name: &str) -> &str {
    name.rsplit_once("__").map_or(name, |(_, s)| s)
}

/// The first ticket id (`T-` and five digits) in a text.
pub fn ticket_id(text: &str) -> Option<String> {
    let b = text.as_bytes();
    (0..b.len().saturating_sub(6)).find_map(|i| {
        let ok = &b[i..i + 2] == b"T-"
            && b[i + 2..i + 7].iter().all(u8::is_ascii_digit)
            && (i == 0 || !b[i - 1].is_ascii_alphanumeric())
            && b.get(i + 7).is_none_or(|c| !c.is_ascii_alphanumeric());
        ok.then(|| text[i..i + 7].to_string())
    })
}

fn clip(text: &str, max: usize) -> String {
    text.chars().take(max).collect::<String>().trim().to_owned()
}

/// What came back for one call this turn.
struct Outcome {
    tool: String,
    result: Option<Value>,
    error: Option<String>,
}

fn parse_outcome(name: &str, content: &str) -> Outcome {
    let v: Value = serde_json::from_str(content).unwrap_or(Value::String(content.into()));
    let error = v
        .get("error")
        .map(|e| e.as_str().map(str::to_owned).unwrap_or(e.to_string()));
    let result = v.get("result").cloned().map(|r| match r {
        // A result that was cut arrives as text; try to read it as JSON anyway.
        Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
        other => other,
    });
    let error = if error.is_none() && result.is_none() {
        Some(content.to_owned())
    } else {
        error
    };
    Outcome {
        tool: short_name(name).to_owned(),
        result,
        error,
    }
}

/// The first hostname-like word: lowercase, with a hyphen and a digit (jump-prod-02).
pub fn hostname(text: &str) -> Option<String> {
    text.split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_ascii_alphanumeric()))
        .map(|w| w.strip_suffix("'s").unwrap_or(w))
        .find(|w| {
            w.contains('-')
                && w.chars().any(|c| c.is_ascii_digit())
                && w.starts_with(|c: char| c.is_ascii_lowercase())
                && w.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !w.contains("--")
                && !w.ends_with('-')
        })
        .map(str::to_owned)
}

/// The first order id (`A-` and four digits) in a text.
pub fn order_id(text: &str) -> Option<String> {
    let b = text.as_bytes();
    (0..b.len().saturating_sub(5)).find_map(|i| {
        let ok = &b[i..i + 2] == b"A-"
            && b[i + 2..i + 6].iter().all(u8::is_ascii_digit)
            && (i == 0 || !b[i - 1].is_ascii_alphanumeric())
            && b.get(i + 6).is_none_or(|c| !c.is_ascii_alphanumeric());
        ok.then(|| text[i..i + 6].to_string())
    })
}

/// `2026-10-18` as "18 October 2026".
fn long_date(iso: &str) -> String {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let parts: Vec<&str> = iso.split('-').collect();
    match (
        parts.first(),
        parts.get(1).and_then(|m| m.parse::<usize>().ok()),
        parts.get(2).and_then(|d| d.parse::<u32>().ok()),
    ) {
        (Some(y), Some(m @ 1..=12), Some(d)) => format!("{d} {} {y}", MONTHS[m - 1]),
        _ => iso.to_owned(),
    }
}

/// Does the question ask for a ticket to be opened?
fn wants_new_ticket(q: &str) -> bool {
    let q = q.to_lowercase();
    [
        "open a ticket",
        "open an incident",
        "open a new ticket",
        "open ticket",
        "file a ticket",
        "create a ticket",
        "raise a ticket",
    ]
    .iter()
    .any(|p| q.contains(p))
}

/// Does the question ask for the list of tickets?
fn wants_ticket_list(q: &str) -> bool {
    let q = q.to_lowercase();
    [
        "list tickets",
        "list the tickets",
        "list incident tickets",
        "list all tickets",
        "which tickets",
        "show tickets",
        "show the tickets",
    ]
    .iter()
    .any(|p| q.contains(p))
}

/// The ticket's summary: the text after the colon that follows the request, else the question.
fn summary_of(q: &str) -> String {
    // Positions are found in `q` itself, at its own character boundaries: a lowercased copy
    // can have other byte lengths (`İ` is two bytes, its lowercase three).
    let from = q
        .char_indices()
        .map(|(i, _)| i)
        .find(|&i| {
            ["ticket", "incident"].iter().any(|w| {
                q.get(i..i + w.len())
                    .is_some_and(|s| s.eq_ignore_ascii_case(w))
            })
        })
        .unwrap_or(0);
    match q[from..].split_once(':') {
        Some((_, rest)) if !rest.trim().is_empty() => rest.trim().to_owned(),
        _ => q.trim().to_owned(),
    }
}

/// A call the scripted model means to make.
struct Planned {
    tool: String,
    arguments: Value,
}

impl Scripted {
    /// Every call this question needs, given what came back so far.
    fn calls(
        question: &str,
        tools: &[ToolSpec],
        outcomes: &[Outcome],
    ) -> (Vec<Planned>, Vec<String>) {
        let mut calls = Vec::new();
        let mut cannot = Vec::new();
        let plan = |calls: &mut Vec<Planned>, tool: Option<&str>, arguments: Value| {
            if let Some(tool) = tool {
                calls.push(Planned {
                    tool: tool.to_owned(),
                    arguments,
                });
            }
        };
        let search = find_tool(tools, "search_knowledge");
        let searchable = |text: &str| {
            let q = clip(text, MAX_QUERY_CHARS);
            (search.is_some() && q.chars().count() >= MIN_QUERY_CHARS).then_some(q)
        };
        if let (Some(tid), Some(get_ticket)) = (ticket_id(question), find_tool(tools, "get_ticket"))
        {
            plan(&mut calls, Some(get_ticket), json!({ "ticket_id": tid }));
            let query = match outcomes.first() {
                Some(Outcome {
                    result: Some(ticket),
                    error: None,
                    ..
                }) => ticket["subject"].as_str().and_then(searchable),
                Some(_) => {
                    let rest = question.replace(&tid, " ");
                    searchable(&rest.split_whitespace().collect::<Vec<_>>().join(" "))
                }
                None => None,
            };
            if let Some(q) = query {
                plan(&mut calls, search, json!({ "query": q }));
            }
            return (calls, cannot);
        }
        if let (Some(id), Some(tool)) = (order_id(question), find_tool(tools, "get_order_status")) {
            plan(&mut calls, Some(tool), json!({ "order_id": id }));
            return (calls, cannot);
        }
        let host = hostname(question);
        let (new_ticket, listing) = (wants_new_ticket(question), wants_ticket_list(question));
        if host.is_some() || new_ticket || listing {
            if let Some(h) = &host {
                plan(
                    &mut calls,
                    find_tool(tools, "get_asset"),
                    json!({ "hostname": h }),
                );
            }
            if new_ticket {
                match (find_tool(tools, "open_ticket"), &host) {
                    (Some(t), Some(h)) => plan(
                        &mut calls,
                        Some(t),
                        json!({"host": h, "summary": summary_of(question)}),
                    ),
                    (None, _) => cannot.push(
                        "I cannot open a ticket: none of the tools offered to me does that.".into(),
                    ),
                    (_, None) => cannot
                        .push("To open a ticket I need the exact hostname it is about.".into()),
                }
            }
            if listing {
                match find_tool(tools, "list_tickets") {
                    Some(t) => plan(
                        &mut calls,
                        Some(t),
                        host.as_ref().map_or(json!({}), |h| json!({ "host": h })),
                    ),
                    None => cannot.push(
                        "I cannot list tickets: none of the tools offered to me does that.".into(),
                    ),
                }
            }
            if !calls.is_empty() || !cannot.is_empty() {
                return (calls, cannot);
            }
        }
        if let Some(q) = searchable(question) {
            plan(&mut calls, search, json!({ "query": q }));
        }
        (calls, cannot)
    }

    fn plan(messages: &[Message], tools: &[ToolSpec]) -> Decision {
        let start = messages
            .iter()
            .rposition(|m| matches!(m, Message::User(_)))
            .unwrap_or(0);
        let question = match messages.get(start) {
            Some(Message::User(q)) => q.trim().to_owned(),
            _ => String::new(),
        };
        let outcomes: Vec<Outcome> = messages[start..]
            .iter()
            .filter_map(|m| match m {
                Message::Tool { name, content, .. } => Some(parse_outcome(name, content)),
                _ => None,
            })
            .collect();
        let (calls, cannot) = Self::calls(&question, tools, &outcomes);
        if calls.is_empty() && outcomes.is_empty() {
            let mut lines = cannot;
            if lines.is_empty() {
                lines.push(if find_tool(tools, "search_knowledge").is_none() {
                    "None of my tools fits this question, so I cannot answer it from your data."
                        .into()
                } else {
                    "The question is too short to search for.".into()
                });
            }
            return Decision::answer(lines.join("\n\n"));
        }
        match calls.get(outcomes.len()) {
            Some(next) if outcomes.len() < MAX_CALLS_PER_TURN => Decision::call(
                format!("call_{}", messages.len()),
                next.tool.clone(),
                &next.arguments,
            ),
            _ => {
                let mut answer = Self::compose(&outcomes);
                for line in cannot {
                    answer.push_str("\n\n");
                    answer.push_str(&line);
                }
                Decision::answer(answer)
            }
        }
    }

    /// The final answer from everything this turn returned.
    fn compose(outcomes: &[Outcome]) -> String {
        let mut lines: Vec<String> = Vec::new();
        for o in outcomes {
            if let Some(e) = &o.error {
                lines.push(format!("I could not use {}: {e}", o.tool));
                continue;
            }
            let Some(r) = &o.result else { continue };
            let s = |k: &str| r[k].as_str().unwrap_or("?").to_owned();
            match o.tool.as_str() {
                "get_asset" => lines.push(format!(
                    "{} ({}, {}) is owned by {} ({}).",
                    s("hostname"),
                    s("service"),
                    s("env"),
                    s("owner_name"),
                    s("owner_email")
                )),
                "open_ticket" => lines.push(format!(
                    "I opened {} ({}) for {}: {}",
                    s("id"),
                    s("priority"),
                    s("host"),
                    s("summary")
                )),
                "list_tickets" => lines.push(Self::ticket_list(r)),
                "get_order_status" => {
                    let items: Vec<&str> = r["items"]
                        .as_array()
                        .map(|i| i.iter().filter_map(|i| i["name"].as_str()).collect())
                        .unwrap_or_default();
                    let what = if items.is_empty() {
                        "it".to_owned()
                    } else {
                        items.join(", ")
                    };
                    let when = long_date(&s("eta"));
                    lines.push(match s("status").as_str() {
                        "processing" => format!(
                            "Order {} ({what}) is being prepared and should arrive on {when}.",
                            s("order_id")
                        ),
                        "shipped" => format!(
                            "Order {} ({what}) is on its way and should arrive on {when}.",
                            s("order_id")
                        ),
                        "delivered" => {
                            format!("Order {} ({what}) was delivered on {when}.", s("order_id"))
                        }
                        other => format!(
                            "Order {} ({what}) is {other}; expected {when}.",
                            s("order_id")
                        ),
                    });
                }
                _ => {}
            }
        }
        let ticket = outcomes
            .iter()
            .find(|o| o.tool == "get_ticket" && o.error.is_none())
            .and_then(|o| o.result.clone());
        let searched = outcomes
            .iter()
            .rev()
            .find(|o| o.tool == "search_knowledge" && o.error.is_none());
        if let Some(search) = searched {
            // A hit with a zero score matched only words found in nearly every policy.
            let hit = search.result.as_ref().and_then(|r| {
                r["results"]
                    .as_array()?
                    .iter()
                    .find(|h| h["score"].as_f64().is_some_and(|s| s > 0.0))
                    .cloned()
            });
            match (hit, ticket) {
                (Some(hit), Some(ticket)) => lines.push(Self::draft_reply(&ticket, &hit)),
                (Some(hit), None) => lines.push(format!(
                    "From \"{}\" ({}): {}",
                    hit["title"].as_str().unwrap_or(""),
                    hit["uri"].as_str().unwrap_or(""),
                    hit["snippet"].as_str().unwrap_or("")
                )),
                (None, _) => lines.push("I found no policy about this.".into()),
            }
        }
        if lines.is_empty() {
            lines.push("I have nothing to go on for this question.".into());
        }
        lines.join("\n\n")
    }

    fn ticket_list(r: &Value) -> String {
        let tickets = r["tickets"].as_array().cloned().unwrap_or_default();
        if tickets.is_empty() {
            return "There are no incident tickets for that yet.".into();
        }
        let field = |t: &Value, k: &str| t[k].as_str().unwrap_or("?").to_owned();
        let list: Vec<String> = tickets
            .iter()
            .map(|t| {
                format!(
                    "{} ({}, {}): {}",
                    field(t, "id"),
                    field(t, "priority"),
                    field(t, "host"),
                    field(t, "summary")
                )
            })
            .collect();
        let plural = if tickets.len() == 1 { "" } else { "s" };
        format!(
            "{} incident ticket{plural}:\n{}",
            tickets.len(),
            list.join("\n")
        )
    }

    fn draft_reply(ticket: &Value, hit: &Value) -> String {
        let name = ticket["customer_name"].as_str().unwrap_or("there");
        let subject = ticket["subject"].as_str().unwrap_or("your request");
        let passage = hit["snippet"]
            .as_str()
            .unwrap_or("")
            .trim_matches(|c: char| c == '…' || c.is_whitespace());
        format!(
            "Draft reply for ticket {}:\n\nHi {name},\n\nThank you for writing to us about \"{subject}\". \
             Here is what our {} says: \"… {passage} …\"\n\nWe will follow it for your request and \
             write again as soon as it is done.\n\nBest regards,\nThe support team\n\n\
             (Policy used: {}, {})",
            ticket["ticket_id"].as_str().unwrap_or(""),
            hit["title"].as_str().unwrap_or("policy"),
            hit["title"].as_str().unwrap_or(""),
            hit["uri"].as_str().unwrap_or("")
        )
    }
}

impl Model for Scripted {
    fn name(&self) -> String {
        "scripted".into()
    }

    fn decide<'a>(
        &'a mut self,
        messages: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<Decision, ModelError>> {
        Box::pin(async move { Ok(Self::plan(messages, tools)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: Default::default(),
        }
    }

    #[test]
    fn finds_ticket_ids_only_as_whole_words() {
        assert_eq!(
            ticket_id("Draft a reply to ticket T-30002").as_deref(),
            Some("T-30002")
        );
        assert_eq!(ticket_id("XT-30002 or T-300021"), None);
        assert_eq!(ticket_id("T-40003."), Some("T-40003".into()));
    }

    #[test]
    fn a_ticket_question_starts_with_the_ticket_then_searches_its_subject() {
        let tools = [
            spec("support__search_knowledge"),
            spec("support__get_ticket"),
        ];
        let mut msgs = vec![Message::User("Draft a reply to ticket T-30002".into())];
        let d = Scripted::plan(&msgs, &tools);
        assert_eq!(d.tool_calls[0].name, "support__get_ticket");
        msgs.push(Message::Tool {
            call_id: "c".into(),
            name: "support__get_ticket".into(),
            content: json!({"tool": "support__get_ticket", "result": {"subject": "Charged twice", "customer_name": "Hugo"}}).to_string(),
            media: vec![],
        });
        let d = Scripted::plan(&msgs, &tools);
        assert_eq!(d.tool_calls[0].arguments, r#"{"query":"Charged twice"}"#);
    }

    #[test]
    fn hostnames_and_ticket_requests_are_recognised() {
        assert_eq!(
            hostname("who owns jump-prod-02? Open").as_deref(),
            Some("jump-prod-02")
        );
        assert_eq!(hostname("T-30002 and LK-182074"), None);
        assert_eq!(
            hostname("customer-db-prod-01's disk"),
            Some("customer-db-prod-01".into())
        );
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
        let q = "who owns jump-prod-02? Open a ticket for it: brute force then a login from 203.0.113.77";
        let mut msgs = vec![Message::User(q.into())];
        let d = Scripted::plan(&msgs, &tools);
        assert_eq!(d.tool_calls[0].name, "cmdb__get_asset");
        msgs.push(Message::Tool {
            call_id: "c".into(),
            name: "cmdb__get_asset".into(),
            content: json!({"tool": "cmdb__get_asset", "result": {"hostname": "jump-prod-02", "owner_name": "Camille Michel"}}).to_string(),
            media: vec![],
        });
        let d = Scripted::plan(&msgs, &tools);
        assert_eq!(d.tool_calls[0].name, "tickets__open_ticket");
        assert_eq!(
            serde_json::from_str::<Value>(&d.tool_calls[0].arguments).unwrap(),
            json!({"host": "jump-prod-02", "summary": "brute force then a login from 203.0.113.77"})
        );
    }

    #[test]
    fn an_order_question_asks_for_the_order_status() {
        assert_eq!(
            order_id("When will A-1002 arrive?").as_deref(),
            Some("A-1002")
        );
        assert_eq!(order_id("BA-1002 or A-10021"), None);
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
        assert_eq!(
            Scripted::plan(&msgs, &tools).tool_calls[0].name,
            "cmdb__get_asset"
        );
        msgs.push(Message::Tool {
            call_id: "c".into(),
            name: "cmdb__get_asset".into(),
            content: json!({"tool": "cmdb__get_asset", "result": {"hostname": "jump-prod-02"}})
                .to_string(),
            media: vec![],
        });
        let d = Scripted::plan(&msgs, &tools);
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
}
