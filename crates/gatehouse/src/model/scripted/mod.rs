//! The built-in scripted model: deterministic, no network, and the default. It behaves as
//! a careful support assistant would, so the whole host can be shown and tested without
//! a real model:
//!
//! - a ticket id (T-30002) → `get_ticket`, then `search_knowledge` with the ticket's
//!   subject, then a draft reply to the customer by first name naming the policy;
//! - otherwise → `search_knowledge` with the question, then the best policy passage;
//! - a tool error → "I could not use X: …"; no relevant policy → "I found no policy about this."
//!
//! It only proposes tools its catalog offers, and says so when none fits. When the host
//! offers `search_tools` instead of every definition, it searches for the tools it needs
//! first (`search`).

use serde_json::{Value, json};

use super::{Decided, Decision, Message, Model};
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
    code_id(text, b"T-", 5)
}

/// The first order id (`A-` and four digits) in a text.
pub fn order_id(text: &str) -> Option<String> {
    code_id(text, b"A-", 4)
}

/// The first `prefix` followed by exactly `digits` digits, as a whole word.
fn code_id(text: &str, prefix: &[u8; 2], digits: usize) -> Option<String> {
    let b = text.as_bytes();
    let len = 2 + digits;
    (0..b.len().saturating_sub(len - 1)).find_map(|i| {
        let ok = &b[i..i + 2] == prefix
            && b[i + 2..i + len].iter().all(u8::is_ascii_digit)
            && (i == 0 || !b[i - 1].is_ascii_alphanumeric())
            && b.get(i + len).is_none_or(|c| !c.is_ascii_alphanumeric());
        ok.then(|| text[i..i + len].to_string())
    })
}

/// The first `max` characters, trimmed: a query within the server's bound.
fn trimmed_head(text: &str, max: usize) -> String {
    crate::text::head(text, max).trim().to_owned()
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

/// Ways of asking for a ticket to be opened.
const NEW_TICKET: &[&str] = &[
    "open a ticket",
    "open an incident",
    "open a new ticket",
    "open ticket",
    "file a ticket",
    "create a ticket",
    "raise a ticket",
];

/// Ways of asking for the list of tickets.
const TICKET_LIST: &[&str] = &[
    "list tickets",
    "list the tickets",
    "list incident tickets",
    "list all tickets",
    "which tickets",
    "show tickets",
    "show the tickets",
];

/// Does the question hold one of `phrases`, whatever its case?
fn says_any(q: &str, phrases: &[&str]) -> bool {
    let q = q.to_lowercase();
    phrases.iter().any(|p| q.contains(p))
}

/// Does the question ask for a ticket to be opened?
fn wants_new_ticket(q: &str) -> bool {
    says_any(q, NEW_TICKET)
}

/// Does the question ask for the list of tickets?
fn wants_ticket_list(q: &str) -> bool {
    says_any(q, TICKET_LIST)
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

impl Planned {
    /// The call to `tool` with `arguments`, if the catalog offers the tool.
    fn of(tool: Option<&str>, arguments: Value) -> Vec<Planned> {
        tool.map(|tool| Planned {
            tool: tool.to_owned(),
            arguments,
        })
        .into_iter()
        .collect()
    }
}

impl Scripted {
    /// Every call this question needs, given what came back so far.
    fn calls(
        question: &str,
        tools: &[ToolSpec],
        outcomes: &[Outcome],
    ) -> (Vec<Planned>, Vec<String>) {
        let search = find_tool(tools, "search_knowledge");
        let searchable = |text: &str| {
            let q = trimmed_head(text, MAX_QUERY_CHARS);
            (search.is_some() && q.chars().count() >= MIN_QUERY_CHARS).then_some(q)
        };
        let search_for = |q: String| Planned::of(search, json!({ "query": q }));
        if let (Some(tid), Some(get_ticket)) = (ticket_id(question), find_tool(tools, "get_ticket"))
        {
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
            let mut calls = Planned::of(Some(get_ticket), json!({ "ticket_id": tid }));
            calls.extend(query.map(search_for).unwrap_or_default());
            return (calls, Vec::new());
        }
        if let (Some(id), Some(tool)) = (order_id(question), find_tool(tools, "get_order_status")) {
            return (
                Planned::of(Some(tool), json!({ "order_id": id })),
                Vec::new(),
            );
        }
        let (calls, cannot) = Self::host_calls(question, tools);
        if !calls.is_empty() || !cannot.is_empty() {
            return (calls, cannot);
        }
        (
            searchable(question).map(search_for).unwrap_or_default(),
            cannot,
        )
    }

    /// The calls a question about a host or its tickets needs, and what cannot be done.
    fn host_calls(question: &str, tools: &[ToolSpec]) -> (Vec<Planned>, Vec<String>) {
        let (mut calls, mut cannot) = (Vec::new(), Vec::new());
        let host = hostname(question);
        if let Some(h) = &host {
            calls.extend(Planned::of(
                find_tool(tools, "get_asset"),
                json!({ "hostname": h }),
            ));
        }
        if wants_new_ticket(question) {
            match (find_tool(tools, "open_ticket"), &host) {
                (Some(t), Some(h)) => calls.extend(Planned::of(
                    Some(t),
                    json!({"host": h, "summary": summary_of(question)}),
                )),
                (None, _) => cannot.push(
                    "I cannot open a ticket: none of the tools offered to me does that.".into(),
                ),
                (_, None) => {
                    cannot.push("To open a ticket I need the exact hostname it is about.".into())
                }
            }
        }
        if wants_ticket_list(question) {
            match find_tool(tools, "list_tickets") {
                Some(t) => calls.extend(Planned::of(
                    Some(t),
                    host.as_ref().map_or(json!({}), |h| json!({ "host": h })),
                )),
                None => cannot.push(
                    "I cannot list tickets: none of the tools offered to me does that.".into(),
                ),
            }
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
        if let Some(search) = search::search_first(&messages[start..], &question, tools) {
            return search;
        }
        let outcomes: Vec<Outcome> = messages[start..]
            .iter()
            .filter_map(|m| match m {
                Message::Tool { name, content, .. } if !search::is_host_step(name) => {
                    Some(parse_outcome(name, content))
                }
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
        let mut lines: Vec<String> = outcomes.iter().filter_map(Self::line_for).collect();
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

    /// What one call's outcome says in the answer, if anything on its own.
    fn line_for(o: &Outcome) -> Option<String> {
        if let Some(e) = &o.error {
            return Some(format!("I could not use {}: {e}", o.tool));
        }
        let r = o.result.as_ref()?;
        let s = |k: &str| r[k].as_str().unwrap_or("?").to_owned();
        match o.tool.as_str() {
            "get_asset" => Some(format!(
                "{} ({}, {}) is owned by {} ({}).",
                s("hostname"),
                s("service"),
                s("env"),
                s("owner_name"),
                s("owner_email")
            )),
            "open_ticket" => Some(format!(
                "I opened {} ({}) for {}: {}",
                s("id"),
                s("priority"),
                s("host"),
                s("summary")
            )),
            "list_tickets" => Some(Self::ticket_list(r)),
            "get_order_status" => Some(Self::order_line(r)),
            _ => None,
        }
    }

    /// An order's status in a sentence.
    fn order_line(r: &Value) -> String {
        let s = |k: &str| r[k].as_str().unwrap_or("?").to_owned();
        let items: Vec<&str> = r["items"]
            .as_array()
            .map(|i| i.iter().filter_map(|i| i["name"].as_str()).collect())
            .unwrap_or_default();
        let what = if items.is_empty() {
            "it".to_owned()
        } else {
            items.join(", ")
        };
        let (id, when) = (s("order_id"), long_date(&s("eta")));
        match s("status").as_str() {
            "processing" => {
                format!("Order {id} ({what}) is being prepared and should arrive on {when}.")
            }
            "shipped" => format!("Order {id} ({what}) is on its way and should arrive on {when}."),
            "delivered" => format!("Order {id} ({what}) was delivered on {when}."),
            other => format!("Order {id} ({what}) is {other}; expected {when}."),
        }
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

    fn decide<'a>(&'a mut self, messages: &'a [Message], tools: &'a [ToolSpec]) -> Decided<'a> {
        Box::pin(async move { Ok(Self::plan(messages, tools)) })
    }
}

mod search;
#[cfg(test)]
mod tests;
