//! The catalog as the last start found it, kept in the person's state folder, so that
//! `gatehouse policy explain` need not start every server each time.
//!
//! Each server's tools are kept as it listed them, under the digest of its entry in the
//! servers file ([`crate::config::ServerSpec::entry_digest`]): a changed entry is never
//! explained from an older start, and the whole is fresh for [`FRESH_FOR`]. What servers
//! listed is hostile: the file is bounded ([`MAX_CACHED_CATALOG_BYTES`]), checked when read
//! (a file that is not what this module writes is refused, with the reason), and built into
//! a catalog by the same checks as a live list. It only explains: nothing is granted from it.

use std::{
    borrow::Cow,
    collections::{BTreeMap, HashMap},
    fmt,
    io::{self, Write},
    path::{Path, PathBuf},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use rmcp::model::Tool;
use serde::{Deserialize, Serialize};

use crate::{
    catalog::{Catalog, Listing, live},
    config::{Config, ServerName},
};

/// The largest cached catalog written or read.
pub const MAX_CACHED_CATALOG_BYTES: u64 = 16 * 1024 * 1024;
/// How long a cached catalog is used after its servers listed their tools.
pub const FRESH_FOR: Duration = Duration::from_secs(60 * 60);
/// How far past now a file's time may be (two processes of one machine).
const CLOCK_SKEW: Duration = Duration::from_secs(60);
/// The form of the file this module writes; no other is read.
const FORMAT: u32 = 1;

/// The file, as written: borrowed from the live catalog when saved (no tool is copied),
/// owned when read.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Kept<'a> {
    format: u32,
    /// The servers file, as the host names it.
    source: Cow<'a, str>,
    /// When the servers listed their tools, in milliseconds since the epoch.
    taken_at_ms: u64,
    /// Did any server offer resources (so the host offered `read_resource`)?
    offers_resources: bool,
    servers: BTreeMap<String, KeptServer<'a>>,
}

/// One server, as written.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeptServer<'a> {
    /// The digest of its entry when it listed its tools.
    entry: Cow<'a, str>,
    /// Its tools as it listed them; `None` when it did not start.
    tools: Option<Cow<'a, [Tool]>>,
}

/// A cached catalog, fresh for this servers file.
pub struct Cached {
    /// When its servers listed their tools.
    pub taken_at: SystemTime,
    /// The servers that did not start then (their tools are unknown to it).
    pub not_started: Vec<ServerName>,
    /// The catalog, built as a start builds it.
    pub catalog: Catalog,
}

/// Why the cached catalog is not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unusable {
    /// None was kept for this servers file.
    Missing,
    /// The file could not be read, or is over [`MAX_CACHED_CATALOG_BYTES`].
    Unreadable(String),
    /// The file is not one this module wrote for this servers file.
    Corrupt(String),
    /// Its servers listed their tools longer than [`FRESH_FOR`] ago.
    Stale,
    /// A server's entry changed since (or it was not in the servers file then).
    Changed {
        /// The server.
        server: ServerName,
    },
}

impl fmt::Display for Unusable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unusable::Missing => write!(f, "no catalog is cached for this servers file"),
            Unusable::Unreadable(why) => write!(f, "the cached catalog is ignored: {why}"),
            Unusable::Corrupt(why) => write!(f, "the cached catalog is ignored: {why}"),
            Unusable::Stale => write!(
                f,
                "the cached catalog is older than {} minutes",
                FRESH_FOR.as_secs() / 60
            ),
            Unusable::Changed { server } => write!(
                f,
                "the entry of server {server} changed since the catalog was cached"
            ),
        }
    }
}

/// Where the catalog of the servers file `source` is kept, in the state folder `state`.
pub fn path(state: &Path, source: &str) -> PathBuf {
    let digest = crate::digest::sha256_hex(source.as_bytes());
    state
        .join("catalogs")
        .join(format!("{}.json", &digest[..16]))
}

/// Keep what a start found: each server of `config` with the tools of its listing (none
/// for a server that did not start). A catalog over [`MAX_CACHED_CATALOG_BYTES`] is not
/// kept, and an older one is removed.
pub fn save(
    path: &Path,
    config: &Config,
    listings: &[Listing],
    offers_resources: bool,
    now: SystemTime,
) -> Result<(), String> {
    save_within(
        path,
        config,
        listings,
        offers_resources,
        now,
        MAX_CACHED_CATALOG_BYTES,
    )
}

/// [`save`], within `max_bytes`. The file is written as it is serialized, so a catalog
/// of a thousand tools is never held as one megabyte of text beside the tools it copies.
fn save_within(
    path: &Path,
    config: &Config,
    listings: &[Listing],
    offers_resources: bool,
    now: SystemTime,
    max_bytes: u64,
) -> Result<(), String> {
    let servers = config
        .servers
        .iter()
        .map(|spec| {
            let tools = listings
                .iter()
                .find(|l| l.server == spec.name)
                .map(|l| Cow::Borrowed(l.tools.as_slice()));
            let kept = KeptServer {
                entry: Cow::Borrowed(spec.entry_digest.as_str()),
                tools,
            };
            (spec.name.to_string(), kept)
        })
        .collect();
    let kept = Kept {
        format: FORMAT,
        source: Cow::Borrowed(config.source.as_str()),
        taken_at_ms: now
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
        offers_resources,
        servers,
    };
    let shown = path.display();
    if let Some(dir) = path.parent() {
        crate::files::private_dir(dir).map_err(|e| format!("cannot create {shown}: {e}"))?;
    }
    let written = crate::files::replace_private_with(path, |file| {
        let mut within = Within {
            inner: file,
            left: max_bytes,
        };
        serde_json::to_writer(&mut within, &kept).map_err(io::Error::from)
    });
    match written {
        Ok(()) => Ok(()),
        Err(e) if e.get_ref().is_some_and(|inner| inner.is::<TooLarge>()) => {
            let _ = std::fs::remove_file(path);
            Err(format!(
                "the catalog is more than the {max_bytes} bytes kept: not cached"
            ))
        }
        Err(e) => Err(format!("cannot write {shown}: {e}")),
    }
}

/// A writer that refuses to go past a number of bytes.
struct Within<W> {
    inner: W,
    left: u64,
}

/// What [`Within`] says when it is full.
#[derive(Debug)]
struct TooLarge;

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("larger than the bound")
    }
}

impl std::error::Error for TooLarge {}

impl<W: Write> Write for Within<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.len() as u64 > self.left {
            return Err(io::Error::other(TooLarge));
        }
        let n = self.inner.write(buf)?;
        self.left -= n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The catalog kept at `path`, if it is fresh for `config` at `now`: every server of
/// `config` kept at its entry's digest, listed less than [`FRESH_FOR`] ago. `only` is
/// `--tools`, as a start applies it.
pub fn load(
    path: &Path,
    config: &Config,
    only: Option<&[String]>,
    now: SystemTime,
) -> Result<Cached, Unusable> {
    let text = crate::files::read_small(path, MAX_CACHED_CATALOG_BYTES)
        .map_err(Unusable::Unreadable)?
        .ok_or(Unusable::Missing)?;
    let kept: Kept = serde_json::from_str(&text)
        .map_err(|e| Unusable::Corrupt(format!("{} is not a catalog: {e}", path.display())))?;
    if kept.format != FORMAT {
        return Err(Unusable::Corrupt(format!(
            "{} is of another form ({})",
            path.display(),
            kept.format
        )));
    }
    if kept.source != config.source {
        return Err(Unusable::Corrupt(format!(
            "{} is the catalog of another servers file",
            path.display()
        )));
    }
    let taken_at = UNIX_EPOCH + Duration::from_millis(kept.taken_at_ms);
    if taken_at > now + CLOCK_SKEW {
        return Err(Unusable::Corrupt(format!(
            "{} says it was written in the future",
            path.display()
        )));
    }
    if now.duration_since(taken_at).unwrap_or_default() > FRESH_FOR {
        return Err(Unusable::Stale);
    }
    let mut servers = kept.servers;
    let mut listings = Vec::new();
    let mut not_started = Vec::new();
    for spec in &config.servers {
        let changed = || Unusable::Changed {
            server: spec.name.clone(),
        };
        let server = servers.remove(spec.name.as_str()).ok_or_else(changed)?;
        if server.entry != spec.entry_digest {
            return Err(changed());
        }
        match server.tools {
            Some(tools) => listings.push(Listing {
                server: spec.name.clone(),
                tools: tools.into_owned(),
                listed_at: std::time::Instant::now(),
                ttl: Duration::ZERO,
            }),
            None => not_started.push(spec.name.clone()),
        }
    }
    let rules: HashMap<_, _> = config
        .servers
        .iter()
        .map(|s| (s.name.clone(), s.tools.clone()))
        .collect();
    Ok(Cached {
        taken_at,
        not_started,
        catalog: live::build(&listings, kept.offers_resources, only, &rules),
    })
}

#[cfg(test)]
mod tests;
