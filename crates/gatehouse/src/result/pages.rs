//! Results read past the bound. A result cut to `maxResultChars` is kept whole for the
//! rest of the turn under an id (`r3`: the turn's third call), and its note tells the model
//! how to read on: the host's tool `read_result(id, offset)` returns the next part, as
//! bounded as the first. What is kept is bounded too: at most [`MAX_KEPT_RESULTS`] results
//! and [`MAX_KEPT_CHARS`] characters a turn, the oldest given up first; a result larger
//! than that is cut as before, with the note to ask for less.

use std::{collections::VecDeque, sync::Arc};

use serde_json::{Value, json};

use super::ForModel;

/// Most cut results one turn keeps whole.
pub const MAX_KEPT_RESULTS: usize = 16;
/// Most characters of cut results one turn keeps, all together; also the largest result
/// that is kept at all.
pub const MAX_KEPT_CHARS: usize = 16 * 1024 * 1024;

/// A successful result for the model, bounded to `max_chars`. When it does not fit and is
/// at most `max_kept` characters as text, the first part is shown with a note naming
/// `read_result` and `id`, and the whole text is returned to be kept; otherwise it is as
/// [`super::success_with`] makes it.
pub fn success_kept(
    tool: &str,
    value: &Value,
    attachments: &[String],
    max_chars: usize,
    id: &str,
    max_kept: usize,
) -> (ForModel, Option<String>) {
    let shown = super::success_with(tool, value, attachments, max_chars);
    if !shown.clipped {
        return (shown, None);
    }
    // Kept as the model reads it: invisible characters out, as in the first part.
    let json = super::json_text(value);
    let whole = super::as_text(
        value,
        crate::text::uncloaked(&json).into_owned(),
        attachments,
    );
    if whole.chars().count() > max_kept {
        return (shown, None);
    }
    match page(tool, &whole, 0, max_chars, id) {
        Ok(first) => (first, Some(whole)),
        Err(_) => (shown, None),
    }
}

/// The part of `whole` from character `offset` on that fits `max_chars`, with a note that
/// says which characters these are and, unless they are the last, how to read on. An
/// offset at or past the end is an error in words.
pub fn page(
    tool: &str,
    whole: &str,
    offset: usize,
    max_chars: usize,
    id: &str,
) -> Result<ForModel, String> {
    let total = whole.chars().count();
    if offset >= total {
        return Err(format!(
            "offset {offset} is past the end: result {id} has {total} characters (offsets 0 to {})",
            total.saturating_sub(1)
        ));
    }
    let tool = super::shown_tool_name(tool);
    // More than fits as plain characters: not the last part (and no need to write it all).
    if total - offset <= max_chars {
        let start = whole
            .char_indices()
            .nth(offset)
            .map_or(whole.len(), |(i, _)| i);
        // The rest whole, if it fits with the (shorter) note of a last part.
        let note = format!(
            "characters {}-{total} of {total}: the end of result {id}",
            offset + 1
        );
        let last =
            json!({"tool": tool.as_ref(), "result": &whole[start..], "note": note}).to_string();
        let chars = last.chars().count();
        if chars <= max_chars {
            return Ok(ForModel {
                text: last,
                chars,
                clipped: false,
                media: Vec::new(),
            });
        }
    }
    Ok(super::cut_from(&tool, whole, offset, max_chars, |kept| {
        let end = offset + kept;
        format!(
            "cut: characters {}-{end} of {total} are shown; call read_result with id {id} and offset {end} for the next part",
            offset + 1
        )
    }))
}

/// The cut results of one turn, kept whole.
#[derive(Debug, Clone, Default)]
pub struct Kept {
    results: VecDeque<(String, Arc<str>, usize)>,
    chars: usize,
}

impl Kept {
    /// Keep `whole` under `id`, giving up the oldest results while the turn's bounds
    /// would be passed.
    pub fn keep(&mut self, id: String, whole: String) {
        let chars = whole.chars().count();
        if chars > MAX_KEPT_CHARS {
            return;
        }
        self.results.retain(|(kept, _, _)| *kept != id);
        while self.results.len() >= MAX_KEPT_RESULTS || self.chars + chars > MAX_KEPT_CHARS {
            let Some((_, _, n)) = self.results.pop_front() else {
                break;
            };
            self.chars -= n;
        }
        self.chars += chars;
        self.results.push_back((id, whole.into(), chars));
    }

    /// The result kept under `id`.
    pub fn get(&self, id: &str) -> Option<&str> {
        self.results
            .iter()
            .find(|(kept, _, _)| kept == id)
            .map(|(_, text, _)| text.as_ref())
    }

    /// Whether any result is kept.
    pub fn is_empty(&self) -> bool {
        self.results.is_empty()
    }

    /// The next part of result `id` from `offset`, as `read_result` returns it, or why
    /// there is none.
    pub fn read(
        &self,
        tool: &str,
        id: &str,
        offset: usize,
        max_chars: usize,
    ) -> Result<ForModel, String> {
        let Some(whole) = self.get(id) else {
            let ids: Vec<&str> = self.results.iter().map(|(i, _, _)| i.as_str()).collect();
            return Err(if ids.is_empty() {
                format!("no result {id} is kept: no result of this turn was cut")
            } else {
                format!(
                    "no result {id} is kept in this turn; kept: {}",
                    ids.join(", ")
                )
            });
        };
        page(tool, whole, offset, max_chars, id)
    }
}
