//! Text a peer wrote, made safe to show and bounded by characters.
//!
//! A server's result, a form's message, a tool's name or a model's answer can hold escape
//! sequences that a terminal would act on: `ESC[2J` clears the screen (and can hide what
//! is being approved), OSC 52 writes the clipboard, OSC 8 disguises a link, a C1 `CSI`
//! (U+009B) does the same in one character, and bidi controls reorder what is shown.
//! [`visible`] replaces each such character with a visible escape (`\u{1b}`), so the rest
//! of the sequence is plain text. Everything the host shows a person goes through it; what
//! it saves or records for the person (files, `--record`) keeps the bytes as sent.
//!
//! Text is cut by characters, never by byte offsets taken from another string.

use std::borrow::Cow;

use serde_json::Value;

/// Would a terminal act on `c` rather than show it, or show nothing for it? C0 controls
/// but newline and tab, DEL, C1 controls, the bidi controls that reorder a line, and the
/// invisible characters ([`is_invisible`]) that hide text from the person.
pub fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        || is_invisible(c)
}

/// Is `c` invisible where it stands, so text can hide in it: zero-width characters, bidi
/// controls, the Unicode TAG block (ASCII spelled in characters nothing draws), the
/// variation selectors that carry no emoji presentation, fillers, the soft hyphen. An
/// emoji's own presentation selectors (U+FE0E, U+FE0F) are drawn with it and kept.
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0D}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{FFF0}'..='\u{FFF8}' | '\u{1BCA0}'..='\u{1BCA3}'
        | '\u{1D173}'..='\u{1D17A}' | '\u{E0000}'..='\u{E0FFF}')
}

/// `text` as the model reads it: each run of invisible characters ([`is_invisible`]) taken
/// out and said where it was (`[3 invisible characters removed]`), so an instruction
/// spelled in TAG characters neither reaches the model nor passes unnoticed. Borrowed when
/// there are none.
pub fn uncloaked(text: &str) -> Cow<'_, str> {
    if text.is_ascii() || !text.chars().any(is_invisible) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut run = 0usize;
    for c in text.chars().map(Some).chain([None]) {
        if c.is_some_and(is_invisible) {
            run += 1;
            continue;
        }
        if run > 0 {
            let s = if run == 1 { "" } else { "s" };
            out.push_str(&format!("[{run} invisible character{s} removed]"));
            run = 0;
        }
        out.extend(c);
    }
    Cow::Owned(out)
}

/// Does `text` hold a character a terminal would act on ([`is_unsafe`])? Text of printable
/// ASCII, newlines and tabs (nearly all of it) is told safe by a loop over its bytes,
/// without decoding a character: this runs on every step, record and relayed line.
pub fn has_unsafe(text: &str) -> bool {
    !text
        .bytes()
        .all(|b| matches!(b, b' '..=b'~' | b'\n' | b'\t'))
        && text.chars().any(is_unsafe)
}

/// `text` with every character a terminal would act on ([`is_unsafe`]) replaced by its
/// visible escape, `\u{1b}` for ESC. Borrowed when there is nothing to replace.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !has_unsafe(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_unsafe(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// As [`visible`], and on one line: newlines and tabs are escaped too (`\n`, `\t`), for
/// tables and single-line prompts.
pub fn visible_line(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| is_unsafe(c) || c == '\n' || c == '\t') {
        return Cow::Borrowed(text);
    }
    let shown = visible(text);
    Cow::Owned(shown.replace('\n', "\\n").replace('\t', "\\t"))
}

/// Make every string of a JSON value visible, object keys included, in place.
pub fn visible_json(value: &mut Value) {
    match value {
        Value::String(s) => {
            if let Cow::Owned(shown) = visible(s) {
                *s = shown;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(visible_json),
        Value::Object(map) => {
            if map.keys().any(|k| has_unsafe(k)) {
                let entries = std::mem::take(map);
                for (k, mut v) in entries {
                    visible_json(&mut v);
                    map.insert(visible(&k).into_owned(), v);
                }
            } else {
                map.values_mut().for_each(visible_json);
            }
        }
        _ => {}
    }
}

/// The first `max` characters of `text`; with `…` in place of the last one when it was
/// longer, so the result is never more than `max` characters.
pub fn clip(text: &str, max: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => Cow::Borrowed(text),
        Some(_) if max == 0 => Cow::Borrowed(""),
        Some(_) => {
            let end = text
                .char_indices()
                .nth(max - 1)
                .map_or(text.len(), |(i, _)| i);
            Cow::Owned(format!("{}…", &text[..end]))
        }
    }
}

/// The first `max` characters of `text`, unmarked: for text that must stay within a
/// bound and be used as it is (a search query), where [`clip`] marks what it cuts.
pub fn head(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// A duration as the run says it: whole seconds (`10 s`), else to a tenth (`0.5 s`).
pub fn seconds(d: std::time::Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

/// `word` as one word of a POSIX shell command line: as it is when it holds only
/// characters no shell reads specially, else in single quotes (a `'` inside written `'\''`).
pub fn shell_word(word: &str) -> Cow<'_, str> {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,".contains(&b));
    if plain {
        Cow::Borrowed(word)
    } else {
        Cow::Owned(format!("'{}'", word.replace('\'', r"'\''")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn escapes_become_visible_and_plain_text_stays() {
        assert_eq!(visible("plain, é 日本\n\tok"), "plain, é 日本\n\tok");
        assert!(matches!(visible("plain"), Cow::Borrowed(_)));
        assert_eq!(visible("\u{1b}[2Jgone"), "\\u{1b}[2Jgone");
        assert_eq!(
            visible("\u{1b}]52;c;aGVsbG8=\u{7}"),
            "\\u{1b}]52;c;aGVsbG8=\\u{7}"
        );
        assert_eq!(visible("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(visible("a\u{202e}txt.exe"), "a\\u{202e}txt.exe");
        assert_eq!(visible("over\rwrite"), "over\\u{d}write");
        assert_eq!(visible_line("a\nb\tc\u{1b}"), "a\\nb\\tc\\u{1b}");
    }

    #[test]
    fn hidden_text_is_shown_to_the_person_and_taken_out_for_the_model() {
        // "ignore" spelled in the TAG block, between two visible words.
        let tagged: String = "ignore"
            .chars()
            .map(|c| char::from_u32(0xE0000 + c as u32).unwrap())
            .collect();
        let text =
            format!("Reads a file.{tagged} Zero\u{200B}width, emoji \u{2764}\u{FE0F}, nul \0.");
        assert_eq!(
            uncloaked(&text),
            "Reads a file.[6 invisible characters removed] Zero[1 invisible character removed]width, emoji \u{2764}\u{FE0F}, nul \0."
        );
        assert!(matches!(uncloaked("plain ascii"), Cow::Borrowed(_)));
        assert!(matches!(uncloaked("café ❤\u{FE0F}"), Cow::Borrowed(_)));
        let shown = visible(&text);
        assert!(shown.contains("\\u{e0069}\\u{e0067}"), "{shown}");
        assert!(shown.contains("Zero\\u{200b}width"), "{shown}");
    }

    #[test]
    fn json_strings_and_keys_become_visible() {
        let mut v = json!({"k\u{1b}": ["\u{9b}x", 1, {"n": "\u{202e}"}]});
        visible_json(&mut v);
        assert_eq!(v, json!({"k\\u{1b}": ["\\u{9b}x", 1, {"n": "\\u{202e}"}]}));
    }

    #[test]
    fn durations_read_as_seconds() {
        use std::time::Duration;
        assert_eq!(seconds(Duration::from_secs(10)), "10 s");
        assert_eq!(seconds(Duration::from_millis(500)), "0.5 s");
        assert_eq!(seconds(Duration::from_millis(3_012)), "3.0 s");
        assert_eq!(head("ééé", 2), "éé");
        assert_eq!(head("ab", 5), "ab");
    }

    #[test]
    fn clip_counts_characters() {
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(clip("abcd", 3), "ab…");
        assert_eq!(clip("ééé", 2), "é…");
        assert_eq!(clip("x", 0), "");
    }

    proptest! {
        #[test]
        fn nothing_invisible_reaches_the_model(text in "(\\PC|\\p{Cf}|\\p{Mn}){0,200}") {
            let out = uncloaked(&text);
            prop_assert!(!out.chars().any(is_invisible));
        }
    }

    proptest! {
        /// Whatever a peer sends, what is shown holds no character a terminal acts on,
        /// and only those characters changed.
        #[test]
        fn nothing_shown_is_interpreted(text in any::<String>()) {
            let shown = visible(&text);
            prop_assert!(!shown.chars().any(is_unsafe));
            // Every character that is safe is still there, in order.
            let mut rest = shown.chars();
            prop_assert!(text.chars().filter(|c| !is_unsafe(*c)).all(|c| rest.any(|s| s == c)));
            let line = visible_line(&text);
            prop_assert!(!line.chars().any(|c| is_unsafe(c) || c == '\n' || c == '\t'));
        }

        /// The byte loop's shortcut says what decoding every character says, for any text
        /// and for text made mostly of ASCII, controls and the bidi marks.
        #[test]
        fn has_unsafe_agrees_with_every_character(
            any_text in any::<String>(),
            near in "[\\x00-\\x7f\u{80}-\u{a0}\u{61c}\u{200e}\u{202a}-\u{202e}\u{2066}-\u{2069}é]{0,40}",
        ) {
            for text in [&any_text, &near] {
                prop_assert_eq!(has_unsafe(text), text.chars().any(is_unsafe));
            }
        }

        #[test]
        fn clip_never_exceeds_and_keeps_a_prefix(text in any::<String>(), max in 0usize..64) {
            let cut = clip(&text, max);
            prop_assert!(cut.chars().count() <= max);
            let head = cut.trim_end_matches('…');
            prop_assert!(text.starts_with(head));
        }
    }

    /// A shell reads each quoted word back as the word itself.
    #[test]
    fn a_shell_word_reads_back_as_written() {
        let words = [
            "plain-word_1.2",
            "",
            "two words",
            "it's",
            "'''",
            "$HOME `id` $(id) \\ \" ; & | > < * ? ~ # !",
            "line\nbreak\ttab",
            "ünïcödé",
        ];
        let script: Vec<String> = words
            .iter()
            .map(|w| format!("printf '%s\\0' {}", shell_word(w)))
            .collect();
        let out = std::process::Command::new("sh")
            .args(["-c", &script.join("; ")])
            .output()
            .unwrap();
        let read: Vec<&str> = std::str::from_utf8(&out.stdout)
            .unwrap()
            .split_terminator('\0')
            .collect();
        assert_eq!(read, words);
        assert_eq!(shell_word("plain-word_1.2"), "plain-word_1.2");
    }
}
