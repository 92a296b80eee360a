//! Related words for tool search, from WordNet: a request's word also finds the tools that
//! use another word for the same thing (to remember is to recall; a deployment is what one
//! deploys), so the ranker does not depend on a list of words chosen while looking at
//! requests. The table (`lexicon.tsv`, made by `gh-lexicon` from Debian's `wordnet-base`)
//! is keyed and written in the search's own stems; how much each relation counts is here.
//!
//! The table is in the binary (no file is read at run time) and is only sliced, never
//! copied: the first search makes one sorted index of where its lines start, four bytes a
//! line (about 240 KB).

use std::sync::LazyLock;

// The weights and the decay were chosen on the quality set's development part alone
// (`bench/catalog/README.md`): they move its top-5 recall by about one request.

/// How much a word of the same sense counts against the request's own word.
pub const SAME_SENSE_WEIGHT: f64 = 0.4;
/// How much a word derived from the request's (or it from the word) counts.
pub const DERIVED_WEIGHT: f64 = 0.6;
/// How much a word of the broader sense counts.
pub const BROADER_WEIGHT: f64 = 0.2;
/// How much each later sense's words count against the sense before it: WordNet lists a
/// word's senses most frequent first, and a request means the usual one more often.
pub const SENSE_DECAY: f64 = 0.6;
/// Most senses of a word whose related words are searched for.
pub const MAX_SENSES: u32 = 4;
/// Most related words searched for one word of a request, the nearest first.
pub const MAX_RELATED_PER_WORD: usize = 32;

/// The table's text, in the binary.
const TABLE: &str = include_str!("lexicon.tsv");

/// Where each line of the table starts, in the order of its stems: four bytes a line, so
/// the table itself is never copied.
static LINES: LazyLock<Vec<u32>> = LazyLock::new(|| {
    let mut starts = Vec::new();
    let mut at = 0usize;
    for line in TABLE.split_inclusive('\n') {
        if !line.starts_with('#') && line.contains('\t') {
            starts.push(u32::try_from(at).expect("the table is under 4 GiB"));
        }
        at += line.len();
    }
    // The generator sorts it; sorting again costs nothing when it is, and a hand edit that
    // broke the order would otherwise make lookups miss silently.
    starts.sort_by_key(|start| line_at(*start).0);
    starts
});

/// The line starting at `start`: its stem and the rest.
fn line_at(start: u32) -> (&'static str, &'static str) {
    let line = TABLE[start as usize..].lines().next().unwrap_or("");
    line.split_once('\t').unwrap_or((line, ""))
}

/// How a related word is related.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    /// A word of the same sense.
    SameSense,
    /// A word derived from it, or it from the word.
    Derived,
    /// A word of the broader sense.
    Broader,
}

impl Relation {
    fn of(kind: &str) -> Option<Relation> {
        match kind {
            "s" => Some(Relation::SameSense),
            "d" => Some(Relation::Derived),
            "h" => Some(Relation::Broader),
            _ => None,
        }
    }

    /// How much a word so related counts, before its sense's decay.
    pub fn weight(self) -> f64 {
        match self {
            Relation::SameSense => SAME_SENSE_WEIGHT,
            Relation::Derived => DERIVED_WEIGHT,
            Relation::Broader => BROADER_WEIGHT,
        }
    }
}

/// A word related to a stem: its stems (a phrase keeps its spaces) and how much it counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Related {
    /// The related word's stems, space-separated.
    pub stems: &'static str,
    /// How much a match of it counts against the request's own word.
    pub weight: f64,
}

/// The words related to `stem` (a stem as the search's tokenizer makes it), nearest first,
/// at most [`MAX_RELATED_PER_WORD`].
pub fn related(stem: &str) -> Vec<Related> {
    let lines = &*LINES;
    let Ok(i) = lines.binary_search_by(|start| line_at(*start).0.cmp(stem)) else {
        return Vec::new();
    };
    let mut out: Vec<Related> = line_at(lines[i])
        .1
        .split('\t')
        .filter_map(|item| {
            let mut parts = item.splitn(3, ' ');
            let relation = Relation::of(parts.next()?)?;
            let rank: u32 = parts.next()?.parse().ok()?;
            let stems = parts.next()?;
            (rank >= 1 && rank <= MAX_SENSES).then(|| Related {
                stems,
                weight: relation.weight() * SENSE_DECAY.powi(rank as i32 - 1),
            })
        })
        .collect();
    out.sort_by(|a, b| b.weight.total_cmp(&a.weight));
    out.truncate(MAX_RELATED_PER_WORD);
    out
}

/// How many stems the table has words for.
pub fn stems() -> usize {
    LINES.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_read_and_keyed_by_the_searchs_stems() {
        assert!(stems() > 10_000, "the table is in the binary");
        // "remember" stems to "rememb": its first sense's words include memory and recall.
        let remember: Vec<&str> = related("rememb").iter().map(|r| r.stems).collect();
        assert!(remember.contains(&"recal"), "{remember:?}");
        assert!(
            related("rememb")
                .windows(2)
                .all(|w| w[0].weight >= w[1].weight)
        );
        assert!(related("no-such-stem").is_empty());
        assert!(related("").is_empty());
    }

    #[test]
    fn a_later_sense_and_a_broader_word_count_less() {
        let near = Relation::SameSense.weight().max(Relation::Derived.weight());
        assert!(Relation::Broader.weight() < Relation::SameSense.weight());
        assert!(SENSE_DECAY < 1.0 && SENSE_DECAY > 0.0);
        let file = related("file");
        assert!(!file.is_empty());
        for r in &file {
            assert!(r.weight <= near && r.weight > 0.0, "{r:?}");
        }
        // "file" has senses beyond the first: their words count less than the first's.
        assert!(file.last().unwrap().weight < file[0].weight);
    }
}
