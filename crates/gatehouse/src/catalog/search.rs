//! Tool search: the catalog in an SQLite FTS5 index, ranked by bm25 with its fields
//! weighted (the tool's own name, its server, its title, its description, its parameters'
//! names and descriptions), a request's words widened by the words people use for the
//! same things ([`super::words`]), and a tool named exactly put first.
//!
//! SQLite is already built for the reference servers (`rusqlite`, bundled), so the index
//! costs no new code: the porter stemmer and bm25 come with FTS5. The index lives in
//! memory, is built when the first search asks for it, and is bounded: each field is cut
//! to [`MAX_FIELD_CHARS`] and each request to [`super::words::MAX_QUERY_WORDS`] words, so
//! a server's megabyte of description costs no more than its first few kilobytes.

use std::{collections::HashMap, sync::Mutex};

use rusqlite::{Connection, params};
use serde_json::Value;

use super::{CatalogTool, words};

/// Most characters of one field of one tool put in the index.
pub const MAX_FIELD_CHARS: usize = 4_000;
/// Most parameters of one tool whose names and descriptions are indexed.
pub const MAX_INDEXED_PARAMETERS: usize = 64;
/// Most tools one search returns.
pub const MAX_SEARCH_LIMIT: usize = 20;
/// How many tools a search returns when not told.
pub const DEFAULT_SEARCH_LIMIT: usize = 5;

/// The bm25 weight of each field, in the table's order: what a tool is called counts most,
/// then which server it is on, then its title and description, then its parameters.
pub const FIELD_WEIGHTS: [f64; 5] = [6.0, 4.0, 2.0, 1.0, 0.5];
/// How much a match through another word counts against the request's own word.
pub const SYNONYM_WEIGHT: f64 = 0.5;

/// What a search does beyond a bm25 of the request's words over the tools' fields: each
/// can be turned off, to measure what it adds (`gh-toolsearch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Method {
    /// Fields weighted by [`FIELD_WEIGHTS`] (else all alike).
    pub weighted: bool,
    /// The request's words widened by the words people use for the same things.
    pub synonyms: bool,
    /// Words implied by the shape of the request's words (a URL, a path, a file name).
    pub shapes: bool,
}

impl Default for Method {
    fn default() -> Self {
        Method {
            weighted: true,
            synonyms: true,
            shapes: true,
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

/// The catalog's tools in a full-text index.
pub struct ToolIndex {
    db: Mutex<Connection>,
    /// Catalog names, by row id − 1.
    names: Vec<String>,
    /// Row ids of each tool by its own name and by its catalog name, for exact mentions.
    by_name: HashMap<String, Vec<i64>>,
}

impl std::fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolIndex")
            .field("tools", &self.names.len())
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

impl ToolIndex {
    /// Index these tools (a catalog's, in its order).
    pub fn build(tools: &[CatalogTool]) -> Result<ToolIndex, String> {
        let db = Connection::open_in_memory().map_err(|e| e.to_string())?;
        db.execute_batch(
            "CREATE VIRTUAL TABLE tools USING fts5(name, server, title, description, params,
                 tokenize = 'porter unicode61 remove_diacritics 2');",
        )
        .map_err(|e| format!("cannot make the tool index: {e}"))?;
        let mut names = Vec::with_capacity(tools.len());
        let mut by_name: HashMap<String, Vec<i64>> = HashMap::new();
        {
            let mut insert = db
                .prepare("INSERT INTO tools(rowid, name, server, title, description, params) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
                .map_err(|e| e.to_string())?;
            for (i, t) in tools.iter().enumerate() {
                let rowid = i as i64 + 1;
                let description = field(t.tool.description.as_deref().unwrap_or(""));
                insert
                    .execute(params![
                        rowid,
                        name_words(&t.tool.name),
                        name_words(t.origin.label()),
                        title(t),
                        description,
                        parameter_text(t),
                    ])
                    .map_err(|e| e.to_string())?;
                names.push(t.name.clone());
                for key in [t.name.to_lowercase(), t.tool.name.to_lowercase()] {
                    let ids = by_name.entry(key).or_default();
                    if !ids.contains(&rowid) {
                        ids.push(rowid);
                    }
                }
            }
        }
        Ok(ToolIndex {
            db: Mutex::new(db),
            names,
            by_name,
        })
    }

    /// How many tools the index holds.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The tools that best fit `request`, best first, at most `limit` (and at most
    /// [`MAX_SEARCH_LIMIT`]). A tool the request names exactly comes first.
    pub fn search(&self, request: &str, limit: usize) -> Vec<Found> {
        self.search_by(request, limit, Method::default())
    }

    /// [`ToolIndex::search`], doing only what `method` says.
    pub fn search_by(&self, request: &str, limit: usize, method: Method) -> Vec<Found> {
        let limit = limit.clamp(1, MAX_SEARCH_LIMIT);
        let mut scores: HashMap<i64, f64> = HashMap::new();
        let query = words::query_words(request, method.shapes);
        let own: Vec<String> = query.iter().map(|w| quoted(w)).collect();
        let others: Vec<String> = query
            .iter()
            .flat_map(|w| words::synonyms(w).iter())
            .map(|w| quoted(w))
            .filter(|w| method.synonyms && !own.contains(w))
            .collect();
        let weights = if method.weighted {
            FIELD_WEIGHTS
        } else {
            [1.0; 5]
        };
        let db = self.db.lock().unwrap_or_else(|e| e.into_inner());
        for (terms, weight) in [(&own, 1.0), (&others, SYNONYM_WEIGHT)] {
            for (rowid, score) in ranked(&db, terms, weights).unwrap_or_default() {
                *scores.entry(rowid).or_default() += weight * score;
            }
        }
        drop(db);
        let top = scores.values().copied().fold(0.0, f64::max);
        for word in request.split_whitespace() {
            let word = word.trim_matches(|c: char| !(c.is_alphanumeric() || "_-.".contains(c)));
            for rowid in self.by_name.get(&word.to_lowercase()).into_iter().flatten() {
                *scores.entry(*rowid).or_default() += top + 1.0;
            }
        }
        let mut found: Vec<(i64, f64)> = scores.into_iter().collect();
        found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        found
            .into_iter()
            .take(limit)
            .filter_map(|(rowid, score)| {
                let name = self.names.get(usize::try_from(rowid - 1).ok()?)?;
                Some(Found {
                    name: name.clone(),
                    score: (score * 1000.0).round() / 1000.0,
                })
            })
            .collect()
    }
}

/// A word or phrase as an FTS5 string: its words only, so nothing in a request is read
/// as query syntax.
fn quoted(text: &str) -> String {
    format!("\"{}\"", words::split(text).join(" "))
}

/// Every tool matching any of `terms`, with its weighted bm25 score made positive.
fn ranked(
    db: &Connection,
    terms: &[String],
    weights: [f64; 5],
) -> rusqlite::Result<Vec<(i64, f64)>> {
    let terms: Vec<&String> = terms.iter().filter(|t| t.len() > 2).collect();
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let query = terms
        .iter()
        .map(|t| t.as_str())
        .collect::<Vec<_>>()
        .join(" OR ");
    let [a, b, c, d, e] = weights;
    let mut statement = db.prepare_cached(&format!(
        "SELECT rowid, -bm25(tools, {a}, {b}, {c}, {d}, {e}) FROM tools WHERE tools MATCH ?1"
    ))?;
    let rows = statement.query_map([query], |row| Ok((row.get(0)?, row.get(1)?)))?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use serde_json::json;

    fn tool(name: &str, description: &str, params: Value) -> rmcp::model::Tool {
        serde_json::from_value(json!({"name": name, "description": description,
            "inputSchema": {"type": "object", "properties": params}}))
        .unwrap()
    }

    /// Tools about other things, as a real catalog has many: bm25 weighs a word by how
    /// few tools have it.
    fn others() -> Vec<rmcp::model::Tool> {
        [
            "weather", "music", "invoice", "flight", "calendar", "photo", "payment", "song",
            "recipe", "alarm",
        ]
        .iter()
        .map(|w| {
            tool(
                &format!("get_{w}"),
                &format!("Get the {w} of the day."),
                json!({}),
            )
        })
        .collect()
    }

    fn index() -> (Catalog, ToolIndex) {
        let catalog = Catalog::build(vec![
            ("misc".into(), others()),
            (
                "github".into(),
                vec![
                    tool(
                        "create_issue",
                        "Create a new issue in a GitHub repository",
                        json!({"title": {"type": "string"}}),
                    ),
                    tool(
                        "get_file_contents",
                        "Get the contents of a file or directory from a GitHub repository",
                        json!({"path": {"type": "string", "description": "Path to the file"}}),
                    ),
                    tool(
                        "update_issue",
                        "Update an existing issue",
                        json!({"state": {"type": "string", "enum": ["open", "closed"]}}),
                    ),
                ],
            ),
            (
                "jira".into(),
                vec![tool(
                    "create_issue",
                    "Create a new issue in Jira.",
                    json!({}),
                )],
            ),
            (
                "filesystem".into(),
                vec![
                    tool(
                        "read_text_file",
                        "Read the complete contents of a file from the file system as text.",
                        json!({"path": {"type": "string"}}),
                    ),
                    tool(
                        "list_directory",
                        "Get a detailed listing of all files and directories in a specified path.",
                        json!({}),
                    ),
                ],
            ),
        ]);
        let index = ToolIndex::build(catalog.tools()).unwrap();
        (catalog, index)
    }

    fn names(found: Vec<Found>) -> Vec<String> {
        found.into_iter().map(|f| f.name).collect()
    }

    #[test]
    fn a_request_finds_the_tool_of_the_server_it_names() {
        let (_, index) = index();
        for (request, tool) in [
            ("open an issue on github", "github__create_issue"),
            ("file a jira issue", "jira__create_issue"),
            // Synonyms and word shapes: a folder is a directory, README.md a file.
            ("what's in this folder", "filesystem__list_directory"),
            ("show me notes.txt", "filesystem__read_text_file"),
            // A parameter's values: closing an issue is updating its state.
            ("close github issue 5", "github__update_issue"),
        ] {
            assert_eq!(names(index.search(request, 1)), [tool], "{request}");
        }
        let all = index.search("issue", 20);
        assert_eq!(all.len(), 3, "only matching tools: {all:?}");
        assert!(index.search("zebra", 20).is_empty());
        assert!(all.windows(2).all(|w| w[0].score >= w[1].score));
    }

    #[test]
    fn a_tool_named_exactly_comes_first() {
        let (_, index) = index();
        let found = names(index.search("use jira__create_issue for the directory listing", 2));
        assert_eq!(found[0], "jira__create_issue");
        let found = names(index.search("list_directory", 1));
        assert_eq!(found, ["filesystem__list_directory"]);
    }

    #[test]
    fn hostile_requests_are_words_and_nothing_else() {
        let (_, index) = index();
        for request in [
            "",
            "   ",
            "\"",
            "* OR NEAR(a b)",
            "issue\" OR \"x",
            "-issue",
            "^issue",
            "{name}: issue",
            "issue AND NOT jira",
            "\u{202e}issue\u{0}",
            &"issue ".repeat(10_000),
            &"é".repeat(100_000),
        ] {
            let found = index.search(request, 50);
            assert!(found.len() <= MAX_SEARCH_LIMIT, "{request:.40}");
        }
        assert!(index.search("", 5).is_empty());
        assert!(
            !index.search("issue\" OR \"x", 5).is_empty(),
            "its words still count"
        );
    }

    #[test]
    fn a_huge_description_is_indexed_to_its_bound() {
        let big = format!("alpha {} omega", "filler ".repeat(100_000));
        let catalog = Catalog::build(vec![("s".into(), vec![tool("t", &big, json!({}))])]);
        let index = ToolIndex::build(catalog.tools()).unwrap();
        assert_eq!(index.len(), 1);
        assert_eq!(names(index.search("alpha", 5)), ["s__t"]);
        assert!(index.search("omega", 5).is_empty(), "past MAX_FIELD_CHARS");
    }
}
