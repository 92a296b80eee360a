//! `${VAR}` and `${VAR:-default}` in a servers file's values: the person's identity first
//! (`GATEHOUSE_USER`, `GATEHOUSE_TENANT`), then the host's environment.

use super::{Identity, TENANT_VAR, USER_VAR};

/// Resolves `${VAR}` and `${VAR:-default}`: identity first, then the host's environment.
pub(super) struct Variables {
    identity: Identity,
}

impl Variables {
    pub(super) fn new(identity: &Identity) -> Self {
        Variables {
            identity: identity.clone(),
        }
    }

    fn lookup(&self, name: &str) -> Option<String> {
        match name {
            USER_VAR => Some(self.identity.user.clone()),
            TENANT_VAR => Some(self.identity.tenant.clone()),
            _ => std::env::var(name).ok(),
        }
    }

    /// Substitute every `${…}` in `text`. A missing variable without a default is an error
    /// naming it.
    pub(super) fn expand(&self, text: &str) -> Result<String, String> {
        let mut out = String::with_capacity(text.len());
        for piece in pieces(text)? {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Variable { name, default } => match (self.lookup(name), default) {
                    (Some(v), _) if !v.is_empty() || default.is_none() => out.push_str(&v),
                    (_, Some(d)) => out.push_str(d),
                    (None, None) => {
                        return Err(format!(
                            "variable {name} is not set and has no default (write ${{{name}:-value}})"
                        ));
                    }
                    (Some(v), None) => out.push_str(&v),
                },
            }
        }
        Ok(out)
    }
}

/// One piece of a value: text as written, or a `${NAME}` / `${NAME:-default}` reference.
enum Piece<'a> {
    Text(&'a str),
    Variable {
        name: &'a str,
        default: Option<&'a str>,
    },
}

/// A value cut into its pieces; an unclosed `${` or a reference that names no variable is
/// an error.
fn pieces(text: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push(Piece::Text(&rest[..start]));
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("unclosed \"${{\" in {text:?}"))?;
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!("\"${{{inner}}}\" is not a variable name"));
        }
        out.push(Piece::Variable { name, default });
        rest = &after[end + 1..];
    }
    out.push(Piece::Text(rest));
    Ok(out)
}

/// The variables `text` refers to, without looking them up: to check a value that is
/// stored as written (`gatehouse mcp add`).
pub fn references(text: &str) -> Result<Vec<&str>, String> {
    Ok(pieces(text)?
        .into_iter()
        .filter_map(|p| match p {
            Piece::Variable { name, .. } => Some(name),
            Piece::Text(_) => None,
        })
        .collect())
}
