//! `gh-toolsearch`: how often tool search finds a right tool, on the quality set
//! (`bench/catalog/`: 1,000 tools; requests as people type them, in a development, a test
//! and a fresh part, the last written without reading the tools).
//!
//!     gh-toolsearch            top-1 and top-5 recall of the host's search (`search_tools`)
//!                              and of a plain BM25 over names and descriptions, one JSON object:
//!                              on the whole set, on its development and test parts (each
//!                              request's `split`, fixed before the ranker was tuned again:
//!                              tune on `dev`, report `test`), and by the kind of server a
//!                              request's first right tool belongs to
//!     gh-toolsearch --misses   also every request the host's search misses at 5, and those
//!                              whose right tool it finds but not first
//!     gh-toolsearch --list     every tool of the catalog: name and description's start
//!     gh-toolsearch --dump     every tool of the catalog, its server and definition, a JSON line each
//!     gh-toolsearch --ranked   each request's first 20 tools with their scores, a JSON line each
//!     gh-toolsearch --coverage each request's part, the coverage and closeness of the tool
//!                              found first, and whether its right tool is found (what
//!                              "nothing fits well" is decided by), a tab-separated line each
//!
//! The plain BM25 is the baseline the issue names: one FTS5 table of each tool's catalog
//! name and description, SQLite's default tokenizer and bm25 weights, the request's words
//! joined with OR. The host's search is `gatehouse::catalog::search::ToolIndex`, run on the
//! catalog the host builds from the same definitions.
#![warn(clippy::too_many_lines)]

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

/// The parts of the set: tuned on, reported, and written blind after the tuning began.
const SPLITS: [&str; 3] = ["dev", "test", "fresh"];

/// The figures of one part of the requests (those with a right tool).
fn part(
    requests: &[Request],
    search: &dyn Fn(&str) -> Vec<String>,
    keep: &dyn Fn(&Request) -> bool,
) -> Value {
    let some: Vec<Request> = requests
        .iter()
        .filter(|r| keep(r) && !r.expect.is_empty())
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
}

/// Recall at 1 and at 5 of a search over the requests, and the requests missed at 5.
fn recall(requests: &[Request], search: impl Fn(&str) -> Vec<String>) -> (Value, Vec<Value>) {
    let (mut top1, mut top5, mut pairs, mut pairs5) = (0, 0, 0, 0);
    let mut misses = Vec::new();
    let answerable: Vec<&Request> = requests.iter().filter(|r| !r.expect.is_empty()).collect();
    for r in answerable.iter().copied() {
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
    let n = answerable.len() as f64;
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

/// What each part of the host's search adds: each step turns one more on, with its top-1
/// and top-5 on each part of the requests.
fn ablation(index: &ToolIndex, requests: &[Request]) -> Vec<Value> {
    let steps = [
        (
            "names split, stemmed; every field alike",
            Method {
                weighted: false,
                shapes: false,
                prefixes: false,
                meaning: false,
            },
        ),
        (
            "+ fields weighted",
            Method {
                weighted: true,
                shapes: false,
                prefixes: false,
                meaning: false,
            },
        ),
        (
            "+ word shapes (URL, path, file name)",
            Method {
                prefixes: false,
                meaning: false,
                ..Method::default()
            },
        ),
        (
            "+ longer words a word begins (repo: repository)",
            Method {
                meaning: false,
                ..Method::default()
            },
        ),
        (
            "+ meaning (static embeddings of all-MiniLM-L6-v2)",
            Method::default(),
        ),
    ];
    steps
        .iter()
        .map(|(what, method)| {
            let search = |q: &str| -> Vec<String> {
                index
                    .search_by(q, 5, *method)
                    .into_iter()
                    .map(|f| f.name)
                    .collect()
            };
            let mut parts = serde_json::Map::new();
            for split in SPLITS {
                let figures = part(requests, &search, &|r| r.split == split);
                parts.insert(split.into(), json!([figures["top1"], figures["top5"]]));
            }
            json!({"method": what, "top1_top5": parts})
        })
        .collect()
}

/// When the search says nothing fits well: how often it says so of each part's requests
/// that have a right tool (found at 5 or not) and of those that have none, and the
/// closeness the development part alone would choose (what `MIN_CLOSENESS` is chosen by).
fn nothing_good(index: &ToolIndex, requests: &[Request]) -> serde_json::Map<String, Value> {
    let turned_away = |r: &Request| {
        matches!(
            index.answer(&r.text, 5, &|_| true),
            gatehouse::catalog::search::Answer::NothingGood { .. }
        )
    };
    let found = |r: &Request| {
        index
            .search(&r.text, 5)
            .iter()
            .any(|f| r.expect.contains(&f.name))
    };
    let mut nothing_good = serde_json::Map::new();
    for split in SPLITS {
        let of = |keep: &dyn Fn(&Request) -> bool| {
            let some: Vec<&Request> = requests
                .iter()
                .filter(|r| r.split == split && keep(r))
                .collect();
            json!([some.iter().filter(|r| turned_away(r)).count(), some.len()])
        };
        nothing_good.insert(
            split.into(),
            json!({"right_tool_found_turned_away": of(&|r| !r.expect.is_empty() && found(r)),
                   "right_tool_missed_turned_away": of(&|r| !r.expect.is_empty() && !found(r)),
                   "no_right_tool_turned_away": of(&|r| r.expect.is_empty())}),
        );
    }
    nothing_good.insert(
        "min_coverage".into(),
        json!(gatehouse::catalog::search::answer::MIN_COVERAGE),
    );
    nothing_good.insert(
        "min_closeness".into(),
        json!(gatehouse::catalog::search::answer::MIN_CLOSENESS),
    );
    nothing_good.insert("dev_choice".into(), dev_choice(index, requests, &found));
    nothing_good
}

/// The least closeness the development part chooses (`MIN_CLOSENESS`): of the values that
/// turn away as many of its requests no tool serves as the coverage alone does, the one
/// that turns away the fewest whose right tool is found; of those, the highest.
fn dev_choice(index: &ToolIndex, requests: &[Request], found: &dyn Fn(&Request) -> bool) -> Value {
    use gatehouse::catalog::search::answer::fits_well;
    // Each development request's best fit, and whether its right tool is found (or none).
    let dev: Vec<((f64, f64), Option<bool>)> = requests
        .iter()
        .filter(|r| r.split == "dev")
        .map(|r| {
            (
                index.best_fit(&r.text),
                (!r.expect.is_empty()).then(|| found(r)),
            )
        })
        .collect();
    let away = |kind: Option<bool>, least: f64| {
        dev.iter()
            .filter(|((coverage, closeness), f)| {
                *f == kind && !(fits_well(*coverage, -1.0) || *closeness >= least)
            })
            .count()
    };
    let words_alone = away(None, f64::INFINITY);
    let mut best: Option<(usize, f64)> = None;
    for step in (20..=100).rev() {
        let least = f64::from(step) / 100.0;
        let found_away = away(Some(true), least);
        if away(None, least) == words_alone && best.is_none_or(|(f, _)| found_away < f) {
            best = Some((found_away, least));
        }
    }
    let of = |kind: Option<bool>| dev.iter().filter(|(_, f)| *f == kind).count();
    best.map_or(Value::Null, |(found_away, least)| {
        json!({"min_closeness": least, "found_turned_away": [found_away, of(Some(true))],
               "no_right_tool_turned_away": [words_alone, of(None)],
               "found_turned_away_by_words_alone": away(Some(true), f64::INFINITY)})
    })
}

/// `--coverage`: each request's part, the coverage and closeness of the tool found first,
/// and whether its right tool is found.
fn print_coverage(index: &ToolIndex, requests: &[Request]) {
    for r in requests {
        let found = index
            .search(&r.text, 5)
            .iter()
            .any(|f| r.expect.contains(&f.name));
        let (coverage, closeness) = index.best_fit(&r.text);
        println!(
            "{}\t{coverage:.3}\t{closeness:.3}\t{}\t{}",
            r.split,
            if r.expect.is_empty() {
                "none"
            } else if found {
                "found"
            } else {
                "missed"
            },
            r.text
        );
    }
}

/// The host's catalog of the pinned servers' tools, all of them kept.
fn host_catalog(servers: Vec<(String, Vec<Value>)>) -> anyhow::Result<Catalog> {
    let listings = servers
        .into_iter()
        .map(|(server, tools)| {
            let tools = tools
                .into_iter()
                .map(serde_json::from_value::<Tool>)
                .collect::<Result<Vec<_>, _>>()?;
            let server = gatehouse::config::ServerName::parse(&server)
                .map_err(|e| anyhow::anyhow!("server {server:?}: {e}"))?;
            Ok((server, tools))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let catalog = Catalog::build(listings);
    anyhow::ensure!(
        catalog.len() == catalog::CATALOG_TOOLS,
        "the host's catalog holds {} tools (left out: {:?})",
        catalog.len(),
        catalog.left_out
    );
    Ok(catalog)
}

/// A search's figures on each part of the requests and on each server kind.
fn parts(requests: &[Request], search: &dyn Fn(&str) -> Vec<String>) -> Value {
    let mut out = serde_json::Map::new();
    for split in SPLITS {
        out.insert(split.into(), part(requests, search, &|r| r.split == split));
    }
    let mut kinds = serde_json::Map::new();
    for kind in KINDS.iter().map(|(k, _)| *k).chain(["other"]) {
        kinds.insert(kind.into(), part(requests, search, &|r| kind_of(r) == kind));
    }
    out.insert("kinds".into(), Value::Object(kinds));
    Value::Object(out)
}

/// The requests whose right tool is found, but not first, with their part.
fn not_first(index: &ToolIndex, requests: &[Request]) -> Vec<Value> {
    requests
        .iter()
        .filter(|r| !r.expect.is_empty())
        .filter_map(|r| {
            let found: Vec<String> = index
                .search(&r.text, 5)
                .into_iter()
                .map(|f| f.name)
                .collect();
            let first = found.first().is_some_and(|f| r.expect.contains(f));
            let at5 = found.iter().any(|f| r.expect.contains(f));
            (at5 && !first).then(
                || json!({"request": r.text, "split": r.split, "expect": r.expect, "found": found}),
            )
        })
        .collect()
}

fn main() -> anyhow::Result<()> {
    let flags = Flags::parse();
    let servers = catalog::quality_catalog(&catalog::repo_root())?;
    if flags.has("list") {
        list(&servers);
        return Ok(());
    }
    if flags.has("dump") {
        for (server, tools) in &servers {
            for t in tools {
                println!("{}", json!({"server": server, "tool": t}));
            }
        }
        return Ok(());
    }
    let catalog = host_catalog(servers)?;
    let requests = requests()?;
    let start = Instant::now();
    let index = ToolIndex::build(catalog.tools()).map_err(anyhow::Error::msg)?;
    if flags.has("ranked") {
        for r in &requests {
            let found: Vec<Value> = index
                .search(&r.text, 20)
                .into_iter()
                .map(|f| json!([f.name, f.score]))
                .collect();
            println!("{}", json!({"request": r.text, "found": found}));
        }
        return Ok(());
    }
    let build_ms = start.elapsed().as_secs_f64() * 1000.0;
    let start = Instant::now();
    let (host, misses) = recall(&requests, |q| {
        index.search(q, 5).into_iter().map(|f| f.name).collect()
    });
    let search_ms = start.elapsed().as_secs_f64() * 1000.0 / requests.len() as f64;
    let plain = PlainBm25::build(&catalog)?;
    let (baseline, _) = recall(&requests, |q| plain.search(q, 5));
    anyhow::ensure!(
        requests.iter().all(|r| SPLITS.contains(&r.split.as_str())),
        "every request needs its \"split\": dev, test or fresh"
    );
    let host_parts = parts(&requests, &|q| {
        index.search(q, 5).into_iter().map(|f| f.name).collect()
    });
    let plain_parts = parts(&requests, &|q| plain.search(q, 5));
    let ablation = ablation(&index, &requests);
    if flags.has("coverage") {
        print_coverage(&index, &requests);
        return Ok(());
    }
    let nothing_good = nothing_good(&index, &requests);
    let mut out = json!({
        "catalog_tools": catalog.len(),
        "requests": requests.len(),
        "host": host,
        "host_parts": host_parts,
        "plain_bm25": baseline,
        "plain_bm25_parts": plain_parts,
        "steps": ablation,
        "nothing_good": nothing_good,
        "index_build_ms": (build_ms * 10.0).round() / 10.0,
        "search_ms": (search_ms * 100.0).round() / 100.0,
    });
    if flags.has("misses") {
        out["misses"] = Value::Array(misses);
        out["not_first"] = Value::Array(not_first(&index, &requests));
    }
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
