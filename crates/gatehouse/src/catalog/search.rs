//! Tool search: where a tool is found for `search_tools`. Each tool's fields (its own
//! name, its server, its title, its description, its parameters' names, descriptions and
//! values) are split into words and stemmed by SQLite FTS5's tokenizer, then scored by
//! BM25F ([`score`]: a word counts once per field, a long field is worth no more than a
//! focused one), with the words the shape of the request's words implies
//! ([`super::words`]: a URL is a web page), fused with how close the tool's meaning is to
//! the request's ([`meaning`]: static embeddings, for what people name in other words).
//! Then [`pick`] leaves out the tools the caller does not show (those a rule hides), puts
//! a tool named exactly first, never ranks a look-alike above the tool it copies, and
//! bounds one server's share of the results; and [`answer`] says when the best covers too
//! little of the request and means something else, so that no tool fits it well.
//!
//! SQLite is already built for the reference servers (`rusqlite`, bundled), so the porter
//! stemmer costs no new code. The index lives in memory, is built when the first search
//! asks for it, and is bounded: each field is cut to [`MAX_FIELD_CHARS`] and each request
//! to [`super::words::MAX_QUERY_WORDS`] words, so a server's megabyte of description costs
//! no more than its first few kilobytes.

use std::{collections::HashMap, sync::Mutex};

use rusqlite::{Connection, params};
use serde_json::Value;

use super::{CatalogTool, words};

pub mod answer;
pub mod meaning;
mod pick;
pub mod score;
#[cfg(test)]
mod stuffing;
#[cfg(test)]
mod tests;

pub use answer::{Answer, Closest};
use meaning::Meaning;
use pick::Fits;
pub use pick::{MAX_SERVER_SHARE_PERCENT, server_share};
use score::{FIELDS, Place, Postings};

/// Most characters of one field of one tool put in the index.
pub const MAX_FIELD_CHARS: usize = 4_000;
/// Most parameters of one tool whose names and descriptions are indexed.
pub const MAX_INDEXED_PARAMETERS: usize = 64;
/// Shortest word of a request (in characters, as stemmed) that also finds the longer words
/// it begins: shorter ones begin too many.
pub const MIN_PREFIX_CHARS: usize = 4;
/// Most longer words one word of a request finds, the shortest first.
pub const MAX_PREFIX_WORDS: usize = 8;
/// How much a longer word a request's word begins counts against the word itself.
pub const PREFIX_WEIGHT: f64 = 0.5;
/// Most tools one search returns.
pub const MAX_SEARCH_LIMIT: usize = 20;
/// How many tools a search returns when not told.
pub const DEFAULT_SEARCH_LIMIT: usize = 5;

/// The weight of each field, in the index's order: what a tool is called counts most,
/// then which server it is on, then its title and description; its parameters' names and
/// descriptions, which say how to call it more than what it does, count little. A
/// description weighed like the name found a right tool first more often on the quality
/// set's development part (issue 32), but let a stuffed description outrank the tools it
/// imitates (`search/stuffing.rs`), so the name stays first.
pub const FIELD_WEIGHTS: [f64; FIELDS] = [6.0, 4.0, 2.0, 1.0, 0.3];

/// What a search does beyond a BM25F of the request's words over the tools' fields: each
/// can be turned off, to measure what it adds (`gh-toolsearch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Method {
    /// Fields weighted by [`FIELD_WEIGHTS`] (else all alike).
    pub weighted: bool,
    /// Words implied by the shape of the request's words (a URL, a path, a file name).
    pub shapes: bool,
    /// A request's word also finds the longer words it begins (`repo`: `repository`).
    pub prefixes: bool,
    /// Tools whose meaning is close to the request's ([`meaning`]) fit it too.
    pub meaning: bool,
}

impl Default for Method {
    fn default() -> Self {
        Method {
            weighted: true,
            shapes: true,
            prefixes: true,
            meaning: true,
        }
    }
}

/// A tool a search found.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// Its catalog name.
    pub name: String,
    /// How well it matched (higher is better; only the order means anything).
    pub score: f64,
}

/// What the search knows of one tool besides its words.
#[derive(Debug, Clone)]
struct Entry {
    /// Its catalog name (`server__tool`).
    name: String,
    /// Its name as its server gave it, lowercase.
    bare: String,
    /// Its server's name, its letters and digits only, lowercase (`google-maps` →
    /// `googlemaps`); empty for the host's.
    server: String,
    /// Its server's name, as records show it.
    label: String,
    /// The words of its title and description.
    text: Vec<String>,
    /// Does its own title or description name its own server ("… in a GitHub repository"
    /// on `github`)?
    self_described: bool,
}

/// The catalog's tools in a full-text index.
pub struct ToolIndex {
    /// The tokenizer, for a request's words: an FTS5 table of its own.
    db: Mutex<Connection>,
    /// Every stemmed word of every tool.
    postings: Postings,
    /// The tools, by row (the catalog's order).
    entries: Vec<Entry>,
    /// Rows of each tool by its catalog name and by its own name when that is of several
    /// words, lowercase.
    by_name: HashMap<String, Vec<u32>>,
    /// Each tool's meaning, by row, centred on the catalog's (none when the table cannot
    /// be read).
    meanings: Option<meaning::Centred>,
}

impl std::fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolIndex")
            .field("tools", &self.entries.len())
            .finish()
    }
}

/// The first `MAX_FIELD_CHARS` characters of a text.
fn field(text: &str) -> String {
    crate::text::head(text, MAX_FIELD_CHARS).to_owned()
}

/// A name as words: `get_pull_request` → `get pull request`.
fn name_words(name: &str) -> String {
    words::split(name).join(" ")
}

/// The names and descriptions of a tool's top-level parameters.
fn parameter_text(tool: &CatalogTool) -> String {
    let Some(Value::Object(props)) = tool.tool.input_schema.get("properties") else {
        return String::new();
    };
    let mut out = String::new();
    for (name, schema) in props.iter().take(MAX_INDEXED_PARAMETERS) {
        out.push_str(&name_words(name));
        out.push_str(". ");
        if let Some(d) = schema.get("description").and_then(Value::as_str) {
            out.push_str(crate::text::head(d, 200));
            out.push(' ');
        }
        // The values a parameter takes name what the tool does: `state: open, closed`.
        for value in schema
            .get("enum")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .take(16)
        {
            if let Some(v) = value.as_str() {
                out.push_str(crate::text::head(v, 40));
                out.push(' ');
            }
        }
        if out.len() > MAX_FIELD_CHARS {
            break;
        }
    }
    field(&out)
}

/// A tool's title, from its `title` or its annotations' `title`.
fn title(tool: &CatalogTool) -> String {
    let t = &tool.tool;
    let title = t
        .title
        .as_deref()
        .or(t.annotations.as_ref().and_then(|a| a.title.as_deref()))
        .unwrap_or("");
    field(title)
}

/// What a tool's meaning is made of: its server's name, its title and its description, as
/// the table's model reads a sentence. Not its own name: BM25F weighs that with guards (a
/// name of many words is no name), and a name stuffed with a request's words would
/// otherwise mean just what the request means.
fn meaning_text(tool: &CatalogTool, title: &str, description: &str) -> String {
    format!(
        "{}: {title}. {description}",
        name_words(tool.origin.label())
    )
}

/// The FTS5 tokenizer of the index and of the requests: the same stems on both sides.
const TOKENIZER: &str = "porter unicode61 remove_diacritics 2";

impl ToolIndex {
    /// Index these tools (a catalog's, in its order).
    pub fn build(tools: &[CatalogTool]) -> Result<ToolIndex, String> {
        let db = Connection::open_in_memory().map_err(|e| e.to_string())?;
        db.execute_batch(&format!(
            "CREATE VIRTUAL TABLE tools USING fts5(name, server, title, description, params,
                 tokenize = '{TOKENIZER}');
             CREATE VIRTUAL TABLE tool_words USING fts5vocab(tools, instance);
             CREATE VIRTUAL TABLE request USING fts5(words, tokenize = '{TOKENIZER}');
             CREATE VIRTUAL TABLE request_words USING fts5vocab(request, instance);"
        ))
        .map_err(|e| format!("cannot make the tool index: {e}"))?;
        let mut entries = Vec::with_capacity(tools.len());
        let mut by_name: HashMap<String, Vec<u32>> = HashMap::new();
        let table = meaning::table().ok();
        let mut meanings = Vec::with_capacity(if table.is_some() { tools.len() } else { 0 });
        {
            let mut insert = db
                .prepare("INSERT INTO tools(rowid, name, server, title, description, params) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
                .map_err(|e| e.to_string())?;
            for (row, t) in (0u32..).zip(tools) {
                let description = field(&crate::text::uncloaked(t.description()));
                let title = title(t);
                insert
                    .execute(params![
                        i64::from(row) + 1,
                        name_words(&t.tool.name),
                        name_words(t.origin.label()),
                        title,
                        description,
                        parameter_text(t),
                    ])
                    .map_err(|e| e.to_string())?;
                if let Some(table) = table {
                    meanings.push(table.meaning(&meaning_text(t, &title, &description)));
                }
                entries.push(entry(t, &title, &description));
                // A tool is named by its catalog name, or by its own name when that is an
                // identifier of several words (`create_issue`): a one-word own name
                // (`search`, `query`) is a word any request may use for something else.
                let own = t.tool.name.to_lowercase();
                let keys = std::iter::once(t.name.to_lowercase())
                    .chain((words::split(&own).len() > 1).then_some(own));
                for key in keys {
                    let rows = by_name.entry(key).or_default();
                    if !rows.contains(&row) {
                        rows.push(row);
                    }
                }
            }
        }
        let postings = postings(&db, "tool_words", entries.len())
            .map_err(|e| format!("cannot read the tool index: {e}"))?;
        db.execute_batch("DROP TABLE tool_words; DROP TABLE tools;")
            .map_err(|e| e.to_string())?;
        Ok(ToolIndex {
            db: Mutex::new(db),
            postings,
            entries,
            by_name,
            meanings: table.map(|_| meaning::centred(meanings)),
        })
    }

    /// How many tools the index holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The tools that best fit `request`, best first, at most `limit` (and at most
    /// [`MAX_SEARCH_LIMIT`]). A tool the request names exactly comes first.
    pub fn search(&self, request: &str, limit: usize) -> Vec<Found> {
        self.search_by(request, limit, Method::default())
    }

    /// [`ToolIndex::search`] among the tools `shown` lets through (by catalog name): any
    /// other is left out before ranking, so it is never returned, takes no place and no
    /// server's share, and is not the best fit the others are measured against.
    pub fn search_where(
        &self,
        request: &str,
        limit: usize,
        shown: &dyn Fn(&str) -> bool,
    ) -> Vec<Found> {
        self.ranked(request, limit, Method::default(), shown)
    }

    /// [`ToolIndex::search`], doing only what `method` says.
    pub fn search_by(&self, request: &str, limit: usize, method: Method) -> Vec<Found> {
        self.ranked(request, limit, method, &|_| true)
    }

    /// What a search for `request` among the tools `shown` lets through answers: the tools
    /// that fit it, or, when the best covers too little of it ([`answer::MIN_COVERAGE`])
    /// and means something else ([`answer::MIN_CLOSENESS`]), that nothing fits well and
    /// which servers come closest. What `search_tools` tells the model.
    pub fn answer(&self, request: &str, limit: usize, shown: &dyn Fn(&str) -> bool) -> Answer {
        let query = self.query(request, Method::default());
        let Ranked {
            found,
            rows,
            fits,
            asked,
        } = self.ranked_query(request, &query, limit, Method::default(), shown);
        let Some(best) = rows.first() else {
            return Answer::NothingGood {
                coverage: 0.0,
                closest: Vec::new(),
            };
        };
        let coverage = answer::coverage(&self.postings, &query, *best);
        if answer::fits_well(coverage, self.closeness_of(asked.as_deref(), *best)) {
            return Answer::Found(found);
        }
        let shown_row = |row: u32| {
            self.entries
                .get(row as usize)
                .is_some_and(|e| shown(&e.name))
        };
        Answer::NothingGood {
            coverage,
            closest: answer::closest(&self.entries, &fits, &shown_row),
        }
    }

    /// How much of `request` the tool it finds first covers (0 to 1; none found: 0).
    pub fn coverage(&self, request: &str) -> f64 {
        self.best_fit(request).0
    }

    /// How much of `request` the tool it finds first covers, and how close that tool's
    /// meaning is to the request's (both 0 when none is found): what
    /// [`ToolIndex::answer`] holds against [`answer::MIN_COVERAGE`] and
    /// [`answer::MIN_CLOSENESS`].
    pub fn best_fit(&self, request: &str) -> (f64, f64) {
        let query = self.query(request, Method::default());
        let ranked = self.ranked_query(request, &query, 1, Method::default(), &|_| true);
        ranked.rows.first().map_or((0.0, 0.0), |best| {
            (
                answer::coverage(&self.postings, &query, *best),
                self.closeness_of(ranked.asked.as_deref(), *best),
            )
        })
    }

    /// The meaning of `request`, centred on the catalog's: `None` when the catalog has no
    /// meanings or the table cannot be read.
    fn asked(&self, request: &str) -> Option<Meaning> {
        let (Some(meanings), Ok(table)) = (&self.meanings, meaning::table()) else {
            return None;
        };
        Some(meaning::centred_by(
            table.meaning(request),
            &meanings.centre,
        ))
    }

    /// How close the meaning of the tool of `row` is to a request's (`asked`, as
    /// [`ToolIndex::asked`] reads it; 0 without one).
    fn closeness_of(&self, asked: Option<&[f32]>, row: u32) -> f64 {
        let (Some(meanings), Some(asked)) = (&self.meanings, asked) else {
            return 0.0;
        };
        meanings
            .rows
            .get(row as usize)
            .map_or(0.0, |m| f64::from(meaning::closeness(asked, m)))
    }

    /// The search itself, among the tools `shown` lets through.
    fn ranked(
        &self,
        request: &str,
        limit: usize,
        method: Method,
        shown: &dyn Fn(&str) -> bool,
    ) -> Vec<Found> {
        let query = self.query(request, method);
        self.ranked_query(request, &query, limit, method, shown)
            .found
    }

    /// The search for a request read as `query`.
    fn ranked_query(
        &self,
        request: &str,
        query: &Query,
        limit: usize,
        method: Method,
        shown: &dyn Fn(&str) -> bool,
    ) -> Ranked {
        let limit = limit.clamp(1, MAX_SEARCH_LIMIT);
        let mut fits = self.fits(query, method);
        let shown = |row: u32| {
            self.entries
                .get(row as usize)
                .is_some_and(|e| shown(&e.name))
        };
        let asked = method.meaning.then(|| self.asked(request)).flatten();
        if let (Some(asked), Some(meanings)) = (&asked, &self.meanings) {
            meaning::fuse(asked, meanings, &mut fits, &shown);
        }
        let whole = fits.whole.clone();
        let picked = pick::pick(self, request, fits, limit, &shown);
        let rows = picked.iter().map(|(row, _)| *row).collect();
        let found = picked
            .into_iter()
            .filter_map(|(row, score)| {
                Some(Found {
                    name: self.entries.get(row as usize)?.name.clone(),
                    score: (score * 1000.0).round() / 1000.0,
                })
            })
            .collect();
        Ranked {
            found,
            rows,
            fits: whole,
            asked,
        }
    }

    /// A request's words as the index's stems.
    fn query(&self, request: &str, method: Method) -> Query {
        let words = words::query_words(request, method.shapes);
        let phrases: Vec<String> = words.iter().map(|w| words::split(w).join(" ")).collect();
        let own = {
            let db = self.db.lock().unwrap_or_else(|e| e.into_inner());
            stems(&db, phrases.iter()).unwrap_or_default()
        };
        let own: Vec<Vec<String>> = own.into_iter().filter(|p| !p.is_empty()).collect();
        let related = own
            .iter()
            .map(|stems| match stems.as_slice() {
                [one] if method.prefixes && one.chars().count() >= MIN_PREFIX_CHARS => self
                    .postings
                    .longer_words(one, MAX_PREFIX_WORDS)
                    .into_iter()
                    .map(|w| vec![w.to_owned()])
                    .collect(),
                _ => Vec::new(),
            })
            .collect();
        Query { own, related }
    }

    /// How well each tool that matches fits the request's words: in all its fields, and
    /// apart from the words that name its server.
    fn fits(&self, query: &Query, method: Method) -> Fits {
        let weights = if method.weighted {
            FIELD_WEIGHTS
        } else {
            [1.0; FIELDS]
        };
        let mut phrases: Vec<(&[String], f64)> =
            query.own.iter().map(|p| (p.as_slice(), 1.0)).collect();
        for stems in query.related.iter().flatten() {
            if !phrases.iter().any(|(p, _)| *p == stems.as_slice()) {
                phrases.push((stems, PREFIX_WEIGHT));
            }
        }
        let mut fits = Fits::default();
        for (phrase, weight) in phrases {
            self.postings.score(
                phrase,
                weights,
                weight,
                &mut fits.whole,
                &mut fits.apart_from_server,
            );
        }
        fits
    }
}

/// What one search found: the tools, their rows, how well every matching tool fits (by
/// row), and the request's meaning as the search read it (centred; `None` without one).
struct Ranked {
    found: Vec<Found>,
    rows: Vec<u32>,
    fits: HashMap<u32, f64>,
    asked: Option<Meaning>,
}

/// A request as the search reads it.
#[derive(Debug, Default)]
struct Query {
    /// Its own words, each as the index's stems.
    own: Vec<Vec<String>>,
    /// For each of its own words, the longer words of the index it begins.
    related: Vec<Vec<Vec<String>>>,
}

/// What the search keeps of a tool besides its words.
fn entry(t: &CatalogTool, title: &str, description: &str) -> Entry {
    let server = t
        .origin
        .server()
        .map(|s| words::split(s).concat())
        .unwrap_or_default();
    let text: Vec<String> = words::split(&format!("{title} {description}"));
    Entry {
        name: t.name.clone(),
        bare: t.tool.name.to_lowercase(),
        self_described: pick::names(&text, &server),
        server,
        label: t.origin.label().to_owned(),
        text,
    }
}

/// Every stemmed word of the index's tools, with where it is.
fn postings(db: &Connection, vocabulary: &str, tools: usize) -> rusqlite::Result<Postings> {
    let columns = ["name", "server", "title", "description", "params"];
    let mut statement = db.prepare(&format!("SELECT term, doc, col, offset FROM {vocabulary}"))?;
    let rows = statement.query_map([], |row| {
        let column: String = row.get(2)?;
        let doc: i64 = row.get(1)?;
        let offset: i64 = row.get(3)?;
        Ok((row.get::<_, String>(0)?, column, doc, offset))
    })?;
    let mut words = Vec::new();
    for row in rows {
        let (word, column, doc, offset) = row?;
        let (Some(field), Ok(tool), Ok(position)) = (
            columns.iter().position(|c| *c == column),
            u32::try_from(doc - 1),
            u32::try_from(offset),
        ) else {
            continue;
        };
        let field = u8::try_from(field).unwrap_or(u8::MAX);
        words.push((
            word,
            Place {
                tool,
                field,
                position,
            },
        ));
    }
    Ok(Postings::new(tools, words))
}

/// Each phrase of a request as the index's stemmed words, in the phrases' order (a phrase
/// the tokenizer keeps no word of is empty).
fn stems<'a>(
    db: &Connection,
    phrases: impl Iterator<Item = &'a String>,
) -> rusqlite::Result<Vec<Vec<String>>> {
    let transaction = db.unchecked_transaction()?;
    let mut count = 0;
    {
        let mut insert =
            transaction.prepare_cached("INSERT INTO request(rowid, words) VALUES (?1, ?2)")?;
        for (row, phrase) in (1i64..).zip(phrases) {
            insert.execute(params![row, phrase])?;
            count += 1;
        }
    }
    let mut out = vec![Vec::new(); count];
    {
        let mut read = transaction
            .prepare_cached("SELECT doc, term FROM request_words ORDER BY doc, offset")?;
        let rows = read.query_map([], |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
        })?;
        for row in rows {
            let (doc, term) = row?;
            if let Some(phrase) = usize::try_from(doc - 1).ok().and_then(|i| out.get_mut(i)) {
                phrase.push(term);
            }
        }
    }
    // The request's words were only there to be read: none stays for the next request.
    transaction.rollback()?;
    Ok(out)
}
