//! A result's content blocks: as text for the model, as media for a model that takes
//! them, as files saved for the person, and the resource URIs they link to.

use std::borrow::Cow;

use rmcp::model::{CallToolResult, ContentBlock, Role};

use crate::model::MediaKind;
use serde_json::Value;

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
            let kind = match v["type"].as_str()? {
                "image" => MediaKind::Image,
                "audio" => MediaKind::Audio,
                _ => return None,
            };
            let data = v["data"]
                .as_str()
                .filter(|d| d.len() <= MAX_MODEL_MEDIA_BYTES)?;
            Some(crate::model::Media {
                kind,
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
/// dropped: beside structured content they come back as `attachments`, described. The
/// structured content is borrowed, not copied: it is only read from here on.
pub fn result_value(result: &CallToolResult) -> (Cow<'_, Value>, Vec<String>) {
    let blocks = result.content.iter().filter(|b| meant_for_model(b));
    if let Some(structured) = &result.structured_content {
        let attachments = blocks
            .filter(|b| b.as_text().is_none())
            .map(|b| content_text([b]))
            .collect();
        return (Cow::Borrowed(structured), attachments);
    }
    (Cow::Owned(Value::String(content_text(blocks))), Vec::new())
}

/// A block whose `annotations.audience` leaves out the assistant is for the person only:
/// it is shown and saved, but not put in the model's context.
pub fn meant_for_model(block: &ContentBlock) -> bool {
    let annotations = match block {
        ContentBlock::Text(b) => &b.annotations,
        ContentBlock::Image(b) => &b.annotations,
        ContentBlock::Audio(b) => &b.annotations,
        ContentBlock::Resource(b) => &b.annotations,
        ContentBlock::ResourceLink(b) => &b.annotations,
        // A kind of block newer than this build: its annotations read from its JSON.
        _ => {
            let v = serde_json::to_value(block).unwrap_or_default();
            return match v["annotations"]["audience"].as_array() {
                Some(audience) => audience.iter().any(|a| a == "assistant"),
                None => true,
            };
        }
    };
    match annotations.as_ref().and_then(|a| a.audience.as_ref()) {
        Some(audience) => audience.contains(&Role::Assistant),
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

/// What kind of block carried bytes to save.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    /// An `image` block.
    Image,
    /// An `audio` block.
    Audio,
    /// An embedded `resource` with a blob.
    Resource,
}

impl std::fmt::Display for BlockKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BlockKind::Image => "image",
            BlockKind::Audio => "audio",
            BlockKind::Resource => "resource",
        })
    }
}

/// A binary block kept for the person.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedBlock {
    /// What kind of block it was.
    pub kind: BlockKind,
    /// Its MIME type.
    pub mime: String,
    /// Its size, decoded.
    pub bytes: usize,
    /// Where it was saved.
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
            Some("image") => (BlockKind::Image, v["mimeType"].as_str(), v["data"].as_str()),
            Some("audio") => (BlockKind::Audio, v["mimeType"].as_str(), v["data"].as_str()),
            Some("resource") if v["resource"]["blob"].is_string() => (
                BlockKind::Resource,
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
                kind,
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
pub fn content_text<'a>(blocks: impl IntoIterator<Item = &'a ContentBlock>) -> String {
    let parts: Vec<String> = blocks
        .into_iter()
        .map(|block| {
            // Text, nearly every block, without a detour through JSON.
            if let Some(text) = block.as_text() {
                return text.text.clone();
            }
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
