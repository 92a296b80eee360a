//! The person's trust in a project's servers file: which of its servers and settings they
//! have seen and said yes to, each bound to the digest of its content and sealed with a key
//! in their own state folder, so a record that came from anywhere else grants nothing and
//! a changed entry is asked about again.
//!
//! The records live in the person's state folder (`trusted-projects.json`), never in the
//! project: a cloned repository cannot bring its own trust with it.

use std::path::{Path, PathBuf};

use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// The records' file in the person's state folder.
pub const TRUST_FILE: &str = "trusted-projects.json";
/// The key that seals them, beside it.
pub const TRUST_KEY: &str = "trust.key";
/// Most records the file may hold; more is an error when it is read.
pub const MAX_TRUST_RECORDS: usize = 10_000;
/// Largest records file read, in bytes.
pub const MAX_TRUST_FILE_BYTES: u64 = 4 << 20;

/// What part of a project's file a record trusts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Part {
    /// A server entry of `mcpServers`, by its name.
    Server,
    /// A key of the `"gatehouse"` settings that would loosen the person's policy.
    Setting,
}

impl Part {
    fn as_str(self) -> &'static str {
        match self {
            Part::Server => "server",
            Part::Setting => "setting",
        }
    }
}

/// One trusted part of one project file, as it was when the person said yes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The project file, as a canonical path.
    pub file: String,
    /// A server or a setting.
    pub part: Part,
    /// The server's name, or the setting's key.
    pub name: String,
    /// [`crate::digest::json_sha256`] of the entry or the setting's value.
    pub digest: String,
    /// When the person said yes (RFC 3339).
    pub trusted_at: String,
    /// HMAC-SHA-256 of the file, part, name and digest under the person's key.
    #[serde(default)]
    pub seal: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Body {
    version: u32,
    trusted: Vec<Record>,
}

/// The sealed records, read once, for deciding what of a project file may run.
#[derive(Debug, Clone, Default)]
pub struct Trusted {
    records: Vec<Record>,
}

impl Trusted {
    /// Is this part of `file` (a canonical path) trusted at exactly this digest?
    pub fn covers(&self, file: &str, part: Part, name: &str, digest: &str) -> bool {
        self.records
            .iter()
            .any(|r| r.file == file && r.part == part && r.name == name && r.digest == digest)
    }
}

/// The person's records file and key.
#[derive(Debug, Clone)]
pub struct TrustFile {
    dir: PathBuf,
}

impl TrustFile {
    /// The records in `state_dir` (the person's state folder, [`super::state_dir`]).
    pub fn in_state(state_dir: &Path) -> TrustFile {
        TrustFile {
            dir: state_dir.to_path_buf(),
        }
    }

    /// The records file.
    pub fn path(&self) -> PathBuf {
        self.dir.join(TRUST_FILE)
    }

    /// The records whose seal holds. A missing file (or key) trusts nothing.
    pub fn load(&self) -> Result<Trusted, String> {
        let Some(key) = crate::files::private_key(&self.dir.join(TRUST_KEY), false)? else {
            return Ok(Trusted::default());
        };
        let records = self
            .body()?
            .trusted
            .into_iter()
            .filter(|r| seal(&key, r) == r.seal)
            .collect();
        Ok(Trusted { records })
    }

    /// Trust these parts of `file` (a canonical path) at their digests, as `(part, name,
    /// digest)`, replacing earlier records of the same parts.
    pub fn grant(
        &self,
        file: &str,
        parts: &[(Part, String, String)],
        now: &str,
    ) -> Result<(), String> {
        let key = crate::files::private_key(&self.dir.join(TRUST_KEY), true)?
            .ok_or("no key to seal trust with")?;
        self.update(|records| {
            for (part, name, digest) in parts {
                records.retain(|r| !(r.file == file && r.part == *part && &r.name == name));
                let mut record = Record {
                    file: file.to_owned(),
                    part: *part,
                    name: name.clone(),
                    digest: digest.clone(),
                    trusted_at: now.to_owned(),
                    seal: String::new(),
                };
                record.seal = seal(&key, &record);
                records.push(record);
            }
            if records.len() > MAX_TRUST_RECORDS {
                return Err(format!(
                    "the person's trust records would hold more than {MAX_TRUST_RECORDS} entries; remove some with `gatehouse mcp untrust` in their projects"
                ));
            }
            Ok(())
        })
    }

    /// Withdraw every record of `file`; returns how many went.
    pub fn withdraw(&self, file: &str) -> Result<usize, String> {
        let mut removed = 0;
        self.update(|records| {
            let before = records.len();
            records.retain(|r| r.file != file);
            removed = before - records.len();
            Ok(())
        })?;
        Ok(removed)
    }

    fn body(&self) -> Result<Body, String> {
        let path = self.path();
        let shown = path.display();
        let Some(text) = crate::files::read_small(&path, MAX_TRUST_FILE_BYTES)? else {
            return Ok(Body::default());
        };
        let body: Body = serde_json::from_str(&text)
            .map_err(|e| format!("{shown} is not a trust records file: {e}"))?;
        if body.trusted.len() > MAX_TRUST_RECORDS {
            return Err(format!(
                "{shown} holds more than {MAX_TRUST_RECORDS} records"
            ));
        }
        Ok(body)
    }

    /// Read, change and write the records whole, under a lock beside them.
    fn update(
        &self,
        change: impl FnOnce(&mut Vec<Record>) -> Result<(), String>,
    ) -> Result<(), String> {
        let lock_path = self.dir.join("trusted-projects.lock");
        let lock = crate::files::create_private_keep(&lock_path)
            .map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))?;
        lock.lock()
            .map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))?;
        let mut body = self.body()?;
        body.version = 1;
        change(&mut body.trusted)?;
        let mut text = serde_json::to_string_pretty(&body).map_err(|e| e.to_string())?;
        text.push('\n');
        crate::files::replace_private(&self.path(), text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", self.path().display()))
    }
}

fn seal(key: &[u8], record: &Record) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key");
    for part in [
        record.file.as_bytes(),
        record.part.as_str().as_bytes(),
        record.name.as_bytes(),
        record.digest.as_bytes(),
    ] {
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part);
    }
    crate::digest::hex(&mac.finalize().into_bytes())
}
