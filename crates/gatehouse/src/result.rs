//! What goes back into the model's context: a result, a tool error, a protocol error, a
//! refusal or a timeout, as one short JSON text, never longer than the host's bound.
//!
//! `{"tool": NAME, "result": …}` or `{"tool": NAME, "error": "…"}`. A result that does not
//! fit is cut, and the model is told so and how large it was, so it can ask for less.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

/// What the model reads for one call, and how it was made.
#[derive(Debug, Clone, PartialEq)]
pub struct ForModel {
    pub text: String,
    /// Characters of `text`.
    pub chars: usize,
    /// Was the result cut to fit?
    pub clipped: bool,
}

/// The useful value of a result: `structuredContent` when the server sent it (compact and
/// typed), else the text of its content blocks; other blocks are described, never dropped.
pub fn result_value(result: &CallToolResult) -> Value {
    if let Some(structured) = &result.structured_content {
        return structured.clone();
    }
    Value::String(content_text(&result.content))
}

/// The content blocks as text for the model.
pub fn content_text(blocks: &[ContentBlock]) -> String {
    let parts: Vec<String> = blocks
        .iter()
        .map(|block| {
            let v = serde_json::to_value(block).unwrap_or(Value::Null);
            match v["type"].as_str() {
                Some("text") => v["text"].as_str().unwrap_or("").to_owned(),
                Some("image") | Some("audio") => format!(
                    "[{} {}, {} bytes of base64]",
                    v["type"].as_str().unwrap_or(""),
                    v["mimeType"].as_str().unwrap_or("?"),
                    v["data"].as_str().map_or(0, str::len)
                ),
                Some("resource_link") => format!(
                    "[link {} \"{}\" {}]",
                    v["uri"].as_str().unwrap_or(""),
                    v["name"].as_str().unwrap_or(""),
                    v["mimeType"].as_str().unwrap_or("")
                ),
                Some("resource") => {
                    let r = &v["resource"];
                    match r["text"].as_str() {
                        Some(text) => {
                            format!("[resource {}]\n{text}", r["uri"].as_str().unwrap_or(""))
                        }
                        None => format!(
                            "[resource {} {}, binary]",
                            r["uri"].as_str().unwrap_or(""),
                            r["mimeType"].as_str().unwrap_or("")
                        ),
                    }
                }
                _ => v.to_string(),
            }
        })
        .collect();
    parts.join("\n")
}

/// The error text of an `isError` result.
pub fn error_text(result: &CallToolResult) -> String {
    let text = content_text(&result.content);
    if text.trim().is_empty() {
        "the tool reported an error without a message".into()
    } else {
        text
    }
}

/// A successful result for the model, bounded to `max_chars`.
pub fn success(tool: &str, value: &Value, max_chars: usize) -> ForModel {
    let whole = json!({"tool": tool, "result": value}).to_string();
    let chars = whole.chars().count();
    if chars <= max_chars {
        return ForModel {
            text: whole,
            chars,
            clipped: false,
        };
    }
    // Too long: send the start of the result as text, with a note that says so.
    let inner = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let total = inner.chars().count();
    let note = |kept: usize| {
        format!(
            "cut: the result had {total} characters and only the first {kept} are shown; ask for less (a narrower query, a filter or a smaller limit)"
        )
    };
    let mut keep = max_chars.min(total);
    loop {
        let head: String = inner.chars().take(keep).collect();
        let text = json!({"tool": tool, "result": head, "note": note(keep)}).to_string();
        let n = text.chars().count();
        if n <= max_chars || keep == 0 {
            return ForModel {
                text,
                chars: n,
                clipped: true,
            };
        }
        keep = keep.saturating_sub(n - max_chars);
    }
}

/// An error for the model (tool error, protocol error, refusal, timeout), bounded too.
pub fn failure(tool: &str, error: &str, max_chars: usize) -> ForModel {
    let mut error: String = error.to_owned();
    loop {
        let text = json!({"tool": tool, "error": error}).to_string();
        let n = text.chars().count();
        if n <= max_chars || error.is_empty() {
            return ForModel {
                text,
                chars: n,
                clipped: false,
            };
        }
        let keep = error.chars().count().saturating_sub(n - max_chars + 1);
        error = error.chars().take(keep).collect::<String>() + "…";
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_results_go_back_whole() {
        let r = success("t", &json!({"a": 1}), 4_000);
        assert_eq!(r.text, r#"{"tool":"t","result":{"a":1}}"#);
        assert!(!r.clipped);
    }

    #[test]
    fn large_results_are_cut_with_a_note_and_fit_the_bound() {
        let big = json!({"rows": "x\"y".repeat(5_000)});
        let r = success("t", &big, 4_000);
        assert!(r.clipped);
        assert!(r.chars <= 4_000, "{}", r.chars);
        let v: Value = serde_json::from_str(&r.text).unwrap();
        let total = big.to_string().chars().count();
        assert!(
            v["note"]
                .as_str()
                .unwrap()
                .contains(&format!("had {total} characters"))
        );
    }

    #[test]
    fn errors_fit_the_bound_too() {
        let r = failure("t", &"e".repeat(10_000), 100);
        assert!(r.chars <= 100);
        assert!(r.text.ends_with("…\"}"));
    }

    #[test]
    fn every_block_type_has_a_text_form() {
        let blocks: Vec<ContentBlock> = serde_json::from_value(json!([
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "orders://A-1001", "name": "Order A-1001", "mimeType": "application/json"},
            {"type": "resource", "resource": {"uri": "kb://shipping", "mimeType": "text/plain", "text": "3 to 6 days."}}
        ])).unwrap();
        let text = content_text(&blocks);
        assert!(text.contains("hello"));
        assert!(text.contains("[image image/png, 12 bytes of base64]"));
        assert!(text.contains("[link orders://A-1001"));
        assert!(text.contains("3 to 6 days."));
    }
}
