//! How well a tool's fields fit a request's words: BM25F over the words the index's
//! tokenizer made (stemmed), with each word counted once per field and each field's worth
//! divided by how much longer than a focused field it is, so that neither repeating a word
//! nor listing many unrelated ones buys rank.
//!
//! FTS5's own `bm25()` cannot do this: it counts every repetition, weights a field by
//! multiplying its count before saturating, and normalises by the length of the whole row
//! against the catalog's average, so a tool whose fields list fifty common words matches
//! every request about as well as the tool made for it. Here a word's match is saturated
//! once across all fields (BM25F), and each field is normalised against a fixed length
//! ([`FOCUSED_WORDS`]), not the catalog's average, which one hostile server could move.

use std::collections::{HashMap, HashSet};

/// The fields of a tool, in the index's order.
pub const FIELDS: usize = 5;
/// The server's field, in the index's order.
pub const SERVER_FIELD: usize = 1;
/// How many distinct words a focused field of each kind holds (name, server, title,
/// description, parameters): a field up to this long counts in full; a longer one has
/// each word's worth divided by how many times longer it is, to the power of
/// [`LENGTH_PENALTY`]. A focused name is two or three words (`read_file`,
/// `get_pull_request`): one of two counts in full, one of three (3/2.5)³, about 58 %.
pub const FOCUSED_WORDS: [f64; FIELDS] = [2.5, 2.0, 6.0, 16.0, 24.0];
/// How steeply a field longer than focused loses worth: a name or title of many words is
/// no name (a cube: a 17-word name counts a 314th), a long description or parameter list
/// says less about each of its words (a square: 49 words count a ninth each); a server's
/// name is the person's, not the server's, and only its length counts.
pub const LENGTH_PENALTY: [f64; FIELDS] = [3.0, 1.0, 3.0, 2.0, 2.0];
/// BM25's saturation: how fast more weighted matches of one word stop adding to a tool's
/// score. Higher lets a match in a heavier field count for more against a lighter one.
pub const SATURATION: f64 = 1.5;

/// One word of one field of one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Place {
    /// The tool's row (0-based, the catalog's order).
    pub tool: u32,
    /// Which field.
    pub field: u8,
    /// The word's position in the field.
    pub position: u32,
}

/// Every stemmed word of every tool, and each field's length in distinct words.
#[derive(Debug, Default)]
pub struct Postings {
    places: HashMap<String, Vec<Place>>,
    /// Distinct words of each field of each tool.
    lengths: Vec<[u32; FIELDS]>,
    /// Every word, sorted: the words a request's word begins.
    sorted: Vec<String>,
}

impl Postings {
    /// Postings of `tools` tools from every `(word, place)` of the index.
    pub fn new(tools: usize, words: impl IntoIterator<Item = (String, Place)>) -> Postings {
        let mut places: HashMap<String, Vec<Place>> = HashMap::new();
        let mut seen: HashSet<(u32, u8, String)> = HashSet::new();
        let mut lengths = vec![[0u32; FIELDS]; tools];
        for (word, place) in words {
            let Some(length) = lengths.get_mut(place.tool as usize) else {
                continue;
            };
            if usize::from(place.field) >= FIELDS {
                continue;
            }
            if seen.insert((place.tool, place.field, word.clone())) {
                length[usize::from(place.field)] += 1;
            }
            places.entry(word).or_default().push(place);
        }
        let mut sorted: Vec<String> = places.keys().cloned().collect();
        sorted.sort_unstable();
        Postings {
            places,
            lengths,
            sorted,
        }
    }

    /// How many tools.
    pub fn tools(&self) -> usize {
        self.lengths.len()
    }

    /// The index's words that `start` begins and is not (`repo`: `repositori`), at most
    /// `most`, shortest first.
    pub fn longer_words(&self, start: &str, most: usize) -> Vec<&str> {
        let from = self.sorted.partition_point(|w| w.as_str() <= start);
        let mut out: Vec<&str> = self.sorted[from..]
            .iter()
            .take_while(|w| w.starts_with(start))
            .map(String::as_str)
            .collect();
        out.sort_by_key(|w| (w.len(), *w));
        out.truncate(most);
        out
    }

    /// How many tools hold `phrase` in some field, and whether tool `row` is one.
    pub fn holding(&self, phrase: &[String], row: u32) -> (usize, bool) {
        let matches = self.matches(phrase);
        (matches.len(), matches.contains_key(&row))
    }

    /// The inverse document frequency of a phrase held by `holding` of the tools: BM25's,
    /// and for a phrase no tool holds, what one held by half a tool would have.
    pub fn idf(&self, holding: usize) -> f64 {
        let n = self.tools() as f64;
        let df = (holding as f64).max(0.5);
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// The fields of each tool in which `phrase` (stemmed words, in order) occurs, each
    /// field once.
    fn matches(&self, phrase: &[String]) -> HashMap<u32, [bool; FIELDS]> {
        let mut out: HashMap<u32, [bool; FIELDS]> = HashMap::new();
        let Some((first, rest)) = phrase.split_first() else {
            return out;
        };
        let rest: Vec<HashSet<Place>> = rest
            .iter()
            .map(|w| {
                self.places
                    .get(w)
                    .map(|p| p.iter().copied().collect())
                    .unwrap_or_default()
            })
            .collect();
        for place in self.places.get(first).into_iter().flatten() {
            let follows = rest.iter().enumerate().all(|(i, next)| {
                next.contains(&Place {
                    position: place.position + 1 + i as u32,
                    ..*place
                })
            });
            if follows {
                out.entry(place.tool).or_default()[usize::from(place.field)] = true;
            }
        }
        out
    }

    /// What one phrase of the request adds to each matching tool's fit: its BM25F, times
    /// `weight`, to `whole`; and to `apart` the same, unless the phrase is (part of) the
    /// name of the tool's server: a tool's fit apart from its server's name.
    pub fn score(
        &self,
        phrase: &[String],
        weights: [f64; FIELDS],
        weight: f64,
        whole: &mut HashMap<u32, f64>,
        apart: &mut HashMap<u32, f64>,
    ) {
        let matches = self.matches(phrase);
        if matches.is_empty() {
            return;
        }
        let idf = self.idf(matches.len());
        for (tool, fields) in matches {
            let Some(lengths) = self.lengths.get(tool as usize) else {
                continue;
            };
            let tf: f64 = (0..FIELDS)
                .filter(|f| fields[*f])
                .map(|f| weights[f] / longer(lengths[f], f))
                .sum();
            let saturated = tf * (SATURATION + 1.0) / (tf + SATURATION);
            let fit = weight * idf * saturated;
            *whole.entry(tool).or_default() += fit;
            let of_server = fields[SERVER_FIELD];
            *apart.entry(tool).or_default() += if of_server { 0.0 } else { fit };
        }
    }
}

/// How many times a field's worth is divided for its length: 1 up to [`FOCUSED_WORDS`],
/// then its excess length to the power of [`LENGTH_PENALTY`].
fn longer(words: u32, field: usize) -> f64 {
    (f64::from(words) / FOCUSED_WORDS[field])
        .max(1.0)
        .powf(LENGTH_PENALTY[field])
}
