//! `connect`: the client's servers carried into a Gatehouse servers file of their own, and
//! the client's servers member made the gateway's one entry (with the servers that could
//! not be carried, left as they were). Everything is read and checked before anything is
//! written; the backup and the record are written first, the client's file last, and a
//! failed write undoes what came before it.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{
    Client, ClientError, Connected, Connection, GATEWAY_ENTRY, Left, Moved, convert,
    record::{Places, Record, read_bounded},
    text::{self, Layout},
};
use gatehouse::config::behind::gateway_over;
use gatehouse::digest::sha256_hex;

/// Put `client`'s servers behind the gateway at `exe` (the running `gatehouse`): those of
/// its file `given`, or of its usual file.
pub fn connect(
    client: Client,
    given: Option<PathBuf>,
    exe: &Path,
) -> Result<Connected, ClientError> {
    let places = Places::of(client, given)?;
    if places.read_record()?.is_some() {
        return Ok(Connected::Already {
            file: places.file,
            servers_file: places.servers_file,
        });
    }
    let original = read_client_file(client, &places.file)?;
    let unreadable = |message: String| ClientError::Unreadable {
        client: client.title(),
        path: places.file.clone(),
        message,
    };
    let text =
        std::str::from_utf8(&original).map_err(|_| unreadable("it is not UTF-8 text".into()))?;
    writable(&places.file)?;
    let (doc, outline) = text::read(text).map_err(unreadable)?;
    let servers = servers_of(client, &doc).map_err(unreadable)?;
    if let Some((name, over)) = servers
        .iter()
        .find_map(|(name, entry)| gateway_over(entry, Some(exe)).map(|over| (name, over)))
    {
        return Err(ClientError::ByHand {
            path: places.file,
            name: name.clone(),
            servers_file: over.to_owned(),
        });
    }
    if servers.contains_key(GATEWAY_ENTRY) {
        return Err(ClientError::Taken { path: places.file });
    }
    let sorted = Sorted::of(client, &servers);
    if sorted.carried.is_empty() {
        return Err(ClientError::Nothing {
            path: places.file,
            left: sorted.left,
        });
    }
    let mut written_servers = Map::new();
    written_servers.insert(
        GATEWAY_ENTRY.into(),
        client.gateway_entry(exe, &places.servers_file)?,
    );
    written_servers.extend(sorted.kept.clone());
    let written_servers = Value::Object(written_servers);
    let value = Layout::of(text).value(&written_servers);
    let new_text =
        text::set_member(text, &outline, client.servers_key(), &value).map_err(unreadable)?;
    let servers_file = ServersText::of(&places.servers_file, sorted.carried)?;
    let record = Record {
        client: client.name().into(),
        file: places.file.clone(),
        servers_file: places.servers_file.clone(),
        servers_file_made: servers_file.previous.is_none(),
        servers_file_sha256: sha256_hex(servers_file.text.as_bytes()),
        original_sha256: sha256_hex(&original),
        written_sha256: sha256_hex(new_text.as_bytes()),
        written_servers,
    };
    write(&places, &original, &record, &servers_file, &new_text)?;
    Ok(Connected::Now(Connection {
        file: places.file,
        servers_file: places.servers_file,
        backup: places.backup,
        moved: sorted.moved,
        left: sorted.left,
        notes: notes(client, &doc),
    }))
}

/// The bytes of the client's file, which must exist.
fn read_client_file(client: Client, path: &Path) -> Result<Vec<u8>, ClientError> {
    match read_bounded(path) {
        Ok(Some(bytes)) => Ok(bytes),
        Ok(None) => Err(ClientError::Missing {
            client: client.title(),
            path: path.to_owned(),
        }),
        Err(e) => Err(ClientError::Unreadable {
            client: client.title(),
            path: path.to_owned(),
            message: e.to_string(),
        }),
    }
}

/// The client's file may be changed: it is not read-only (the person made it so: even
/// root, who may write it anyway, leaves it), and it opens for writing.
fn writable(path: &Path) -> Result<(), ClientError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map_err(|e| ClientError::write(path, e))?
            .permissions()
            .mode();
        if mode & 0o200 == 0 {
            return Err(ClientError::ReadOnly {
                path: path.to_owned(),
                mode: mode & 0o777,
            });
        }
    }
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map(drop)
        .map_err(|e| ClientError::write(path, e))
}

/// The servers of a client's document; none when it has no servers member.
pub(super) fn servers_of(client: Client, doc: &Value) -> Result<Map<String, Value>, String> {
    let key = client.servers_key();
    match doc.get(key) {
        None => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(_) => Err(format!("\"{key}\" is not an object of servers")),
    }
}

/// A client's servers, sorted into those carried and those left.
struct Sorted {
    /// Gatehouse's entries, by name, in the file's order.
    carried: Map<String, Value>,
    /// What the person is told of each.
    moved: Vec<Moved>,
    /// The servers left, and why.
    left: Vec<Left>,
    /// Their entries, as the client's file has them.
    kept: Map<String, Value>,
}

impl Sorted {
    fn of(client: Client, servers: &Map<String, Value>) -> Sorted {
        let mut sorted = Sorted {
            carried: Map::new(),
            moved: Vec::new(),
            left: Vec::new(),
            kept: Map::new(),
        };
        for (name, entry) in servers {
            match convert::convert(client, name, entry) {
                Ok(c) => {
                    sorted.carried.insert(name.clone(), c.entry);
                    sorted.moved.push(Moved {
                        name: name.clone(),
                        notes: c.notes,
                    });
                }
                Err(reason) => {
                    sorted.kept.insert(name.clone(), entry.clone());
                    sorted.left.push(Left {
                        name: name.clone(),
                        reason,
                    });
                }
            }
        }
        sorted
    }
}

/// The Gatehouse servers file as connect writes it, and what it held before.
struct ServersText {
    text: String,
    /// Its bytes before, when it existed (the person's rules and settings are kept).
    previous: Option<Vec<u8>>,
}

impl ServersText {
    /// The file at `path` with `servers` as its `mcpServers`: its other keys kept when it
    /// exists, else a new file.
    fn of(path: &Path, servers: Map<String, Value>) -> Result<ServersText, ClientError> {
        let broken = |message: String| ClientError::State {
            path: path.to_owned(),
            message,
        };
        let previous = read_bounded(path).map_err(|e| broken(e.to_string()))?;
        let mut doc = match &previous {
            None => Map::new(),
            Some(bytes) => match serde_json::from_slice(bytes) {
                Ok(Value::Object(doc)) => doc,
                _ => {
                    return Err(broken(
                        "it is not a servers file (a JSON object); move it away, and connect again"
                            .into(),
                    ));
                }
            },
        };
        doc.insert("mcpServers".into(), Value::Object(servers));
        let mut text =
            serde_json::to_string_pretty(&Value::Object(doc)).expect("a JSON value serializes");
        text.push('\n');
        Ok(ServersText { text, previous })
    }
}

/// Write the backup and the record, the servers file, then the client's file; a failure
/// undoes the writes before it.
fn write(
    places: &Places,
    original: &[u8],
    record: &Record,
    servers: &ServersText,
    new_text: &str,
) -> Result<(), ClientError> {
    places.keep(original, record)?;
    let undo_servers = || match &servers.previous {
        Some(bytes) => {
            let _ = gatehouse::files::replace_keeping(&places.servers_file, bytes);
        }
        None => {
            let _ = std::fs::remove_file(&places.servers_file);
        }
    };
    if let Err(e) = gatehouse::files::replace_keeping(&places.servers_file, servers.text.as_bytes())
    {
        undo_servers();
        places.forget();
        return Err(ClientError::write(&places.servers_file, e));
    }
    if let Err(e) = gatehouse::files::replace_keeping(&places.file, new_text.as_bytes()) {
        undo_servers();
        places.forget();
        return Err(ClientError::write(&places.file, e));
    }
    Ok(())
}

/// What else the person should know about the client's file: servers connect does not
/// move, and settings of the client's that would keep it from starting the gateway.
fn notes(client: Client, doc: &Value) -> Vec<String> {
    let mut notes = Vec::new();
    if client == Client::ClaudeCode
        && let Some(projects) = doc.get("projects").and_then(Value::as_object)
    {
        let local: Vec<usize> = projects
            .values()
            .filter_map(|p| p.get("mcpServers").and_then(Value::as_object))
            .map(Map::len)
            .filter(|n| *n > 0)
            .collect();
        if !local.is_empty() {
            let (servers, projects) = (local.iter().sum::<usize>(), local.len());
            notes.push(format!(
                "{} of single projects (Claude Code's local scope, in {}) {} as {}: connect moves the user scope's; `claude mcp list` in such a folder shows them",
                counted(servers, "server"),
                counted(projects, "project"),
                if servers == 1 { "stays" } else { "stay" },
                if servers == 1 { "it is" } else { "they are" },
            ));
        }
    }
    if client == Client::Gemini {
        let listed = |key: &str| {
            doc.pointer(&format!("/mcp/{key}"))
                .and_then(Value::as_array)
                .map(|names| names.iter().any(|n| n == GATEWAY_ENTRY))
        };
        if listed("allowed") == Some(false) {
            notes.push(format!(
                "Gemini CLI starts only the servers its \"mcp\".\"allowed\" setting lists, and it does not list \"{GATEWAY_ENTRY}\": add it there"
            ));
        }
        if listed("excluded") == Some(true) {
            notes.push(format!(
                "Gemini CLI's \"mcp\".\"excluded\" setting lists \"{GATEWAY_ENTRY}\", so it will not start the gateway: take it out"
            ));
        }
    }
    notes
}

/// `1 server`, `2 servers`.
fn counted(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}
