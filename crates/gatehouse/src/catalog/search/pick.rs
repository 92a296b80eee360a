//! From scores to results: a tool named exactly first, a tool that fits far less than the
//! best left out ([`MIN_FIT_OF_BEST`]), a look-alike never above the tool it copies, and
//! one server's share of the results bounded. A tool the search is told not to show is
//! left out before all of this: it takes no place and no share, and is not the best fit.
//!
//! **Look-alikes.** Servers name their tools without knowing each other, so two may share
//! a name (`github__create_issue`, `aa__create_issue`), and the host cannot know which is
//! the original: both names are as their servers gave them. Among tools sharing a name the
//! order is decided by what the person or the model wrote, then by what no server can fake
//! about another: the full catalog name in the request (`github__create_issue`) first, then
//! the tool whose server the request names ("on github"); then a tool whose title or
//! description names another of these servers and not its own (a copy of GitHub's
//! `create_issue` on a server `aa` says "GitHub") after the others; then the better fit,
//! and on a tie the tool whose text names its own server. Never the servers' order, which
//! is alphabetical: a hostile server called `aa` sorts first. Each result shows its server.
//!
//! **A server's share.** One server fills at most [`server_share`] of a search's results
//! while other servers have matching tools; when too few others match, its next best tools
//! fill the rest. So a server of many stuffed tools cannot push every other out, and a
//! catalog of one server still finds as many tools as it asks for. The share does not
//! bound what the request asks for: a tool it names exactly, and a tool of a server it
//! names that fits the rest of the request (its words apart from those naming the server)
//! at least [`MIN_FIT_OF_BEST`] as well as that server's tool that fits it best ("the
//! invoices on billing"). Naming a server does not bring in its tools that match little
//! but its name: "a support ticket" names the server `support`, not its knowledge base.

use std::collections::{HashMap, HashSet};

use super::{Entry, ToolIndex};
use crate::catalog::words;

/// At most this percent of a search's results (rounded down, at least one) come from one
/// server while others have matching tools: two of the default five.
pub const MAX_SERVER_SHARE_PERCENT: usize = 40;

/// A tool that fits less than this share of the best fit is not listed: a tool that
/// matches a few of a request's words among many others of its own is no answer, however
/// few better ones there are.
pub const MIN_FIT_OF_BEST: f64 = 0.4;

/// How many of `limit` results one server may fill while others match.
pub fn server_share(limit: usize) -> usize {
    (limit * MAX_SERVER_SHARE_PERCENT / 100).max(1)
}

/// How well each tool that matches a request fits it, by row.
#[derive(Debug, Default)]
pub(in crate::catalog) struct Fits {
    /// In all its fields: what it is ranked by.
    pub whole: HashMap<u32, f64>,
    /// Apart from the request's words that name its server: whether it fits what the
    /// request asks of a server it names.
    pub apart_from_server: HashMap<u32, f64>,
}

/// Does `words` name `name` (a server's name, its letters and digits only, lowercase) in
/// consecutive words, however they are split: `GitHub`, `git hub` and `github` all name
/// `github`, and `google maps` names `googlemaps`.
pub(super) fn names(words: &[String], name: &str) -> bool {
    !name.is_empty()
        && (0..words.len()).any(|start| {
            let mut joined = String::new();
            words[start..].iter().any(|w| {
                joined.push_str(w);
                joined == name || !name.starts_with(joined.as_str())
            }) && joined == name
        })
}

/// What the request says about each tool, beyond the words it was scored on.
struct Named<'a> {
    index: &'a ToolIndex,
    /// The request's words.
    words: Vec<String>,
    /// Rows the request names by their full catalog name.
    full: HashSet<u32>,
    /// Rows the request names exactly (full name, or own name).
    exact: HashSet<u32>,
    /// Rows the request asks for, which no server's share bounds: those named exactly,
    /// and those of a server it names that fit the rest of the request.
    asked: HashSet<u32>,
}

impl Named<'_> {
    fn entry(&self, row: u32) -> Option<&Entry> {
        self.index.entries.get(row as usize)
    }

    /// Does the request name this tool's server?
    fn server_named(&self, row: u32) -> bool {
        self.entry(row)
            .is_some_and(|e| names(&self.words, &e.server))
    }
}

/// The shown rows the request names exactly: a token of it that is a tool's catalog name
/// or its own name of several words (`create_issue`; `search` is a word, not a name). An
/// own name several servers share names all of them, unless the request also names the
/// server of some: then those.
fn named<'a>(index: &'a ToolIndex, request: &str, shown: &dyn Fn(u32) -> bool) -> Named<'a> {
    let mut out = Named {
        index,
        words: words::split(request),
        full: HashSet::new(),
        exact: HashSet::new(),
        asked: HashSet::new(),
    };
    for token in request.split_whitespace() {
        let token = token
            .trim_matches(|c: char| !(c.is_alphanumeric() || "_-.".contains(c)))
            .to_lowercase();
        let Some(rows) = index.by_name.get(&token) else {
            continue;
        };
        let rows: Vec<u32> = rows.iter().copied().filter(|r| shown(*r)).collect();
        let full: Vec<u32> = rows
            .iter()
            .copied()
            .filter(|r| {
                out.entry(*r)
                    .is_some_and(|e| e.name.to_lowercase() == token)
            })
            .collect();
        out.full.extend(&full);
        let server_named: Vec<u32> = rows
            .iter()
            .copied()
            .filter(|r| out.server_named(*r))
            .collect();
        out.exact
            .extend(match (full.is_empty(), server_named.is_empty()) {
                (false, _) => full,
                (true, false) => server_named,
                (true, true) => rows,
            });
    }
    out
}

/// The best `limit` of the rows `fits` scored that `shown` lets through, as the module
/// says, each with its score.
pub(super) fn pick(
    index: &ToolIndex,
    request: &str,
    fits: Fits,
    limit: usize,
    shown: &dyn Fn(u32) -> bool,
) -> Vec<(u32, f64)> {
    let mut named = named(index, request, shown);
    let Fits {
        whole: mut scores,
        apart_from_server,
    } = fits;
    scores.retain(|row, _| shown(*row));
    let best = |fits: &HashMap<u32, f64>| fits.values().copied().fold(0.0, f64::max);
    let top = best(&scores);
    let apart: HashMap<u32, f64> = apart_from_server
        .into_iter()
        .filter(|(row, _)| scores.contains_key(row))
        .collect();
    let asked = fit_the_rest(&named, &apart);
    named.asked = named.exact.iter().copied().chain(asked).collect();
    for row in &named.exact {
        *scores.entry(*row).or_default() += top + 1.0;
    }
    let mut ranked: Vec<(u32, f64)> = scores
        .into_iter()
        .filter(|(_, score)| *score >= MIN_FIT_OF_BEST * top)
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    look_alikes(&named, &mut ranked);
    bounded(&named, ranked, limit)
}

/// The tools of the servers the request names that fit the rest of it, their words apart
/// from the server's name, at least [`MIN_FIT_OF_BEST`] as well as their server's tool
/// that fits it best.
fn fit_the_rest(named: &Named, apart: &HashMap<u32, f64>) -> Vec<u32> {
    let mut best: HashMap<&str, f64> = HashMap::new();
    let of_named = apart
        .iter()
        .filter(|(row, fit)| **fit > 0.0 && named.server_named(**row));
    for (row, fit) in of_named.clone() {
        if let Some(e) = named.entry(*row) {
            let b = best.entry(e.label.as_str()).or_default();
            *b = b.max(*fit);
        }
    }
    of_named
        .filter(|(row, fit)| {
            named.entry(**row).is_some_and(|e| {
                **fit >= MIN_FIT_OF_BEST * best.get(e.label.as_str()).copied().unwrap_or(0.0)
            })
        })
        .map(|(row, _)| *row)
        .collect()
}

/// Among tools of several servers that share a name, the order the module says, each in
/// the place one of them had.
fn look_alikes(named: &Named, ranked: &mut [(u32, f64)]) {
    let mut groups: HashMap<&str, Vec<usize>> = HashMap::new();
    for (place, (row, _)) in ranked.iter().enumerate() {
        if let Some(e) = named.entry(*row) {
            groups.entry(e.bare.as_str()).or_default().push(place);
        }
    }
    for places in groups.values().filter(|p| p.len() > 1) {
        let servers: Vec<&str> = places
            .iter()
            .filter_map(|p| named.entry(ranked[*p].0))
            .map(|e| e.server.as_str())
            .collect();
        let mut members: Vec<(u32, f64)> = places.iter().map(|p| ranked[*p]).collect();
        let key = |(row, score): &(u32, f64)| {
            let e = named.entry(*row);
            let copies = e.is_some_and(|e| !e.self_described && names_another(e, &servers));
            (
                !named.full.contains(row),
                !named.server_named(*row),
                copies,
                -score,
                !e.is_some_and(|e| e.self_described),
                *row,
            )
        };
        members.sort_by(|a, b| {
            let (ka, kb) = (key(a), key(b));
            (ka.0, ka.1, ka.2)
                .cmp(&(kb.0, kb.1, kb.2))
                .then(ka.3.total_cmp(&kb.3))
                .then((ka.4, ka.5).cmp(&(kb.4, kb.5)))
        });
        for (place, member) in places.iter().zip(members) {
            ranked[*place] = member;
        }
    }
}

/// Does this tool's own text name a server of `servers` other than its own?
fn names_another(entry: &Entry, servers: &[&str]) -> bool {
    servers
        .iter()
        .any(|s| *s != entry.server && names(&entry.text, s))
}

/// The first `limit` of `ranked`, one server's share bounded as the module says.
fn bounded(named: &Named, ranked: Vec<(u32, f64)>, limit: usize) -> Vec<(u32, f64)> {
    let share = server_share(limit);
    let mut taken: HashMap<&str, usize> = HashMap::new();
    let mut out = Vec::with_capacity(limit);
    let mut held: Vec<(u32, f64)> = Vec::new();
    for (row, score) in ranked {
        if out.len() == limit {
            break;
        }
        let server = named.entry(row).map_or("", |e| e.label.as_str());
        let count = taken.entry(server).or_default();
        if *count < share || named.asked.contains(&row) {
            *count += 1;
            out.push((row, score));
        } else {
            held.push((row, score));
        }
    }
    // Too few other servers matched: the held tools, best first, fill what is left.
    let room = limit - out.len();
    out.extend(held.into_iter().take(room));
    out
}
