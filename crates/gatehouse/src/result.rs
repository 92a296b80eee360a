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
    /// Images and audio for a model that takes them as input (empty otherwise).
    pub media: Vec<crate::model::Media>,
}

/// Most media blocks passed to the model from one result.
pub const MAX_MODEL_MEDIA: usize = 4;
/// Largest media block passed to the model, in bytes of base64.
pub const MAX_MODEL_MEDIA_BYTES: usize = 4 * 1024 * 1024;

/// The image and audio blocks of a result, as model input, within the bounds above.
pub fn media_for_model(blocks: &[ContentBlock]) -> Vec<crate::model::Media> {
    blocks
        .iter()
        .filter_map(|b| {
            let v = serde_json::to_value(b).ok()?;
            let kind = v["type"]
                .as_str()
                .filter(|k| *k == "image" || *k == "audio")?;
            let data = v["data"]
                .as_str()
                .filter(|d| d.len() <= MAX_MODEL_MEDIA_BYTES)?;
            Some(crate::model::Media {
                kind: kind.to_owned(),
                mime: v["mimeType"]
                    .as_str()
                    .unwrap_or("application/octet-stream")
                    .to_owned(),
                data: data.to_owned(),
            })
        })
        .take(MAX_MODEL_MEDIA)
        .collect()
}

/// The useful value of a result: `structuredContent` when the server sent it (compact and
/// typed), else the text of its content blocks. Blocks that are not text are never
/// dropped: beside structured content they come back as `attachments`, described.
pub fn result_value(result: &CallToolResult) -> (Value, Vec<String>) {
    let blocks: Vec<ContentBlock> = result
        .content
        .iter()
        .filter(|b| meant_for_model(b))
        .cloned()
        .collect();
    if let Some(structured) = &result.structured_content {
        let attachments = blocks
            .iter()
            .filter(|b| b.as_text().is_none())
            .map(|b| content_text(std::slice::from_ref(b)))
            .collect();
        return (structured.clone(), attachments);
    }
    (Value::String(content_text(&blocks)), Vec::new())
}

/// A block whose `annotations.audience` leaves out the assistant is for the person only:
/// it is shown and saved, but not put in the model's context.
pub fn meant_for_model(block: &ContentBlock) -> bool {
    let v = serde_json::to_value(block).unwrap_or_default();
    match v["annotations"]["audience"].as_array() {
        Some(audience) => audience.iter().any(|a| a == "assistant"),
        None => true,
    }
}

/// Most URIs remembered from one turn's results for `read_resource`.
pub const MAX_LINKED_URIS: usize = 1_000;

/// Every resource URI a result mentions: links, embedded resources, and `uri` fields of
/// its structured content (a search hit's policy URI, say).
pub fn linked_uris(result: &CallToolResult) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    match (k.as_str(), v) {
                        ("uri", Value::String(u)) if u.contains("://") => out.push(u.clone()),
                        _ => walk(v, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for block in &result.content {
        walk(&serde_json::to_value(block).unwrap_or_default(), &mut out);
    }
    if let Some(s) = &result.structured_content {
        walk(s, &mut out);
    }
    out.dedup();
    out
}

/// A binary block kept for the person.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedBlock {
    pub kind: String,
    pub mime: String,
    pub bytes: usize,
    pub path: std::path::PathBuf,
}

/// Largest binary block the host writes to disk.
pub const MAX_SAVED_BLOCK_BYTES: usize = 16 * 1024 * 1024;

fn extension(mime: &str) -> &str {
    match mime {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "audio/wav" | "audio/x-wav" => "wav",
        "audio/mpeg" => "mp3",
        "audio/ogg" => "ogg",
        "application/pdf" => "pdf",
        _ => "bin",
    }
}

/// Save the binary blocks of a result (images, audio, blob resources) as files in `dir`,
/// named `{stem}-{n}.{ext}` (never over an existing file, readable by the user only), so
/// the person can open them. Blocks whose base64 does not
/// decode, or that are too large, are reported in the error list instead.
pub fn save_binaries(
    blocks: &[ContentBlock],
    dir: &std::path::Path,
    stem: &str,
) -> (Vec<SavedBlock>, Vec<String>) {
    use base64::Engine;
    let mut saved = Vec::new();
    let mut problems = Vec::new();
    for (n, block) in blocks.iter().enumerate() {
        // Only these carry bytes; the usual text block is not turned into a value at all.
        if block.as_image().is_none() && block.as_audio().is_none() && block.as_resource().is_none()
        {
            continue;
        }
        let v = serde_json::to_value(block).unwrap_or_default();
        let (kind, mime, data) = match v["type"].as_str() {
            Some(k @ ("image" | "audio")) => (k, v["mimeType"].as_str(), v["data"].as_str()),
            Some("resource") if v["resource"]["blob"].is_string() => (
                "resource",
                v["resource"]["mimeType"].as_str(),
                v["resource"]["blob"].as_str(),
            ),
            _ => continue,
        };
        let mime = mime.unwrap_or("application/octet-stream");
        let bytes =
            match base64::engine::general_purpose::STANDARD.decode(data.unwrap_or("").trim()) {
                Ok(b) => b,
                Err(e) => {
                    problems.push(format!("a {kind} block ({mime}) is not valid base64: {e}"));
                    continue;
                }
            };
        if bytes.len() > MAX_SAVED_BLOCK_BYTES {
            problems.push(format!("a {kind} block of {} bytes is larger than the {MAX_SAVED_BLOCK_BYTES} the host saves", bytes.len()));
            continue;
        }
        let name = format!("{stem}-{}", n + 1);
        match crate::files::write_new(dir, &name, extension(mime), &bytes) {
            Ok(path) => saved.push(SavedBlock {
                kind: kind.into(),
                mime: mime.into(),
                bytes: bytes.len(),
                path,
            }),
            Err(e) => problems.push(format!(
                "could not save a {kind} block in {}: {e}",
                dir.display()
            )),
        }
    }
    (saved, problems)
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
    let value_json = value.to_string();
    let mut whole = String::with_capacity(value_json.len() + tool.len() + 32);
    whole.push_str("{\"tool\":");
    whole.push_str(&Value::from(tool).to_string());
    whole.push_str(",\"result\":");
    whole.push_str(&value_json);
    if !attachments.is_empty() {
        whole.push_str(",\"attachments\":");
        whole.push_str(&json!(attachments).to_string());
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
    let inner = match value {
        Value::String(s) if attachments.is_empty() => s.clone(),
        Value::String(s) => format!("{s}\n{}", attachments.join("\n")),
        _ if attachments.is_empty() => value_json,
        _ => format!("{value_json}\n{}", attachments.join("\n")),
    };
    let total = inner.chars().count();
    let note = |kept: usize| {
        format!(
            "cut: the result had {total} characters and only the first {kept} are shown; ask for less (a narrower query, a filter or a smaller limit)"
        )
    };
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
        for (i, c) in inner.char_indices() {
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
    let keep = max_chars.min(total);
    let (mut kept, mut end) = longest_head(framed("", keep).chars().count(), keep);
    if digits(kept) < digits(keep) {
        let cap = 10usize.pow(digits(kept) as u32) - 1;
        (kept, end) = longest_head(framed("", kept).chars().count(), cap);
    }
    let text = framed(&inner[..end], kept);
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

/// The smallest bound a result may be given (`maxResultChars`): room for the longest frame
/// (a cut result's, with the longest tool name and its note) and some of the result.
pub const MIN_RESULT_CHARS: usize = 400;
/// The largest bound a result may be given.
pub const MAX_RESULT_CHARS_LIMIT: usize = 10_000_000;

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
    fn whole_results_read_as_the_json_object_they_stand_for() {
        let value = json!({"b": [1, "two\n\"3\""], "a": null});
        let links = vec!["[link x://1 \"One\" text/plain]".to_owned()];
        assert_eq!(
            success_with("s__t", &value, &links, 4_000).text,
            json!({"tool": "s__t", "result": value, "attachments": links}).to_string()
        );
        assert_eq!(
            success("s__t", &value, 4_000).text,
            json!({"tool": "s__t", "result": value}).to_string()
        );
    }

    #[test]
    fn a_cut_keeps_as_much_as_fits_whatever_the_escaping() {
        for (unit, max) in [
            ("ab", 300),
            ("\"\\", 301),
            ("\u{1}é\n", 333),
            ("日本", 4_000),
        ] {
            let value = Value::String(unit.repeat(3_000));
            let r = success("t", &value, max);
            assert!(r.clipped && r.chars <= max, "{unit:?}: {} > {max}", r.chars);
            let v: Value = serde_json::from_str(&r.text).unwrap();
            let head = v["result"].as_str().unwrap();
            let kept = head.chars().count();
            assert!(
                v["note"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("only the first {kept} "))
            );
            // One more character would not have fitted.
            let longer: String = unit.repeat(3_000).chars().take(kept + 1).collect();
            let bigger = json!({"tool": "t", "result": longer, "note": v["note"]}).to_string();
            assert!(
                bigger.chars().count() > max,
                "{unit:?}: kept {kept} of a possible more"
            );
        }
    }

    #[test]
    fn errors_fit_the_bound_too() {
        let r = failure("t", &"e".repeat(10_000), 100);
        assert!(r.chars <= 100);
        assert!(r.text.ends_with("…\"}"));
    }

    #[test]
    fn a_long_tool_name_cannot_hold_the_bound_hostage() {
        // Before: the frame alone was longer than the bound, the error was cut to "…",
        // and the loop never ended.
        let name = "x".repeat(5_000);
        let r = failure(&name, "unknown tool", 4_000);
        assert!(r.chars <= 4_000);
        let v: Value = serde_json::from_str(&r.text).unwrap();
        assert_eq!(
            v["tool"].as_str().unwrap().chars().count(),
            MAX_SHOWN_TOOL_NAME
        );
        assert_eq!(v["error"], "unknown tool");
        let r = failure("s__t", &"e".repeat(1_000), MIN_RESULT_CHARS);
        assert!(r.clipped && r.chars <= MIN_RESULT_CHARS);
        let r = success(
            &"\"".repeat(300),
            &json!("y".repeat(10_000)),
            MIN_RESULT_CHARS,
        );
        assert!(r.clipped && r.chars <= MIN_RESULT_CHARS, "{}", r.chars);
    }

    #[test]
    fn structured_results_keep_their_links_as_attachments() {
        let r: CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "text", "text": "{}"},
                        {"type": "resource_link", "uri": "orders://A-1002", "name": "Order A-1002", "mimeType": "application/json"}],
            "structuredContent": {"order_id": "A-1002", "nested": [{"uri": "policy://larkfield/x"}]}
        })).unwrap();
        let (value, attachments) = result_value(&r);
        assert_eq!(value["order_id"], "A-1002");
        assert_eq!(
            attachments,
            vec!["[link orders://A-1002 \"Order A-1002\" application/json]"]
        );
        assert_eq!(
            linked_uris(&r),
            vec!["orders://A-1002", "policy://larkfield/x"]
        );
        let shown = success_with("t", &value, &attachments, 4_000);
        assert!(shown.text.contains("\"attachments\""));
    }

    #[test]
    fn binary_blocks_are_saved_and_bad_ones_reported() {
        let dir = std::env::temp_dir().join(format!("gatehouse-blocks-{}", std::process::id()));
        let blocks: Vec<ContentBlock> = serde_json::from_value(json!([
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "audio", "data": "not base64!!", "mimeType": "audio/wav"},
            {"type": "text", "text": "x"}
        ]))
        .unwrap();
        let (saved, problems) = save_binaries(&blocks, &dir, "step1");
        assert_eq!(saved.len(), 1);
        assert_eq!(saved[0].bytes, 8);
        assert!(saved[0].path.ends_with("step1-1.png"));
        assert_eq!(
            std::fs::read(&saved[0].path).unwrap()[..4],
            [0x89, b'P', b'N', b'G']
        );
        assert!(problems[0].contains("not valid base64"));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn blocks_for_the_person_only_stay_out_of_the_model_context() {
        let r: CallToolResult = serde_json::from_value(json!({"content": [
            {"type": "text", "text": "for everyone"},
            {"type": "text", "text": "for the person", "annotations": {"audience": ["user"]}},
            {"type": "text", "text": "for the model", "annotations": {"audience": ["assistant", "user"]}}
        ]})).unwrap();
        let (value, _) = result_value(&r);
        assert_eq!(value, json!("for everyone\nfor the model"));
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

    use proptest::prelude::*;

    /// Any JSON value, a few levels deep, with any strings.
    fn any_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<String>().prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                prop::collection::btree_map(any::<String>(), inner, 0..8)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Whatever the tool name, the error and the bound (from the smallest allowed),
        /// what the model reads fits, is one JSON object, and says when it was cut.
        #[test]
        fn every_error_fits_its_bound(
            tool in ".{0,300}", error in any::<String>(), extra in 0usize..3_000,
        ) {
            let max = MIN_RESULT_CHARS + extra;
            let r = failure(&tool, &error, max);
            prop_assert!(r.chars <= max, "{} > {max}", r.chars);
            prop_assert_eq!(r.chars, r.text.chars().count());
            let v: Value = serde_json::from_str(&r.text).unwrap();
            let shown = v["error"].as_str().unwrap();
            if r.clipped {
                prop_assert!(shown.ends_with('…'));
                prop_assert!(error.starts_with(shown.trim_end_matches('…')));
            } else {
                prop_assert_eq!(shown, error.as_str());
            }
        }

        #[test]
        fn every_result_fits_its_bound(
            tool in ".{0,300}", value in any_value(), extra in 0usize..3_000,
            attachments in prop::collection::vec(any::<String>(), 0..3),
        ) {
            let max = MIN_RESULT_CHARS + extra;
            let r = success_with(&tool, &value, &attachments, max);
            prop_assert!(r.chars <= max, "{} > {max}", r.chars);
            let v: Value = serde_json::from_str(&r.text).unwrap();
            if r.clipped {
                prop_assert!(v["note"].as_str().unwrap().starts_with("cut: "));
            } else {
                prop_assert_eq!(&v["result"], &value);
            }
        }
    }
}
