//! A model whose decisions are read from a JSON file, so a test or a demo can propose
//! anything: an unknown tool, 50,000 characters of arguments, text that is not JSON, two
//! calls at once, or a final answer.
//!
//! The file is `{"decisions": [...]}` (or the bare array). Each decision is
//! `{"tool_calls": [{"name": "...", "arguments": <any JSON, or a string taken as raw text>}],
//! "text": "..."}` or `{"answer": "..."}`. Decisions are used in order across the session.

use std::path::Path;

use serde_json::Value;

use super::{Decided, Decision, Message, Model, ToolCall};
use crate::catalog::ToolSpec;

/// The answer once every decision in the file was used.
pub const EXHAUSTED: &str = "(the playback file has no more decisions)";

/// A model that plays back decisions from a file, in order across the session.
pub struct Playback {
    decisions: Vec<Decision>,
    next: usize,
}

impl Playback {
    /// Read a playback file.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read playback file {}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("playback file {}: {e}", path.display()))
    }

    /// Read the text of a playback file.
    pub fn parse(text: &str) -> Result<Self, String> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
        let list = match &value {
            Value::Array(items) => items,
            Value::Object(m) => m
                .get("decisions")
                .and_then(Value::as_array)
                .ok_or("expected {\"decisions\": [...]}")?,
            _ => return Err("expected a list of decisions".into()),
        };
        let mut decisions = Vec::new();
        let mut call_no = 0;
        for (i, d) in list.iter().enumerate() {
            let Value::Object(d) = d else {
                return Err(format!("decision {} is not an object", i + 1));
            };
            if let Some(answer) = d.get("answer") {
                let text = answer
                    .as_str()
                    .ok_or(format!("decision {}: \"answer\" must be text", i + 1))?;
                decisions.push(Decision::answer(text));
                continue;
            }
            let calls = d
                .get("tool_calls")
                .and_then(Value::as_array)
                .ok_or(format!(
                    "decision {} has neither \"answer\" nor \"tool_calls\"",
                    i + 1
                ))?;
            let mut tool_calls = Vec::new();
            for c in calls {
                call_no += 1;
                let name = c["name"]
                    .as_str()
                    .ok_or(format!("decision {}: a tool call has no \"name\"", i + 1))?;
                let arguments = match c.get("arguments") {
                    None => "{}".to_string(),
                    Some(Value::String(raw)) => raw.clone(),
                    Some(other) => other.to_string(),
                };
                tool_calls.push(ToolCall {
                    id: c["id"]
                        .as_str()
                        .map(str::to_owned)
                        .unwrap_or(format!("call_{call_no}")),
                    name: name.into(),
                    arguments,
                });
            }
            decisions.push(Decision {
                text: d.get("text").and_then(Value::as_str).map(str::to_owned),
                tool_calls,
                usage: None,
            });
        }
        Ok(Playback { decisions, next: 0 })
    }
}

impl Model for Playback {
    fn name(&self) -> String {
        "playback".into()
    }

    fn decide<'a>(&'a mut self, _messages: &'a [Message], _tools: &'a [ToolSpec]) -> Decided<'a> {
        let decision = self
            .decisions
            .get(self.next)
            .cloned()
            .unwrap_or_else(|| Decision::answer(EXHAUSTED));
        self.next += 1;
        Box::pin(async move { Ok(decision) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn plays_decisions_in_order_then_says_it_is_done() {
        let mut p = Playback::parse(
            r#"{"decisions": [
                {"tool_calls": [{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": "not json"}]},
                {"answer": "done"}]}"#,
        )
        .unwrap();
        let d = p.decide(&[], &[]).await.unwrap();
        assert_eq!(d.tool_calls[0].arguments, r#"{"x":1}"#);
        assert_eq!(d.tool_calls[1].arguments, "not json");
        assert_eq!(d.tool_calls[1].id, "call_2");
        assert_eq!(
            p.decide(&[], &[]).await.unwrap().text.as_deref(),
            Some("done")
        );
        assert_eq!(
            p.decide(&[], &[]).await.unwrap().text.as_deref(),
            Some(EXHAUSTED)
        );
        assert!(Playback::parse(r#"[{"nothing": 1}]"#).is_err());
    }
}
