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

/// Why the store could not be used.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the credential store {where_}: {reason}")]
pub struct StoreError {
    /// Which store, in words (a path, or "the keychain").
    pub where_: String,
    /// What went wrong.
    pub reason: String,
}

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
                removed.push((s, tokens));
            }
            Ok(removed)
        })
    }

    /// The credential slot of one sign-in, for rmcp's authorization manager.
    pub fn slot(&self, resource: &str, issuer: &str) -> Slot {
        Slot {
            store: self.clone(),
            key: key(resource, issuer),
            record: Arc::new(Mutex::new(None)),
            cache: Arc::new(Mutex::new(None)),
        }
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

/// What a sign-in in progress stores with its tokens.
type Prepared = (SignIn, Option<(Registration, Option<String>)>);

/// The credentials of one sign-in (a server URL at one issuer), as rmcp's manager reads
/// and saves them. Loads are cached until the document changes on disk.
#[derive(Clone)]
pub struct Slot {
    store: Store,
    key: String,
    /// The record a first save creates (a sign-in in progress), and a registration made
    /// for it: nothing is stored for a sign-in until its tokens come.
    record: Arc<Mutex<Option<Prepared>>>,
    cache: Arc<Mutex<Option<Cached>>>,
}

/// The last credentials loaded, and the document's stamp then.
type Cached = (Stamp, Option<StoredCredentials>);

/// Tokens the store keeps: a bearer token that is there (RFC 6750; an authorization
/// server that answers with another type, or none, is not used).
fn check_tokens(credentials: &StoredCredentials) -> Result<(), String> {
    let Some(tokens) = &credentials.token_response else {
        return Ok(());
    };
    if tokens.access_token().secret().trim().is_empty() {
        return Err("the authorization server's token response has an empty access_token".into());
    }
    if *tokens.token_type() != oauth2::basic::BasicTokenType::Bearer {
        return Err(format!(
            "the authorization server gave a token of type {:?}, not Bearer: it is not used",
            crate::text::clip(&crate::text::visible_line(tokens.token_type().as_ref()), 40)
        ));
    }
    Ok(())
}

/// An rmcp error for a store failure (never a "sign in again": what is stored stays).
fn store_error(e: StoreError) -> AuthError {
    AuthError::CredentialStoreError(e.to_string())
}

/// Run blocking store work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, AuthError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| AuthError::CredentialStoreError(format!("the store's task failed: {e}")))?
        .map_err(store_error)
}

impl Slot {
    /// The record the next save writes (server, metadata, client) and the registration
    /// made for it, replacing what the store has for this sign-in when the tokens come.
    pub fn prepare(&self, record: SignIn, registration: Option<(Registration, Option<String>)>) {
        *self.record.lock().unwrap_or_else(|e| e.into_inner()) = Some((record, registration));
    }

    /// Forget the cached credentials: the next load reads the store.
    fn invalidate(&self) {
        *self.cache.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// The credentials as stored now.
    fn read_now(&self) -> Result<Option<StoredCredentials>, StoreError> {
        let found = self.store.load(&self.key)?;
        Ok(found.and_then(|(sign_in, tokens)| {
            tokens.map(|t| {
                StoredCredentials::new(
                    sign_in.client_id,
                    Some(t),
                    sign_in.scopes,
                    sign_in.tokens_at,
                )
                .with_issuer(Some(sign_in.issuer))
            })
        }))
    }
}

#[async_trait::async_trait]
impl CredentialStore for Slot {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let path = self.store.path();
        let now = stamp(&path);
        if let Some((seen, creds)) = &*self.cache.lock().unwrap_or_else(|e| e.into_inner())
            && *seen == now
            && now.0.is_some()
        {
            return Ok(creds.clone());
        }
        let slot = self.clone();
        let creds = blocking(move || slot.read_now()).await?;
        *self.cache.lock().unwrap_or_else(|e| e.into_inner()) = Some((now, creds.clone()));
        Ok(creds)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let slot = self.clone();
        self.invalidate();
        let prepared = self.record.lock().unwrap_or_else(|e| e.into_inner()).take();
        let (prepared, registration) = match prepared {
            Some((record, registration)) => (Some(record), registration),
            None => (None, None),
        };
        check_tokens(&credentials).map_err(AuthError::CredentialStoreError)?;
        blocking(move || {
            let key = slot.key.clone();
            slot.store.update(|doc, vault| {
                if let Some((mut reg, secret)) = registration {
                    let issuer = prepared
                        .as_ref()
                        .map(|p| p.issuer.clone())
                        .unwrap_or_default();
                    let name = client_secret_name(&issuer);
                    if let Some(old) = doc.clients.get(&issuer) {
                        kind(old.in_keychain).delete(&mut doc.secrets, &name)?;
                    }
                    reg.has_secret = secret.is_some();
                    if let Some(secret) = secret {
                        let place = vault.for_writing()?;
                        place.set(&mut doc.secrets, &name, &secret)?;
                        reg.in_keychain = place == Kind::Keychain;
                    }
                    doc.clients.insert(issuer, reg);
                }
                let old = doc.sign_ins.get(&key).cloned();
                let Some(mut sign_in) = prepared.or_else(|| old.clone()) else {
                    return Err(slot
                        .store
                        .error(format!("no sign-in {key} to save tokens for")));
                };
                let name = tokens_secret(&key);
                if let Some(old) = &old {
                    kind(old.in_keychain).delete(&mut doc.secrets, &name)?;
                }
                let Some(tokens) = &credentials.token_response else {
                    sign_in.tokens_at = None;
                    sign_in.refreshable = false;
                    doc.sign_ins.insert(key.clone(), sign_in);
                    return Ok(());
                };
                let text =
                    serde_json::to_string(tokens).map_err(|e| slot.store.error(e.to_string()))?;
                // The secret first: if the vault refuses, the document is not written.
                let place = vault.for_writing()?;
                place.set(&mut doc.secrets, &name, &text)?;
                sign_in.in_keychain = place == Kind::Keychain;
                sign_in.client_id = credentials.client_id.clone();
                sign_in.scopes = credentials.granted_scopes.clone();
                sign_in.tokens_at = credentials.token_received_at.or(Some(now_secs()));
                sign_in.expires_in = tokens.expires_in().map(|d| d.as_secs());
                sign_in.refreshable = tokens.refresh_token().is_some();
                doc.sign_ins.insert(key.clone(), sign_in);
                Ok(())
            })
        })
        .await
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let slot = self.clone();
        self.invalidate();
        blocking(move || {
            let key = slot.key.clone();
            slot.store.update(|doc, _| {
                if let Some(s) = doc.sign_ins.get_mut(&key) {
                    kind(s.in_keychain).delete(&mut doc.secrets, &tokens_secret(&key))?;
                    s.tokens_at = None;
                    s.refreshable = false;
                }
                Ok(())
            })
        })
        .await
    }

    /// The authorization server refused the refresh token (`invalid_grant`): the tokens
    /// are dropped, unless another process has saved newer ones meanwhile.
    async fn on_refresh_token_rejected(
        &self,
        rejected: &StoredCredentials,
    ) -> Result<(), AuthError> {
        let refused = rejected
            .token_response
            .as_ref()
            .and_then(|t| t.refresh_token())
            .map(|t| t.secret().clone());
        let slot = self.clone();
        self.invalidate();
        blocking(move || {
            let key = slot.key.clone();
            slot.store.update(|doc, _| {
                let name = tokens_secret(&key);
                let Some(s) = doc.sign_ins.get(&key) else {
                    return Ok(());
                };
                let place = kind(s.in_keychain);
                let stored: Option<OAuthTokenResponse> = place
                    .get(&doc.secrets, &name)?
                    .and_then(|t| serde_json::from_str(&t).ok());
                let same = stored
                    .as_ref()
                    .and_then(|t| t.refresh_token())
                    .map(|t| t.secret().clone())
                    == refused;
                if same {
                    place.delete(&mut doc.secrets, &name)?;
                    if let Some(s) = doc.sign_ins.get_mut(&key) {
                        s.tokens_at = None;
                        s.refreshable = false;
                    }
                }
                Ok(())
            })
        })
        .await
    }

    /// Held by rmcp from reading the refresh token to saving its successor; the load
    /// inside reads the store again, so a process that waited here uses the newest token.
    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let dir = self.store.inner.dir.clone();
        let name = format!("refresh-{}.lock", short_hash(&self.key));
        let store = self.store.clone();
        let locked = blocking(move || {
            files::private_dir(&dir)
                .map_err(|e| store.error(format!("cannot create its folder: {e}")))?;
            lock(&dir.join(name)).map_err(|e| store.error(e))
        })
        .await?;
        self.invalidate();
        Ok(Some(CredentialRefreshGuard::new(locked)))
    }
}

/// 16 hex digits of a SHA-256, for file names.
fn short_hash(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}
