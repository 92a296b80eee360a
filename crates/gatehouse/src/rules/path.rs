//! Paths compared as a server would read them, without touching any file system: `.` and
//! `..` resolved, repeated separators folded, so `/home/me/project/../../etc/passwd` is
//! `/etc/passwd` and is not inside `/home/me/project`.
//!
//! Both `/` and `\` separate (a server on Windows reads `\`); treating `\` as a separator
//! can only make a path look less inside, never more. The comparison is lexical: a
//! symbolic link inside a folder that points out of it is the server's to refuse.

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

/// Is `path` (normalised first) inside one of `dirs` (normalised when the rule was read)?
pub fn inside_any(path: &str, dirs: &[Normalised]) -> bool {
    let path = normalise(path);
    dirs.iter().any(|d| path.is_inside(d))
}
