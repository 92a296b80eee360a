//! Revocations that hold: how many times the person revoked a tool's approval in a project
//! (and all of a project's approvals), counted in their state folder beside their key,
//! outside the project, and bound into every seal. An approvals file restored from before a
//! revoke (a backup, a `git checkout` of a committed `.gatehouse/`) holds entries sealed
//! with older counts: they no longer verify, and the tool is asked about again.

use std::{
    collections::BTreeMap,
    io::Read,
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize};

/// The counts' file in the person's state folder.
pub const REVOCATIONS_FILE: &str = "approvals.revoked.json";
/// Most counts the file keeps (one per project and tool revoked, one per project revoked
/// whole); a revoke that would pass it is refused, so the file stays small.
pub const MAX_REVOCATIONS: usize = 100_000;
/// Largest counts file read, in bytes.
pub const MAX_REVOCATIONS_FILE_BYTES: u64 = 16 << 20;

/// The counts, each under the digest of what was revoked (no project path or tool name in
/// the clear).
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Revocations {
    version: u32,
    counts: BTreeMap<String, u64>,
}

/// What a revoke names: every approval of a project, or one tool's there.
#[derive(Clone, Copy)]
enum Revoked<'a> {
    All,
    Tool(&'a str),
}

/// Where the counts are kept, for the person whose state folder is `state_dir`.
pub(super) fn path(state_dir: &Path) -> PathBuf {
    state_dir.join(REVOCATIONS_FILE)
}

impl Revocations {
    /// The counts in `file`; none when it does not exist.
    pub(super) fn read(file: &Path) -> Result<Revocations, String> {
        let shown = file.display();
        let opened = match std::fs::File::open(file) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(format!("cannot read {shown}: {e}")),
        };
        let mut text = String::new();
        opened
            .take(MAX_REVOCATIONS_FILE_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read {shown}: {e}"))?;
        if text.len() as u64 > MAX_REVOCATIONS_FILE_BYTES {
            return Err(format!(
                "{shown} is larger than {MAX_REVOCATIONS_FILE_BYTES} bytes"
            ));
        }
        serde_json::from_str(&text).map_err(|e| format!("{shown} is not a revocations file: {e}"))
    }

    /// What a seal of `tool` in `project` binds: the two counts, or `None` before any
    /// revoke there (so seals made before revocations were counted still hold).
    pub(super) fn of(&self, project: &str, tool: &str) -> Option<String> {
        let count = |what| self.counts.get(&slot(project, what)).copied().unwrap_or(0);
        let (all, one) = (count(Revoked::All), count(Revoked::Tool(tool)));
        ((all, one) != (0, 0)).then(|| format!("{all}:{one}"))
    }

    /// Count a revoke of `tools` (all of them with `None`) in `project`, in `file`, under
    /// a lock beside it.
    pub(super) fn count(
        file: &Path,
        project: &str,
        tools: Option<&[String]>,
    ) -> Result<(), String> {
        let dir = file.parent().unwrap_or(Path::new("."));
        crate::files::private_dir(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let lock = crate::files::create_private_keep(&dir.join("approvals.revoked.lock"))
            .and_then(|lock| lock.lock().map(|()| lock))
            .map_err(|e| format!("cannot lock {}: {e}", dir.display()))?;
        let mut counts = Self::read(file)?;
        counts.version = 1;
        let revoked: Vec<Revoked> = match tools {
            None => vec![Revoked::All],
            Some(tools) => tools.iter().map(|t| Revoked::Tool(t)).collect(),
        };
        for what in revoked {
            let n = counts.counts.entry(slot(project, what)).or_insert(0);
            *n = n.saturating_add(1);
        }
        if counts.counts.len() > MAX_REVOCATIONS {
            return Err(format!(
                "{} would count more than {MAX_REVOCATIONS} revocations; nothing was revoked",
                file.display()
            ));
        }
        let text = serde_json::to_string(&counts).map_err(|e| e.to_string())?;
        super::write_whole(file, &text)?;
        drop(lock);
        Ok(())
    }
}

/// The digest a count is kept under: the project and what of it was revoked, each part
/// length-prefixed so no two differ only in where one ends.
fn slot(project: &str, what: Revoked) -> String {
    let parts: [&[u8]; 2] = match what {
        Revoked::All => [project.as_bytes(), b"*all"],
        Revoked::Tool(tool) => [project.as_bytes(), tool.as_bytes()],
    };
    let mut bytes = Vec::new();
    for part in parts {
        bytes.extend_from_slice(&(part.len() as u64).to_be_bytes());
        bytes.extend_from_slice(part);
    }
    bytes.push(matches!(what, Revoked::All) as u8);
    crate::digest::sha256_hex(&bytes)
}
