//! A text as the word pieces of the table's vocabulary, the way the model the table was
//! distilled from reads it (BERT's uncased tokenizer): control characters dropped,
//! lowercase, accents taken off, split at white space and around punctuation, then each
//! word cut into the longest pieces of the vocabulary from its start (`crashlooping`:
//! `crash`, `##lo`, `##oping`); a word that cannot be cut is unknown and left out.
//!
//! A hundred lines of our own rather than the `tokenizers` crate: that crate brings a
//! regex engine, a C library and serialisation for every model family, to run this one
//! algorithm over one fixed vocabulary; `meaning.rs`'s tests hold it to the ids the Python
//! `tokenizers` gives for the same texts.

use std::collections::HashMap;

use unicode_normalization::UnicodeNormalization;

/// Longest word (in characters) cut into pieces; a longer one is unknown, as in BERT.
pub const MAX_WORD_CHARS: usize = 100;
/// Most characters of a text read for its pieces: a request of megabytes costs no more
/// than its start, which holds far more pieces than a meaning uses.
pub const MAX_READ_CHARS: usize = 4_000;

/// The vocabulary: each piece's id, a piece that continues a word written `##piece`.
pub type Vocabulary = HashMap<&'static str, u32>;

/// The ids of `text`'s pieces, at most `most`; unknown words left out.
pub fn pieces(vocabulary: &Vocabulary, text: &str, most: usize) -> Vec<u32> {
    let text = crate::text::head(text, MAX_READ_CHARS);
    let mut ids = Vec::new();
    for word in words(text) {
        if ids.len() >= most {
            break;
        }
        ids.extend(cut(vocabulary, &word));
    }
    ids.truncate(most);
    ids
}

/// `text`'s words as BERT's basic tokenizer makes them: without control or format
/// characters, lowercase, without accents, each punctuation mark and each CJK character a
/// word of its own.
fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    for c in text.to_lowercase().nfd() {
        if c == '\u{fffd}' || (c.is_control() && !c.is_whitespace()) || is_format(c) || is_mark(c) {
            continue;
        }
        if c.is_whitespace() {
            flush(&mut word, &mut words);
        } else if is_punctuation(c) || is_cjk(c) {
            flush(&mut word, &mut words);
            words.push(c.to_string());
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut words);
    words
}

fn flush(word: &mut String, words: &mut Vec<String>) {
    if !word.is_empty() {
        words.push(std::mem::take(word));
    }
}

/// One word as the longest pieces from its start; nothing when some part matches no piece.
fn cut(vocabulary: &Vocabulary, word: &str) -> Vec<u32> {
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    if chars.len() > MAX_WORD_CHARS {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut start = 0;
    let mut piece = String::new();
    while start < chars.len() {
        let from = chars[start].0;
        let found = (start + 1..=chars.len()).rev().find_map(|end| {
            let to = chars.get(end).map_or(word.len(), |(i, _)| *i);
            piece.clear();
            if start > 0 {
                piece.push_str("##");
            }
            piece.push_str(&word[from..to]);
            vocabulary.get(piece.as_str()).map(|id| (end, *id))
        });
        let Some((end, id)) = found else {
            return Vec::new();
        };
        out.push(id);
        start = end;
    }
    out
}

/// A combining mark (what NFD leaves of an accent): the ranges BERT's `Mn` mostly is.
fn is_mark(c: char) -> bool {
    matches!(c, '\u{0300}'..='\u{036f}' | '\u{1ab0}'..='\u{1aff}' | '\u{1dc0}'..='\u{1dff}' | '\u{20d0}'..='\u{20ff}' | '\u{fe20}'..='\u{fe2f}')
}

/// Unicode's format characters that text carries unseen (zero-width spaces and joiners,
/// direction marks, the soft hyphen, the byte-order mark), which BERT drops as control.
fn is_format(c: char) -> bool {
    matches!(c, '\u{00ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}')
}

/// Punctuation: ASCII's, Latin-1's, the General Punctuation block's and CJK's (std has no
/// Unicode categories; symbols such as `™` are not punctuation, as in BERT).
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation()
        || matches!(c, '¡' | '§' | '«' | '¶' | '·' | '»' | '¿' | '\u{2010}'..='\u{2027}' | '\u{2030}'..='\u{205e}' | '\u{3001}'..='\u{3003}' | '\u{3008}'..='\u{3011}' | '\u{3014}'..='\u{301f}' | '\u{ff01}'..='\u{ff0f}' | '\u{ff1a}'..='\u{ff20}')
}

/// The CJK ideographs BERT splits one by one.
fn is_cjk(c: char) -> bool {
    matches!(c, '\u{4e00}'..='\u{9fff}' | '\u{3400}'..='\u{4dbf}' | '\u{20000}'..='\u{2a6df}' | '\u{2a700}'..='\u{2b73f}' | '\u{2b740}'..='\u{2b81f}' | '\u{2b820}'..='\u{2ceaf}' | '\u{f900}'..='\u{faff}' | '\u{2f800}'..='\u{2fa1f}')
}
