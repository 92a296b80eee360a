//! What `connect` keeps to undo itself, in the person's state folder (`clients/`, 0600
//! files in a 0700 folder): the client's file as it was, byte for byte (`NAME.backup`),
//! and a record of what was written (`NAME.json`: the file, the Gatehouse servers file,
//! digests of the bytes before and after, the servers the client's file held after). The
//! Gatehouse servers file the client's servers moved to is in the person's config folder
//! (`gatehouse/clients/NAME.json`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Client, ClientError};
use gatehouse::config::{Config, MAX_SERVERS_FILE_BYTES};

/// The folder of both the state and the servers files, under their base folders.
const FOLDER: &str = "clients";
/// Largest record read, in bytes.
pub const MAX_RECORD_BYTES: u64 = 1 << 20;
/// Hex digits of a file's digest in the names of another file than the client's usual one.
const NAME_DIGEST_CHARS: usize = 12;

/// Where one client file's connection keeps what it needs.
#[derive(Debug, Clone)]
pub struct Places {
    /// The client's file.
    pub file: PathBuf,
    /// The record.
    pub record: PathBuf,
    /// The client's file as it was before connect.
    pub backup: PathBuf,
    /// The Gatehouse servers file its servers move to.
    pub servers_file: PathBuf,
}

/// What connect wrote, so that disconnect can tell whether it is still there.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// The client, by its command-line name.
    pub client: String,
    /// The client's file.
    pub file: PathBuf,
    /// The Gatehouse servers file.
    pub servers_file: PathBuf,
    /// Did connect make the servers file (else it was the person's already)?
    pub servers_file_made: bool,
    /// SHA-256 of the servers file as connect wrote it.
    pub servers_file_sha256: String,
    /// SHA-256 of the client's file before connect (the backup's).
    pub original_sha256: String,
    /// SHA-256 of the client's file as connect wrote it.
    pub written_sha256: String,
    /// The servers the client's file held after connect (the gateway's entry and those
    /// left in place).
    pub written_servers: Value,
}

impl Places {
    /// The places for `client`'s file `given`, or its usual file.
    pub fn of(client: Client, given: Option<PathBuf>) -> Result<Places, ClientError> {
        let usual = client.default_file();
        let file = given.or_else(|| usual.clone()).ok_or(ClientError::NoHome)?;
        let name = if usual.is_some_and(|u| same_file(&u, &file)) {
            client.name().to_owned()
        } else {
            let digest =
                gatehouse::digest::sha256_hex(canonical(&file).as_os_str().as_encoded_bytes());
            format!("{}-{}", client.name(), &digest[..NAME_DIGEST_CHARS])
        };
        let state = gatehouse::config::state_dir().join(FOLDER);
        let servers = Config::user_path()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .ok_or(ClientError::NoHome)?
            .join(FOLDER);
        Ok(Places {
            file,
            record: state.join(format!("{name}.json")),
            backup: state.join(format!("{name}.backup")),
            servers_file: servers.join(format!("{name}.json")),
        })
    }

    /// The record of a connection, if there is one.
    pub fn read_record(&self) -> Result<Option<Record>, ClientError> {
        let broken = |message: String| ClientError::State {
            path: self.record.clone(),
            message,
        };
        let Some(text) =
            gatehouse::files::read_small(&self.record, MAX_RECORD_BYTES).map_err(broken)?
        else {
            return Ok(None);
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| broken(format!("it is not a connection's record: {e}")))
    }

    /// The backup's bytes, checked against the record's digest.
    pub fn read_backup(&self, record: &Record) -> Result<Vec<u8>, ClientError> {
        let broken = |message: String| ClientError::State {
            path: self.backup.clone(),
            message,
        };
        let bytes = read_bounded(&self.backup)
            .map_err(|e| broken(e.to_string()))?
            .ok_or_else(|| broken("it is missing".into()))?;
        if gatehouse::digest::sha256_hex(&bytes) != record.original_sha256 {
            return Err(broken(
                "it was changed since connect, so it is not the file as it was".into(),
            ));
        }
        Ok(bytes)
    }

    /// Keep the backup and the record (private files); on an error neither is left.
    pub fn keep(&self, original: &[u8], record: &Record) -> Result<(), ClientError> {
        let text = serde_json::to_string_pretty(record).expect("a record serializes");
        let kept = gatehouse::files::replace_private(&self.backup, original)
            .map_err(|e| ClientError::write(&self.backup, e))
            .and_then(|()| {
                gatehouse::files::replace_private(&self.record, text.as_bytes())
                    .map_err(|e| ClientError::write(&self.record, e))
            });
        if kept.is_err() {
            self.forget();
        }
        kept
    }

    /// Remove the record and the backup (a connection undone, or never made).
    pub fn forget(&self) {
        let _ = std::fs::remove_file(&self.record);
        let _ = std::fs::remove_file(&self.backup);
    }
}

/// The bytes of the file at `path` within [`MAX_SERVERS_FILE_BYTES`]; `None` when it does
/// not exist.
pub fn read_bounded(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    file.take(MAX_SERVERS_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_SERVERS_FILE_BYTES {
        return Err(std::io::Error::other(format!(
            "it is larger than {MAX_SERVERS_FILE_BYTES} bytes"
        )));
    }
    Ok(Some(bytes))
}

/// `path` with its links resolved where it exists, else as given, made absolute.
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path)
        .unwrap_or_else(|_| std::path::absolute(path).unwrap_or_else(|_| path.to_owned()))
}

/// Do two paths name one file?
fn same_file(a: &Path, b: &Path) -> bool {
    canonical(a) == canonical(b)
}
