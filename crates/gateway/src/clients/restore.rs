//! `disconnect`: the client's file given its own servers back.
//!
//! A file still exactly as connect wrote it gets the backup's bytes, so it is byte for
//! byte what it was; one whose servers are the original ones again (put back by hand, or
//! by a client that wrote what it had read before connect) is left as it is. A file the
//! client or the person changed since is merged instead of
//! refused: its servers member becomes the original one again (with any server added since
//! under a new name kept), and every other change stays; a server connect left in place
//! that was changed or removed since, or one added since under an original server's name,
//! is a conflict, and nothing is written: the error names each one and the backup to copy
//! back by hand.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{
    Client, ClientError, Disconnected, GATEWAY_ENTRY, Restore, ServersFile,
    connect::servers_of,
    record::{Places, Record, read_bounded},
    text::{self, Layout},
};
use gatehouse::digest::sha256_hex;

/// Give `client`'s file `given` (or its usual file) its own servers back.
pub fn disconnect(client: Client, given: Option<PathBuf>) -> Result<Disconnected, ClientError> {
    let usual = given.is_none();
    let places = Places::of(client, given)?;
    let Some(record) = places.read_record()? else {
        return Ok(Disconnected::NothingToRestore { file: places.file });
    };
    let original = places.read_backup(&record)?;
    let current = read_bounded(&places.file).map_err(|e| ClientError::Unreadable {
        client: client.title(),
        path: places.file.clone(),
        message: e.to_string(),
    })?;
    let how = match current {
        // Removed since: nothing to merge into.
        None => Restore::Exact,
        Some(bytes) if sha256_hex(&bytes) == record.written_sha256 => Restore::Exact,
        Some(bytes) if bytes == original => Restore::AsItWas,
        Some(bytes) => {
            let conflict = |changes: Vec<String>| ClientError::Changed {
                path: places.file.clone(),
                backup: places.backup.clone(),
                command: command(client, usual, &places.file),
                changes,
            };
            match merge(client, &record, &bytes, &original).map_err(conflict)? {
                Some((merged, added)) => {
                    write(&places.file, merged.as_bytes())?;
                    Restore::Merged { added }
                }
                None => Restore::AsItWas,
            }
        }
    };
    if how == Restore::Exact {
        write(&places.file, &original)?;
    }
    let servers_file = settle(&record);
    places.forget();
    Ok(Disconnected::Restored {
        file: places.file,
        how,
        servers_file,
    })
}

/// The words after `gatehouse gateway disconnect` that name this file again.
fn command(client: Client, usual: bool, file: &Path) -> String {
    if usual {
        client.name().into()
    } else {
        format!(
            "{} --file {}",
            client.name(),
            gatehouse::text::shell_word(&file.to_string_lossy())
        )
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), ClientError> {
    gatehouse::files::replace_keeping(path, bytes).map_err(|e| ClientError::write(path, e))
}

/// The file as it is now (`current`) with the original servers back, and the servers
/// added since, kept; `None` when its servers are the original ones already; or the
/// changes that cannot be merged.
pub(super) fn merge(
    client: Client,
    record: &Record,
    current: &[u8],
    original: &[u8],
) -> Result<Option<(String, Vec<String>)>, Vec<String>> {
    let current =
        std::str::from_utf8(current).map_err(|_| vec!["it is no longer UTF-8 text".into()])?;
    let (doc, outline) =
        text::read(current).map_err(|e| vec![format!("it can no longer be read: {e}")])?;
    let now = servers_of(client, &doc).map_err(|e| vec![e])?;
    let original =
        std::str::from_utf8(original).map_err(|_| vec!["the backup is not UTF-8 text".into()])?;
    let (original_doc, original_outline) =
        text::read(original).map_err(|e| vec![format!("the backup cannot be read: {e}")])?;
    let before = servers_of(client, &original_doc).map_err(|e| vec![e])?;
    if now == before {
        return Ok(None);
    }
    let written = record
        .written_servers
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut changes = Vec::new();
    for (name, entry) in written.iter().filter(|(n, _)| *n != GATEWAY_ENTRY) {
        match now.get(name) {
            Some(e) if e == entry => {}
            Some(_) => changes.push(format!("{name}, which connect left in place, was changed")),
            None => changes.push(format!("{name}, which connect left in place, was removed")),
        }
    }
    let added: Vec<(&String, &Value)> = now
        .iter()
        .filter(|(name, _)| !written.contains_key(*name))
        .collect();
    for (name, _) in &added {
        if before.contains_key(*name) {
            changes.push(format!(
                "{name} was added since, and the original servers have one of that name too"
            ));
        }
    }
    if !changes.is_empty() {
        return Err(changes);
    }
    let key = client.servers_key();
    let was = original_outline.member(key).map_err(|e| vec![e])?;
    let merged = match (was, added.is_empty()) {
        // The original servers as they were written, byte for byte.
        (Some(m), true) => text::set_member(current, &outline, key, &original[m.value.clone()]),
        (None, true) => Ok(text::remove_member(current, &outline, key)),
        (_, false) => {
            let mut servers: Map<String, Value> = before;
            servers.extend(added.iter().map(|(n, e)| ((*n).clone(), (*e).clone())));
            let value = Layout::of(current).value(&Value::Object(servers));
            text::set_member(current, &outline, key, &value)
        }
    }
    .map_err(|e| vec![e])?;
    Ok(Some((
        merged,
        added.into_iter().map(|(n, _)| n.clone()).collect(),
    )))
}

/// The Gatehouse servers file after a disconnect: removed when connect made it and it is
/// as connect wrote it; else kept (the person's rules and settings are theirs).
fn settle(record: &Record) -> ServersFile {
    let path = record.servers_file.clone();
    if !record.servers_file_made {
        return ServersFile::KeptYours(path);
    }
    match std::fs::read(&path) {
        Ok(bytes) if sha256_hex(&bytes) != record.servers_file_sha256 => {
            ServersFile::KeptChanged(path)
        }
        _ => {
            let _ = std::fs::remove_file(&path);
            ServersFile::Removed(path)
        }
    }
}
