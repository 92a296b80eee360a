//! Approvals remembered: the person's `a` (this tool for the rest of the session) and `A`
//! (this tool in this project), each tied to the digest of the tool's definition, so a
//! changed definition is asked about again.
//!
//! [`Remembered`] is what the policy reads (pure data). [`ProjectFile`] is the project's
//! `.gatehouse/approvals.json`: exact rules written by the person's answers, each sealed
//! with a key that lives in the person's own state folder (never in the project), so a
//! file that came with a cloned repository, or was written by anything but this host for
//! this person, grants nothing. Written whole (a new file renamed over the old one) under a
//! lock, private to the user. A revoke is counted beside the key and bound into the seals
//! ([`revoked`]), so an old copy of the file restored after it grants nothing either.

pub mod revoked;

use std::path::{Path, PathBuf};

use hmac::{Hmac, KeyInit, Mac};
use revoked::Revocations;
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// The project folder's own folder, and the file in it.
pub const PROJECT_DIR: &str = ".gatehouse";
/// The approvals file's name in [`PROJECT_DIR`].
pub const PROJECT_FILE: &str = "approvals.json";
/// Most approvals a project file may hold; more is an error when it is read.
pub const MAX_PROJECT_APPROVALS: usize = 10_000;
/// Largest approvals file read, in bytes.
pub const MAX_PROJECT_FILE_BYTES: u64 = 4 << 20;

/// Where an approval holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// For the rest of this session (`a`).
    Session,
    /// In this project, across sessions (`A`).
    Project,
}

impl Scope {
    /// `session` or `project`, as the ledger says it.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Session => "session",
            Scope::Project => "project",
        }
    }
}

/// One remembered approval: a tool, exactly, with its definition's digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The namespaced tool name, exactly.
    pub tool: String,
    /// The digest of the definition approved ([`crate::catalog::definition_digest`]).
    pub fingerprint: String,
    /// When it was approved (RFC 3339).
    pub approved_at: String,
    /// The seal: HMAC-SHA-256 of the project folder, the tool and the fingerprint, under
    /// the person's key. An entry whose seal does not verify is ignored.
    #[serde(default)]
    pub seal: String,
}

/// The approvals the policy may rely on, session and project.
#[derive(Debug, Clone, Default)]
pub struct Remembered {
    session: Vec<(String, String)>,
    project: Vec<(String, String)>,
}

impl Remembered {
    /// Does an approval cover `tool` with this definition digest? Where, if so.
    pub fn covers(&self, tool: &str, fingerprint: &str) -> Option<Scope> {
        self.covers_definition(tool, "", fingerprint, &|_| true)
    }

    /// Does an approval cover this definition of `tool` of `server`? One given for the
    /// same definition under the tool's name, or under another name of the same server
    /// that the catalog no longer holds (`present` says which it holds): a tool renamed
    /// with its definition unchanged keeps its approval, and two tools that happen to
    /// share a definition never lend each other theirs. Where, if so.
    pub fn covers_definition(
        &self,
        tool: &str,
        server: &str,
        fingerprint: &str,
        present: &dyn Fn(&str) -> bool,
    ) -> Option<Scope> {
        let prefix = format!("{server}__");
        let renamed = |t: &str| !server.is_empty() && t.starts_with(&prefix) && !present(t);
        let has = |list: &[(String, String)]| {
            list.iter()
                .any(|(t, f)| f == fingerprint && (t == tool || renamed(t)))
        };
        if has(&self.session) {
            Some(Scope::Session)
        } else if has(&self.project) {
            Some(Scope::Project)
        } else {
            None
        }
    }

    /// Does any approval name `tool` (whatever its definition)?
    pub fn names(&self, tool: &str) -> bool {
        self.session
            .iter()
            .chain(&self.project)
            .any(|(t, _)| t == tool)
    }

    /// Remember `tool` at this definition digest, in `scope`; an older one is replaced.
    pub fn remember(&mut self, scope: Scope, tool: &str, fingerprint: &str) {
        let list = match scope {
            Scope::Session => &mut self.session,
            Scope::Project => &mut self.project,
        };
        list.retain(|(t, _)| t != tool);
        list.push((tool.to_owned(), fingerprint.to_owned()));
    }
}

/// The project's approvals file, and the key that seals its entries.
#[derive(Debug, Clone)]
pub struct ProjectFile {
    /// The project folder (its approvals are in `.gatehouse/approvals.json`).
    pub project: PathBuf,
    key_file: PathBuf,
    revoked_file: PathBuf,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct FileBody {
    version: u32,
    approvals: Vec<Entry>,
}

impl ProjectFile {
    /// The project of `start` (the nearest folder at or above it with a `.gatehouse`
    /// folder, stopping at a repository's root; else `start` itself), sealed with the key
    /// in `state_dir`.
    pub fn find(start: &Path, state_dir: &Path) -> ProjectFile {
        let project = start
            .ancestors()
            .find(|d| d.join(PROJECT_DIR).is_dir())
            .filter(|found| {
                // A `.gatehouse` above the repository the person is in is not this project's.
                !start
                    .ancestors()
                    .take_while(|d| d != found)
                    .any(|d| d.join(".git").exists())
            })
            .unwrap_or(start)
            .to_path_buf();
        ProjectFile {
            project,
            key_file: state_dir.join("approvals.key"),
            revoked_file: revoked::path(state_dir),
        }
    }

    /// The approvals file.
    pub fn path(&self) -> PathBuf {
        self.project.join(PROJECT_DIR).join(PROJECT_FILE)
    }

    /// Every entry of the file, each with whether its seal holds. A missing file is empty.
    pub fn read(&self) -> Result<Vec<(Entry, bool)>, String> {
        let body = self.body()?;
        let key = self.key(false)?;
        let revocations = Revocations::read(&self.revoked_file)?;
        Ok(body
            .approvals
            .into_iter()
            .map(|e| {
                let ok = key
                    .as_ref()
                    .is_some_and(|k| self.seal(k, &e, &revocations) == e.seal);
                (e, ok)
            })
            .collect())
    }

    /// The sealed entries, for the policy.
    pub fn load_into(&self, remembered: &mut Remembered) -> Result<usize, String> {
        let mut ignored = 0;
        for (entry, sealed) in self.read()? {
            if sealed {
                remembered.remember(Scope::Project, &entry.tool, &entry.fingerprint);
            } else {
                ignored += 1;
            }
        }
        Ok(ignored)
    }

    /// Write an approval of `tool` at `fingerprint`, replacing any earlier one for it.
    pub fn approve(&self, tool: &str, fingerprint: &str, now: &str) -> Result<(), String> {
        let key = self.key(true)?.ok_or("no key to seal approvals with")?;
        let revocations = Revocations::read(&self.revoked_file)?;
        self.update(|approvals| {
            approvals.retain(|e| e.tool != tool);
            let mut entry = Entry {
                tool: tool.to_owned(),
                fingerprint: fingerprint.to_owned(),
                approved_at: now.to_owned(),
                seal: String::new(),
            };
            entry.seal = self.seal(&key, &entry, &revocations);
            approvals.push(entry);
        })
    }

    /// Remove the approvals of these tools (all with `None`); returns how many went. The
    /// revoke is counted first, in the person's state folder, so it holds even against an
    /// older copy of the file put back later.
    pub fn revoke(&self, tools: Option<&[String]>) -> Result<usize, String> {
        Revocations::count(&self.revoked_file, &self.project_id(), tools)?;
        let mut removed = 0;
        self.update(|approvals| {
            let before = approvals.len();
            approvals.retain(|e| tools.is_some_and(|t| !t.contains(&e.tool)));
            removed = before - approvals.len();
        })?;
        Ok(removed)
    }

    fn body(&self) -> Result<FileBody, String> {
        let path = self.path();
        let shown = path.display();
        let Some(text) = crate::files::read_small(&path, MAX_PROJECT_FILE_BYTES)? else {
            return Ok(FileBody::default());
        };
        let body: FileBody = serde_json::from_str(&text)
            .map_err(|e| format!("{shown} is not an approvals file: {e}"))?;
        if body.approvals.len() > MAX_PROJECT_APPROVALS {
            return Err(format!(
                "{shown} holds more than {MAX_PROJECT_APPROVALS} approvals"
            ));
        }
        Ok(body)
    }

    /// Read, change and write the file whole, under a lock on the folder's lock file.
    fn update(&self, change: impl FnOnce(&mut Vec<Entry>)) -> Result<(), String> {
        let dir = self.project.join(PROJECT_DIR);
        crate::files::private_dir(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let lock = crate::files::create_private_keep(&dir.join("approvals.lock"))
            .map_err(|e| format!("cannot lock {}: {e}", dir.display()))?;
        lock.lock()
            .map_err(|e| format!("cannot lock {}: {e}", dir.display()))?;
        let mut body = self.body()?;
        body.version = 1;
        change(&mut body.approvals);
        let text = serde_json::to_string_pretty(&body).map_err(|e| e.to_string())?;
        write_whole(&self.path(), &text)
    }

    /// The person's key, made on first use (`create`) and kept private in their state folder.
    fn key(&self, create: bool) -> Result<Option<Vec<u8>>, String> {
        crate::files::private_key(&self.key_file, create)
    }

    /// The project as seals and revocations name it: its folder, symbolic links resolved.
    fn project_id(&self) -> String {
        std::fs::canonicalize(&self.project)
            .unwrap_or_else(|_| self.project.clone())
            .to_string_lossy()
            .into_owned()
    }

    /// The seal of `entry`: the project, the tool, its definition, and how many times it
    /// was revoked here (only once it has been).
    fn seal(&self, key: &[u8], entry: &Entry, revocations: &Revocations) -> String {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key");
        let project = self.project_id();
        let revoked = revocations.of(&project, &entry.tool);
        let parts = [
            Some(project.as_bytes()),
            Some(entry.tool.as_bytes()),
            Some(entry.fingerprint.as_bytes()),
            revoked.as_ref().map(String::as_bytes),
        ];
        for part in parts.into_iter().flatten() {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        crate::digest::hex(&mac.finalize().into_bytes())
    }
}

/// Write `text` (and a newline) to `path` whole ([`crate::files::replace_private`]).
fn write_whole(path: &Path, text: &str) -> Result<(), String> {
    crate::files::replace_private(path, format!("{text}\n").as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("gatehouse-approvals-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn approvals_are_sealed_for_this_person_and_this_project() {
        let root = scratch("seal");
        let (project, state) = (root.join("project"), root.join("state"));
        std::fs::create_dir_all(project.join("src")).unwrap();
        let file = ProjectFile::find(&project, &state);
        file.approve("tickets__open_ticket", "fp1", "2026-01-01T00:00:00Z")
            .unwrap();
        file.approve("tickets__open_ticket", "fp2", "2026-01-02T00:00:00Z")
            .unwrap();
        let read = file.read().unwrap();
        assert_eq!(
            read.len(),
            1,
            "a new approval of a tool replaces the old one"
        );
        assert!(read[0].1 && read[0].0.fingerprint == "fp2");
        // Found from a folder inside the project.
        let inner = ProjectFile::find(&project.join("src"), &state);
        assert_eq!(inner.project, project);
        let mut remembered = Remembered::default();
        assert_eq!(inner.load_into(&mut remembered).unwrap(), 0);
        assert_eq!(
            remembered.covers("tickets__open_ticket", "fp2"),
            Some(Scope::Project)
        );
        assert_eq!(remembered.covers("tickets__open_ticket", "fp1"), None);
        // The same file in another project, or read with another person's key, grants nothing.
        let copy = root.join("cloned");
        std::fs::create_dir_all(copy.join(PROJECT_DIR)).unwrap();
        std::fs::copy(file.path(), copy.join(PROJECT_DIR).join(PROJECT_FILE)).unwrap();
        let mut elsewhere = Remembered::default();
        assert_eq!(
            ProjectFile::find(&copy, &state)
                .load_into(&mut elsewhere)
                .unwrap(),
            1
        );
        assert_eq!(elsewhere.covers("tickets__open_ticket", "fp2"), None);
        let stranger = ProjectFile::find(&project, &root.join("other-state"));
        assert!(!stranger.read().unwrap()[0].1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&file.path()), 0o600);
            assert_eq!(mode(&state.join("approvals.key")), 0o600);
        }
        assert_eq!(file.revoke(Some(&["other".into()])).unwrap(), 0);
        assert_eq!(file.revoke(None).unwrap(), 1);
        assert!(file.read().unwrap().is_empty());
        std::fs::write(file.path(), "{oops").unwrap();
        assert!(file.read().unwrap_err().contains("not an approvals file"));
    }

    #[test]
    fn a_revoke_holds_against_an_old_file_put_back() {
        let root = scratch("revoked");
        let (project, state) = (root.join("project"), root.join("state"));
        std::fs::create_dir_all(&project).unwrap();
        let file = ProjectFile::find(&project, &state);
        file.approve("tickets__open_ticket", "fp2", "2026-01-02T00:00:00Z")
            .unwrap();
        // A copy from before a revoke, put back, grants nothing: the revoke is counted in
        // the person's state folder and bound into the seal.
        file.approve("tickets__list_tickets", "fp3", "2026-01-03T00:00:00Z")
            .unwrap();
        let backup = std::fs::read(file.path()).unwrap();
        assert_eq!(
            file.revoke(Some(&["tickets__open_ticket".into()])).unwrap(),
            1
        );
        std::fs::write(file.path(), &backup).unwrap();
        let sealed = |file: &ProjectFile| -> Vec<(String, bool)> {
            let read = file.read().unwrap();
            read.into_iter().map(|(e, ok)| (e.tool, ok)).collect()
        };
        assert_eq!(
            sealed(&file),
            [
                ("tickets__open_ticket".to_owned(), false),
                ("tickets__list_tickets".to_owned(), true)
            ]
        );
        // Approved again after the revoke, it holds; revoked whole, nothing of the backup does.
        file.approve("tickets__open_ticket", "fp2", "2026-01-04T00:00:00Z")
            .unwrap();
        assert!(sealed(&file).iter().all(|(_, ok)| *ok));
        let backup = std::fs::read(file.path()).unwrap();
        assert_eq!(file.revoke(None).unwrap(), 2);
        std::fs::write(file.path(), &backup).unwrap();
        assert!(sealed(&file).iter().all(|(_, ok)| !*ok));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let counts = revoked::path(&state);
            let mode = std::fs::metadata(counts).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
    }

    #[test]
    fn an_approval_follows_its_definition_to_a_new_name_of_the_same_server_only() {
        let mut r = Remembered::default();
        r.remember(Scope::Session, "files__read", "fp1");
        // (tool, server, definition, is files__read still listed, what covers it)
        let cases = [
            ("files__read", "files", "fp1", true, Some(Scope::Session)),
            ("files__read", "files", "fp2", true, None), // new content
            (
                "files__read_file",
                "files",
                "fp1",
                false,
                Some(Scope::Session),
            ), // renamed
            ("files__cat", "files", "fp1", true, None),  // the old name is still there
            ("other__read", "other", "fp1", false, None), // another server
        ];
        for (tool, server, fp, listed, want) in cases {
            let present = |n: &str| listed && n == "files__read";
            assert_eq!(
                r.covers_definition(tool, server, fp, &present),
                want,
                "{tool} {fp}"
            );
        }
    }
}
