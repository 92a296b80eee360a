//! The gateway in front of the clients people already use: `gatehouse gateway connect
//! CLIENT` moves the MCP servers of Claude Code, Gemini CLI, Cursor or VS Code into a
//! Gatehouse servers file of their own and leaves one entry in the client's file, which
//! starts `gatehouse gateway` in front of them; `disconnect` puts the client's file back.
//!
//! Each client's file is its own: only its servers' member is changed (`text.rs`), every
//! other byte is kept, and the file is replaced at once, keeping its permissions. Each
//! entry is carried over faithfully or left where it is with the reason (`convert.rs`).
//! The file as it was is kept byte for byte in the person's state folder (`record.rs`), and
//! `disconnect` writes it back when the file is still what connect wrote (`restore.rs`).

mod connect;
pub mod convert;
pub mod record;
mod restore;
pub mod text;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use gatehouse::config::behind::GATEWAY_ARGS;

pub use connect::connect;
pub use restore::disconnect;

/// The one entry connect leaves in the client's servers: the gateway.
pub const GATEWAY_ENTRY: &str = "gatehouse";

/// A client whose MCP servers can be put behind the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// Claude Code: `~/.claude.json`, its user-scope `mcpServers` (or a project's
    /// `.mcp.json` with `--file`).
    ClaudeCode,
    /// Gemini CLI: `~/.gemini/settings.json`, `mcpServers`.
    Gemini,
    /// Cursor: `~/.cursor/mcp.json`, `mcpServers`.
    Cursor,
    /// VS Code: the user profile's `mcp.json`, `servers`.
    VsCode,
}

impl Client {
    /// Every client, in the order the command line lists them.
    pub const ALL: [Client; 4] = [
        Client::ClaudeCode,
        Client::Gemini,
        Client::Cursor,
        Client::VsCode,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::Gemini => "gemini",
            Client::Cursor => "cursor",
            Client::VsCode => "vscode",
        }
    }

    /// Its name for people.
    pub fn title(self) -> &'static str {
        match self {
            Client::ClaudeCode => "Claude Code",
            Client::Gemini => "Gemini CLI",
            Client::Cursor => "Cursor",
            Client::VsCode => "VS Code",
        }
    }

    /// The top-level key of its file that holds the servers.
    pub fn servers_key(self) -> &'static str {
        match self {
            Client::VsCode => "servers",
            _ => "mcpServers",
        }
    }

    /// Its usual file for the person's own servers; `None` without a home folder.
    /// Claude Code's is in `$CLAUDE_CONFIG_DIR` when that is set, as Claude Code reads it.
    pub fn default_file(self) -> Option<PathBuf> {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        match self {
            Client::ClaudeCode => std::env::var_os("CLAUDE_CONFIG_DIR")
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
                .or(home)
                .map(|d| d.join(".claude.json")),
            Client::Gemini => home.map(|h| h.join(".gemini").join("settings.json")),
            Client::Cursor => home.map(|h| h.join(".cursor").join("mcp.json")),
            Client::VsCode => vscode_user_dir().map(|d| d.join("mcp.json")),
        }
    }

    /// The entry that starts the gateway at `exe` in front of `servers_file`, in this
    /// client's shape.
    fn gateway_entry(self, exe: &Path, servers_file: &Path) -> Result<Value, ClientError> {
        let text = |p: &Path| {
            p.to_str()
                .map(str::to_owned)
                .ok_or_else(|| ClientError::State {
                    path: p.to_owned(),
                    message: "the path is not UTF-8 text, which a JSON file cannot hold".into(),
                })
        };
        let (command, config) = (text(exe)?, text(servers_file)?);
        let [gateway, flag] = GATEWAY_ARGS;
        let args = json!([gateway, flag, config]);
        Ok(match self {
            Client::ClaudeCode | Client::VsCode => {
                json!({"type": "stdio", "command": command, "args": args})
            }
            Client::Gemini | Client::Cursor => json!({"command": command, "args": args}),
        })
    }
}

/// VS Code's user folder (`Code/User`): where Electron keeps an application's data.
fn vscode_user_dir() -> Option<PathBuf> {
    let base = if cfg!(target_os = "macos") {
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join("Library/Application Support"))
    } else if cfg!(windows) {
        std::env::var_os("APPDATA").map(PathBuf::from)
    } else {
        gatehouse::config::user_dir("XDG_CONFIG_HOME", ".config")
    };
    base.map(|b| b.join("Code").join("User"))
}

/// One server connect moved behind the gateway.
#[derive(Debug, Clone, PartialEq)]
pub struct Moved {
    /// Its name, the same in the Gatehouse servers file.
    pub name: String,
    /// Keys of its entry Gatehouse does without, each with why.
    pub notes: Vec<String>,
}

/// One server connect left in the client's file, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Left {
    /// Its name.
    pub name: String,
    /// Why it cannot be carried over.
    pub reason: String,
}

/// A connection just made.
#[derive(Debug, Clone)]
pub struct Connection {
    /// The client's file, which now starts the gateway.
    pub file: PathBuf,
    /// The Gatehouse servers file its servers are in now.
    pub servers_file: PathBuf,
    /// The client's file as it was.
    pub backup: PathBuf,
    /// The servers moved, in the file's order.
    pub moved: Vec<Moved>,
    /// The servers left in the client's file.
    pub left: Vec<Left>,
    /// What else the person should know about the client's file.
    pub notes: Vec<String>,
}

/// What `connect` did.
#[derive(Debug, Clone)]
pub enum Connected {
    /// The client's servers are behind the gateway now.
    Now(Connection),
    /// They were already: nothing was written.
    Already {
        /// The client's file.
        file: PathBuf,
        /// The Gatehouse servers file.
        servers_file: PathBuf,
    },
}

/// How the client's file was put back.
#[derive(Debug, Clone, PartialEq)]
pub enum Restore {
    /// Byte for byte as it was before connect.
    Exact,
    /// Its servers were as they were before connect already (the file put back by hand,
    /// or its servers written back by the client from what it read before connect):
    /// nothing was written.
    AsItWas,
    /// Changed since connect by the client or the person: its servers were put back as
    /// they were, those added since kept, and every other change kept.
    Merged {
        /// The servers added since connect, kept.
        added: Vec<String>,
    },
}

/// What became of the Gatehouse servers file.
#[derive(Debug, Clone, PartialEq)]
pub enum ServersFile {
    /// Removed: connect made it, and it was not changed since.
    Removed(PathBuf),
    /// Kept: it was changed since connect (rules, settings).
    KeptChanged(PathBuf),
    /// Kept: it was the person's before connect.
    KeptYours(PathBuf),
}

/// What `disconnect` did.
#[derive(Debug, Clone, PartialEq)]
pub enum Disconnected {
    /// The client's file has its own servers again.
    Restored {
        /// The client's file.
        file: PathBuf,
        /// How.
        how: Restore,
        /// The Gatehouse servers file.
        servers_file: ServersFile,
    },
    /// The file was not connected: nothing was written.
    NothingToRestore {
        /// The client's file.
        file: PathBuf,
    },
}

/// Why a connect or a disconnect did nothing.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No home folder to find the files in.
    #[error(
        "neither HOME nor XDG_CONFIG_HOME is set, so neither the client's usual file nor Gatehouse's folders can be found: set HOME"
    )]
    NoHome,
    /// The client's file does not exist.
    #[error(
        "{} does not exist: {client} writes it once it has run, or give its file with --file PATH; nothing was written",
        path.display()
    )]
    Missing {
        /// The client, for people.
        client: &'static str,
        /// The file.
        path: PathBuf,
    },
    /// The client's file cannot be read, or is not the client's settings.
    #[error("{} cannot be read as {client}'s settings: {message}; nothing was written", path.display())]
    Unreadable {
        /// The client, for people.
        client: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The client's file is read-only.
    #[error(
        "{} is read-only (mode {mode:03o}); connect changes it, so make it writable first (chmod u+w {}); nothing was written",
        path.display(), gatehouse::text::shell_word(&path.to_string_lossy())
    )]
    ReadOnly {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// No server of the client's can be moved.
    #[error("{} has no server Gatehouse can carry over{}; nothing was written", path.display(), left_list(.left))]
    Nothing {
        /// The file.
        path: PathBuf,
        /// The servers it has, each with why it stays.
        left: Vec<Left>,
    },
    /// One of the client's servers starts Gatehouse's gateway already, set up by hand.
    #[error(
        "{}'s server \"{name}\" starts Gatehouse's gateway already (over {servers_file}), and connect did not write it: carried over, it would put a second gateway behind the one connect writes, and every call would be gated twice. To let connect manage the gateway, put the servers of {servers_file} back in {} and remove \"{name}\" first; nothing was written",
        path.display(), path.display()
    )]
    ByHand {
        /// The file.
        path: PathBuf,
        /// The server that starts the gateway.
        name: String,
        /// The servers file it starts the gateway over, as written.
        servers_file: String,
    },
    /// The client already has a server named [`GATEWAY_ENTRY`], not connect's.
    #[error(
        "{} has a server named \"{GATEWAY_ENTRY}\" already, which connect did not write: if it is a Gatehouse gateway set up by hand, remove it first (connect puts the gateway there itself); if it is another server, rename it; nothing was written",
        path.display()
    )]
    Taken {
        /// The file.
        path: PathBuf,
    },
    /// The client's file changed since connect in a way that cannot be merged back.
    #[error(
        "{} was changed since connect in a way that cannot be merged back: {}. Nothing was written. The file as it was before connect is {}: to go back to it, losing the changes since, run `cp {} {}` and then `gatehouse gateway disconnect {command}` again",
        path.display(), .changes.join("; "), backup.display(),
        gatehouse::text::shell_word(&backup.to_string_lossy()),
        gatehouse::text::shell_word(&path.to_string_lossy())
    )]
    Changed {
        /// The file.
        path: PathBuf,
        /// The backup.
        backup: PathBuf,
        /// The command's words after `disconnect`.
        command: String,
        /// What changed that cannot be merged.
        changes: Vec<String>,
    },
    /// A file could not be written.
    #[error("cannot write {}: {source}; nothing was changed", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Connect's own state (the record, the backup, a path) is not usable.
    #[error("{}: {message}", path.display())]
    State {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl ClientError {
    fn write(path: &Path, source: std::io::Error) -> ClientError {
        ClientError::Write {
            path: path.to_owned(),
            source,
        }
    }
}

/// `: a (why), b (why)` for the servers left, or nothing.
fn left_list(left: &[Left]) -> String {
    if left.is_empty() {
        return String::new();
    }
    let each: Vec<String> = left
        .iter()
        .map(|l| format!("{} ({})", l.name, l.reason))
        .collect();
    format!(": {}", each.join("; "))
}

#[cfg(test)]
mod tests;
