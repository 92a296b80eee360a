//! Paths compared as a server would read them, without touching any file system: `.` and
//! `..` resolved, repeated separators folded, so `/home/me/project/../../etc/passwd` is
//! `/etc/passwd` and is not inside `/home/me/project`.
//!
//! Both `/` and `\` separate (a server on Windows reads `\`); treating `\` as a separator
//! can only make a path look less inside, never more.
//!
//! What a server might read differently is not judged: a path holding a percent escape of
//! `.`, `/`, `\` or `%` (`%2e%2e`, a server that decodes URLs climbs out), a NUL or another
//! control character, or a look-alike of a dot or a slash (`‥`, `．`, `∕`: a server that
//! normalises Unicode reads `..`) cannot be told inside, so `inside` never allows it.
//!
//! Where the path exists on this machine, symbolic links are resolved too (the longest
//! part that exists, canonicalised; the rest, which does not exist, read lexically), and
//! so are the rule's folders. When the resolved answer and the lexical one differ (a link
//! inside the folder pointing out of it, or a server on another machine reading the path
//! without that link) it cannot be told either. A path that does not exist here is judged
//! lexically alone: a server that follows a symbolic link it creates later, or one on its
//! own machine, is still the server's to refuse.

/// A path as components, and whether it began at the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalised {
    /// It began with a separator.
    pub absolute: bool,
    /// Its components, `.` and `..` resolved; a relative path keeps its leading `..`.
    pub parts: Vec<String>,
}

impl Normalised {
    /// The path written back with `/`: `/etc/passwd`, `a/b`, `.` for an empty relative one.
    pub fn text(&self) -> String {
        let joined = self.parts.join("/");
        match (self.absolute, joined.is_empty()) {
            (true, _) => format!("/{joined}"),
            (false, true) => ".".into(),
            (false, false) => joined,
        }
    }

    /// Is this path `dir` itself or below it? Only an absolute path is inside an absolute
    /// folder; a relative one could be relative to anything, so it is not.
    pub fn is_inside(&self, dir: &Normalised) -> bool {
        self.absolute == dir.absolute
            && self.parts.len() >= dir.parts.len()
            && self.parts.iter().zip(&dir.parts).all(|(a, b)| a == b)
            && self.parts.first().is_none_or(|p| p != "..")
    }
}

/// `path` with `.` and `..` resolved and separators folded. `..` at the root stays at the
/// root, as the system does (`/../etc` is `/etc`).
pub fn normalise(path: &str) -> Normalised {
    let absolute = path.starts_with(['/', '\\']);
    let mut parts: Vec<String> = Vec::new();
    for part in path.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => match parts.last() {
                Some(last) if last != ".." => {
                    parts.pop();
                }
                _ if absolute => {}
                _ => parts.push("..".into()),
            },
            other => parts.push(other.to_owned()),
        }
    }
    Normalised { absolute, parts }
}

/// Characters a server may read as a dot or a slash (Unicode compatibility forms and
/// look-alikes), which no honest path needs.
const LOOKALIKES: &[char] = &[
    '\u{2024}', '\u{2025}', '\u{2026}', '\u{FE52}', '\u{FF0E}', '\u{3002}',
    '\u{FF61}', // dots
    '\u{2215}', '\u{2044}', '\u{29F8}', '\u{FF0F}', '\u{2216}', '\u{29F5}', '\u{29F9}', '\u{FE68}',
    '\u{FF3C}', // slashes
];
/// The bytes whose percent escapes a path may not hold: `.`, `/`, `\`, and `%` itself (a
/// double escape).
const ESCAPED: &[u8] = b"./\\%";
/// Most components of a path resolved on this file system; a longer one cannot be told.
pub const MAX_RESOLVED_COMPONENTS: usize = 256;

/// Is `path` (normalised first) inside one of `dirs` (normalised when the rule was read)?
/// `None` when it cannot be told (see the module's opening).
pub fn inside_any(path: &str, dirs: &[Normalised]) -> Option<bool> {
    if ambiguous(path) {
        return None;
    }
    let lexical = normalise(path);
    let by_text = dirs.iter().any(|d| lexical.is_inside(d));
    let resolved = resolve(path)?;
    let by_files = dirs.iter().any(|d| {
        let dir = resolve(&d.text()).unwrap_or_else(|| d.clone());
        resolved.is_inside(&dir)
    });
    (by_text == by_files).then_some(by_text)
}

/// Does `path` hold something a server may read as another path: an escaped dot,
/// separator or escape, a control character, a look-alike of a dot or a slash?
pub fn ambiguous(path: &str) -> bool {
    let escaped = path.as_bytes().windows(3).any(|w| {
        w[0] == b'%'
            && std::str::from_utf8(&w[1..])
                .ok()
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                .is_some_and(|byte| ESCAPED.contains(&byte))
    });
    escaped
        || path
            .chars()
            .any(|c| c.is_control() || LOOKALIKES.contains(&c))
}

/// `path` as this machine's file system reads it: the longest part of it that exists,
/// canonicalised (links resolved), and the rest appended lexically; the lexical reading
/// when no part of it can be resolved (a relative path, `\` in it, another system).
/// `None` when it has more than [`MAX_RESOLVED_COMPONENTS`] components.
fn resolve(path: &str) -> Option<Normalised> {
    if !cfg!(unix) || !path.starts_with('/') || path.contains('\\') {
        return Some(normalise(path));
    }
    let parts: Vec<&str> = path.split('/').collect();
    if parts.len() > MAX_RESOLVED_COMPONENTS {
        return None;
    }
    (1..=parts.len()).rev().find_map(|n| {
        let prefix = parts[..n].join("/");
        let real = std::fs::canonicalize(if prefix.is_empty() { "/" } else { &prefix }).ok()?;
        let rest = parts[n..].join("/");
        Some(normalise(&format!("{}/{rest}", real.to_string_lossy())))
    })
}
