//! DPoP-bound access tokens (RFC 9449) at the resource server: a token whose `cnf.jkt`
//! names a key is accepted only with a proof of that key, and a proof only once.
//!
//! A proof (the `DPoP` header, RFC 9449 §4.3) is a JWT of type `dpop+jwt`, signed with an
//! accepted asymmetric algorithm by the public key in its own header (no private part),
//! naming this request's method (`htm`) and this resource's URL (`htu`, without query or
//! fragment), issued within [`PROOF_WINDOW`] of now (`iat`), carrying the hash of the
//! token it comes with (`ath`) and a `jti` not seen before within the window. The replay
//! memory is this process's, bounded by [`MAX_REMEMBERED_PROOFS`]: a proof is refused
//! rather than a proof forgotten, so a flood costs the flooder, never the check.

use std::{collections::HashMap, sync::Mutex, time::Duration};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use jsonwebtoken::{
    Algorithm, DecodingKey, Validation,
    jwk::{Jwk, ThumbprintHash},
};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::ALGORITHMS;

/// How far a proof's `iat` may be from now, either way.
pub const PROOF_WINDOW: Duration = Duration::from_secs(60);
/// Most proofs remembered at once (each for twice [`PROOF_WINDOW`]).
pub const MAX_REMEMBERED_PROOFS: usize = 100_000;
/// The longest proof looked at.
pub const MAX_PROOF_BYTES: usize = 8 * 1024;
/// The longest `jti` remembered.
const MAX_JTI_CHARS: usize = 256;

/// Whether access tokens must be bound to a key (`--oauth-dpop`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum DpopPolicy {
    /// Bearer tokens and DPoP-bound ones (a bound token still only with its proof).
    #[default]
    Allowed,
    /// DPoP-bound tokens only: a bearer token is refused, and a 401 asks for DPoP.
    Required,
}

/// How a request presents its access token (the `Authorization` scheme).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `Bearer` (RFC 6750).
    Bearer,
    /// `DPoP` (RFC 9449 §7.1), with a proof in the `DPoP` header.
    Dpop,
}

/// An access token as a request presents it.
#[derive(Debug, Clone, Copy)]
pub struct Presented<'a> {
    /// Its scheme.
    pub scheme: Scheme,
    /// The token.
    pub token: &'a str,
    /// The `DPoP` header, if any.
    pub proof: Option<&'a str>,
    /// The request's method (a proof's `htm`).
    pub method: &'a str,
}

impl<'a> Presented<'a> {
    /// The scheme and token of an `Authorization` value, if it is `Bearer` or `DPoP`.
    pub fn read(authorization: &'a str) -> Option<(Scheme, &'a str)> {
        let (scheme, token) = authorization.trim().split_once(' ')?;
        let token = token.trim();
        if token.is_empty() {
            return None;
        }
        if scheme.eq_ignore_ascii_case("bearer") {
            Some((Scheme::Bearer, token))
        } else if scheme.eq_ignore_ascii_case("dpop") {
            Some((Scheme::Dpop, token))
        } else {
            None
        }
    }
}

/// Why a proof was refused (RFC 9449 §7.1: `invalid_dpop_proof`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProofRefusal {
    /// None came with a DPoP-bound token.
    Missing,
    /// Not a proof JWT (type, algorithm, key, signature, size).
    Malformed,
    /// For another method or URL.
    Target,
    /// Issued too long ago, or in the future.
    Stale,
    /// Not for the token it came with (`ath`).
    Token,
    /// Signed with another key than the token is bound to (`cnf.jkt`).
    Key,
    /// Seen before.
    Replayed,
    /// The memory of proofs is full: refused until it empties.
    Busy,
}

impl ProofRefusal {
    /// The `error_description`, and the reason the log gives.
    pub fn description(self) -> &'static str {
        match self {
            ProofRefusal::Missing => {
                "the access token is bound to a key (DPoP): send it with a DPoP proof"
            }
            ProofRefusal::Malformed => "the DPoP proof is not a signed dpop+jwt with a public key",
            ProofRefusal::Target => "the DPoP proof is for another method or URL",
            ProofRefusal::Stale => "the DPoP proof was not made now",
            ProofRefusal::Token => "the DPoP proof is for another access token (ath)",
            ProofRefusal::Key => {
                "the DPoP proof is signed with another key than the token is bound to"
            }
            ProofRefusal::Replayed => "the DPoP proof was used before",
            ProofRefusal::Busy => "too many DPoP proofs at once: try again shortly",
        }
    }

    /// One word for the log.
    pub fn word(self) -> &'static str {
        match self {
            ProofRefusal::Missing => "dpop_missing",
            ProofRefusal::Malformed => "dpop_malformed",
            ProofRefusal::Target => "dpop_target",
            ProofRefusal::Stale => "dpop_stale",
            ProofRefusal::Token => "dpop_ath",
            ProofRefusal::Key => "dpop_key",
            ProofRefusal::Replayed => "dpop_replayed",
            ProofRefusal::Busy => "dpop_busy",
        }
    }
}

/// The proofs seen, by `jti`, each with when it may be forgotten (seconds since 1970).
#[derive(Default)]
pub struct Proofs {
    seen: Mutex<HashMap<String, u64>>,
}

/// `url` as a proof's `htu` is compared: without query, fragment or a trailing slash.
fn target(url: &str) -> String {
    let bare = url.split(['?', '#']).next().unwrap_or(url);
    match reqwest::Url::parse(bare) {
        Ok(u) => u.as_str().trim_end_matches('/').to_owned(),
        Err(_) => bare.trim_end_matches('/').to_owned(),
    }
}

/// The base64url SHA-256 of `text` (a token's `ath`).
pub fn hash(text: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(text.as_bytes()))
}

impl Proofs {
    /// Check `proof` for a `method` request to `resource` carrying `token`, bound to the key
    /// whose thumbprint is `jkt`, at `now` (seconds since 1970).
    pub fn check(
        &self,
        proof: &str,
        method: &str,
        resource: &str,
        token: &str,
        jkt: &str,
        now: u64,
    ) -> Result<(), ProofRefusal> {
        let claims = verified(proof)?;
        let (jwk_thumbprint, claims) = claims;
        let text = |name: &str| claims[name].as_str();
        if text("htm") != Some(method)
            || text("htu").map(target).as_deref() != Some(target(resource).as_str())
            || text("htu").is_some_and(|u| u.contains(['?', '#']))
        {
            return Err(ProofRefusal::Target);
        }
        let window = PROOF_WINDOW.as_secs();
        match claims["iat"].as_u64() {
            Some(iat) if iat.abs_diff(now) <= window => {}
            _ => return Err(ProofRefusal::Stale),
        }
        if text("ath") != Some(hash(token).as_str()) {
            return Err(ProofRefusal::Token);
        }
        if jwk_thumbprint != jkt {
            return Err(ProofRefusal::Key);
        }
        let jti = text("jti")
            .filter(|j| !j.is_empty() && j.chars().count() <= MAX_JTI_CHARS)
            .ok_or(ProofRefusal::Malformed)?;
        self.remember(jti, now + 2 * window, now)
    }

    /// [`Proofs::remember`], for tests.
    #[cfg(test)]
    pub fn remember_for_tests(&self, jti: &str, until: u64, now: u64) -> Result<(), ProofRefusal> {
        self.remember(jti, until, now)
    }

    /// Remember `jti` until `until`; refuse one seen already, or when the memory is full
    /// of proofs still in their window.
    fn remember(&self, jti: &str, until: u64, now: u64) -> Result<(), ProofRefusal> {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.get(jti).is_some_and(|&t| t > now) {
            return Err(ProofRefusal::Replayed);
        }
        if seen.len() >= MAX_REMEMBERED_PROOFS {
            seen.retain(|_, &mut t| t > now);
            if seen.len() >= MAX_REMEMBERED_PROOFS {
                return Err(ProofRefusal::Busy);
            }
        }
        seen.insert(jti.to_owned(), until);
        Ok(())
    }
}

/// The members of a JWK that belong to a private or secret key (RFC 7518 §6).
const PRIVATE_MEMBERS: &[&str] = &["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

/// Whether the key in a proof's header holds a private part, which would make the proof
/// worthless (RFC 9449 §4.2). Read from the header as sent: the parsed key type keeps only
/// the public members, so a private one would pass unseen there.
fn holds_a_private_key(proof: &str) -> bool {
    let Some(raw) = proof
        .split('.')
        .next()
        .and_then(|h| URL_SAFE_NO_PAD.decode(h).ok())
        .and_then(|h| serde_json::from_slice::<Value>(&h).ok())
    else {
        return true;
    };
    let jwk = &raw["jwk"];
    !jwk.is_object() || PRIVATE_MEMBERS.iter().any(|m| jwk.get(m).is_some())
}

/// The thumbprint of a proof's key and its claims, once its type, algorithm, public key
/// and signature are right.
fn verified(proof: &str) -> Result<(String, Value), ProofRefusal> {
    if proof.len() > MAX_PROOF_BYTES || proof.split('.').count() != 3 {
        return Err(ProofRefusal::Malformed);
    }
    let header = jsonwebtoken::decode_header(proof).map_err(|_| ProofRefusal::Malformed)?;
    if !header
        .typ
        .as_deref()
        .is_some_and(|t| t.eq_ignore_ascii_case("dpop+jwt"))
        || !ALGORITHMS.contains(&header.alg)
    {
        return Err(ProofRefusal::Malformed);
    }
    let jwk: Jwk = header.jwk.ok_or(ProofRefusal::Malformed)?;
    if holds_a_private_key(proof) {
        return Err(ProofRefusal::Malformed);
    }
    let key = DecodingKey::from_jwk(&jwk).map_err(|_| ProofRefusal::Malformed)?;
    let mut validation = Validation::new(header.alg);
    validation.algorithms = vec![header.alg];
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_aud = false;
    let data = jsonwebtoken::decode::<Value>(proof, &key, &validation)
        .map_err(|_| ProofRefusal::Malformed)?;
    let thumbprint = jwk
        .thumbprint(ThumbprintHash::SHA256)
        .map_err(|_| ProofRefusal::Malformed)?;
    Ok((thumbprint, data.claims))
}

/// The algorithms a proof may be signed with, as `dpop_signing_alg_values_supported` and a
/// DPoP challenge's `algs` name them.
pub fn algorithm_names() -> Vec<&'static str> {
    ALGORITHMS
        .iter()
        .map(|a| match a {
            Algorithm::RS256 => "RS256",
            Algorithm::RS384 => "RS384",
            Algorithm::RS512 => "RS512",
            Algorithm::PS256 => "PS256",
            Algorithm::PS384 => "PS384",
            Algorithm::PS512 => "PS512",
            Algorithm::ES256 => "ES256",
            Algorithm::ES384 => "ES384",
            _ => "EdDSA",
        })
        .collect()
}
