//! Who is calling over HTTP: bearer tokens mapped to a user and the organization the token
//! acts in, read from a tokens file.
//!
//! The file is a JSON array; each entry names a user, the tenant, and the SHA-256 of the
//! token as 64 hex digits (an optional `client` names the client in the logs):
//!
//! ```json
//! [{"user": "usr-sam", "tenant": "larkfield", "sha256": "<hex>", "client": "sam-laptop"}]
//! ```
//!
//! Only hashes are stored, so the file gives no one a token. Make a token and its hash
//! with `openssl rand -hex 32` and `printf %s "$TOKEN" | sha256sum`. A presented token is
//! hashed and compared with every entry in constant time.

use std::path::Path;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::Caller;

/// The client name a token's requests are logged under when its entry names none.
pub const DEFAULT_HTTP_CLIENT: &str = "http";
/// Most entries a tokens file may hold (it is read whole at start).
pub const MAX_TOKENS: usize = 10_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    user: String,
    tenant: String,
    sha256: String,
    #[serde(default)]
    client: Option<String>,
}

/// The tokens a server accepts, each with the caller it stands for.
#[derive(Debug, Clone)]
pub struct Tokens {
    entries: Vec<([u8; 32], Caller)>,
}

/// The SHA-256 of a token, as the 64 lowercase hex digits a tokens file stores.
pub fn hash_token(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn parse_hex32(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim();
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// Equal or not, in time that does not depend on where two digests differ.
fn digests_equal(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b.iter()) {
        diff |= std::hint::black_box(x ^ y);
    }
    std::hint::black_box(diff) == 0
}

impl Tokens {
    /// Read a tokens file. Every problem names the file and the entry.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read the tokens file {}: {e}", path.display()))?;
        Self::from_json(&text)
            .map_err(|e| anyhow::anyhow!("the tokens file {}: {e}", path.display()))
    }

    /// Parse the tokens file's JSON.
    pub fn from_json(text: &str) -> anyhow::Result<Self> {
        let raw: Vec<Entry> = serde_json::from_str(text).map_err(|e| {
            anyhow::anyhow!(
                "{e} (expected [{{\"user\": …, \"tenant\": …, \"sha256\": \"<64 hex digits>\"}}, …])"
            )
        })?;
        anyhow::ensure!(!raw.is_empty(), "it holds no tokens");
        anyhow::ensure!(
            raw.len() <= MAX_TOKENS,
            "it holds {} tokens, more than {MAX_TOKENS}",
            raw.len()
        );
        let mut entries: Vec<([u8; 32], Caller)> = Vec::with_capacity(raw.len());
        for (i, e) in raw.into_iter().enumerate() {
            let digest = parse_hex32(&e.sha256).ok_or_else(|| {
                anyhow::anyhow!(
                    "entry {i}: \"sha256\" must be 64 hex digits (printf %s TOKEN | sha256sum)"
                )
            })?;
            let (user, tenant) = (e.user.trim().to_owned(), e.tenant.trim().to_owned());
            anyhow::ensure!(
                !user.is_empty() && !tenant.is_empty(),
                "entry {i}: \"user\" and \"tenant\" must not be empty"
            );
            anyhow::ensure!(
                !entries.iter().any(|(d, _)| *d == digest),
                "entry {i}: the same token is listed twice"
            );
            let client = e
                .client
                .map(|c| c.trim().to_owned())
                .filter(|c| !c.is_empty())
                .unwrap_or_else(|| DEFAULT_HTTP_CLIENT.into());
            entries.push((
                digest,
                Caller {
                    user,
                    tenant,
                    client,
                },
            ));
        }
        Ok(Tokens { entries })
    }

    /// How many tokens there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none (never true for a loaded file).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The caller a token stands for. Every entry is compared, whichever matches.
    pub fn caller_for(&self, token: &str) -> Option<Caller> {
        let presented: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let mut found = None;
        for (digest, caller) in &self.entries {
            if digests_equal(digest, &presented) {
                found = Some(caller);
            }
        }
        found.cloned()
    }
}

/// The token in an `Authorization: Bearer <token>` value (the scheme is case-insensitive).
pub fn bearer_token(authorization: &str) -> Option<&str> {
    let (scheme, token) = authorization.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(entries: &[(&str, &str, &str)]) -> String {
        serde_json::to_string(
            &entries
                .iter()
                .map(|(u, t, token)| {
                    serde_json::json!({"user": u, "tenant": t, "sha256": hash_token(token)})
                })
                .collect::<Vec<_>>(),
        )
        .unwrap()
    }

    #[test]
    fn a_token_maps_to_its_caller_and_nothing_else_does() {
        let tokens = Tokens::from_json(&file(&[
            ("usr-sam", "larkfield", "s3cret-a"),
            ("usr-omar", "larkfield", "s3cret-b"),
        ]))
        .unwrap();
        assert_eq!(tokens.len(), 2);
        let sam = tokens.caller_for("s3cret-a").unwrap();
        assert_eq!(
            (sam.user.as_str(), sam.tenant.as_str()),
            ("usr-sam", "larkfield")
        );
        assert_eq!(sam.client, DEFAULT_HTTP_CLIENT);
        assert_eq!(tokens.caller_for("s3cret-b").unwrap().user, "usr-omar");
        assert!(tokens.caller_for("s3cret-c").is_none());
        assert!(tokens.caller_for("").is_none());
        // The hash itself is not a token.
        assert!(tokens.caller_for(&hash_token("s3cret-a")).is_none());
    }

    #[test]
    fn the_hash_is_what_sha256sum_prints() {
        // printf %s abc | sha256sum
        assert_eq!(
            hash_token("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(digests_equal(&[7; 32], &[7; 32]));
        let mut other = [7; 32];
        other[31] = 8;
        assert!(!digests_equal(&[7; 32], &other));
    }

    #[test]
    fn broken_files_are_refused_with_the_reason() {
        let err = |text: &str| Tokens::from_json(text).unwrap_err().to_string();
        assert!(err("[]").contains("no tokens"));
        assert!(err("{}").contains("expected ["));
        assert!(err(r#"[{"user":"u","tenant":"t","sha256":"abc"}]"#).contains("64 hex digits"));
        let h = hash_token("x");
        assert!(err(&format!(r#"[{{"user":"","tenant":"t","sha256":"{h}"}}]"#)).contains("empty"));
        assert!(
            err(&format!(
                r#"[{{"user":"u","tenant":"t","sha256":"{h}"}},{{"user":"v","tenant":"t","sha256":"{h}"}}]"#
            ))
            .contains("twice")
        );
        assert!(
            err(&format!(
                r#"[{{"user":"u","tenant":"t","sha256":"{h}","role":"admin"}}]"#
            ))
            .contains("unknown field")
        );
    }

    #[test]
    fn bearer_values() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer   abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer "), None);
        assert_eq!(bearer_token("abc"), None);
    }
}
