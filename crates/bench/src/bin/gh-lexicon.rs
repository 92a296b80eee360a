//! `gh-lexicon`: makes tool search's table of related words
//! (`crates/gatehouse/src/catalog/lexicon.tsv`) from WordNet 3.0 as Debian's `wordnet-base`
//! installs it, so that no related word is chosen by hand.
//!
//!     gh-lexicon [--wordnet /usr/share/wordnet] [--out PATH]
//!
//! For every single-word lemma of WordNet's nouns, verbs, adjectives and adverbs, and for
//! each of its first [`MAX_SENSES`] senses (WordNet orders a word's senses by how often
//! they were seen in tagged text), the words of the same sense (`s`), the words derived
//! from it (`d`: to remember, a memory; to deploy, a deployment) and the words of the
//! broader sense (`h`: a folder is a container). Each word is keyed, and each related word
//! written, as the search's own tokenizer stems it (`gatehouse::catalog::search::
//! stem_phrases`), so the host looks a request's stemmed word up as it is. A line:
//! `stem<TAB>KIND RANK related words<TAB>…`, sorted by stem; how much each kind and rank
//! counts is the host's (`catalog::lexicon`), not the table's.

use std::{
    collections::{BTreeMap, HashMap},
    fmt::Write as _,
    path::PathBuf,
};

use anyhow::Context as _;
use gatehouse_bench::{Flags, catalog};

/// How many of a word's senses (the most frequent first) give related words.
const MAX_SENSES: usize = 4;
/// Most words of a related phrase (WordNet's `computer file` stays, longer ones go).
const MAX_PHRASE_WORDS: usize = 2;
/// Most words of one broader sense taken (its first ones are its usual names).
const MAX_BROADER_WORDS: usize = 3;
/// Most related words kept for one stem, the nearest first.
const MAX_RELATED: usize = 32;

/// One synset of a data file: its words and its pointers.
struct Synset {
    words: Vec<String>,
    /// `(symbol, target offset, target part of speech, source word, target word)`; word
    /// numbers are 1-based, 0 for a pointer between whole synsets.
    pointers: Vec<(String, u64, char, usize, usize)>,
}

/// A WordNet word as text: `call_back` → `call back`, an adjective's marker `(a)` off.
fn word_text(raw: &str) -> String {
    let raw = raw.split('(').next().unwrap_or(raw);
    raw.replace('_', " ").to_lowercase()
}

/// One part of speech's synsets, by offset.
fn read_data(path: &std::path::Path) -> anyhow::Result<HashMap<u64, Synset>> {
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    let mut out = HashMap::new();
    for line in text.lines().filter(|l| !l.starts_with(' ')) {
        let head = line.split(" | ").next().unwrap_or(line);
        let f: Vec<&str> = head.split_whitespace().collect();
        let parse = || -> Option<(u64, Synset)> {
            let offset: u64 = f.first()?.parse().ok()?;
            let count = usize::from_str_radix(f.get(3)?, 16).ok()?;
            let words = (0..count)
                .map(|i| f.get(4 + 2 * i).map(|w| word_text(w)))
                .collect::<Option<Vec<_>>>()?;
            let at = 4 + 2 * count;
            let pointers_count: usize = f.get(at)?.parse().ok()?;
            let pointers = (0..pointers_count)
                .map(|i| {
                    let p = at + 1 + 4 * i;
                    let st = f.get(p + 3)?;
                    Some((
                        (*f.get(p)?).to_owned(),
                        f.get(p + 1)?.parse().ok()?,
                        f.get(p + 2)?.chars().next()?,
                        usize::from_str_radix(st.get(..2)?, 16).ok()?,
                        usize::from_str_radix(st.get(2..)?, 16).ok()?,
                    ))
                })
                .collect::<Option<Vec<_>>>()?;
            Some((offset, Synset { words, pointers }))
        };
        let (offset, synset) =
            parse().with_context(|| format!("{}: cannot read {line:.80}", path.display()))?;
        out.insert(offset, synset);
    }
    Ok(out)
}

/// The related words of one lemma: `(kind, rank, words)`.
fn related(
    lemma: &str,
    senses: &[u64],
    pos: char,
    data: &HashMap<char, HashMap<u64, Synset>>,
) -> Vec<(char, usize, String)> {
    let mut out = Vec::new();
    for (rank, offset) in (1..).zip(senses.iter().take(MAX_SENSES)) {
        let Some(synset) = data.get(&pos).and_then(|d| d.get(offset)) else {
            continue;
        };
        let me = synset.words.iter().position(|w| w == lemma).map(|i| i + 1);
        for w in &synset.words {
            out.push(('s', rank, w.clone()));
        }
        for (symbol, target, target_pos, source, target_word) in &synset.pointers {
            let pos = if *target_pos == 's' { 'a' } else { *target_pos };
            let Some(other) = data.get(&pos).and_then(|d| d.get(target)) else {
                continue;
            };
            match symbol.as_str() {
                // Derived forms and an adjective's noun: between two words, this one's.
                "+" | "\\" if Some(*source) == me => {
                    if let Some(w) = target_word.checked_sub(1).and_then(|i| other.words.get(i)) {
                        out.push(('d', rank, w.clone()));
                    }
                }
                // What an adjective measures (high: height) and the reverse.
                "=" if *source == 0 => {
                    for w in other.words.iter().take(MAX_BROADER_WORDS) {
                        out.push(('d', rank, w.clone()));
                    }
                }
                // The broader sense, and an adjective's near neighbours.
                "@" | "@i" | "&" if *source == 0 => {
                    let kind = if symbol == "&" { 's' } else { 'h' };
                    for w in other.words.iter().take(MAX_BROADER_WORDS) {
                        out.push((kind, rank, w.clone()));
                    }
                }
                _ => {}
            }
        }
    }
    out
}

fn main() -> anyhow::Result<()> {
    let flags = Flags::parse();
    let dir = PathBuf::from(flags.get("wordnet").unwrap_or("/usr/share/wordnet"));
    let out_path = flags
        .get("out")
        .map(PathBuf::from)
        .unwrap_or_else(|| catalog::repo_root().join("crates/gatehouse/src/catalog/lexicon.tsv"));
    let parts = [('n', "noun"), ('v', "verb"), ('a', "adj"), ('r', "adv")];
    let mut data = HashMap::new();
    for (pos, name) in parts {
        data.insert(pos, read_data(&dir.join(format!("data.{name}")))?);
    }
    // Every single-word lemma with its related words, before stemming.
    let mut pairs: Vec<(String, char, usize, String)> = Vec::new();
    for (pos, name) in parts {
        let path = dir.join(format!("index.{name}"));
        let text = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
        for line in text.lines().filter(|l| !l.starts_with(' ')) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let Some(lemma) = f
                .first()
                .filter(|l| l.chars().all(|c| c.is_ascii_lowercase()))
            else {
                continue;
            };
            let (Some(count), Some(pointers)) = (
                f.get(2).and_then(|c| c.parse::<usize>().ok()),
                f.get(3).and_then(|c| c.parse::<usize>().ok()),
            ) else {
                continue;
            };
            let first = 4 + pointers + 2;
            let senses: Vec<u64> = f
                .iter()
                .skip(first)
                .take(count)
                .filter_map(|o| o.parse().ok())
                .collect();
            for (kind, rank, w) in related(lemma, &senses, pos, &data) {
                if w != *lemma && w.split(' ').count() <= MAX_PHRASE_WORDS {
                    pairs.push(((*lemma).to_owned(), kind, rank, w));
                }
            }
        }
    }
    // Stem every word once, with the search's own tokenizer.
    let mut words: Vec<String> = pairs
        .iter()
        .flat_map(|(l, _, _, w)| [l.clone(), w.clone()])
        .collect();
    words.sort();
    words.dedup();
    let stemmed = gatehouse::catalog::search::stem_phrases(&words).map_err(anyhow::Error::msg)?;
    let stem: HashMap<&str, String> = words
        .iter()
        .zip(&stemmed)
        .map(|(w, s)| (w.as_str(), s.join(" ")))
        .collect();
    // Per stem, each related stem once, at its nearest: lowest rank, then s, d, h.
    let mut table: BTreeMap<String, HashMap<String, (usize, char)>> = BTreeMap::new();
    for (lemma, kind, rank, w) in &pairs {
        let (Some(key), Some(other)) = (stem.get(lemma.as_str()), stem.get(w.as_str())) else {
            continue;
        };
        if key.is_empty() || key.contains(' ') || other.is_empty() || other == key {
            continue;
        }
        let entry = table.entry(key.clone()).or_default();
        let near = entry.entry(other.clone()).or_insert((*rank, *kind));
        if (*rank, *kind) < *near {
            *near = (*rank, *kind);
        }
    }
    let mut text = String::from(
        "# Related words for tool search, made by gh-lexicon from WordNet 3.0 (Debian's wordnet-base).\n\
         # WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved. Its licence: WORDNET-LICENSE beside this file.\n\
         # A line: stem, then KIND RANK related stems (s same sense, d derived, h broader; RANK the sense's order), tab-separated.\n",
    );
    let mut items = 0;
    for (key, related) in &table {
        let mut related: Vec<(&String, &(usize, char))> = related.iter().collect();
        related.sort_by(|a, b| a.1.cmp(b.1).then(a.0.cmp(b.0)));
        related.truncate(MAX_RELATED);
        text.push_str(key);
        for (other, (rank, kind)) in related {
            let _ = write!(text, "\t{kind} {rank} {other}");
            items += 1;
        }
        text.push('\n');
    }
    std::fs::write(&out_path, &text).with_context(|| out_path.display().to_string())?;
    println!(
        "{{\"stems\": {}, \"related\": {items}, \"bytes\": {}, \"out\": {:?}}}",
        table.len(),
        text.len(),
        out_path.display().to_string()
    );
    Ok(())
}
