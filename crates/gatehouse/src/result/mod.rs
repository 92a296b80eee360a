//! What goes back into the model's context: a result, a tool error, a protocol error, a
//! refusal or a timeout, as one short JSON text, never longer than the host's bound.
//!
//! `{"tool": NAME, "result": …}` or `{"tool": NAME, "error": "…"}`. A result that does not
//! fit is cut, and the model is told so and how large it was, so it can ask for less.
//!
//! - this module: the bound, computed in one pass for any input;
//! - [`blocks`]: content blocks as text, media for the model, binaries saved for the person,
//!   the resource URIs a result links to;
//! - [`pages`]: a cut result kept whole for the turn, read on with the host's
//!   `read_result(id, offset)`;
//! - [`shape`]: how a call's end becomes what the model reads, and what the run shows.

pub mod blocks;
pub mod pages;
pub mod shape;

#[cfg(test)]
mod tests;

pub use blocks::*;
pub use pages::{Kept, page, success_kept};
pub use shape::{Shaped, Shaper};

use serde_json::{Value, json};

/// What the model reads for one call, and how it was made.
#[derive(Debug, Clone, PartialEq)]
pub struct ForModel {
    /// The JSON text the model reads.
    pub text: String,
    /// Characters of `text`.
    pub chars: usize,
    /// Was the result cut to fit?
    pub clipped: bool,
    /// Images and audio for a model that takes them as input (empty otherwise).
    pub media: Vec<crate::model::Media>,
}

/// A successful result for the model, bounded to `max_chars`.
pub fn success(tool: &str, value: &Value, max_chars: usize) -> ForModel {
    success_with(tool, value, &[], max_chars)
}

/// A successful result with descriptions of its non-text blocks, bounded to `max_chars`.
pub fn success_with(
    tool: &str,
    value: &Value,
    attachments: &[String],
    max_chars: usize,
) -> ForModel {
    // The value is serialised once and the object written around it by hand: `json!`
    // would deep-clone a large result before serialising it, and this runs on every call.
    let tool = shown_tool_name(tool);
    let tool = tool.as_ref();
    let value_json = json_text(value);
    // Invisible characters never reach the model; where they were is said instead.
    let value_json = crate::text::uncloaked(&value_json);
    let mut whole = String::with_capacity(value_json.len() + tool.len() + 32);
    whole.push_str("{\"tool\":");
    whole.push_str(&json_text(tool));
    whole.push_str(",\"result\":");
    whole.push_str(&value_json);
    if !attachments.is_empty() {
        whole.push_str(",\"attachments\":");
        whole.push_str(&json_text(attachments));
    }
    whole.push('}');
    let chars = whole.chars().count();
    if chars <= max_chars {
        return ForModel {
            text: whole,
            chars,
            clipped: false,
            media: Vec::new(),
        };
    }
    // Too long: send the start of the result as text, with a note that says so.
    cut(
        tool,
        &as_text(value, value_json.into_owned(), attachments),
        max_chars,
    )
}

/// `value` as compact JSON. Written into bytes by serde_json's own writer, which is several
/// times faster than `Value`'s `Display` (it goes through `fmt::Write` piece by piece), and
/// this runs on every result. A JSON value, a string or a list of strings always
/// serialises, so the empty fallback is never taken.
pub(crate) fn json_text<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// A result that does not fit, as the text its parts are read from: a string as it is,
/// anything else as JSON, its attachments' descriptions after it.
fn as_text(value: &Value, value_json: String, attachments: &[String]) -> String {
    match value {
        Value::String(s) if attachments.is_empty() => crate::text::uncloaked(s).into_owned(),
        Value::String(s) => format!("{}\n{}", crate::text::uncloaked(s), attachments.join("\n")),
        _ if attachments.is_empty() => value_json,
        _ => format!("{value_json}\n{}", attachments.join("\n")),
    }
}

/// The start of a result that does not fit, framed with a note that says how much of it
/// the model reads, as long as the bound allows.
fn cut(tool: &str, inner: &str, max_chars: usize) -> ForModel {
    let total = inner.chars().count();
    cut_from(tool, inner, 0, max_chars, |kept| {
        format!(
            "cut: the result had {total} characters and only the first {kept} are shown; ask for less (a narrower query, a filter or a smaller limit)"
        )
    })
}

/// The part of `inner` from character `skip` on that fits `max_chars`, framed with
/// `note(kept)`, where `kept` is how many characters of it are shown. The note's length
/// may grow with `kept` (its digits), never shrink.
fn cut_from(
    tool: &str,
    inner: &str,
    skip: usize,
    max_chars: usize,
    note: impl Fn(usize) -> String,
) -> ForModel {
    let start = inner
        .char_indices()
        .nth(skip)
        .map_or(inner.len(), |(i, _)| i);
    let rest = &inner[start..];
    let framed = |head: &str, kept: usize| {
        json!({"tool": tool, "result": head, "note": note(kept)}).to_string()
    };
    // The frame's size depends on the kept count only through its digits. A scan with
    // the frame of the largest count finds a head that fits, counting each character as
    // JSON will escape it; if that head's count has fewer digits, its own smaller frame
    // leaves room for a little more, so a second scan (capped to those digits) takes it.
    let longest_head = |frame: usize, cap: usize| {
        let budget = max_chars.saturating_sub(frame);
        let (mut used, mut kept, mut end) = (0, 0, 0);
        for (i, c) in rest.char_indices() {
            let width = escaped_width(c);
            if kept == cap || used + width > budget {
                break;
            }
            used += width;
            kept += 1;
            end = i + c.len_utf8();
        }
        (kept, end)
    };
    let digits = |n: usize| n.to_string().len();
    let keep = max_chars.min(rest.chars().count());
    let (mut kept, mut end) = longest_head(framed("", keep).chars().count(), keep);
    if digits(kept) < digits(keep) {
        let cap = 10usize.pow(digits(kept) as u32) - 1;
        (kept, end) = longest_head(framed("", cap).chars().count(), cap);
    }
    let text = framed(&rest[..end], kept);
    let n = text.chars().count();
    debug_assert!(n <= max_chars || kept == 0, "{n} > {max_chars}");
    ForModel {
        text,
        chars: n,
        clipped: true,
        media: Vec::new(),
    }
}

/// How many characters `c` takes inside a JSON string as serde_json writes it.
fn escaped_width(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        _ => 1,
    }
}

/// An error for the model (tool error, protocol error, refusal, timeout), bounded too:
/// an error that does not fit is cut and ends with `…`. One pass over the error, so a
/// server's megabyte of error text costs no more than reading it once.
pub fn failure(tool: &str, error: &str, max_chars: usize) -> ForModel {
    let tool = shown_tool_name(tool);
    let error = crate::text::uncloaked(error);
    let error = error.as_ref();
    let frame = |error: &str| json!({"tool": tool, "error": error}).to_string();
    let empty = frame("").chars().count();
    let budget = max_chars.saturating_sub(empty);
    let (end, whole) = prefix_within(error, budget);
    if whole {
        let text = frame(error);
        let chars = text.chars().count();
        return ForModel {
            text,
            chars,
            clipped: false,
            media: Vec::new(),
        };
    }
    // Room for the ellipsis: one character less of the error.
    let (end, _) = prefix_within(&error[..end], budget.saturating_sub(1));
    let text = frame(&format!("{}…", &error[..end]));
    let chars = text.chars().count();
    ForModel {
        text,
        chars,
        clipped: true,
        media: Vec::new(),
    }
}

/// The longest prefix of `text` whose JSON-escaped form takes at most `budget`
/// characters: its end (a byte offset into `text`) and whether it is all of `text`.
fn prefix_within(text: &str, budget: usize) -> (usize, bool) {
    let mut used = 0;
    for (i, c) in text.char_indices() {
        let width = escaped_width(c);
        if used + width > budget {
            return (i, false);
        }
        used += width;
    }
    (text.len(), true)
}

/// Most characters of a tool's name in what the model reads: a model may propose a name
/// of any length, and it is echoed back in every refusal.
pub const MAX_SHOWN_TOOL_NAME: usize = crate::catalog::MAX_MODEL_TOOL_NAME;

/// A tool name as it is echoed back to the model: at most [`MAX_SHOWN_TOOL_NAME`]
/// characters once escaped as JSON, ending with `…` when cut.
fn shown_tool_name(tool: &str) -> std::borrow::Cow<'_, str> {
    match prefix_within(tool, MAX_SHOWN_TOOL_NAME) {
        (_, true) => std::borrow::Cow::Borrowed(tool),
        (_, false) => {
            let (end, _) = prefix_within(tool, MAX_SHOWN_TOOL_NAME - 1);
            std::borrow::Cow::Owned(format!("{}…", &tool[..end]))
        }
    }
}

pub use crate::config::{MAX_RESULT_CHARS_LIMIT, MIN_RESULT_CHARS};
