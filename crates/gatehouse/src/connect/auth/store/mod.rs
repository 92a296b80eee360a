//! Where sign-ins are kept between runs: one document, `credentials.json` in the data
//! folder (`$XDG_DATA_HOME/gatehouse/oauth`, `~/.local/share/gatehouse/oauth`), 0600 in a
//! 0700 folder. It holds, per authorization server (issuer), the client the host
//! registered there, and per server URL and issuer, the sign-in: the server's metadata,
//! the client used, the scopes granted, when the tokens came. The secrets (tokens, a
//! registered client's secret) are in the [`Vault`]: the operating system's keychain when
//! one runs, else the same file.
//!
//! Every change is a read-modify-write under an exclusive lock on `credentials.lock`,
//! written to a new file and renamed over the old one, so a reader never sees half a
//! document and two processes never lose each other's changes. A refresh holds a second
//! lock for its sign-in (`refresh-KEY.lock`) from reading the refresh token to saving the
//! rotated one: two processes refreshing at once take turns, and the second uses the
//! token the first saved instead of a used one (which an authorization server that
//! detects reuse answers by revoking the whole grant).

use std::{
    collections::BTreeMap,
    fs::File,
    io::Write,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use oauth2::TokenResponse;
use rmcp::transport::auth::{
    AuthError, AuthorizationMetadata, CredentialRefreshGuard, CredentialStore, OAuthTokenResponse,
    StoredCredentials,
};
use serde::{Deserialize, Serialize};

use super::vault::{Kind, Vault};
use crate::files;

mod slot;
#[cfg(test)]
mod tests;
pub use slot::Slot;

/// The document's name in the data folder.
pub const STORE_FILE: &str = "credentials.json";
/// The lock every change to the document holds.
const WRITE_LOCK: &str = "credentials.lock";
/// The largest document read; a larger one is refused as damaged.
pub const MAX_STORE_BYTES: u64 = 4 * 1024 * 1024;
/// How long a process waits for another's lock (a refresh is one token request).
pub const LOCK_WAIT: Duration = Duration::from_secs(40);
/// How often a waiting process tries the lock again.
const LOCK_POLL: Duration = Duration::from_millis(20);
/// The document's format.
const VERSION: u32 = 1;

pub use super::vault::StoreError;

/// A client the host registered at an authorization server (dynamic registration),
/// reused for every later sign-in there.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Registration {
    /// The id the authorization server gave.
    pub client_id: String,
    /// The redirect URI registered.
    pub redirect_uri: String,
    /// When, in seconds since 1970.
    pub registered_at: u64,
    /// Whether it has a secret (kept in the vault).
    #[serde(default)]
    pub has_secret: bool,
    /// Whether the secret is in the keychain (else in this file).
    #[serde(default)]
    pub in_keychain: bool,
}

/// How the client of a sign-in was obtained.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ClientSource {
    /// From the servers file.
    Configured,
    /// A Client ID Metadata Document URL.
    MetadataDocument,
    /// Registered by the host (dynamic registration).
    Registered,
    /// Client credentials from the servers file (no person).
    ClientCredentials,
    /// The servers file's client, presenting the workload's token (no person).
    JwtBearer,
    /// The servers file's client, presenting an ID-JAG from the company's identity
    /// provider.
    EnterpriseManaged,
}

/// One sign-in: a server URL at one authorization server. No secret in here.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SignIn {
    /// The server's URL, as the servers file gives it.
    pub resource: String,
    /// The authorization server's issuer.
    pub issuer: String,
    /// The server's name when it was signed in to (for `gatehouse auth status`).
    pub server: String,
    /// The authorization server's metadata, so a later run needs no discovery.
    pub metadata: AuthorizationMetadata,
    /// The client the tokens belong to.
    pub client_id: String,
    /// How that client was obtained.
    pub client_source: ClientSource,
    /// The redirect URI it used.
    pub redirect_uri: String,
    /// The scopes granted.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// When the tokens came, in seconds since 1970 (none: signed out).
    #[serde(default)]
    pub tokens_at: Option<u64>,
    /// How long the access token lasts from then, in seconds.
    #[serde(default)]
    pub expires_in: Option<u64>,
    /// Whether there is a refresh token.
    #[serde(default)]
    pub refreshable: bool,
    /// Whether the tokens are in the keychain (else in this file).
    #[serde(default)]
    pub in_keychain: bool,
    /// The thumbprint of the DPoP key its tokens are bound to (the key is kept beside
    /// them); none for bearer tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop: Option<String>,
}

/// Where a record's secret is.
fn kind(in_keychain: bool) -> Kind {
    if in_keychain {
        Kind::Keychain
    } else {
        Kind::File
    }
}

/// The whole document.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Document {
    version: u32,
    /// Registrations by issuer.
    #[serde(default)]
    clients: BTreeMap<String, Registration>,
    /// Sign-ins by [`key`].
    #[serde(default)]
    sign_ins: BTreeMap<String, SignIn>,
    /// Secrets by name, when the vault is this file.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    secrets: BTreeMap<String, String>,
}

/// The key of a sign-in: the server's URL and the issuer (a space cannot be in a URL).
pub fn key(resource: &str, issuer: &str) -> String {
    format!("{resource} {issuer}")
}

/// The vault name of a sign-in's token response.
fn tokens_secret(key: &str) -> String {
    format!("tokens {key}")
}

/// The vault name of a sign-in's DPoP key.
fn dpop_secret(key: &str) -> String {
    format!("dpop {key}")
}

/// The vault name of a registered client's secret.
fn client_secret_name(issuer: &str) -> String {
    format!("client {issuer}")
}

/// Seconds since 1970.
pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

/// The data folder's OAuth store: `$XDG_DATA_HOME/gatehouse/oauth`, else
/// `~/.local/share/gatehouse/oauth`.
pub fn default_dir() -> Option<PathBuf> {
    crate::config::user_dir("XDG_DATA_HOME", ".local/share")
        .map(|d| d.join("gatehouse").join("oauth"))
}

/// A stamp that changes whenever the document is replaced (a new file each time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp(Option<(u64, u64, u128)>);

fn stamp(path: &Path) -> Stamp {
    let Ok(meta) = std::fs::metadata(path) else {
        return Stamp(None);
    };
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    let modified = meta
        .modified()
        .ok()
        .and_then(|m| m.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    Stamp(Some((inode, meta.len(), modified)))
}

/// The credential store: the document and the vault beside it. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    vault: Vault,
}

/// An exclusive lock on a file, released when dropped.
pub struct Locked(#[allow(dead_code)] File);

/// Take the exclusive lock on `path`, waiting up to [`LOCK_WAIT`] for another holder.
/// Blocking: call it where blocking is allowed.
fn lock(path: &Path) -> Result<Locked, String> {
    let file =
        files::append_private(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let started = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(Locked(file)),
            Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < LOCK_WAIT => {
                std::thread::sleep(LOCK_POLL)
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(format!(
                    "another Gatehouse process has held {} for {} s",
                    path.display(),
                    LOCK_WAIT.as_secs()
                ));
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(format!("cannot lock {}: {e}", path.display()));
            }
        }
    }
}

impl Store {
    /// The store in `dir`, its secrets in `vault`.
    pub fn new(dir: PathBuf, vault: Vault) -> Self {
        Store {
            inner: Arc::new(Inner { dir, vault }),
        }
    }

    /// The document's path.
    pub fn path(&self) -> PathBuf {
        self.inner.dir.join(STORE_FILE)
    }

    /// Whether new secrets can be kept now (the keychain the settings ask for runs and
    /// takes them): asked before a sign-in starts, so that the person does not sign in for
    /// tokens that could not be kept. Blocking.
    pub fn check_vault(&self) -> Result<(), StoreError> {
        self.inner.vault.ready().map(|_| ())
    }

    /// Where a sign-in's secrets are, in words.
    pub fn secrets_place(&self, sign_in: &SignIn) -> String {
        kind(sign_in.in_keychain).describe(&self.path())
    }

    fn error(&self, reason: impl Into<String>) -> StoreError {
        StoreError {
            where_: self.path().display().to_string(),
            reason: reason.into(),
        }
    }

    fn read(&self) -> Result<Document, StoreError> {
        let path = self.path();
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Document {
                    version: VERSION,
                    ..Document::default()
                });
            }
            Err(e) => return Err(self.error(format!("cannot read it: {e}"))),
        };
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut std::io::Read::take(file, MAX_STORE_BYTES + 1),
            &mut text,
        )
        .map_err(|e| self.error(format!("cannot read it: {e}")))?;
        if text.len() as u64 > MAX_STORE_BYTES {
            return Err(self.error(format!("it is larger than {MAX_STORE_BYTES} bytes")));
        }
        let doc: Document = serde_json::from_str(&text).map_err(|e| {
            self.error(format!(
                "it is damaged ({e}); move it away to start afresh (every server then needs a new sign-in)"
            ))
        })?;
        if doc.version != VERSION {
            return Err(self.error(format!(
                "it is version {}, this Gatehouse reads version {VERSION}",
                doc.version
            )));
        }
        Ok(doc)
    }

    /// Replace the document: a new private file renamed over the old one.
    fn write(&self, doc: &Document) -> Result<(), StoreError> {
        let path = self.path();
        let text = serde_json::to_vec_pretty(doc).map_err(|e| self.error(e.to_string()))?;
        let temp = self.inner.dir.join(format!(
            ".{STORE_FILE}.{}.{}",
            std::process::id(),
            rand::random::<u64>()
        ));
        let written = (|| {
            let mut file = files::create_new_private(&temp)?;
            file.write_all(&text)?;
            file.sync_all()?;
            std::fs::rename(&temp, &path)?;
            if let Ok(dir) = File::open(&self.inner.dir) {
                let _ = dir.sync_all();
            }
            Ok::<(), std::io::Error>(())
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(self.error(format!("cannot write it: {e}")));
        }
        Ok(())
    }

    /// Change the document under the write lock. `change` may write to the vault first:
    /// if it fails, the document is left as it was.
    fn update<T>(
        &self,
        change: impl FnOnce(&mut Document, &Vault) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        files::private_dir(&self.inner.dir)
            .map_err(|e| self.error(format!("cannot create its folder: {e}")))?;
        let _lock = lock(&self.inner.dir.join(WRITE_LOCK)).map_err(|e| self.error(e))?;
        let mut doc = self.read()?;
        let out = change(&mut doc, &self.inner.vault)?;
        self.write(&doc)?;
        Ok(out)
    }

    /// The registration kept for `issuer`, with its secret.
    pub fn registration(
        &self,
        issuer: &str,
    ) -> Result<Option<(Registration, Option<String>)>, StoreError> {
        let doc = self.read()?;
        let Some(reg) = doc.clients.get(issuer).cloned() else {
            return Ok(None);
        };
        let secret = if reg.has_secret {
            kind(reg.in_keychain).get(&doc.secrets, &client_secret_name(issuer))?
        } else {
            None
        };
        Ok(Some((reg, secret)))
    }

    /// Forget the registration at `issuer` (the authorization server no longer knows it).
    pub fn forget_registration(&self, issuer: &str) -> Result<(), StoreError> {
        self.update(|doc, _| {
            if let Some(old) = doc.clients.remove(issuer) {
                kind(old.in_keychain).delete(&mut doc.secrets, &client_secret_name(issuer))?;
            }
            Ok(())
        })
    }

    /// Every sign-in, in key order.
    pub fn sign_ins(&self) -> Result<Vec<SignIn>, StoreError> {
        Ok(self.read()?.sign_ins.into_values().collect())
    }

    /// The sign-in of `resource` with tokens, the most recent if several issuers have one.
    pub fn current(&self, resource: &str) -> Result<Option<SignIn>, StoreError> {
        Ok(self
            .read()?
            .sign_ins
            .into_values()
            .filter(|s| s.resource == resource && s.tokens_at.is_some())
            .max_by_key(|s| s.tokens_at))
    }

    /// Remove the sign-ins of `resource` (every issuer), their tokens included; what was
    /// removed, with its tokens (for revoking them).
    pub fn remove(
        &self,
        resource: &str,
    ) -> Result<Vec<(SignIn, Option<OAuthTokenResponse>)>, StoreError> {
        self.update(|doc, _| {
            let keys: Vec<String> = doc
                .sign_ins
                .iter()
                .filter(|(_, s)| s.resource == resource)
                .map(|(k, _)| k.clone())
                .collect();
            let mut removed = Vec::new();
            for k in keys {
                let name = tokens_secret(&k);
                let Some(s) = doc.sign_ins.remove(&k) else {
                    continue;
                };
                let place = kind(s.in_keychain);
                let tokens = place
                    .get(&doc.secrets, &name)?
                    .and_then(|t| serde_json::from_str(&t).ok());
                place.delete(&mut doc.secrets, &name)?;
                place.delete(&mut doc.secrets, &dpop_secret(&k))?;
                removed.push((s, tokens));
            }
            Ok(removed)
        })
    }

    /// The DPoP key the sign-in of `resource` at `issuer` is bound to, if it is.
    pub fn dpop_key(&self, resource: &str, issuer: &str) -> Result<Option<String>, StoreError> {
        let key = key(resource, issuer);
        let doc = self.read()?;
        match doc.sign_ins.get(&key) {
            Some(s) if s.dpop.is_some() => {
                kind(s.in_keychain).get(&doc.secrets, &dpop_secret(&key))
            }
            _ => Ok(None),
        }
    }

    /// The credential slot of one sign-in, for rmcp's authorization manager.
    pub fn slot(&self, resource: &str, issuer: &str) -> Slot {
        Slot::new(self.clone(), key(resource, issuer))
    }

    /// The sign-in under `key` and its tokens.
    fn load(&self, key: &str) -> Result<Option<(SignIn, Option<OAuthTokenResponse>)>, StoreError> {
        let doc = self.read()?;
        let Some(sign_in) = doc.sign_ins.get(key).cloned() else {
            return Ok(None);
        };
        if sign_in.tokens_at.is_none() {
            return Ok(Some((sign_in, None)));
        }
        let tokens = match kind(sign_in.in_keychain).get(&doc.secrets, &tokens_secret(key))? {
            Some(text) => Some(
                serde_json::from_str(&text)
                    .map_err(|e| self.error(format!("the tokens of {key} are damaged: {e}")))?,
            ),
            None => None,
        };
        Ok(Some((sign_in, tokens)))
    }
}
