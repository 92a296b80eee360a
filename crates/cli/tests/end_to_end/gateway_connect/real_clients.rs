//! The real Claude Code and Gemini CLI (`scripts/install-test-peers.sh claude_code
//! gemini_cli`), on a scratch home with two real servers: their `mcp list` says the
//! gateway is connected after connect, and their own servers again after disconnect, the
//! file byte for byte as it was.

use std::{process::Command, time::Duration};

use serde_json::{Value, json};

use super::Home;
use crate::{
    common::{Ran, exe, process::Spawn},
    interop_peers::{node, npm_server, require},
};

/// The longest a real client's `mcp list` may take (it starts the gateway, which starts
/// its servers).
const CLIENT_LIMIT: Duration = Duration::from_secs(90);

/// A loopback URL nothing listens on (port 1: a test's servers take ports the system
/// picks): a client's calls home are refused at once there, offline.
const CLOSED_URL: &str = "http://127.0.0.1:1";

/// A real client's `mcp list` in this home, with only the environment given, within
/// [`CLIENT_LIMIT`] (its whole process group killed past it).
fn client_list(home: &Home, program: &str, env: &[(&str, String)]) -> Ran {
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir(home.path())
        .args(["mcp", "list"]);
    for (k, v) in home.env().iter().chain(env) {
        cmd.env(k, v);
    }
    Spawn::new(cmd, format!("{program} mcp list"))
        .group()
        .run()
        .wait(CLIENT_LIMIT)
}

/// The installed Claude Code's `claude mcp list`, offline and headless: its API is a
/// closed loopback port (it looks it up before listing), no updater, no telemetry.
fn claude_list(home: &Home) -> Ran {
    let claude = require(
        "claude-code/node_modules/@anthropic-ai/claude-code/bin/claude.exe",
        "claude_code",
    );
    let env = [
        ("ANTHROPIC_BASE_URL", CLOSED_URL.into()),
        ("ANTHROPIC_API_KEY", "dummy".into()),
        ("DISABLE_AUTOUPDATER", "1".into()),
        ("DISABLE_TELEMETRY", "1".into()),
        ("DISABLE_ERROR_REPORTING", "1".into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
    ];
    client_list(home, &claude, &env)
}

/// The installed Gemini CLI's `gemini mcp list`: an API key (it asks nothing of the API
/// to list) and this folder trusted, without which it starts no server.
fn gemini_list(home: &Home) -> Ran {
    let gemini = require("gemini-cli/node_modules/.bin/gemini", "gemini_cli");
    let env = [
        ("GEMINI_API_KEY", "dummy".into()),
        ("GEMINI_CLI_TRUST_WORKSPACE", "true".into()),
    ];
    client_list(home, &gemini, &env)
}

/// A line of a client's list starts with `line_start` (the server's name, with the
/// client's own mark) and says `connected`.
fn assert_listed(ran: &Ran, line_start: &str, connected: &str) {
    let said = format!("{}{}", ran.stdout, ran.stderr);
    assert!(
        said.lines()
            .any(|l| l.trim_start().starts_with(line_start) && l.contains(connected)),
        "no `{line_start}… {connected}` line (status {}):\n{said}",
        ran.status
    );
}

/// Two real servers in a client's shape: the reference cmdb server, and the npm memory
/// server (its file in the home).
fn real_servers(home: &Home) -> Value {
    let memory = home.path().join("memory.jsonl");
    json!({
        "cmdb": {"command": exe().to_string_lossy(), "args": ["serve", "cmdb"]},
        "memory": {"command": node(), "args": [npm_server("memory")],
                   "env": {"MEMORY_FILE_PATH": memory.to_string_lossy()}}
    })
}

#[test]
fn claude_code_lists_the_gateway_connected_and_gets_its_file_back() {
    let home = Home::new();
    let mut servers = real_servers(&home);
    for entry in servers.as_object_mut().unwrap().values_mut() {
        entry["type"] = json!("stdio");
    }
    let file = home.write(
        ".claude.json",
        &serde_json::to_string_pretty(&json!({
            "numStartups": 3, "hasCompletedOnboarding": true, "mcpServers": servers, "projects": {}
        }))
        .unwrap(),
    );
    // Its first run writes its own first-start keys; the person's file is that one.
    let first = claude_list(&home);
    assert_listed(&first, "cmdb: ", "✔ Connected");
    assert_listed(&first, "memory: ", "✔ Connected");
    let before = std::fs::read(&file).unwrap();
    let ran = home.gatehouse(&["gateway", "connect", "claude-code"]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let listed = claude_list(&home);
    assert_listed(&listed, "gatehouse: ", "✔ Connected");
    assert!(
        !listed.stdout.contains("cmdb: "),
        "only the gateway is Claude Code's now:\n{}",
        listed.stdout
    );
    let ran = home.gatehouse(&["gateway", "disconnect", "claude-code"]);
    assert!(
        ran.stdout.contains("byte for byte"),
        "{}\n{}",
        ran.stdout,
        ran.stderr
    );
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "the file is byte for byte as it was"
    );
    assert_listed(&claude_list(&home), "cmdb: ", "✔ Connected");
}

#[test]
fn gemini_cli_lists_the_gateway_connected_and_gets_its_settings_back() {
    let home = Home::new();
    let text = format!(
        "{{\n  // mine\n  \"ui\": {{\"theme\": \"GitHub\"}},\n  \"mcpServers\": {}\n}}\n",
        serde_json::to_string(&real_servers(&home)).unwrap()
    );
    let file = home.write(".gemini/settings.json", &text);
    let first = gemini_list(&home);
    assert_listed(&first, "✓ cmdb: ", "- Connected");
    assert_listed(&first, "✓ memory: ", "- Connected");
    let ran = home.gatehouse(&["gateway", "connect", "gemini"]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert_listed(&gemini_list(&home), "✓ gatehouse: ", "- Connected");
    let ran = home.gatehouse(&["gateway", "disconnect", "gemini"]);
    assert!(
        ran.stdout.contains("byte for byte"),
        "{}\n{}",
        ran.stdout,
        ran.stderr
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}
