//! `gatehouse gateway connect|disconnect CLIENT` through the binary, on a scratch home with
//! the files each client really keeps (Claude Code's `~/.claude.json` with much beside its
//! servers, Gemini CLI's settings with comments, Cursor's `mcp.json`, VS Code's `mcp.json`
//! with `inputs`): the servers moved into a Gatehouse servers file, one gateway entry left,
//! every other byte of the client's file kept, a private backup, and a byte-exact undo;
//! then the real Claude Code and Gemini CLI (`scripts/install-test-peers.sh claude_code
//! gemini_cli`) list the gateway as connected. Changes since connect and the errors are in
//! `edits.rs`, the real clients in `real_clients.rs`, the host on a connected home in
//! `host_reads.rs`.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use gatehouse_gateway::clients::text;
use serde_json::{Value, json};

use crate::common::{Ran, exe, gatehouse_command, process::Spawn};

mod edits;
mod host_reads;
mod real_clients;

/// The longest one `gatehouse gateway connect|disconnect` may take.
const COMMAND_LIMIT: Duration = Duration::from_secs(30);

/// A person's home folder, with Gatehouse's config and state folders in it.
pub struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    pub fn new() -> Home {
        Home {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// HOME and the XDG folders of this home (the same for every command of a test).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let at = |rel: &str| self.path().join(rel).to_string_lossy().into_owned();
        vec![
            ("HOME", at("")),
            ("XDG_CONFIG_HOME", at(".config")),
            ("XDG_STATE_HOME", at(".local/state")),
        ]
    }

    /// `gatehouse ARGS` as this person, within [`COMMAND_LIMIT`].
    pub fn gatehouse(&self, args: &[&str]) -> Ran {
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut cmd = gatehouse_command(args, &env);
        cmd.env_remove("CLAUDE_CONFIG_DIR").current_dir(self.path());
        Spawn::new(cmd, format!("gatehouse {}", args.join(" ")))
            .run()
            .wait(COMMAND_LIMIT)
    }

    /// Write `text` at `rel`, its folders made; its path.
    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// The Gatehouse servers file connect writes for `name`.
    pub fn servers_file(&self, name: &str) -> PathBuf {
        self.path()
            .join(format!(".config/gatehouse/clients/{name}.json"))
    }

    /// Connect's state folder.
    pub fn state(&self) -> PathBuf {
        self.path().join(".local/state/gatehouse/clients")
    }
}

/// One client's usual file, as it is found in people's homes.
pub struct Fixture {
    pub client: &'static str,
    pub title: &'static str,
    pub rel: &'static str,
    pub key: &'static str,
    pub text: String,
    pub moved: &'static [&'static str],
    pub left: &'static [&'static str],
}

/// Claude Code's `~/.claude.json`: its own keys around the user scope's servers (one left:
/// the old SSE transport), a project's local servers, escapes and numbers as it writes them.
pub fn claude_code() -> Fixture {
    let text = r#"{
  "numStartups": 12,
  "installMethod": "npm",
  "autoUpdates": false,
  "theme": "dark",
  "tipsHistory": {
    "ide-hotkey": 3,
    "memory-command": 7
  },
  "userID": "4f1c9a7e2b",
  "firstStartTime": "2026-10-02T09:14:33.120Z",
  "mcpServers": {
    "cmdb": {
      "type": "stdio",
      "command": "EXE",
      "args": [
        "serve",
        "cmdb"
      ],
      "env": {}
    },
    "tickets": {
      "type": "http",
      "url": "https://tickets.example.com/mcp",
      "headers": {
        "Authorization": "Bearer ${TICKETS_TOKEN}"
      }
    },
    "legacy": {
      "type": "sse",
      "url": "https://old.example.com/sse"
    }
  },
  "projects": {
    "/home/me/app": {
      "allowedTools": [],
      "mcpServers": {
        "local-db": {
          "type": "stdio",
          "command": "pg-mcp",
          "args": []
        }
      },
      "hasTrustDialogAccepted": true,
      "lastCost": 0.50
    }
  },
  "oauthAccount": {
    "emailAddress": "me@example.com",
    "displayName": "Ren\u00e9e"
  },
  "hasCompletedOnboarding": true,
  "lastReleaseNotesSeen": "2.1.328"
}"#;
    Fixture {
        client: "claude-code",
        title: "Claude Code",
        rel: ".claude.json",
        key: "mcpServers",
        text: text.replace("EXE", &exe().to_string_lossy()),
        moved: &["cmdb", "tickets"],
        left: &["legacy"],
    }
}

/// Gemini CLI's `~/.gemini/settings.json`, with comments and a trailing comma.
pub fn gemini() -> Fixture {
    let text = r#"{
  // Gemini CLI settings
  "general": {"preferredEditor": "vim", "vimMode": true},
  "ui": {"theme": "GitHub"},
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "mcpServers": {
    "memory": {"command": "node", "args": ["/opt/memory/dist/index.js"],
               "env": {"MEMORY_FILE_PATH": "$HOME/memory.jsonl"}, "timeout": 30000},
    "search": {"httpUrl": "https://search.example.com/mcp", "headers": {"X-Api-Key": "$SEARCH_KEY"}},
    "events": {"url": "https://events.example.com/sse"} /* SSE */
  },
  "mcp": {"allowed": ["memory", "search"]},
  "telemetry": {"enabled": false},
}
"#;
    Fixture {
        client: "gemini",
        title: "Gemini CLI",
        rel: ".gemini/settings.json",
        key: "mcpServers",
        text: text.into(),
        moved: &["memory", "search"],
        left: &["events"],
    }
}

/// Cursor's `~/.cursor/mcp.json`, with its `${env:…}` references and an `envFile`.
pub fn cursor() -> Fixture {
    let text = r#"{
    "mcpServers": {
        "github": {
            "command": "docker",
            "args": ["run", "-i", "--rm", "-e", "GITHUB_TOKEN", "ghcr.io/github/github-mcp-server"],
            "env": {"GITHUB_TOKEN": "${env:GITHUB_TOKEN}"}
        },
        "docs": {"url": "https://docs.example.com/mcp"},
        "notes": {"command": "npx", "args": ["-y", "notes-mcp"], "envFile": "${userHome}/.notes.env"}
    }
}
"#;
    Fixture {
        client: "cursor",
        title: "Cursor",
        rel: ".cursor/mcp.json",
        key: "mcpServers",
        text: text.into(),
        moved: &["github", "docs"],
        left: &["notes"],
    }
}

/// VS Code's user `mcp.json`: `servers`, an `inputs` prompt, tabs, comments, trailing commas.
pub fn vscode() -> Fixture {
    let text = "{\n\t// VS Code user MCP servers\n\t\"servers\": {\n\t\t\"fetch\": {\"type\": \"stdio\", \"command\": \"uvx\", \"args\": [\"mcp-server-fetch\"]},\n\t\t\"perplexity\": {\"type\": \"stdio\", \"command\": \"npx\", \"args\": [\"-y\", \"server-perplexity-ask\"],\n\t\t\t\"env\": {\"PERPLEXITY_API_KEY\": \"${input:perplexity-key}\"}},\n\t\t\"remote\": {\"type\": \"http\", \"url\": \"https://remote.example.com/mcp\",\n\t\t\t\"headers\": {\"Authorization\": \"Bearer ${env:REMOTE_TOKEN}\"}},\n\t},\n\t\"inputs\": [\n\t\t{\"type\": \"promptString\", \"id\": \"perplexity-key\", \"description\": \"Perplexity API Key\", \"password\": true}\n\t]\n}\n";
    Fixture {
        client: "vscode",
        title: "VS Code",
        rel: ".config/Code/User/mcp.json",
        key: "servers",
        text: text.into(),
        moved: &["fetch", "remote"],
        left: &["perplexity"],
    }
}

#[cfg(unix)]
pub fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[cfg(unix)]
pub fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The files left in connect's state folder.
pub fn state_files(home: &Home) -> Vec<String> {
    std::fs::read_dir(home.state())
        .into_iter()
        .flatten()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Connect `f`'s client on its file, check what was written, and what was said; the
/// file, and what connect printed.
pub fn connected(home: &Home, f: &Fixture) -> (PathBuf, String) {
    let file = home.write(f.rel, &f.text);
    set_mode(&file, 0o640);
    let ran = home.gatehouse(&["gateway", "connect", f.client]);
    assert_eq!(ran.status, 0, "{}\n{}", ran.stdout, ran.stderr);
    assert!(
        ran.stdout.starts_with(&format!("Connected {}: ", f.title)),
        "{}",
        ran.stdout
    );
    for name in f.moved {
        assert!(
            ran.stdout.lines().next().unwrap().contains(name),
            "{name}: {}",
            ran.stdout
        );
    }
    for name in f.left {
        assert!(
            ran.stdout
                .contains(&format!("Left in {}: {name} (", file.display())),
            "{}",
            ran.stdout
        );
    }
    let backup = home.state().join(format!("{}.backup", f.client));
    assert!(
        ran.stdout
            .contains(&format!("kept in {}.", backup.display())),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains(&format!(
        "To undo: gatehouse gateway disconnect {}\n",
        f.client
    )));
    assert_eq!(
        std::fs::read_to_string(&backup).unwrap(),
        f.text,
        "the backup is the file as it was"
    );
    assert_eq!(mode(&backup), 0o600);
    assert_eq!(
        mode(&file),
        0o640,
        "the client's file keeps its permissions"
    );
    (file, ran.stdout)
}

/// The client's file after connect: its members in the same order, each but the servers
/// byte for byte as before; the servers the gateway and those left, as they were.
fn check_client_file(home: &Home, f: &Fixture, file: &Path) {
    let now = std::fs::read_to_string(file).unwrap();
    let (before_doc, before) = text::read(&f.text).unwrap();
    let (now_doc, after) = text::read(&now).unwrap();
    let keys = |o: &text::Outline| o.members.iter().map(|m| m.key.clone()).collect::<Vec<_>>();
    assert_eq!(keys(&before), keys(&after));
    for (b, a) in before
        .members
        .iter()
        .zip(&after.members)
        .filter(|(b, _)| b.key != f.key)
    {
        assert_eq!(
            &f.text[b.value.clone()],
            &now[a.value.clone()],
            "{} kept byte for byte",
            b.key
        );
    }
    assert_eq!(
        &f.text[..before.members[0].span.start],
        &now[..after.members[0].span.start]
    );
    let servers = now_doc[f.key].as_object().unwrap();
    let names: Vec<&str> = servers.keys().map(String::as_str).collect();
    let mut want = vec!["gatehouse"];
    want.extend(f.left);
    assert_eq!(names, want);
    let gateway = &servers["gatehouse"];
    let exe = std::fs::canonicalize(exe()).unwrap();
    assert_eq!(gateway["command"], exe.to_string_lossy().as_ref());
    let config = home.servers_file(f.client);
    assert_eq!(
        gateway["args"],
        json!(["gateway", "--config", config.to_string_lossy()])
    );
    for name in f.left {
        assert_eq!(
            servers[*name], before_doc[f.key][*name],
            "{name} left as it was"
        );
    }
}

/// The round trip: connect, what it wrote, disconnect, the file byte for byte as it was;
/// the servers moved, and what connect said.
fn round_trip(f: Fixture) -> (Value, String) {
    let home = Home::new();
    let (file, said) = connected(&home, &f);
    check_client_file(&home, &f, &file);
    let servers: Value =
        serde_json::from_str(&std::fs::read_to_string(home.servers_file(f.client)).unwrap())
            .unwrap();
    let names: Vec<&String> = servers["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(names, f.moved, "the servers moved, in the file's order");
    let ran = home.gatehouse(&["gateway", "disconnect", f.client]);
    assert_eq!(ran.status, 0, "{}\n{}", ran.stdout, ran.stderr);
    assert!(
        ran.stdout
            .contains("is back as it was before connect, byte for byte"),
        "{}",
        ran.stdout
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), f.text);
    assert_eq!(mode(&file), 0o640);
    assert!(
        !home.servers_file(f.client).exists(),
        "the servers file connect made is removed"
    );
    assert_eq!(state_files(&home), Vec::<String>::new());
    (servers["mcpServers"].clone(), said)
}

#[test]
fn claude_codes_file_is_moved_and_put_back_byte_for_byte() {
    let (servers, said) = round_trip(claude_code());
    assert!(
        said.contains("Note: 1 server of single projects (Claude Code's local scope, in 1 project) stays as it is"),
        "{said}"
    );
    assert_eq!(
        servers,
        json!({"cmdb": {"command": exe().to_string_lossy(), "args": ["serve", "cmdb"], "env": {}},
               "tickets": {"type": "http", "url": "https://tickets.example.com/mcp",
                           "headers": {"Authorization": "Bearer ${TICKETS_TOKEN}"}}})
    );
}

#[test]
fn gemini_clis_settings_are_moved_and_put_back_byte_for_byte() {
    let (servers, said) = round_trip(gemini());
    assert!(
        said.contains("its \"mcp\".\"allowed\" setting lists, and it does not list \"gatehouse\": add it there"),
        "{said}"
    );
    assert_eq!(
        servers["memory"]["env"]["MEMORY_FILE_PATH"],
        "${HOME}/memory.jsonl"
    );
    assert_eq!(servers["memory"].get("timeout"), None);
    assert_eq!(
        servers["search"],
        json!({"type": "http", "url": "https://search.example.com/mcp", "headers": {"X-Api-Key": "${SEARCH_KEY}"}})
    );
}

#[test]
fn cursors_file_is_moved_and_put_back_byte_for_byte() {
    let (servers, _) = round_trip(cursor());
    assert_eq!(
        servers["github"]["env"],
        json!({"GITHUB_TOKEN": "${GITHUB_TOKEN}"})
    );
    assert_eq!(
        servers["docs"],
        json!({"type": "http", "url": "https://docs.example.com/mcp"})
    );
}

#[test]
fn vscodes_file_is_moved_and_put_back_byte_for_byte() {
    let (servers, _) = round_trip(vscode());
    assert_eq!(
        servers["fetch"],
        json!({"command": "uvx", "args": ["mcp-server-fetch"]})
    );
    assert_eq!(
        servers["remote"]["headers"],
        json!({"Authorization": "Bearer ${REMOTE_TOKEN}"})
    );
}
