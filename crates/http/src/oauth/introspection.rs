//! Revocation seen within a bound: with `--oauth-introspection-client`, every access token
//! is also put to the issuer's introspection endpoint (RFC 7662), and its answer trusted
//! for at most `--oauth-revocation-bound` (default [`DEFAULT_REVOCATION_BOUND`]). A token
//! revoked at the authorization server is then refused within that bound, where an offline
//! check of a JWT would take it until it expires. Introspection, not a revocation list,
//! because it is the standard endpoint authorization servers have (a list the issuer
//! publishes has no standard yet), and because it also makes opaque tokens usable, which
//! some servers issue and which an offline check cannot read.
//!
//! Each answer is cached by the token's SHA-256 (never the token), at most
//! [`MAX_CACHED_ANSWERS`]; at the bound the expired ones are dropped, then all (a miss
//! only costs a request). An authorization server that does not answer refuses the token:
//! whether it is still valid cannot be said.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{FETCH_TIMEOUT, MAX_DOCUMENT_BYTES};

/// How long an introspection answer is trusted when `--oauth-revocation-bound` is not given.
pub const DEFAULT_REVOCATION_BOUND: Duration = Duration::from_secs(30);
/// The longest `--oauth-revocation-bound`, in seconds.
pub const MAX_REVOCATION_BOUND_SECS: u64 = 3600;
/// Most answers cached at once.
pub const MAX_CACHED_ANSWERS: usize = 10_000;
/// The variable the introspection client's secret is read from (never a flag: a command
/// line is seen by every user of the machine).
pub const SECRET_VAR: &str = "GATEHOUSE_OAUTH_INTROSPECTION_SECRET";

/// What `--oauth-introspection-client` and `--oauth-revocation-bound` ask for.
#[derive(Debug, Clone)]
pub struct IntrospectionOptions {
    /// The resource server's client at the authorization server.
    pub client_id: String,
    /// How long an answer is trusted.
    pub bound: Duration,
}

/// Why a token's standing could not be learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unanswered;

/// One answer: the token's claims while it is active, `None` once it is not.
type Answer = Option<Value>;

/// The introspection endpoint, its client, and the answers trusted for now.
pub struct Introspection {
    endpoint: String,
    client_id: String,
    secret: String,
    bound: Duration,
    http: reqwest::Client,
    cache: Mutex<HashMap<[u8; 32], (Instant, Answer)>>,
}

impl Introspection {
    /// The introspection of the issuer whose `metadata` names its endpoint, as `options`'s
    /// client, its secret from [`SECRET_VAR`].
    pub fn new(metadata: &Value, options: &IntrospectionOptions) -> anyhow::Result<Self> {
        let endpoint = metadata["introspection_endpoint"]
            .as_str()
            .filter(|e| e.starts_with("https://") || e.starts_with("http://"))
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "--oauth-introspection-client: the authorization server's metadata names no introspection_endpoint"
                )
            })?
            .to_owned();
        let secret = std::env::var(SECRET_VAR).map_err(|_| {
            anyhow::anyhow!(
                "--oauth-introspection-client needs the client's secret in ${SECRET_VAR}"
            )
        })?;
        let http = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Introspection {
            endpoint,
            client_id: options.client_id.clone(),
            secret,
            bound: options.bound,
            http,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// The token's claims while the authorization server says it is active (`None` once
    /// it does not), as it said within the bound.
    pub async fn claims(&self, token: &str) -> Result<Answer, Unanswered> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(answer) = self.cached(&key, Instant::now()) {
            return Ok(answer);
        }
        let answer = self.ask(token).await?;
        self.keep(key, answer.clone(), Instant::now());
        Ok(answer)
    }

    /// The answer for `key` if it is still trusted at `now`.
    fn cached(&self, key: &[u8; 32], now: Instant) -> Option<Answer> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .get(key)
            .filter(|(at, _)| now.saturating_duration_since(*at) < self.bound)
            .map(|(_, answer)| answer.clone())
    }

    /// Keep `answer` for `key`, within [`MAX_CACHED_ANSWERS`].
    fn keep(&self, key: [u8; 32], answer: Answer, now: Instant) {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= MAX_CACHED_ANSWERS && !cache.contains_key(&key) {
            cache.retain(|_, (at, _)| now.saturating_duration_since(*at) < self.bound);
            if cache.len() >= MAX_CACHED_ANSWERS {
                cache.clear();
            }
        }
        cache.insert(key, (now, answer));
    }

    /// Ask the authorization server (RFC 7662 §2.1), as the resource server's client.
    async fn ask(&self, token: &str) -> Result<Answer, Unanswered> {
        let body = form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", "access_token")
            .finish();
        // RFC 6749 §2.3.1: each part form-encoded before Basic.
        let encode =
            |s: &str| -> String { form_urlencoded::byte_serialize(s.as_bytes()).collect() };
        let mut response = self
            .http
            .post(&self.endpoint)
            .basic_auth(encode(&self.client_id), Some(encode(&self.secret)))
            .header(reqwest::header::ACCEPT, "application/json")
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body)
            .send()
            .await
            .map_err(|_| Unanswered)?;
        if !response.status().is_success() {
            return Err(Unanswered);
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|_| Unanswered)? {
            if bytes.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(Unanswered);
            }
            bytes.extend_from_slice(&chunk);
        }
        let answer: Value = serde_json::from_slice(&bytes).map_err(|_| Unanswered)?;
        Ok((answer["active"] == Value::Bool(true)).then_some(answer))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn introspection(bound: Duration) -> Introspection {
        Introspection {
            endpoint: "http://127.0.0.1:9/introspect".into(),
            client_id: "rs".into(),
            secret: "s".into(),
            bound,
            http: reqwest::Client::new(),
            cache: Mutex::new(HashMap::new()),
        }
    }

    #[test]
    fn an_answer_is_trusted_for_the_bound_and_no_longer() {
        let i = introspection(Duration::from_secs(5));
        let start = Instant::now();
        let key = [1u8; 32];
        i.keep(key, Some(json!({"active": true})), start);
        assert!(i.cached(&key, start + Duration::from_secs(4)).is_some());
        assert!(i.cached(&key, start + Duration::from_secs(5)).is_none());
        i.keep(key, None, start);
        assert_eq!(
            i.cached(&key, start),
            Some(None),
            "an inactive answer is kept too"
        );
    }

    #[test]
    fn the_cache_stays_within_its_bound() {
        let i = introspection(Duration::from_secs(5));
        let start = Instant::now();
        for n in 0..MAX_CACHED_ANSWERS as u32 {
            let mut key = [0u8; 32];
            key[..4].copy_from_slice(&n.to_be_bytes());
            i.keep(key, None, start);
        }
        i.keep([9u8; 32], None, start + Duration::from_secs(1));
        assert!(i.cache.lock().unwrap().len() <= MAX_CACHED_ANSWERS);
        // Past the bound, the old answers make room and the new one stays.
        i.keep([8u8; 32], None, start + Duration::from_secs(10));
        let cache = i.cache.lock().unwrap();
        assert!(cache.len() <= 2, "{}", cache.len());
        assert!(cache.contains_key(&[8u8; 32]));
    }

    #[tokio::test]
    async fn an_authorization_server_that_does_not_answer_leaves_the_token_unanswered() {
        let i = introspection(Duration::from_secs(5));
        assert_eq!(i.claims("opaque-token").await, Err(Unanswered));
    }
}
