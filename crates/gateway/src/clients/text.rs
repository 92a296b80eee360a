//! A client's settings file as text: read as the clients read it (JSON, with the comments
//! and trailing commas VS Code and Gemini CLI allow), and changed in one place only: one
//! member of the top-level object replaced, added or removed, every other byte left as it
//! was (the other keys, their order, the comments, the indentation, the last newline).

use std::ops::Range;

use serde_json::Value;

/// One member of the top-level object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its key, unescaped.
    pub key: String,
    /// From the key's opening quote to the end of its value.
    pub span: Range<usize>,
    /// Its value.
    pub value: Range<usize>,
}

/// The top-level object of a document: where its braces are, and its members in order.
#[derive(Debug, Clone)]
pub struct Outline {
    /// The opening brace.
    pub open: usize,
    /// The closing brace.
    pub close: usize,
    /// The members, in the file's order.
    pub members: Vec<Member>,
}

impl Outline {
    /// The member `key`; a key written twice is an error (which one the client reads is
    /// its own business, and no edit of one of them is safe).
    pub fn member(&self, key: &str) -> Result<Option<&Member>, String> {
        let mut found = self.members.iter().filter(|m| m.key == key);
        let first = found.next();
        if found.next().is_some() {
            return Err(format!("the key \"{key}\" is written twice"));
        }
        Ok(first)
    }
}

/// The document `text` holds, read as JSON once comments and trailing commas are taken
/// out, and the outline of its top-level object. A document that is not an object is an
/// error in words, with the line and column where the parser stopped.
pub fn read(text: &str) -> Result<(Value, Outline), String> {
    let plain = strict(text)?;
    let value: Value = serde_json::from_str(&plain).map_err(|e| {
        format!(
            "it is not valid JSON: {e} (line {}, column {})",
            e.line(),
            e.column()
        )
    })?;
    if !value.is_object() {
        return Err("it must hold a JSON object".into());
    }
    let outline = outline(text.as_bytes())?;
    Ok((value, outline))
}

/// `text` with its comments and trailing commas turned into spaces (line breaks kept), so
/// positions, lines and columns stay those of the file.
fn strict(text: &str) -> Result<String, String> {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => i = string_end(b, i)?,
            b'/' if matches!(b.get(i + 1), Some(b'/' | b'*')) => {
                let end = comment_end(b, i)?;
                for c in &mut out[i..end] {
                    if *c != b'\n' && *c != b'\r' {
                        *c = b' ';
                    }
                }
                i = end;
            }
            b',' => {
                if matches!(b.get(skip_blank(b, i + 1)?), Some(b'}' | b']')) {
                    out[i] = b' ';
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    // Only ASCII bytes were replaced, each by a space: still UTF-8.
    String::from_utf8(out).map_err(|_| "it is not UTF-8 text".into())
}

/// Where the comment starting at `i` (`//` or `/*`) ends.
fn comment_end(b: &[u8], i: usize) -> Result<usize, String> {
    if b[i + 1] == b'/' {
        return Ok(b[i..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(b.len(), |n| i + n));
    }
    b[i + 2..]
        .windows(2)
        .position(|w| w == b"*/")
        .map(|n| i + 2 + n + 2)
        .ok_or_else(|| "a /* comment is never closed".into())
}

/// The first byte at or after `i` that is neither white space nor part of a comment (a
/// byte order mark at the start counts as white space).
fn skip_blank(b: &[u8], mut i: usize) -> Result<usize, String> {
    if i == 0 && b.starts_with("\u{feff}".as_bytes()) {
        i = 3;
    }
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'/' if matches!(b.get(i + 1), Some(b'/' | b'*')) => i = comment_end(b, i)?,
            _ => break,
        }
    }
    Ok(i)
}

/// Where the string whose opening quote is at `i` ends (just past its closing quote).
fn string_end(b: &[u8], i: usize) -> Result<usize, String> {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' => return Ok(j + 1),
            _ => j += 1,
        }
    }
    Err("a string is never closed".into())
}

/// Where the value starting at `i` ends.
fn value_end(b: &[u8], i: usize) -> Result<usize, String> {
    match b.get(i) {
        Some(b'"') => string_end(b, i),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'/' if matches!(b.get(j + 1), Some(b'/' | b'*')) => {
                        j = comment_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            Err("an object or array is never closed".into())
        }
        Some(_) => Ok(b[i..]
            .iter()
            .position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r' | b'/'))
            .map_or(b.len(), |n| i + n)),
        None => Err("a value is missing at the end".into()),
    }
}

/// The top-level object's outline. The text has been read as JSON already ([`read`]), so
/// only its shape is followed here.
fn outline(b: &[u8]) -> Result<Outline, String> {
    let expect = |i: usize, c: u8| -> Result<(), String> {
        if b.get(i) == Some(&c) {
            Ok(())
        } else {
            Err(format!("expected '{}' at byte {i}", c as char))
        }
    };
    let open = skip_blank(b, 0)?;
    expect(open, b'{')?;
    let mut members = Vec::new();
    let mut i = skip_blank(b, open + 1)?;
    while b.get(i) != Some(&b'}') {
        expect(i, b'"')?;
        let key_end = string_end(b, i)?;
        let key: String = serde_json::from_slice(&b[i..key_end])
            .map_err(|e| format!("a key cannot be read: {e}"))?;
        let colon = skip_blank(b, key_end)?;
        expect(colon, b':')?;
        let start = skip_blank(b, colon + 1)?;
        let end = value_end(b, start)?;
        members.push(Member {
            key,
            span: i..end,
            value: start..end,
        });
        i = skip_blank(b, end)?;
        if b.get(i) == Some(&b',') {
            i = skip_blank(b, i + 1)?;
        } else {
            expect(i, b'}')?;
        }
    }
    Ok(Outline {
        open,
        close: i,
        members,
    })
}

/// How the file lays itself out: its indentation and line ends, or none (one line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// One level of indentation; `None` for a file on one line.
    indent: Option<String>,
    /// `\r\n` or `\n`.
    newline: &'static str,
}

impl Layout {
    /// The layout of `text`.
    pub fn of(text: &str) -> Layout {
        let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
        let indent = text
            .trim_end()
            .contains('\n')
            .then(|| gatehouse::edit::indentation(text));
        Layout { indent, newline }
    }

    /// `value` as a member's value one level in: pretty in the file's indentation, or on
    /// one line for a file on one line.
    pub fn value(&self, value: &Value) -> String {
        let Some(indent) = &self.indent else {
            return value.to_string();
        };
        let mut out = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
        let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
        serde::Serialize::serialize(value, &mut ser).expect("a JSON value always serializes");
        let text = String::from_utf8(out).expect("JSON is UTF-8");
        text.split('\n')
            .collect::<Vec<_>>()
            .join(&format!("{}{indent}", self.newline))
    }

    /// Line end and indentation before a member (a space for a file on one line).
    fn before_member(&self) -> String {
        match &self.indent {
            Some(indent) => format!("{}{indent}", self.newline),
            None => String::new(),
        }
    }
}

/// `text` with the member `key` set to `value` (already written as [`Layout::value`]
/// writes it): its value replaced where it is, or a new member after the last one.
pub fn set_member(text: &str, outline: &Outline, key: &str, value: &str) -> Result<String, String> {
    let layout = Layout::of(text);
    let mut out = String::with_capacity(text.len() + value.len());
    match (outline.member(key)?, outline.members.last()) {
        (Some(m), _) => {
            out.push_str(&text[..m.value.start]);
            out.push_str(value);
            out.push_str(&text[m.value.end..]);
        }
        (None, Some(last)) => {
            out.push_str(&text[..last.value.end]);
            out.push(',');
            out.push_str(&layout.before_member());
            out.push_str(&format!("{}: {value}", Value::from(key)));
            out.push_str(&text[last.value.end..]);
        }
        (None, None) => {
            out.push_str(&text[..=outline.open]);
            out.push_str(&layout.before_member());
            out.push_str(&format!("{}: {value}", Value::from(key)));
            if layout.indent.is_some() {
                out.push_str(layout.newline);
            }
            out.push_str(&text[outline.close..]);
        }
    }
    Ok(out)
}

/// `text` without the member `key` (and the comma that went with it); `text` as it is
/// when there is no such member.
pub fn remove_member(text: &str, outline: &Outline, key: &str) -> String {
    let members = &outline.members;
    let Some(at) = members.iter().position(|m| m.key == key) else {
        return text.to_owned();
    };
    let cut = match (at.checked_sub(1), members.get(at + 1)) {
        (Some(before), _) => members[before].value.end..members[at].value.end,
        (None, Some(next)) => members[at].span.start..next.span.start,
        (None, None) => outline.open + 1..outline.close,
    };
    let mut out = text.to_owned();
    out.replace_range(cut, "");
    out
}
