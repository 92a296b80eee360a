//! Credentials kept out of everything the host shows, records or hands the model.
//!
//! The host knows some secrets: the header values of the servers file, credentials in a
//! server's URL, and environment values whose names say they are secrets. A server may
//! echo them back (in an error, a result, its `data`), and a URL may carry them in its
//! query. [`Secrets`] replaces every known secret with [`REDACTED`] wherever a text is
//! shown (steps, errors), recorded (`--record`, lab events) or put in the model's context;
//! [`url`] shows a URL without its user-info and query values.

use std::{
    borrow::Cow,
    sync::{Arc, RwLock},
};

use serde_json::Value;

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";
/// Shorter values are not treated as secrets: replacing every `1` or `yes` would make
/// the run unreadable, and so short a credential protects nothing anyway.
pub const MIN_SECRET_CHARS: usize = 8;

/// Words that mark an environment variable's value as a secret (`GITHUB_TOKEN`,
/// `OPENAI_API_KEY`, `DB_PASSWORD`).
const SECRET_NAME_WORDS: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "KEY",
    "AUTH",
    "CREDENTIAL",
    "COOKIE",
    "SESSION",
];

/// Does a variable's name say its value is a secret?
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAME_WORDS.iter().any(|w| upper.contains(w))
}

/// The secrets this host knows, shared by everything that shows or records text.
#[derive(Clone, Default)]
pub struct Secrets(Arc<RwLock<Vec<String>>>);

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} known)", self.read().len())
    }
}

impl Secrets {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<String>> {
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Remember a secret (at least [`MIN_SECRET_CHARS`] long). Longer secrets are
    /// replaced first, so one that contains another is never half shown.
    pub fn add(&self, secret: &str) {
        let secret = secret.trim();
        if secret.chars().count() < MIN_SECRET_CHARS {
            return;
        }
        let mut all = self.0.write().unwrap_or_else(|e| e.into_inner());
        if !all.iter().any(|s| s == secret) {
            all.push(secret.to_owned());
            all.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }

    /// No secret known: nothing to replace.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// `text` with every known secret replaced by [`REDACTED`].
    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let all = self.read();
        let mut out = Cow::Borrowed(text);
        for secret in all.iter() {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
            }
        }
        out
    }

    /// Replace every known secret in the strings (and keys) of a JSON value, in place.
    pub fn json(&self, value: &mut Value) {
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(s) => {
                if let Cow::Owned(clean) = self.text(s) {
                    *s = clean;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.json(v)),
            Value::Object(map) => {
                let entries = std::mem::take(map);
                for (k, mut v) in entries {
                    self.json(&mut v);
                    map.insert(self.text(&k).into_owned(), v);
                }
            }
            _ => {}
        }
    }
}

/// A URL as it may be shown: user-info and query values replaced by [`REDACTED`]
/// (`https://me:pw@x/mcp?api_key=k` shows as `https://[redacted]@x/mcp?api_key=[redacted]`).
pub fn url(url: &str) -> String {
    let (base, fragment) = match url.split_once('#') {
        Some((b, _)) => (b, "#…"),
        None => (url, ""),
    };
    let (head, query) = match base.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (base, None),
    };
    let head = match head.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let (authority, path) = rest.split_at(authority_end);
            match authority.rsplit_once('@') {
                Some((_, host)) => format!("{scheme}://{REDACTED}@{host}{path}"),
                None => head.to_owned(),
            }
        }
        None => head.to_owned(),
    };
    let query = query.map(|q| {
        q.split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _)) => format!("{k}={REDACTED}"),
                None => pair.to_owned(),
            })
            .collect::<Vec<_>>()
            .join("&")
    });
    match query {
        Some(q) => format!("{head}?{q}{fragment}"),
        None => format!("{head}{fragment}"),
    }
}

/// The secrets in a URL: its user-info and every query value.
pub fn url_secrets(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    let base = url.split('#').next().unwrap_or(url);
    let (head, query) = match base.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (base, None),
    };
    if let Some((_, rest)) = head.split_once("://") {
        let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
        if let Some((info, _)) = authority.rsplit_once('@') {
            out.push(info.to_owned());
            if let Some((_, password)) = info.split_once(':') {
                out.push(password.to_owned());
            }
        }
    }
    for pair in query.into_iter().flat_map(|q| q.split('&')) {
        if let Some((_, v)) = pair.split_once('=') {
            out.push(v.to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn urls_are_shown_without_their_credentials() {
        assert_eq!(
            url("https://me:pw12345678@desk.example.com/mcp?api_key=k&x=1#frag"),
            "https://[redacted]@desk.example.com/mcp?api_key=[redacted]&x=[redacted]#…"
        );
        assert_eq!(
            url("http://127.0.0.1:8931/mcp"),
            "http://127.0.0.1:8931/mcp"
        );
        assert_eq!(
            url_secrets("https://me:pw@x/mcp?api_key=abc"),
            ["me:pw", "pw", "abc"]
        );
    }

    #[test]
    fn known_secrets_are_replaced_in_text_and_json() {
        let s = Secrets::default();
        s.add("short");
        s.add("sk-live-1234567890");
        assert_eq!(s.text("short and sweet"), "short and sweet");
        assert_eq!(
            s.text("your key is sk-live-1234567890."),
            "your key is [redacted]."
        );
        let mut v = json!({"error": {"data": ["Bearer sk-live-1234567890"]}});
        s.json(&mut v);
        assert_eq!(v, json!({"error": {"data": ["Bearer [redacted]"]}}));
        assert!(is_secret_name("GITHUB_TOKEN") && is_secret_name("openai_api_key"));
        assert!(!is_secret_name("MCP_USER"));
    }
}
