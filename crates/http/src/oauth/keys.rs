//! The issuer's side of a token check: its metadata, found the way the MCP spec tells
//! clients to find it (RFC 8414 and OpenID discovery, the well-known name inserted before
//! an issuer's path, then appended), its `issuer` checked to be exactly the configured
//! one, and the key set its `jwks_uri` names. The keys are fetched again for an unknown key
//! id, at most every [`KEYS_REFETCH_INTERVAL`], so a key rotation at the issuer is picked
//! up and a stream of forged key ids costs one fetch per interval.

use std::time::Instant;

use jsonwebtoken::jwk::{Jwk, JwkSet};
use serde_json::Value;
use tokio::sync::{Mutex, RwLock};

use super::{FETCH_TIMEOUT, KEYS_REFETCH_INTERVAL, MAX_DOCUMENT_BYTES};

/// The issuer's published keys, and where to fetch them again.
pub struct Keys {
    /// The issuer's metadata document, as found (its `issuer` checked).
    metadata: Value,
    http: reqwest::Client,
    jwks_uri: String,
    set: RwLock<(JwkSet, Instant)>,
    /// One refetch at a time; the others wait for it and use what it found.
    refetching: Mutex<()>,
}

/// The metadata URLs of `issuer`, in the order the MCP spec gives: with a path,
/// `/.well-known/oauth-authorization-server/PATH`, `/.well-known/openid-configuration/PATH`,
/// `PATH/.well-known/openid-configuration`; without one, the first two at the root.
pub fn metadata_urls(issuer: &reqwest::Url) -> Vec<String> {
    let origin = issuer.origin().ascii_serialization();
    let path = issuer.path().trim_end_matches('/');
    if path.is_empty() {
        return vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ];
    }
    vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}/.well-known/openid-configuration{path}"),
        format!("{origin}{path}/.well-known/openid-configuration"),
    ]
}

/// GET a JSON document of at most [`MAX_DOCUMENT_BYTES`]; redirects are not followed.
async fn fetch_json(http: &reqwest::Client, url: &str) -> Result<Value, String> {
    let mut response = http
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| format!("cannot reach {url}: {e}"))?;
    if !response.status().is_success() {
        return Err(format!(
            "{url} answered HTTP {}",
            response.status().as_u16()
        ));
    }
    if response
        .content_length()
        .is_some_and(|n| n > MAX_DOCUMENT_BYTES as u64)
    {
        return Err(format!("{url} is larger than {MAX_DOCUMENT_BYTES} bytes"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("reading {url}: {e}"))?
    {
        if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
            return Err(format!("{url} is larger than {MAX_DOCUMENT_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|e| format!("{url} is not JSON: {e}"))
}

impl Keys {
    /// Find the issuer's metadata, check its `issuer`, and fetch its keys.
    pub async fn discover(issuer: &str) -> anyhow::Result<Self> {
        let parsed = super::http_url("--oauth-issuer", issuer)?;
        let http = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| anyhow::anyhow!("cannot build an HTTP client: {e}"))?;
        let mut tried = Vec::new();
        let mut metadata = None;
        for url in metadata_urls(&parsed) {
            match fetch_json(&http, &url).await {
                // RFC 8414 §3.3: the document's issuer is exactly the one asked about.
                Ok(doc) if doc["issuer"].as_str() == Some(issuer) => {
                    metadata = Some(doc);
                    break;
                }
                Ok(doc) => tried.push(format!(
                    "{url} names the issuer {}",
                    doc["issuer"]
                        .as_str()
                        .map_or_else(|| "(none)".to_owned(), |i| format!("{i:?}"))
                )),
                Err(e) => tried.push(e),
            }
        }
        let metadata = metadata.ok_or_else(|| {
            anyhow::anyhow!(
                "no usable metadata for the issuer {issuer}: {}",
                tried.join("; ")
            )
        })?;
        let jwks_uri = metadata["jwks_uri"]
            .as_str()
            .ok_or_else(|| anyhow::anyhow!("the metadata of {issuer} has no jwks_uri"))?
            .to_owned();
        let set = Self::fetch_set(&http, &jwks_uri)
            .await
            .map_err(|e| anyhow::anyhow!("the keys of {issuer}: {e}"))?;
        Ok(Keys {
            metadata,
            http,
            jwks_uri,
            set: RwLock::new((set, Instant::now())),
            refetching: Mutex::new(()),
        })
    }

    /// The issuer's metadata document (RFC 8414 or OpenID discovery), whose `issuer` is
    /// exactly the configured one: read once, at start.
    pub fn metadata(&self) -> &Value {
        &self.metadata
    }

    async fn fetch_set(http: &reqwest::Client, url: &str) -> Result<JwkSet, String> {
        let doc = fetch_json(http, url).await?;
        serde_json::from_value(doc).map_err(|e| format!("{url} is not a JWK set: {e}"))
    }

    /// The key a token names (`kid`), or the only key when it names none. An unknown id
    /// fetches the set again, unless that was done less than [`KEYS_REFETCH_INTERVAL`] ago.
    pub async fn find(&self, kid: Option<&str>) -> Option<Jwk> {
        if let Some(found) = pick(&self.set.read().await.0, kid) {
            return Some(found);
        }
        let _one_at_a_time = self.refetching.lock().await;
        let fetched_at = {
            let current = self.set.read().await;
            if let Some(found) = pick(&current.0, kid) {
                return Some(found);
            }
            current.1
        };
        if fetched_at.elapsed() < KEYS_REFETCH_INTERVAL {
            return None;
        }
        let fresh = Self::fetch_set(&self.http, &self.jwks_uri).await;
        let mut current = self.set.write().await;
        // A failed fetch keeps the old keys, and waits the interval before the next try.
        current.1 = Instant::now();
        if let Ok(set) = fresh {
            current.0 = set;
        }
        pick(&current.0, kid)
    }

    /// Keys from a set, for tests.
    #[cfg(test)]
    pub fn fixed(set: JwkSet) -> Self {
        Keys {
            metadata: Value::Null,
            http: reqwest::Client::new(),
            jwks_uri: "http://127.0.0.1:9/jwks".into(),
            set: RwLock::new((set, Instant::now())),
            refetching: Mutex::new(()),
        }
    }
}

/// The key with id `kid`; without an id, the set's only key.
fn pick(set: &JwkSet, kid: Option<&str>) -> Option<Jwk> {
    match kid {
        Some(kid) => set.find(kid).cloned(),
        None => match set.keys.as_slice() {
            [only] => Some(only.clone()),
            _ => None,
        },
    }
}
