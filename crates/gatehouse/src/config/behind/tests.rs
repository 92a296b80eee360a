//! The gateway's entry recognised exactly as connect writes it, and nothing else; the
//! servers file it names read instead only when it is a readable servers file.

use std::path::Path;

use serde_json::{Value, json};

use super::*;

/// A gateway's entry as connect writes it for Claude Code.
fn entry(command: &str, file: &str) -> Value {
    json!({"type": "stdio", "command": command, "args": ["gateway", "--config", file]})
}

#[test]
fn connects_entry_is_recognised_by_the_binarys_name_or_the_running_binary() {
    let file = "/h/.config/gatehouse/clients/claude-code.json";
    assert_eq!(
        gateway_over(&entry("/opt/bin/gatehouse", file), None),
        Some(file)
    );
    assert_eq!(gateway_over(&entry("gatehouse", file), None), Some(file));
    let cursor = json!({"command": "/opt/bin/gatehouse", "args": ["gateway", "--config", file]});
    assert_eq!(gateway_over(&cursor, None), Some(file));
    let with_env =
        json!({"command": "gatehouse", "env": {}, "args": ["gateway", "--config", file]});
    assert_eq!(gateway_over(&with_env, None), Some(file));
    // The running binary under another name (a link to it), known by its canonical path.
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("gh-1.4");
    std::fs::write(&exe, "").unwrap();
    let link = dir.path().join("gh");
    std::os::unix::fs::symlink(&exe, &link).unwrap();
    let exe = std::fs::canonicalize(&exe).unwrap();
    let by_link = entry(&link.to_string_lossy(), file);
    assert_eq!(gateway_over(&by_link, Some(&exe)), Some(file));
    assert_eq!(gateway_over(&by_link, None), None, "not named gatehouse");
}

#[test]
fn anything_else_is_not_the_gateway() {
    let file = "/h/.config/gatehouse/clients/claude-code.json";
    let not = |e: Value| assert_eq!(gateway_over(&e, None), None, "{e}");
    not(json!({"command": "gatehouse", "args": ["gateway", "--config", file, "--http", "8080"]}));
    not(json!({"command": "gatehouse", "args": ["-v", "gateway", "--config", file]}));
    not(json!({"command": "gatehouse", "args": ["gateway", "--config"]}));
    not(json!({"command": "gatehouse", "args": ["gateway", "-c", file]}));
    not(json!({"command": "gatehouse", "args": ["ask", "--config", file]}));
    not(entry("gatehouse", "clients/claude-code.json"));
    not(entry("gatehouse", "./servers.json"));
    not(entry("/usr/bin/gatehouse-something", file));
    not(entry("/usr/bin/gatehouse.sh", file));
    not(entry("/opt/gatehouse/bin/node", file));
    not(json!({"command": "gatehouse", "args": ["gateway", "--config", 7]}));
    not(
        json!({"type": "http", "url": "http://127.0.0.1/mcp", "command": "gatehouse",
               "args": ["gateway", "--config", file]}),
    );
    not(
        json!({"command": "gatehouse", "args": ["gateway", "--config", file],
               "env": {"GATEHOUSE_USER": "usr-omar"}}),
    );
    not(json!({"command": "gatehouse", "args": ["gateway", "--config", file], "cwd": "/tmp"}));
    not(json!(["gatehouse", "gateway", "--config", file]));
}

/// Claude Code's file in `dir` with these servers; its path and document.
fn client_file(dir: &Path, servers: Value) -> (PathBuf, Value) {
    let doc = json!({"numStartups": 3, "mcpServers": servers});
    let path = dir.join(".claude.json");
    std::fs::write(&path, doc.to_string()).unwrap();
    (path, doc)
}

#[test]
fn the_servers_file_is_used_and_the_entries_left_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let servers = dir.path().join("claude-code.json");
    std::fs::write(&servers, r#"{"mcpServers": {"support": {"command": "x"}}}"#).unwrap();
    let (path, doc) = client_file(
        dir.path(),
        json!({"legacy": {"type": "sse", "url": "http://old/sse"},
               "gatehouse": entry("gatehouse", &servers.to_string_lossy()),
               "off": {"command": "y", "disabled": true}}),
    );
    let Some(Gated::Behind(b)) = find(&path, "Claude Code", &doc, None) else {
        panic!("behind the gateway")
    };
    assert_eq!(b.servers_file, std::fs::canonicalize(&servers).unwrap());
    assert_eq!(b.not_started, ["legacy"]);
    assert_eq!(b.owner, "Claude Code");
    let mine = json!({"support": {"command": "x"}});
    assert!(find(&path, "Claude Code", &json!({"mcpServers": mine}), None).is_none());
}

#[test]
fn a_servers_file_that_cannot_be_read_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    };
    let (path, _) = client_file(dir.path(), json!({}));
    let cases = [
        (
            format!("/{}", "x".repeat(MAX_GATEWAY_FILE_PATH_BYTES)),
            "longer than",
        ),
        (
            dir.path().join("gone.json").to_string_lossy().into(),
            "cannot be opened",
        ),
        (dir.path().to_string_lossy().into(), "not a file"),
        (at("bad.json", "{\"mcpServers\": {"), "not valid JSON"),
        (
            at("other.json", "{\"servers\": {}}"),
            "no \"mcpServers\" object",
        ),
        (
            path.to_string_lossy().into(),
            "the file that starts the gateway itself",
        ),
        ("/dev/null".into(), "not a file"),
    ];
    for (file, says) in cases {
        let doc = json!({"mcpServers": {"gatehouse": entry("gatehouse", &file)}});
        let Some(Gated::Refused(r)) = find(&path, "Claude Code", &doc, None) else {
            panic!("{file}: refused")
        };
        assert!(r.why.to_string().contains(says), "{file}: {}", r.why);
        assert_eq!(r.servers_file, file);
    }
    let cursor = dir.path().join(".cursor");
    std::fs::create_dir(&cursor).unwrap();
    std::fs::write(cursor.join("mcp.json"), r#"{"mcpServers": {}}"#).unwrap();
    let file = cursor.join("mcp.json").to_string_lossy().into_owned();
    let doc = json!({"mcpServers": {"gatehouse": entry("gatehouse", &file)}});
    let Some(Gated::Refused(r)) = find(&path, "Claude Code", &doc, None) else {
        panic!("another program's file is refused")
    };
    assert!(matches!(r.why, Unusable::Owned("Cursor")), "{}", r.why);
}
