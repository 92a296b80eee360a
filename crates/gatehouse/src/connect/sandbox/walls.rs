//! A boxed server hitting a wall of its box, told to the person: what its stderr or an
//! error of a call says was refused (a path it may not read or write, the network it may
//! not reach) is matched against the box it runs in, and the smallest change to its entry
//! that would allow it is suggested, never applied. Only refusals the box explains are
//! told: a path its box allows was refused by something else.
//!
//! Each start's box is kept here by its server's name ([`remember`]): one per server of
//! the servers file, so the map is bounded by the file. Each server is told at most
//! [`MAX_WALL_NOTES`] times.

use std::{
    collections::{HashMap, HashSet},
    path::{Path, PathBuf},
    sync::{Arc, Mutex, OnceLock},
};

use super::Plan;
use crate::config::Network;

/// Most walls told for one server in one run of the host.
pub const MAX_WALL_NOTES: usize = 16;
/// Most characters of a server's text looked at for a refusal.
const MAX_LOOKED_AT: usize = 4_096;

/// A wall a server hit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wall {
    /// What it was refused, in words.
    pub refused: String,
    /// The smallest change to its `sandbox` that allows it, in words; `None` for a secret
    /// (or a project's policy), which no box should open.
    pub change: Option<String>,
}

struct Kept {
    plans: HashMap<String, Arc<Plan>>,
    told: HashMap<String, HashSet<String>>,
}

fn kept() -> std::sync::MutexGuard<'static, Kept> {
    static KEPT: OnceLock<Mutex<Kept>> = OnceLock::new();
    KEPT.get_or_init(|| {
        Mutex::new(Kept {
            plans: HashMap::new(),
            told: HashMap::new(),
        })
    })
    .lock()
    .unwrap_or_else(|e| e.into_inner())
}

/// `server` starts in the box `plan`.
pub(super) fn remember(server: &str, plan: &Plan) {
    kept()
        .plans
        .insert(server.to_owned(), Arc::new(plan.clone()));
}

/// The wall `server`'s `text` says it hit, if its box explains it and it was not told
/// already.
pub fn hit(server: &str, text: &str) -> Option<Wall> {
    let plan = kept().plans.get(server)?.clone();
    let text = crate::text::clip(text, MAX_LOOKED_AT);
    let wall = wall_of(&plan, &text)?;
    let mut kept = kept();
    let told = kept.told.entry(server.to_owned()).or_default();
    if told.len() >= MAX_WALL_NOTES || !told.insert(wall.refused.clone()) {
        return None;
    }
    Some(wall)
}

/// Tell the person when `server`'s `text` says it hit a wall of its box.
pub fn tell(trace: &crate::trace::Trace, server: &str, text: &str) {
    let Some(wall) = hit(server, text) else {
        return;
    };
    let said = match &wall.change {
        Some(change) => format!(
            "{server} hit a wall of its box: it may not {}; to allow it, {} in its entry \
             (Gatehouse changes nothing by itself)",
            crate::text::visible(&wall.refused),
            crate::text::visible(change)
        ),
        None => format!(
            "{server} hit a wall of its box: it may not {}, which is or holds secrets or a \
             project's policy: no box should open it",
            crate::text::visible(&wall.refused)
        ),
    };
    trace.add(
        crate::trace::Who::Host,
        said,
        serde_json::json!({"sandbox": {"server": server, "refused": wall.refused, "change": wall.change}}),
    );
}

/// The wall `text` tells of, in the box `plan`.
pub fn wall_of(plan: &Plan, text: &str) -> Option<Wall> {
    let lower = text.to_lowercase();
    let refused = [
        "permission denied",
        "eacces",
        "operation not permitted",
        "eperm",
    ]
    .iter()
    .any(|w| lower.contains(w));
    let unreachable = [
        "network is unreachable",
        "enetunreach",
        "eai_again",
        "temporary failure in name resolution",
        "name or service not known",
        // With the network off every connection fails, the host's own loopback too.
        "connection refused",
        "econnrefused",
        "connecterror",
        "all connection attempts failed",
    ]
    .iter()
    .any(|w| lower.contains(w));
    if plan.network == Network::Off
        && (unreachable
            || (refused
                && ["connect", "socket", "fetch", "http"]
                    .iter()
                    .any(|w| lower.contains(w))
                && path_in(text).is_none()))
    {
        return Some(Wall {
            refused: "the network (its box has it off)".into(),
            change: Some("set \"network\": \"on\"".into()),
        });
    }
    if !refused {
        return None;
    }
    let path = path_in(text)?;
    let under = |roots: &[PathBuf]| roots.iter().any(|r| path.starts_with(r));
    let (verb, key, target) = match (under(&plan.read) || under(&plan.write), under(&plan.write)) {
        (_, true) => return None,
        // Readable, not writable: it was writing.
        (true, false) => ("write", "write", existing(&path)),
        (false, false) if path.exists() => ("read", "read", path.clone()),
        // Not there yet: it was making it.
        (false, false) => ("write", "write", existing(&path)),
    };
    // A server that asks for a secret (or says it does, to have the person open it) is
    // never pointed at one.
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let shut = super::plan::holds_a_secret(&target, home.as_deref())
        || target.components().any(|c| {
            super::plan::POLICY_FILES
                .iter()
                .any(|f| c.as_os_str() == std::ffi::OsStr::new(f))
        });
    let change =
        (!shut).then(|| format!("add \"{}\" to its \"sandbox\" \"{key}\"", target.display()));
    Some(Wall {
        refused: format!("{verb} {}", path.display()),
        change,
    })
}

/// The absolute path nearest to the refusal in `text`, as runtimes quote it in their
/// errors (`EACCES: permission denied, open '/a/b'`, `[Errno 13] Permission denied:
/// '/a/b'`, `sh: 1: /a/b: Permission denied`).
fn path_in(text: &str) -> Option<PathBuf> {
    let lower = text.to_lowercase();
    let at = [
        "permission denied",
        "eacces",
        "operation not permitted",
        "eperm",
    ]
    .iter()
    .filter_map(|w| lower.find(w))
    .min()
    .unwrap_or(0);
    let mut best: Option<(usize, PathBuf)> = None;
    let mut from = 0;
    while let Some(found) = text[from..].find('/') {
        let start = from + found;
        let rest = &text[start..];
        let end = rest
            .find(|c: char| c.is_whitespace() || "'\"`,;)]}:".contains(c))
            .unwrap_or(rest.len());
        let path = Path::new(&rest[..end]);
        // A path starts a word (not the middle of a URL or of another path).
        let starts_word = start == 0
            || text[..start]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_whitespace() || "'\"`(:[=".contains(c));
        if starts_word && path.components().count() > 1 {
            let distance = start.abs_diff(at);
            if best.as_ref().is_none_or(|(d, _)| distance < *d) {
                best = Some((distance, path.to_path_buf()));
            }
        }
        from = start + end.max(1);
    }
    best.map(|(_, p)| p)
}

/// `path`, or the nearest folder above it that exists.
fn existing(path: &Path) -> PathBuf {
    path.ancestors()
        .find(|a| a.exists())
        .unwrap_or(Path::new("/"))
        .to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(read: &[&str], write: &[&str], network: Network) -> Plan {
        Plan {
            read: read.iter().map(PathBuf::from).collect(),
            write: write.iter().map(PathBuf::from).collect(),
            network,
            processes: 64,
            open_files: 256,
            memory_mb: None,
        }
    }

    #[test]
    fn a_refusal_the_box_explains_is_told_with_the_smallest_change() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("data")).unwrap();
        std::fs::write(d.join("data/report.csv"), "x").unwrap();
        let p = plan(
            &["/usr", &d.join("data").display().to_string()],
            &["/tmp/box"],
            Network::Off,
        );
        // Node's error for a file outside its box.
        let secret = d.join("secrets/id_ed25519");
        std::fs::create_dir_all(d.join("secrets")).unwrap();
        std::fs::write(&secret, "k").unwrap();
        let node = format!(
            "Error: EACCES: permission denied, open '{}'",
            secret.display()
        );
        let wall = wall_of(&p, &node).unwrap();
        assert_eq!(wall.refused, format!("read {}", secret.display()));
        assert_eq!(
            wall.change,
            Some(format!(
                "add \"{}\" to its \"sandbox\" \"read\"",
                secret.display()
            ))
        );
        // Python's, writing a file it may only read: the folder is what to add.
        let py = format!(
            "PermissionError: [Errno 13] Permission denied: '{}/data/out.csv'",
            d.display()
        );
        let wall = wall_of(&p, &py).unwrap();
        assert_eq!(
            wall.change,
            Some(format!(
                "add \"{}\" to its \"sandbox\" \"write\"",
                d.join("data").display()
            ))
        );
        // A project's policy is never suggested, whatever the server says it wanted.
        std::fs::create_dir_all(d.join("repo")).unwrap();
        std::fs::write(d.join("repo/.mcp.json"), "{}").unwrap();
        let policy = format!(
            "EACCES: permission denied, open '{}/repo/.mcp.json'",
            d.display()
        );
        let wall = wall_of(&p, &policy).unwrap();
        assert_eq!(wall.change, None, "{wall:?}");
        // A refusal inside what it may write is not the box's.
        assert_eq!(wall_of(&p, "cat: /tmp/box/x: Permission denied"), None);
        // The network, off in its box.
        let httpx = "Failed to fetch http://127.0.0.1:8765/: ConnectError('All connection attempts failed')";
        assert_eq!(
            wall_of(&p, httpx).unwrap().change.as_deref(),
            Some("set \"network\": \"on\"")
        );
        let dns = "getaddrinfo EAI_AGAIN registry.npmjs.org";
        assert_eq!(
            wall_of(&p, dns).unwrap().change.as_deref(),
            Some("set \"network\": \"on\"")
        );
        let on = plan(&["/usr"], &[], Network::On);
        assert_eq!(wall_of(&on, dns), None);
        assert_eq!(wall_of(&p, "all is well"), None);
        // The path next to the refusal, not the first one of the line.
        let shim = "/usr/shims/python3: line 12: /opt/pyenv/libexec/pyenv: Permission denied";
        assert_eq!(
            path_in(shim),
            Some(PathBuf::from("/opt/pyenv/libexec/pyenv"))
        );
        let url = "fetch https://example.com/a/b failed: EACCES open '/srv/x'";
        assert_eq!(path_in(url), Some(PathBuf::from("/srv/x")));
    }

    #[test]
    fn each_wall_is_told_once_and_a_server_at_most_so_often() {
        let p = plan(&["/usr"], &[], Network::On);
        remember("walls-test", &p);
        let text = |i: usize| format!("EACCES: permission denied, open '/srv/f{i}'");
        assert!(hit("walls-test", &text(0)).is_some());
        assert_eq!(hit("walls-test", &text(0)), None, "told once");
        for i in 1..MAX_WALL_NOTES {
            assert!(hit("walls-test", &text(i)).is_some());
        }
        assert_eq!(hit("walls-test", &text(99)), None, "at most MAX_WALL_NOTES");
        assert_eq!(hit("no-such-server", &text(1)), None, "not boxed");
    }
}
