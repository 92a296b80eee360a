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

impl Scripted {
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
        let n = outcomes.len();
        let id = format!("call_{}", messages.len());
        let search = find_tool(tools, "search_knowledge");
        let search_for = |text: &str| -> Option<Decision> {
            let q = clip(text, MAX_QUERY_CHARS);
            match search {
                Some(tool) if q.chars().count() >= MIN_QUERY_CHARS => {
                    Some(Decision::call(id.clone(), tool, &json!({ "query": q })))
                }
                _ => None,
            }
        };

        if n == 0 {
            if let (Some(tid), Some(tool)) = (ticket_id(&question), find_tool(tools, "get_ticket"))
            {
                return Decision::call(id, tool, &json!({ "ticket_id": tid }));
            }
            return search_for(&question).unwrap_or_else(|| {
                Decision::answer(if search.is_none() {
                    "None of my tools fits this question, so I cannot answer it from your data."
                } else {
                    "The question is too short to search for."
                })
            });
        }
        let last = &outcomes[n - 1];
        if n < MAX_CALLS_PER_TURN && last.tool == "get_ticket" {
            let next = match (&last.result, &last.error) {
                (Some(ticket), None) => ticket["subject"].as_str().and_then(search_for),
                _ => {
                    let rest = ticket_id(&question)
                        .map(|t| question.replace(&t, " "))
                        .unwrap_or(question.clone());
                    search_for(
                        rest.split_whitespace()
                            .collect::<Vec<_>>()
                            .join(" ")
                            .as_str(),
                    )
                }
            };
            if let Some(next) = next {
                return next;
            }
        }
        Decision::answer(Self::compose(&outcomes))
    }

    /// The final answer from everything this turn returned.
    fn compose(outcomes: &[Outcome]) -> String {
        let mut lines: Vec<String> = outcomes
            .iter()
            .filter_map(|o| {
                o.error
                    .as_ref()
                    .map(|e| format!("I could not use {}: {e}", o.tool))
            })
            .collect();
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
            parameters: json!({}),
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
        });
        let d = Scripted::plan(&msgs, &tools);
        assert_eq!(d.tool_calls[0].arguments, r#"{"query":"Charged twice"}"#);
    }

    #[test]
    fn no_fitting_tool_is_said_plainly() {
        let d = Scripted::plan(&[Message::User("hello there".into())], &[]);
        assert!(d.text.unwrap().contains("None of my tools"));
    }
}
