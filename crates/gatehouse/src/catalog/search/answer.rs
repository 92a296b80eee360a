//! Whether a search found anything good. Scores only order tools; they say nothing of
//! whether the best fits at all, since some tool always matches a word or two. So the
//! search also measures how much of the request the best tool covers (each of the
//! request's words weighs its rarity among the tools, its IDF; a word no tool uses weighs
//! [`UNKNOWN_WORD_SHARE`] times the rarest; the tool covers the words it holds). Below
//! [`MIN_COVERAGE`], unless the best tool's meaning is close to the request's
//! ([`MIN_CLOSENESS`]), the model is told that nothing fits well, with the servers that
//! come closest and their tools' names, rather than handed five weak matches to try.
//!
//! A word no tool uses is often a value (a host, a city, an id), which no tool's text holds;
//! but more often than not it names what the request is about ("substitute for buttermilk
//! in pancakes"), which no tool does. Weighing it above any word the tools use turns away
//! most of the development requests no tool serves. But a request full of values no tool
//! holds ("post a note in our chat channels ops91 … ops95") leaves the words little to
//! cover while a tool means just what it asks, so a close meaning is answered with
//! (`gh-toolsearch --coverage` lists each request's coverage and closeness).

use std::collections::HashMap;

use super::{Entry, Found, Query, score::Postings};

/// The least share of a request that the best tool must cover for the search to answer
/// with tools, unless its meaning is close ([`MIN_CLOSENESS`]). Chosen on the quality
/// set's development part alone: the highest value that turns away at most one in twenty
/// of its requests whose right tool is found.
pub const MIN_COVERAGE: f64 = 0.15;
/// How close the best tool's meaning must be to the request's (a cosine, both centred on
/// the catalog's meaning) for the search to answer with it however few of the request's
/// words it holds. Chosen on the development part alone (`gh-toolsearch`'s `dev_choice`):
/// of the values that turn away as many of its requests no tool serves as words alone do
/// (29 of 38), the one that turns away the fewest whose right tool is found (6 of 124,
/// against 7).
pub const MIN_CLOSENESS: f64 = 0.55;
/// What a word no tool holds weighs, against the rarest word any tool holds.
pub const UNKNOWN_WORD_SHARE: f64 = 1.5;
/// Most servers named when nothing fits well.
pub const MAX_CLOSEST_SERVERS: usize = 3;
/// Most tool names given for each of them.
pub const MAX_CLOSEST_TOOLS: usize = 8;

/// What a search answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The tools that fit, best first.
    Found(Vec<Found>),
    /// Nothing fits well: the best covered only `coverage` of the request.
    NothingGood {
        /// How much of the request the best tool covered (0 to 1).
        coverage: f64,
        /// The servers whose tools came closest, closest first.
        closest: Vec<Closest>,
    },
}

/// A server whose tools came close to a request that nothing fit well.
#[derive(Debug, Clone, PartialEq)]
pub struct Closest {
    /// The server, as records show it.
    pub server: String,
    /// Its tools that matched some of the request, by catalog name, best first.
    pub tools: Vec<String>,
}

/// Does the best tool fit well enough to be answered with: it covers at least
/// [`MIN_COVERAGE`] of the request, or means what it means ([`MIN_CLOSENESS`])?
pub fn fits_well(coverage: f64, closeness: f64) -> bool {
    coverage >= MIN_COVERAGE || closeness >= MIN_CLOSENESS
}

/// How much of `query` the tool of `row` covers, from 0 to 1.
pub(super) fn coverage(postings: &Postings, query: &Query, row: u32) -> f64 {
    let rarest = postings.idf(1);
    let (mut covered, mut total) = (0.0, 0.0);
    for own in &query.own {
        let (holding, holds) = postings.holding(own, row);
        let weight = if holding == 0 {
            UNKNOWN_WORD_SHARE * rarest
        } else {
            postings.idf(holding)
        };
        total += weight;
        if holds {
            covered += weight;
        }
    }
    if total > 0.0 { covered / total } else { 0.0 }
}

/// The servers whose shown tools fit best, each with its matching tools' names (the host's
/// own tools left out).
pub(super) fn closest(
    entries: &[Entry],
    fits: &HashMap<u32, f64>,
    shown: &dyn Fn(u32) -> bool,
) -> Vec<Closest> {
    let mut by_server: HashMap<&str, Vec<(f64, u32)>> = HashMap::new();
    for (row, fit) in fits.iter().filter(|(row, fit)| **fit > 0.0 && shown(**row)) {
        // The host's own tools are no server to turn to.
        if let Some(e) = entries.get(*row as usize).filter(|e| !e.server.is_empty()) {
            by_server
                .entry(e.label.as_str())
                .or_default()
                .push((*fit, *row));
        }
    }
    let mut servers: Vec<(&str, Vec<(f64, u32)>)> = by_server.into_iter().collect();
    for (_, tools) in &mut servers {
        tools.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    }
    let best = |tools: &[(f64, u32)]| tools.first().map_or(0.0, |t| t.0);
    servers.sort_by(|a, b| best(&b.1).total_cmp(&best(&a.1)).then(a.0.cmp(b.0)));
    servers
        .into_iter()
        .take(MAX_CLOSEST_SERVERS)
        .map(|(server, tools)| Closest {
            server: server.to_owned(),
            tools: tools
                .iter()
                .take(MAX_CLOSEST_TOOLS)
                .filter_map(|(_, row)| entries.get(*row as usize).map(|e| e.name.clone()))
                .collect(),
        })
        .collect()
}
