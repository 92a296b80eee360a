//! DPoP (RFC 9449): a P-256 key of the host's that a sign-in's tokens are bound to, so a
//! stolen token is worthless without it, and a fresh proof of the key (a JWT naming the
//! request's method and URL, and the token it carries) on every request that sends one:
//! the token requests (`http.rs`, the authorization server's client) and the MCP requests
//! (`client.rs`). The key is made for the sign-in and kept with its tokens, in the
//! keychain or the 0600 file; a server's nonce (RFC 9449 §8, §9) is kept in memory.

use std::{collections::HashMap, sync::Mutex};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use jsonwebtoken::{
    Algorithm, EncodingKey, Header,
    jwk::{Jwk, ThumbprintHash},
};
use sha2::{Digest, Sha256};

/// The one algorithm the host signs proofs with (the one every DPoP server supports).
pub const DPOP_ALGORITHM: &str = "ES256";
/// Longest nonce kept from a server (a header value it chose).
pub const MAX_NONCE_CHARS: usize = 512;
/// Most servers (origins) whose nonce is kept: a sign-in speaks to its authorization
/// server and its MCP server, and a redirect or two.
const MAX_NONCE_ORIGINS: usize = 8;

/// A sign-in's DPoP key.
pub struct DpopKey {
    pkcs8: Vec<u8>,
    key: EncodingKey,
    jwk: Jwk,
    thumbprint: String,
    /// The last nonce each server (by origin) gave, sent in the next proof to it.
    nonces: Mutex<HashMap<String, String>>,
}

impl std::fmt::Debug for DpopKey {
    /// The private key stays out of debug output.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopKey")
            .field("thumbprint", &self.thumbprint)
            .finish_non_exhaustive()
    }
}

impl DpopKey {
    /// A new key, for a new sign-in.
    pub fn generate() -> Result<DpopKey, String> {
        use aws_lc_rs::{
            rand::SystemRandom,
            signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair},
        };
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
                .map_err(|_| "no DPoP key could be made".to_owned())?;
        DpopKey::from_pkcs8(pkcs8.as_ref())
    }

    /// The key kept as [`DpopKey::to_kept`] wrote it.
    pub fn from_kept(kept: &str) -> Result<DpopKey, String> {
        let der = URL_SAFE_NO_PAD
            .decode(kept.trim())
            .map_err(|_| "the kept DPoP key is damaged".to_owned())?;
        DpopKey::from_pkcs8(&der)
    }

    fn from_pkcs8(der: &[u8]) -> Result<DpopKey, String> {
        let key = EncodingKey::from_ec_der(der);
        let jwk = Jwk::from_encoding_key(&key, Algorithm::ES256)
            .map_err(|e| format!("the DPoP key is unusable: {e}"))?;
        let thumbprint = jwk
            .thumbprint(ThumbprintHash::SHA256)
            .map_err(|e| format!("the DPoP key is unusable: {e}"))?;
        Ok(DpopKey {
            pkcs8: der.to_vec(),
            key,
            jwk,
            thumbprint,
            nonces: Mutex::new(HashMap::new()),
        })
    }

    /// The key as the store keeps it (a secret).
    pub fn to_kept(&self) -> String {
        URL_SAFE_NO_PAD.encode(&self.pkcs8)
    }

    /// Its JWK thumbprint (RFC 7638), the `jkt` a bound token names.
    pub fn thumbprint(&self) -> &str {
        &self.thumbprint
    }

    /// Keep the nonce the server at `url` gave (a visible ASCII header value, bounded);
    /// whether it was kept.
    pub fn set_nonce(&self, url: &str, nonce: &str) -> bool {
        let fits = !nonce.is_empty()
            && nonce.len() <= MAX_NONCE_CHARS
            && nonce.bytes().all(|b| b.is_ascii_graphic());
        let mut nonces = self.nonces.lock().unwrap_or_else(|e| e.into_inner());
        let origin = origin(url);
        if !fits || (nonces.len() >= MAX_NONCE_ORIGINS && !nonces.contains_key(&origin)) {
            return false;
        }
        nonces.insert(origin, nonce.to_owned());
        true
    }

    /// The nonce the next proof to `url` carries.
    pub fn nonce(&self, url: &str) -> Option<String> {
        self.nonces
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&origin(url))
            .cloned()
    }

    /// A fresh proof for a `method` request to `url` (its query and fragment left out),
    /// carrying `access_token`'s hash when the request sends one, and the kept nonce.
    pub fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
    ) -> Result<String, String> {
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("dpop+jwt".into());
        header.jwk = Some(self.jwk.clone());
        let mut claims = serde_json::json!({
            "jti": uuid(),
            "htm": method,
            "htu": target(url),
            "iat": std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        });
        if let Some(token) = access_token {
            claims["ath"] = URL_SAFE_NO_PAD
                .encode(Sha256::digest(token.as_bytes()))
                .into();
        }
        if let Some(nonce) = self.nonce(url) {
            claims["nonce"] = nonce.into();
        }
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|e| format!("the DPoP proof could not be signed: {e}"))
    }
}

/// `url` without its query and fragment (RFC 9449 §4.2, `htu`).
fn target(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        }
        Err(_) => url.split(['?', '#']).next().unwrap_or(url).to_owned(),
    }
}

/// The origin of `url` (scheme, host, port), which a nonce belongs to.
fn origin(url: &str) -> String {
    reqwest::Url::parse(url).map_or_else(|_| url.to_owned(), |u| u.origin().ascii_serialization())
}

/// A random identifier for a proof (128 bits).
fn uuid() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Whether a `WWW-Authenticate` challenge asks for DPoP (its scheme).
pub fn challenge_is_dpop(challenge: &str) -> bool {
    challenge
        .split_whitespace()
        .next()
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("DPoP"))
}

/// Whether a challenge or an error says the server wants a (new) nonce.
pub fn asks_for_nonce(text: &str) -> bool {
    text.contains("use_dpop_nonce")
}

#[cfg(test)]
mod tests {
    use jsonwebtoken::{DecodingKey, Validation, decode, decode_header};

    use super::*;

    #[test]
    fn a_proof_names_the_request_and_the_token_and_verifies_with_its_own_key() {
        let key = DpopKey::generate().unwrap();
        key.set_nonce("https://mcp.example.com/other", "n-1");
        let token = "access-token";
        let proof = key
            .proof("POST", "https://mcp.example.com/mcp?x=1#f", Some(token))
            .unwrap();
        let header = decode_header(&proof).unwrap();
        assert_eq!(header.typ.as_deref(), Some("dpop+jwt"));
        let jwk = header.jwk.unwrap();
        assert!(!serde_json::to_string(&jwk).unwrap().contains("\"d\""));
        assert_eq!(
            jwk.thumbprint(ThumbprintHash::SHA256).unwrap(),
            key.thumbprint()
        );
        let mut validation = Validation::new(Algorithm::ES256);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        let claims =
            decode::<serde_json::Value>(&proof, &DecodingKey::from_jwk(&jwk).unwrap(), &validation)
                .unwrap()
                .claims;
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example.com/mcp");
        assert_eq!(claims["nonce"], "n-1");
        assert_eq!(
            claims["ath"],
            URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()))
        );
        let again = key
            .proof("POST", "https://mcp.example.com/mcp", None)
            .unwrap();
        let jti = |p: &str| {
            decode::<serde_json::Value>(
                p,
                &DecodingKey::from_jwk(&decode_header(p).unwrap().jwk.unwrap()).unwrap(),
                &validation,
            )
            .unwrap()
            .claims["jti"]
                .clone()
        };
        assert_ne!(jti(&proof), jti(&again), "every proof is fresh");
    }

    #[test]
    fn a_kept_key_is_the_same_key_and_a_damaged_one_is_refused() {
        let key = DpopKey::generate().unwrap();
        let back = DpopKey::from_kept(&key.to_kept()).unwrap();
        assert_eq!(back.thumbprint(), key.thumbprint());
        assert!(!format!("{key:?}").contains(&key.to_kept()));
        assert!(DpopKey::from_kept("!!").is_err());
    }

    #[test]
    fn a_nonce_is_kept_only_when_it_is_a_plain_bounded_value() {
        let key = DpopKey::generate().unwrap();
        let at = "https://as.example.com/token";
        assert!(!key.set_nonce(at, "bad\u{1b}[2J"));
        assert!(!key.set_nonce(at, &"n".repeat(MAX_NONCE_CHARS + 1)));
        assert!(!key.set_nonce(at, ""));
        assert_eq!(key.nonce(at), None);
        assert!(key.set_nonce(at, "good"));
        assert_eq!(
            key.nonce("https://as.example.com/other").as_deref(),
            Some("good")
        );
        assert_eq!(
            key.nonce("https://mcp.example.com/mcp"),
            None,
            "a nonce is its server's"
        );
        for i in 0..MAX_NONCE_ORIGINS {
            key.set_nonce(&format!("https://s{i}.example.com/"), "n");
        }
        assert!(key.nonces.lock().unwrap().len() <= MAX_NONCE_ORIGINS);
        assert!(challenge_is_dpop("DPoP error=\"use_dpop_nonce\""));
        assert!(!challenge_is_dpop("Bearer resource_metadata=\"x\""));
    }
}
