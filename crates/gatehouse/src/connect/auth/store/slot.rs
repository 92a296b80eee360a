//! One sign-in's credentials as rmcp's authorization manager reads and saves them: loads
//! cached until the document changes, saves under the store's lock, refreshes one process
//! at a time.

use super::*;

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
    /// The DPoP key (kept form, thumbprint) a sign-in in progress binds its tokens to.
    dpop: Arc<Mutex<Option<(String, String)>>>,
    cache: Arc<Mutex<Option<Cached>>>,
}

impl Slot {
    /// The slot of the sign-in `key` in `store`, with nothing loaded yet.
    pub(super) fn new(store: Store, key: String) -> Slot {
        Slot {
            store,
            key,
            record: Arc::new(Mutex::new(None)),
            dpop: Arc::new(Mutex::new(None)),
            cache: Arc::new(Mutex::new(None)),
        }
    }
}

/// The last credentials loaded, and the document's stamp then.
type Cached = (Stamp, Option<StoredCredentials>);

/// Tokens the store keeps: an access token that is there, of the type the sign-in asked
/// for: a bearer token (RFC 6750), or a DPoP-bound one when the sign-in has a key (RFC
/// 9449 §5). An authorization server that answers with another type, or none, is not used.
fn check_tokens(credentials: &StoredCredentials, bound: bool) -> Result<(), String> {
    let Some(tokens) = &credentials.token_response else {
        return Ok(());
    };
    if tokens.access_token().secret().trim().is_empty() {
        return Err("the authorization server's token response has an empty access_token".into());
    }
    let word = tokens.token_type().as_ref();
    let expected = if bound { "DPoP" } else { "Bearer" };
    if !word.eq_ignore_ascii_case(expected) {
        return Err(format!(
            "the authorization server gave a token of type {:?}, not {expected}: it is not used",
            crate::text::clip(&crate::text::visible_line(word), 40)
        ));
    }
    Ok(())
}

/// Keep a registration made for a sign-in at `issuer`, its secret in the vault.
fn keep_registration(
    doc: &mut Document,
    vault: &Vault,
    issuer: String,
    (mut reg, secret): (Registration, Option<String>),
) -> Result<(), StoreError> {
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

    /// Bind the tokens of the sign-in in progress to a DPoP key (its kept form, a secret,
    /// and its thumbprint), kept beside them.
    pub fn bind_dpop(&self, kept: String, thumbprint: String) {
        *self.dpop.lock().unwrap_or_else(|e| e.into_inner()) = Some((kept, thumbprint));
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
        // A new sign-in binds to its own key, or to none; a refresh keeps the one it had.
        let bound = match &prepared {
            Some(_) => self.dpop.lock().unwrap_or_else(|e| e.into_inner()).take(),
            None => None,
        };
        let is_new = prepared.is_some();
        blocking(move || {
            let key = slot.key.clone();
            slot.store.update(|doc, vault| {
                if let Some(registration) = registration {
                    let issuer = prepared
                        .as_ref()
                        .map(|p| p.issuer.clone())
                        .unwrap_or_default();
                    keep_registration(doc, vault, issuer, registration)?;
                }
                let old = doc.sign_ins.get(&key).cloned();
                let Some(mut sign_in) = prepared.or_else(|| old.clone()) else {
                    return Err(slot
                        .store
                        .error(format!("no sign-in {key} to save tokens for")));
                };
                let name = tokens_secret(&key);
                let dpop_name = dpop_secret(&key);
                // The key moves with the tokens: a refresh keeps the one the sign-in had.
                let key_text = match (&bound, &old) {
                    (Some((text, _)), _) => Some(text.clone()),
                    (None, Some(o)) if !is_new && o.dpop.is_some() => {
                        kind(o.in_keychain).get(&doc.secrets, &dpop_name)?
                    }
                    _ => None,
                };
                if let Some((_, jkt)) = &bound {
                    sign_in.dpop = Some(jkt.clone());
                }
                check_tokens(&credentials, sign_in.dpop.is_some())
                    .map_err(|e| slot.store.error(e))?;
                if let Some(old) = &old {
                    kind(old.in_keychain).delete(&mut doc.secrets, &name)?;
                    kind(old.in_keychain).delete(&mut doc.secrets, &dpop_name)?;
                }
                let Some(tokens) = &credentials.token_response else {
                    sign_in.tokens_at = None;
                    sign_in.refreshable = false;
                    sign_in.dpop = None;
                    doc.sign_ins.insert(key.clone(), sign_in);
                    return Ok(());
                };
                let text =
                    serde_json::to_string(tokens).map_err(|e| slot.store.error(e.to_string()))?;
                // The secret first: if the vault refuses, the document is not written.
                let place = vault.for_writing()?;
                place.set(&mut doc.secrets, &name, &text)?;
                if let Some(key_text) = &key_text {
                    place.set(&mut doc.secrets, &dpop_name, key_text)?;
                }
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
