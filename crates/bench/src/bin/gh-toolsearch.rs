//! `gh-toolsearch`: how often tool search finds a right tool, on the quality set
//! (`bench/catalog/`: 1,000 tools, 193 requests as people type them).
//!
//!     gh-toolsearch            top-1 and top-5 recall of the host's search (`search_tools`)
//!                              and of a plain BM25 over names and descriptions, one JSON object:
//!                              on the whole set, on its development and test parts (each
//!                              request's `split`, fixed before the ranker was tuned again:
//!                              tune on `dev`, report `test`), and by the kind of server a
//!                              request's first right tool belongs to
//!     gh-toolsearch --misses   also every request the host's search misses at 5
//!     gh-toolsearch --list     every tool of the catalog: name and description's start
//!
//! The plain BM25 is the baseline the issue names: one FTS5 table of each tool's catalog
//! name and description, SQLite's default tokenizer and bm25 weights, the request's words
//! joined with OR. The host's search is `gatehouse::catalog::search::ToolIndex`, run on the
//! catalog the host builds from the same definitions.

use std::time::Instant;

use gatehouse::catalog::{
    Catalog,
    search::{Method, ToolIndex},
    words,
};
use gatehouse_bench::{Flags, catalog};
use rmcp::model::Tool;
use serde_json::{Value, json};

/// One request of the set.
struct Request {
    text: String,
    expect: Vec<String>,
    pair: bool,
    /// `dev` (tuned on) or `test` (reported only).
    split: String,
}

/// The kinds of server the issue reports apart, by the servers of the catalog; the rest
/// are `other`.
const KINDS: &[(&str, &[&str])] = &[
    (
        "code hosting",
        &["github", "gitlab", "git", "circleci", "jenkins", "vercel"],
    ),
    ("files", &["filesystem", "gdrive", "dropbox", "aws-s3"]),
    (
        "chat",
        &["slack", "discord", "teams", "telegram", "gmail", "twilio"],
    ),
    (
        "databases",
        &["sqlite", "postgres", "mysql", "bigquery", "memory"],
    ),
    (
        "browsers",
        &[
            "playwright",
            "puppeteer",
            "firecrawl",
            "fetch",
            "brave-search",
            "tavily",
        ],
    ),
];

/// The kind of server a request's first right tool belongs to.
fn kind_of(r: &Request) -> &'static str {
    let server = r
        .expect
        .first()
        .and_then(|t| t.split("__").next())
        .unwrap_or("");
    KINDS
        .iter()
        .find(|(_, servers)| servers.contains(&server))
        .map_or("other", |(kind, _)| kind)
}

fn requests() -> anyhow::Result<Vec<Request>> {
    let path = catalog::repo_root().join("bench/catalog/requests.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    let list = doc["requests"]
        .as_array()
        .ok_or_else(|| anyhow::anyhow!("{}: no requests", path.display()))?;
    Ok(list
        .iter()
        .map(|r| Request {
            text: r["request"].as_str().unwrap_or("").to_owned(),
            expect: r["expect"]
                .as_array()
                .map(|e| {
                    e.iter()
                        .filter_map(|x| x.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            pair: r["pair"].as_bool().unwrap_or(false),
            split: r["split"].as_str().unwrap_or("").to_owned(),
        })
        .collect())
}

/// The baseline: BM25 over catalog names and descriptions, nothing else.
struct PlainBm25 {
    db: rusqlite::Connection,
    names: Vec<String>,
}

impl PlainBm25 {
    fn build(catalog: &Catalog) -> anyhow::Result<PlainBm25> {
        let db = rusqlite::Connection::open_in_memory()?;
        db.execute_batch("CREATE VIRTUAL TABLE t USING fts5(name, description);")?;
        let mut names = Vec::new();
        for (i, t) in catalog.tools().iter().enumerate() {
            db.execute(
                "INSERT INTO t(rowid, name, description) VALUES (?1, ?2, ?3)",
                rusqlite::params![
                    i as i64 + 1,
                    t.name,
                    t.tool.description.as_deref().unwrap_or("")
                ],
            )?;
            names.push(t.name.clone());
        }
        Ok(PlainBm25 { db, names })
    }

    fn search(&self, request: &str, limit: usize) -> Vec<String> {
        let terms: Vec<String> = words::split(request)
            .into_iter()
            .map(|w| format!("\"{w}\""))
            .collect();
        if terms.is_empty() {
            return Vec::new();
        }
        let query = terms.join(" OR ");
        let Ok(mut st) = self
            .db
            .prepare("SELECT rowid FROM t WHERE t MATCH ?1 ORDER BY bm25(t) LIMIT ?2")
        else {
            return Vec::new();
        };
        st.query_map(rusqlite::params![query, limit as i64], |r| {
            r.get::<_, i64>(0)
        })
        .map(|rows| {
            rows.filter_map(Result::ok)
                .filter_map(|id| self.names.get(id as usize - 1).cloned())
                .collect()
        })
        .unwrap_or_default()
    }
}

/// Recall at 1 and at 5 of a search over the requests, and the requests missed at 5.
fn recall(requests: &[Request], search: impl Fn(&str) -> Vec<String>) -> (Value, Vec<Value>) {
    let (mut top1, mut top5, mut pairs, mut pairs5) = (0, 0, 0, 0);
    let mut misses = Vec::new();
    for r in requests {
        let found = search(&r.text);
        let right = |n: &String| r.expect.contains(n);
        if found.first().is_some_and(right) {
            top1 += 1;
        }
        let at5 = found.iter().take(5).any(right);
        top5 += usize::from(at5);
        pairs += usize::from(r.pair);
        pairs5 += usize::from(r.pair && at5);
        if !at5 {
            misses.push(json!({"request": r.text, "expect": r.expect, "found": found}));
        }
    }
    let n = requests.len() as f64;
    let pct = |k: usize, of: f64| (k as f64 * 1000.0 / of).round() / 10.0;
    (
        json!({"top1": pct(top1, n), "top5": pct(top5, n), "pairs_top5": pct(pairs5, pairs as f64),
               "found_at_1": top1, "found_at_5": top5, "pairs": pairs}),
        misses,
    )
}

fn list(servers: &[catalog::ServerTools]) {
    for (server, tools) in servers {
        for t in tools {
            let d: String = t["description"]
                .as_str()
                .unwrap_or("")
                .chars()
                .take(110)
                .collect();
            println!(
                "{server}__{}\t{}",
                t["name"].as_str().unwrap_or(""),
                d.replace('\n', " ")
            );
        }
    }
}

fn main() -> anyhow::Result<()> {
    let flags = Flags::parse();
    let servers = catalog::quality_catalog(&catalog::repo_root())?;
    if flags.has("list") {
        list(&servers);
        return Ok(());
    }
    let listings = servers
        .into_iter()
        .map(|(server, tools)| {
            let tools = tools
                .into_iter()
                .map(serde_json::from_value::<Tool>)
                .collect::<Result<Vec<_>, _>>()?;
            Ok((server, tools))
        })
        .collect::<Result<Vec<_>, serde_json::Error>>()?;
    let catalog = Catalog::build(listings);
    anyhow::ensure!(
        catalog.len() == catalog::CATALOG_TOOLS,
        "the host's catalog holds {} tools (left out: {:?})",
        catalog.len(),
        catalog.left_out
    );
    let requests = requests()?;
    let start = Instant::now();
    let index = ToolIndex::build(catalog.tools()).map_err(anyhow::Error::msg)?;
    let build_ms = start.elapsed().as_secs_f64() * 1000.0;
    let start = Instant::now();
    let (host, misses) = recall(&requests, |q| {
        index.search(q, 5).into_iter().map(|f| f.name).collect()
    });
    let search_ms = start.elapsed().as_secs_f64() * 1000.0 / requests.len() as f64;
    let plain = PlainBm25::build(&catalog)?;
    let (baseline, _) = recall(&requests, |q| plain.search(q, 5));
    anyhow::ensure!(
        requests
            .iter()
            .all(|r| r.split == "dev" || r.split == "test"),
        "every request needs its \"split\": dev or test"
    );
    // The parts and the kinds, for the host's search and the baseline alike.
    let parts = |search: &dyn Fn(&str) -> Vec<String>| {
        let part = |keep: &dyn Fn(&Request) -> bool| {
            let some: Vec<Request> = requests
                .iter()
                .filter(|r| keep(r))
                .map(|r| Request {
                    text: r.text.clone(),
                    expect: r.expect.clone(),
                    pair: r.pair,
                    split: r.split.clone(),
                })
                .collect();
            let (mut figures, _) = recall(&some, search);
            figures["requests"] = json!(some.len());
            figures
        };
        let mut kinds = serde_json::Map::new();
        for kind in KINDS.iter().map(|(k, _)| *k).chain(["other"]) {
            kinds.insert(kind.into(), part(&|r| kind_of(r) == kind));
        }
        json!({"dev": part(&|r| r.split == "dev"), "test": part(&|r| r.split == "test"),
               "kinds": kinds})
    };
    let host_parts = parts(&|q| index.search(q, 5).into_iter().map(|f| f.name).collect());
    let plain_parts = parts(&|q| plain.search(q, 5));
    // What each part of the host's search adds: each step turns one more on.
    let steps = [
        (
            "names split, stemmed; every field alike",
            Method {
                weighted: false,
                synonyms: false,
                shapes: false,
            },
        ),
        (
            "+ fields weighted",
            Method {
                weighted: true,
                synonyms: false,
                shapes: false,
            },
        ),
        (
            "+ synonyms",
            Method {
                weighted: true,
                synonyms: true,
                shapes: false,
            },
        ),
        ("+ word shapes (URL, path, file name)", Method::default()),
    ];
    let ablation: Vec<Value> = steps
        .iter()
        .map(|(what, method)| {
            let (r, _) = recall(&requests, |q| {
                index
                    .search_by(q, 5, *method)
                    .into_iter()
                    .map(|f| f.name)
                    .collect()
            });
            json!({"method": what, "recall": r})
        })
        .collect();
    let mut out = json!({
        "catalog_tools": catalog.len(),
        "requests": requests.len(),
        "host": host,
        "host_parts": host_parts,
        "plain_bm25": baseline,
        "plain_bm25_parts": plain_parts,
        "steps": ablation,
        "index_build_ms": (build_ms * 10.0).round() / 10.0,
        "search_ms": (search_ms * 100.0).round() / 100.0,
    });
    if flags.has("misses") {
        out["misses"] = Value::Array(misses);
    }
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
