//! The scripted model over a deferred catalog: when the host offers `search_tools`
//! instead of every definition, it first searches for each tool its plan for the question
//! needs and is not offered yet, in words a person would use, once each; the host then
//! adds what it found, and the plan goes on as with the whole catalog.

use serde_json::json;

use super::{
    Decision, Message, find_tool, hostname, order_id, ticket_id, wants_new_ticket,
    wants_ticket_list,
};
use crate::catalog::{READ_RESULT, SEARCH_TOOLS, ToolSpec};

/// How many tools each search asks for.
const SEARCH_LIMIT: usize = 3;

/// What the scripted model types into `search_tools` for each tool it may need.
const QUERIES: &[(&str, &str)] = &[
    ("get_ticket", "look up a support ticket by its id"),
    (
        "search_knowledge",
        "search the support knowledge base for a policy",
    ),
    ("get_order_status", "status of an order by its id"),
    ("get_asset", "look up a host in the cmdb by hostname"),
    ("open_ticket", "open an incident ticket about a host"),
    ("list_tickets", "list incident tickets"),
];

/// The tools (by their servers' names) the plan for this question uses, in its order.
fn needed(question: &str) -> Vec<&'static str> {
    if ticket_id(question).is_some() {
        return vec!["get_ticket", "search_knowledge"];
    }
    if order_id(question).is_some() {
        return vec!["get_order_status"];
    }
    let mut out = Vec::new();
    if hostname(question).is_some() {
        out.push("get_asset");
    }
    if wants_new_ticket(question) {
        out.push("open_ticket");
    }
    if wants_ticket_list(question) {
        out.push("list_tickets");
    }
    if out.is_empty() {
        out.push("search_knowledge");
    }
    out
}

/// Was `search_tools` already asked `query` since the question (`turn`)?
fn searched(turn: &[Message], query: &str) -> bool {
    turn.iter().any(|m| match m {
        Message::Assistant { tool_calls, .. } => tool_calls.iter().any(|c| {
            c.name == SEARCH_TOOLS
                && serde_json::from_str::<serde_json::Value>(&c.arguments)
                    .is_ok_and(|a| a["query"] == query)
        }),
        _ => false,
    })
}

/// A search for the next tool the plan needs and is not offered, if the catalog is
/// searched and one is missing; `turn` is the conversation since the question.
pub(super) fn search_first(
    turn: &[Message],
    question: &str,
    tools: &[ToolSpec],
) -> Option<Decision> {
    find_tool(tools, SEARCH_TOOLS)?;
    let query = needed(question)
        .into_iter()
        .filter(|need| find_tool(tools, need).is_none())
        .filter_map(|need| QUERIES.iter().find(|(n, _)| *n == need).map(|(_, q)| *q))
        .find(|q| !searched(turn, q))?;
    Some(Decision::call(
        format!("call_search_{}", turn.len()),
        SEARCH_TOOLS,
        &json!({"query": query, "limit": SEARCH_LIMIT}),
    ))
}

/// Is this the answer of one of the host's own tools that only serve the plan (a search,
/// a result read on), not a step of it?
pub(super) fn is_host_step(name: &str) -> bool {
    name == SEARCH_TOOLS || name == READ_RESULT
}
