//! The key a gateway's replicas seal their `requestState`s with, kept in a file of its own
//! (never in the state store: whoever reads the store, a backup of it, or a database role
//! with `SELECT` on its tables must not be able to forge a state). The file is the
//! operator's (`--key-file`, `$GATEHOUSE_GATEWAY_KEY_FILE`, a secret manager's mounted
//! file) or, for a SQLite store, made on first start in the person's state folder, 0600
//! in a 0700 folder. Replicas on PostgreSQL run on several machines, so none of them
//! makes a key: each must be given the same existing file.

use std::{
    io::ErrorKind,
    path::{Path, PathBuf},
};

/// The bytes of a key the gateway makes (written as hex, so it can be copied as text).
pub const KEY_BYTES: usize = 32;
/// The fewest bytes a key file may hold (after surrounding white space is trimmed).
pub const MIN_KEY_BYTES: usize = 32;
/// The most bytes read from a key file: a larger file is not a key.
pub const MAX_KEY_FILE_BYTES: u64 = 4_096;
/// The key file's name in the person's state folder when none is named.
pub const KEY_FILE: &str = "gateway.key";

/// Where the sealing key comes from, and whether the gateway may make it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFile {
    /// The file.
    pub path: PathBuf,
    /// Make it (0600, its folders 0700) when it does not exist. Never for replicas on
    /// PostgreSQL: each would make its own.
    pub make: bool,
}

/// The sealing key read (or made) from its file.
pub struct SealingKey {
    /// The key's bytes.
    pub bytes: Vec<u8>,
    /// A warning for the operator (a key file others can read), if any.
    pub warning: Option<String>,
}

impl KeyFile {
    /// The key in `path`, made there first if it is missing and [`KeyFile::make`] says so.
    pub fn load(&self) -> Result<SealingKey, String> {
        let shown = self.path.display();
        if self.make && !self.path.exists() {
            make(&self.path)
                .map_err(|e| format!("cannot make the sealing key file {shown}: {e}"))?;
        }
        let bytes = read(&self.path)?;
        Ok(SealingKey {
            warning: readable_by_others(&self.path).then(|| {
                format!(
                    "the sealing key file {shown} can be read by other users: whoever reads it \
                     can forge the gateway's requestStates (chmod 600 it)"
                )
            }),
            bytes,
        })
    }
}

/// Write a new random key to `path`, never over an existing one (two replicas starting
/// at once: the second finds the first's).
fn make(path: &Path) -> std::io::Result<()> {
    let mut key = [0u8; KEY_BYTES];
    rand::fill(&mut key);
    let text = format!("{}\n", gatehouse::digest::hex(&key));
    gatehouse::files::create_whole_private(path, text.as_bytes()).map(drop)
}

/// The key in `path`: its bytes, white space around them trimmed (a text key from a
/// secret manager, or the hex one the gateway writes), at least [`MIN_KEY_BYTES`].
fn read(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let shown = path.display();
    let missing = |e: std::io::Error| match e.kind() {
        ErrorKind::NotFound => format!("the sealing key file {shown} does not exist"),
        _ => format!("cannot read the sealing key file {shown}: {e}"),
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(missing)?
        .take(MAX_KEY_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(missing)?;
    if bytes.len() as u64 > MAX_KEY_FILE_BYTES {
        return Err(format!(
            "the sealing key file {shown} is larger than {MAX_KEY_FILE_BYTES} bytes: it is not a key"
        ));
    }
    let trimmed = bytes.trim_ascii();
    if trimmed.len() < MIN_KEY_BYTES {
        return Err(format!(
            "the sealing key file {shown} holds {} bytes; a key needs at least {MIN_KEY_BYTES} \
             (e.g. `openssl rand -hex 32 > FILE`)",
            trimmed.len()
        ));
    }
    Ok(trimmed.to_vec())
}

/// Can users other than the owner read `path`?
fn readable_by_others(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o077 != 0)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    fn mode(p: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_key_is_made_once_private_and_read_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state").join(KEY_FILE);
        let file = KeyFile {
            path: path.clone(),
            make: true,
        };
        let first = file.load().unwrap();
        assert_eq!(first.bytes.len(), 2 * KEY_BYTES, "hex");
        assert!(first.warning.is_none());
        assert_eq!(file.load().unwrap().bytes, first.bytes, "made once");
        #[cfg(unix)]
        {
            assert_eq!(mode(&path), 0o600);
            assert_eq!(mode(path.parent().unwrap()), 0o700);
        }
    }

    /// Replicas starting at once on one machine all read the one key that was made, never
    /// a file made but not yet written.
    #[test]
    fn replicas_starting_at_once_read_one_whole_key() {
        for _ in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let file = KeyFile {
                path: dir.path().join(KEY_FILE),
                make: true,
            };
            let start = std::sync::Arc::new(std::sync::Barrier::new(8));
            let replicas: Vec<_> = (0..8)
                .map(|_| {
                    let (file, start) = (file.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        file.load().map(|k| k.bytes)
                    })
                })
                .collect();
            let keys: Vec<_> = replicas.into_iter().map(|t| t.join().unwrap()).collect();
            let first = keys[0].clone().unwrap();
            assert!(keys.iter().all(|k| k.as_ref() == Ok(&first)), "{keys:?}");
        }
    }

    #[test]
    fn a_key_not_to_be_made_must_exist_and_be_long_enough() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEY_FILE);
        let file = KeyFile {
            path: path.clone(),
            make: false,
        };
        let e = file.load().err().unwrap();
        assert!(e.contains("does not exist"), "{e}");
        assert!(!path.exists(), "nothing made");
        std::fs::write(&path, "short\n").unwrap();
        let e = file.load().err().unwrap();
        assert!(e.contains("at least 32"), "{e}");
        std::fs::write(&path, vec![b'k'; MAX_KEY_FILE_BYTES as usize + 1]).unwrap();
        let e = file.load().err().unwrap();
        assert!(e.contains("not a key"), "{e}");
        std::fs::write(&path, format!("  {}\n", "s".repeat(40))).unwrap();
        let key = file.load().unwrap();
        assert_eq!(key.bytes, "s".repeat(40).into_bytes(), "trimmed");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let warning = file.load().unwrap().warning.unwrap();
            assert!(warning.contains("other users"), "{warning}");
        }
    }
}
