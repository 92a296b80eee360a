//! Connect and disconnect when the files are not as expected: connected twice, changed
//! since connect (merged, or refused with the way out), nothing to carry, files that
//! cannot be used, another file of the client's, a gateway the client starts already.

use serde_json::{Value, json};

use super::{Home, claude_code, connected, cursor, mode, set_mode, state_files};
use crate::common::exe;

#[test]
fn connect_twice_says_it_is_connected_and_disconnect_twice_that_nothing_is_left() {
    let home = Home::new();
    let f = cursor();
    let (file, _) = connected(&home, &f);
    let after = std::fs::read(&file).unwrap();
    let ran = home.gatehouse(&["gateway", "connect", "cursor"]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.starts_with("Cursor is connected already: "),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("nothing was written"), "{}", ran.stdout);
    assert_eq!(
        std::fs::read(&file).unwrap(),
        after,
        "the second connect wrote nothing"
    );
    // The person writes the gateway's rules in the servers file: they outlive a disconnect,
    // and the next connect keeps them.
    let servers_file = home.servers_file("cursor");
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&servers_file).unwrap()).unwrap();
    doc["gatehouse"] = json!({"rules": [{"tool": "github__*", "decision": "ask"}]});
    std::fs::write(&servers_file, doc.to_string()).unwrap();
    let ran = home.gatehouse(&["gateway", "disconnect", "cursor"]);
    assert!(
        ran.stdout.contains("kept: it was changed since connect"),
        "{}",
        ran.stdout
    );
    let ran = home.gatehouse(&["gateway", "connect", "cursor"]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let again: Value =
        serde_json::from_str(&std::fs::read_to_string(&servers_file).unwrap()).unwrap();
    assert_eq!(again["gatehouse"], doc["gatehouse"], "the rules are kept");
    assert_eq!(again["mcpServers"], doc["mcpServers"]);
    let ran = home.gatehouse(&["gateway", "disconnect", "cursor"]);
    assert!(
        ran.stdout.contains("kept: it was yours before connect"),
        "{}",
        ran.stdout
    );
    assert!(servers_file.exists());
    let ran = home.gatehouse(&["gateway", "disconnect", "cursor"]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.starts_with("Nothing to restore: "),
        "{}",
        ran.stdout
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), f.text);
}

#[test]
fn a_file_changed_since_connect_gets_its_servers_back_and_keeps_the_changes() {
    let home = Home::new();
    let f = claude_code();
    let (file, _) = connected(&home, &f);
    // Claude Code writes its whole file again, with a count changed and a server added.
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    doc["numStartups"] = json!(13);
    doc["mcpServers"]["added"] = json!({"type": "stdio", "command": "new-mcp", "args": []});
    std::fs::write(&file, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let ran = home.gatehouse(&["gateway", "disconnect", "claude-code"]);
    assert_eq!(ran.status, 0, "{}\n{}", ran.stdout, ran.stderr);
    assert!(
        ran.stdout
            .contains("It was changed since connect, and those changes are kept"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains("Servers added since, kept: added."),
        "{}",
        ran.stdout
    );
    let now: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let before: Value = serde_json::from_str(&f.text).unwrap();
    assert_eq!(now["numStartups"], 13);
    let mut servers = before["mcpServers"].clone();
    servers["added"] = doc["mcpServers"]["added"].clone();
    assert_eq!(now["mcpServers"], servers);
    let names: Vec<&String> = now["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["cmdb", "tickets", "legacy", "added"]);
    assert_eq!(state_files(&home), Vec::<String>::new());
}

#[test]
fn changes_that_cannot_be_merged_are_refused_with_the_way_out() {
    let home = Home::new();
    let f = claude_code();
    let (file, _) = connected(&home, &f);
    // The person removed the server connect left in place, and added one of an original name.
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let servers = doc["mcpServers"].as_object_mut().unwrap();
    servers.remove("legacy");
    servers.insert("cmdb".into(), json!({"command": "other"}));
    let edited = serde_json::to_string_pretty(&doc).unwrap();
    std::fs::write(&file, &edited).unwrap();
    let ran = home.gatehouse(&["gateway", "disconnect", "claude-code"]);
    assert_eq!(ran.status, 2, "{}\n{}", ran.stdout, ran.stderr);
    let backup = home.state().join("claude-code.backup");
    for part in [
        "legacy, which connect left in place, was removed",
        "cmdb was added since, and the original servers have one of that name too",
        "Nothing was written",
        &format!("cp {} {}", backup.display(), file.display()),
        "gatehouse gateway disconnect claude-code",
    ] {
        ran.assert_stderr(part);
    }
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        edited,
        "nothing was written"
    );
    // The way out, as said.
    std::fs::copy(&backup, &file).unwrap();
    let ran = home.gatehouse(&["gateway", "disconnect", "claude-code"]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stdout
            .contains("already had its own servers back, as before connect"),
        "{}",
        ran.stdout
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), f.text);
    assert_eq!(state_files(&home), Vec::<String>::new());
}

#[test]
fn a_client_with_nothing_gatehouse_can_carry_is_left_alone() {
    let home = Home::new();
    let text = "{\n  \"mcpServers\": {\"events\": {\"url\": \"https://events.example.com/sse\"},\n    \"ws\": {\"type\": \"ws\", \"url\": \"ws://127.0.0.1:1\"}}\n}\n";
    let file = home.write(".gemini/settings.json", text);
    let ran = home.gatehouse(&["gateway", "connect", "gemini"]);
    assert_eq!(ran.status, 2, "{}", ran.stdout);
    ran.assert_stderr("has no server Gatehouse can carry over: events (Gemini CLI reads a \"url\"");
    ran.assert_stderr("; ws (its transport \"ws\" is not one Gatehouse speaks");
    ran.assert_stderr("nothing was written");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    assert_eq!(state_files(&home), Vec::<String>::new());
    assert!(!home.servers_file("gemini").exists());
}

#[test]
fn files_that_cannot_be_used_are_named_and_nothing_is_written() {
    let home = Home::new();
    let missing = home.gatehouse(&["gateway", "connect", "claude-code"]);
    assert_eq!(missing.status, 2);
    missing.assert_stderr(&format!(
        "{} does not exist",
        home.path().join(".claude.json").display()
    ));
    let unfinished = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"\n  }\n";
    let broken = home.write(".cursor/mcp.json", unfinished);
    let ran = home.gatehouse(&["gateway", "connect", "cursor"]);
    assert_eq!(ran.status, 2);
    ran.assert_stderr("cannot be read as Cursor's settings: it is not valid JSON");
    ran.assert_stderr("(line 5, column 0)");
    assert_eq!(std::fs::read_to_string(&broken).unwrap(), unfinished);
    let taken = home.write(
        ".gemini/settings.json",
        "{\"mcpServers\": {\"gatehouse\": {\"command\": \"g\"}, \"a\": {\"command\": \"x\"}}}",
    );
    let ran = home.gatehouse(&["gateway", "connect", "gemini"]);
    assert_eq!(ran.status, 2);
    ran.assert_stderr("has a server named \"gatehouse\" already, which connect did not write");
    let readonly = home.write(
        ".config/Code/User/mcp.json",
        "{\"servers\": {\"a\": {\"type\": \"stdio\", \"command\": \"x\"}}}",
    );
    set_mode(&readonly, 0o444);
    let ran = home.gatehouse(&["gateway", "connect", "vscode"]);
    assert_eq!(ran.status, 2);
    ran.assert_stderr("is read-only (mode 444)");
    ran.assert_stderr("chmod u+w");
    assert_eq!(mode(&readonly), 0o444);
    let unknown = home.gatehouse(&["gateway", "connect", "windsurf"]);
    assert_eq!(unknown.status, 2);
    unknown.assert_stderr("invalid value 'windsurf'");
    unknown.assert_stderr("[possible values: claude-code, gemini, cursor, vscode]");
    assert_eq!(state_files(&home), Vec::<String>::new());
    assert!(taken.exists() && !home.path().join(".config/gatehouse/clients").exists());
}

#[test]
fn another_file_of_the_client_is_named_with_file() {
    let home = Home::new();
    let project = home.write(
        "app/.mcp.json",
        "{\n  \"mcpServers\": {\n    \"cmdb\": {\"command\": \"gatehouse\", \"args\": [\"serve\", \"cmdb\"]}\n  }\n}\n",
    );
    let given = project.to_string_lossy().into_owned();
    let ran = home.gatehouse(&["gateway", "connect", "claude-code", "--file", &given]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.contains(&format!(
            "To undo: gatehouse gateway disconnect claude-code --file {given}\n"
        )),
        "{}",
        ran.stdout
    );
    let kept = state_files(&home);
    assert!(
        kept.iter()
            .any(|n| n.starts_with("claude-code-") && n.ends_with(".backup")),
        "another file's backup is named by its path's digest: {kept:?}"
    );
    // The usual file is another connection: nothing to restore there.
    let ran = home.gatehouse(&["gateway", "disconnect", "claude-code"]);
    assert!(
        ran.stdout.starts_with("Nothing to restore: "),
        "{}",
        ran.stdout
    );
    let ran = home.gatehouse(&["gateway", "disconnect", "claude-code", "--file", &given]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(ran.stdout.contains("byte for byte"), "{}", ran.stdout);
}

#[test]
fn a_gateway_set_up_by_hand_is_not_put_behind_another() {
    let home = Home::new();
    let servers = home.write(".config/gatehouse/servers.json", "{\"mcpServers\": {}}");
    let gateway = json!({"command": exe(), "args": ["gateway", "--config", servers]});
    let text = json!({"mcpServers": {"gw": gateway, "a": {"command": "x"}}}).to_string();
    let file = home.write(".cursor/mcp.json", &text);
    let ran = home.gatehouse(&["gateway", "connect", "cursor"]);
    assert_eq!(ran.status, 2, "{}\n{}", ran.stdout, ran.stderr);
    ran.assert_stderr(&format!(
        "{}'s server \"gw\" starts Gatehouse's gateway already (over {}), and connect did not write it",
        file.display(),
        servers.display()
    ));
    ran.assert_stderr("nothing was written");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    assert_eq!(state_files(&home), Vec::<String>::new());
    assert!(!home.servers_file("cursor").exists());
}
