//! The data files kept in the repository (`crates/servers/data`, `crates/servers/tools`),
//! embedded at build time so a server needs no files at run time.

include!(concat!(env!("OUT_DIR"), "/embedded.rs"));

/// One embedded file by its path relative to the crate, e.g. `tools/support.get_ticket.json`.
pub fn file(path: &str) -> Option<&'static str> {
    FILES.iter().find(|(p, _)| *p == path).map(|(_, c)| *c)
}

/// Every embedded file under a folder, in path order, as (path, contents).
pub fn files_under(prefix: &str) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
    FILES
        .iter()
        .filter(move |(p, _)| p.starts_with(prefix))
        .map(|(p, c)| (*p, *c))
}
