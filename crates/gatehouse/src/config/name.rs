//! A server's name in the servers file, checked once where the file is read: the
//! namespace of its tools, the key of its connection, and what the person reads.

use std::{borrow::Borrow, fmt, ops::Deref};

use serde::{Deserialize, Serialize};

use super::NAMESPACE_SEPARATOR;
use crate::text::is_invisible;

/// Longest server name, in characters: its tools are named `NAME__TOOL`, and a model's
/// API takes tool names of 64 characters at most.
pub const MAX_SERVER_NAME_CHARS: usize = 64;

/// A server's name, as checked: not empty, at most [`MAX_SERVER_NAME_CHARS`], nothing a
/// terminal would act on or a person could not see (a plain space is fine), and its tools' names read one way
/// only (no [`NAMESPACE_SEPARATOR`] in it, no `_` at its end). Made by
/// [`ServerName::parse`] only; it reads as the text it is (`Deref<Target = str>`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ServerName(String);

impl ServerName {
    /// `name` as a server's name, or why it cannot be one (said so that the person can
    /// rename the server).
    pub fn parse(name: &str) -> Result<ServerName, String> {
        let count = name.chars().count();
        if count == 0 {
            return Err("the name is empty: give the server a name".into());
        }
        if count > MAX_SERVER_NAME_CHARS {
            return Err(format!(
                "the name is {count} characters long, more than {MAX_SERVER_NAME_CHARS}: rename the server"
            ));
        }
        // A plain space is read as written (`"My desk"`); other spaces and controls not.
        let hidden = |c: char| c.is_control() || (c.is_whitespace() && c != ' ') || is_invisible(c);
        if let Some(c) = name.chars().find(|c| hidden(*c)) {
            return Err(format!(
                "the name holds a character a person cannot read as written (U+{:04X}): rename the server",
                c as u32
            ));
        }
        if name.contains(NAMESPACE_SEPARATOR) || name.ends_with('_') {
            // `x` with a tool `y__write` and `x__y` with `write` would both be
            // `x__y__write`, and a rule written for one would run the other.
            return Err(format!(
                "the name must not hold \"{NAMESPACE_SEPARATOR}\" or end with \"_\": its tools are named {name}{NAMESPACE_SEPARATOR}TOOL, which must read one way only; rename the server"
            ));
        }
        Ok(ServerName(name.to_owned()))
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for ServerName {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for ServerName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for ServerName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ServerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for ServerName {
    type Error = String;
    fn try_from(name: String) -> Result<ServerName, String> {
        ServerName::parse(&name)
    }
}

impl From<ServerName> for String {
    fn from(name: ServerName) -> String {
        name.0
    }
}

impl PartialEq<str> for ServerName {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<String> for ServerName {
    fn eq(&self, other: &String) -> bool {
        self.0 == *other
    }
}

impl PartialEq<&str> for ServerName {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// A server's name as a test writes it; a name [`ServerName::parse`] refuses fails the
/// test.
#[cfg(any(test, feature = "testing"))]
pub fn server_name(name: &str) -> ServerName {
    ServerName::parse(name).unwrap_or_else(|e| panic!("server name {name:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_checked_once_and_each_refusal_says_why() {
        for good in [
            "desk",
            "cmdb-prod",
            "orders_v2",
            "My desk",
            "Ärzte",
            &"x".repeat(64),
        ] {
            assert_eq!(ServerName::parse(good).unwrap(), *good);
        }
        let refused = [
            ("", "empty"),
            (&"x".repeat(65) as &str, "65 characters"),
            ("\u{1b}[31mred", "U+001B"),
            ("my\tdesk", "U+0009"),
            ("my\u{a0}desk", "U+00A0"),
            ("desk\u{200b}", "U+200B"),
            ("a__b", "must not hold"),
            ("desk_", "must not hold"),
        ];
        for (bad, why) in refused {
            let err = ServerName::parse(bad).unwrap_err();
            assert!(err.contains(why), "{bad:?}: {err}");
        }
        let read: Result<ServerName, _> = serde_json::from_str("\"a__b\"");
        assert!(read.is_err(), "a name read back is checked as well");
    }
}
