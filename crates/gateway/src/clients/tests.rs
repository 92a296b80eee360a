use serde_json::{Value, json};

use super::{
    Client, GATEWAY_ENTRY,
    convert::convert,
    record::Record,
    restore::merge,
    text::{self, Layout},
};

/// The document a text holds, as JSON.
fn doc(text: &str) -> Value {
    text::read(text).unwrap().0
}

#[test]
fn comments_and_trailing_commas_are_read_as_the_clients_read_them() {
    let file = "// VS Code's mcp.json\n{\n  /* servers */ \"servers\": {\"a\": {\"type\": \"stdio\", \"command\": \"x\",},},\n  \"inputs\": [],\n}\n";
    let (value, outline) = text::read(file).unwrap();
    assert_eq!(value["servers"]["a"]["command"], "x");
    let keys: Vec<&str> = outline.members.iter().map(|m| m.key.as_str()).collect();
    assert_eq!(keys, ["servers", "inputs"]);
    let servers = outline.member("servers").unwrap().unwrap();
    assert_eq!(
        &file[servers.value.clone()],
        "{\"a\": {\"type\": \"stdio\", \"command\": \"x\",},}"
    );
    // A // inside a string is not a comment.
    let (value, _) = text::read("{\"url\": \"http://h/p\" // c\n}").unwrap();
    assert_eq!(value["url"], "http://h/p");
}

#[test]
fn a_document_that_is_not_an_object_or_not_json_is_refused_in_words() {
    let e = text::read("{\"a\": 1,,}").unwrap_err();
    assert!(e.contains("not valid JSON") && e.contains("line 1"), "{e}");
    assert_eq!(text::read("[1]").unwrap_err(), "it must hold a JSON object");
    assert!(text::read("{/* open").unwrap_err().contains("never closed"));
    let twice = text::read("{\"a\": 1, \"a\": 2}").unwrap().1;
    assert!(twice.member("a").unwrap_err().contains("written twice"));
}

#[test]
fn one_member_is_replaced_and_every_other_byte_is_kept() {
    let file = "{\n    \"numStartups\": 3,\n    \"mcpServers\": {\"old\": {}},\n    \"tips\": {\"x\": 1.50}\n}";
    let (_, outline) = text::read(file).unwrap();
    let value = Layout::of(file).value(&json!({"gatehouse": {"command": "g"}}));
    let out = text::set_member(file, &outline, "mcpServers", &value).unwrap();
    assert_eq!(
        out,
        "{\n    \"numStartups\": 3,\n    \"mcpServers\": {\n        \"gatehouse\": {\n            \"command\": \"g\"\n        }\n    },\n    \"tips\": {\"x\": 1.50}\n}"
    );
    assert_eq!(doc(&out)["mcpServers"]["gatehouse"]["command"], "g");
}

#[test]
fn a_missing_member_is_added_after_the_last_one_in_the_files_layout() {
    let file = "{\r\n\t\"theme\": \"Dracula\" // mine\r\n}\r\n";
    let (_, outline) = text::read(file).unwrap();
    let value = Layout::of(file).value(&json!({"g": 1}));
    let out = text::set_member(file, &outline, "mcpServers", &value).unwrap();
    assert_eq!(
        out,
        "{\r\n\t\"theme\": \"Dracula\",\r\n\t\"mcpServers\": {\r\n\t\t\"g\": 1\r\n\t} // mine\r\n}\r\n"
    );
    let empty = "{}";
    let (_, outline) = text::read(empty).unwrap();
    let out = text::set_member(empty, &outline, "servers", "{}").unwrap();
    assert_eq!(out, "{\"servers\": {}}");
    assert_eq!(doc(&out), json!({"servers": {}}));
}

#[test]
fn a_member_is_removed_with_its_comma() {
    for (file, key, want) in [
        (
            "{\"a\": 1, \"b\": 2, \"c\": 3}",
            "b",
            "{\"a\": 1, \"c\": 3}",
        ),
        ("{\"a\": 1, \"b\": 2}", "a", "{\"b\": 2}"),
        ("{\"a\": 1, \"b\": 2}", "b", "{\"a\": 1}"),
        ("{ \"a\": 1 }", "a", "{}"),
        ("{\"a\": 1}", "z", "{\"a\": 1}"),
    ] {
        let (_, outline) = text::read(file).unwrap();
        assert_eq!(
            text::remove_member(file, &outline, key),
            want,
            "{file} less {key}"
        );
    }
}

#[test]
fn claude_codes_entries_are_carried_as_they_are() {
    let stdio = json!({"type": "stdio", "command": "npx", "args": ["-y", "pkg"],
                       "env": {"TOKEN": "${TOKEN}", "MODE": "${MODE:-fast}"}});
    let c = convert(Client::ClaudeCode, "mem", &stdio).unwrap();
    assert_eq!(
        c.entry,
        json!({"command": "npx", "args": ["-y", "pkg"], "env": {"TOKEN": "${TOKEN}", "MODE": "${MODE:-fast}"}})
    );
    assert!(c.notes.is_empty());
    let http = json!({"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer ${T}"},
                      "oauth": {"clientId": "id", "callbackPort": 8080}});
    let c = convert(Client::ClaudeCode, "remote", &http).unwrap();
    assert_eq!(
        c.entry,
        json!({"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer ${T}"},
               "oauth": {"clientId": "id", "redirectPort": 8080}})
    );
}

#[test]
fn entries_that_cannot_be_carried_say_why() {
    let cases = [
        (
            Client::ClaudeCode,
            json!({"type": "sse", "url": "https://h/sse"}),
            "HTTP+SSE",
        ),
        (
            Client::ClaudeCode,
            json!({"command": "x", "headersHelper": "h"}),
            "\"headersHelper\"",
        ),
        (
            Client::Gemini,
            json!({"url": "https://h/sse"}),
            "\"httpUrl\"",
        ),
        (
            Client::VsCode,
            json!({"type": "stdio", "command": "x", "env": {"K": "${input:key}"}}),
            "${input:key}",
        ),
        (
            Client::Cursor,
            json!({"command": "x", "args": ["${workspaceFolder}"]}),
            "${workspaceFolder}",
        ),
        (
            Client::Cursor,
            json!({"command": "x", "envFile": ".env"}),
            "\"envFile\"",
        ),
        (
            Client::VsCode,
            json!({"type": "ws", "url": "ws://h"}),
            "\"ws\"",
        ),
        (
            Client::Cursor,
            json!({"command": "x", "url": "https://h"}),
            "both",
        ),
        (Client::Cursor, json!({"args": []}), "neither"),
        (Client::ClaudeCode, json!({"command": ""}), "no \"command\""),
        (
            Client::ClaudeCode,
            json!({"command": "x", "args": "-y"}),
            "not a list",
        ),
        (
            Client::ClaudeCode,
            json!({"command": "x", "env": {"A": "${unclosed"}}),
            "unclosed",
        ),
        (Client::ClaudeCode, json!(["x"]), "not a JSON object"),
    ];
    for (client, entry, why) in cases {
        let e = convert(client, "s", &entry).unwrap_err();
        assert!(e.contains(why), "{client:?} {entry}: {e}");
    }
    let e = convert(Client::ClaudeCode, "a__b", &json!({"command": "x"})).unwrap_err();
    assert!(e.contains("rename it"), "{e}");
}

#[test]
fn gemini_variables_and_tool_lists_are_written_as_gatehouse_reads_them() {
    let entry = json!({"command": "$HOME/bin/srv", "args": ["--key=${KEY}", "a $ b"], "cwd": "./srv",
                       "env": {"TOKEN": "$MY_TOKEN"}, "timeout": 30000, "trust": true,
                       "includeTools": ["read"], "excludeTools": ["write"]});
    let c = convert(Client::Gemini, "g", &entry).unwrap();
    assert_eq!(
        c.entry,
        json!({"command": "${HOME}/bin/srv", "args": ["--key=${KEY}", "a $ b"], "cwd": "./srv",
               "env": {"TOKEN": "${MY_TOKEN}"}, "enabledTools": ["read"], "disabledTools": ["write"]})
    );
    assert_eq!(c.notes.len(), 2, "{:?}", c.notes);
    assert!(c.notes[0].contains("\"timeout\"") && c.notes[1].contains("\"trust\""));
    let http = convert(Client::Gemini, "h", &json!({"httpUrl": "https://h/mcp"})).unwrap();
    assert_eq!(http.entry, json!({"type": "http", "url": "https://h/mcp"}));
    let e = convert(
        Client::Gemini,
        "h",
        &json!({"httpUrl": "https://a", "url": "https://b", "type": "http"}),
    )
    .unwrap_err();
    assert!(e.contains("twice"), "{e}");
}

#[test]
fn the_editors_variables_are_written_as_gatehouse_reads_them() {
    let entry = json!({"type": "stdio", "command": "${userHome}${/}bin${pathSeparator}srv",
                       "env": {"KEY": "${env:API_KEY}", "PORT": 8080, "UNSET": null}, "dev": {"watch": "x"}});
    let c = convert(Client::VsCode, "v", &entry).unwrap();
    assert_eq!(
        c.entry,
        json!({"command": "${HOME}/bin/srv", "env": {"KEY": "${API_KEY}", "PORT": "8080"}})
    );
    assert!(c.notes[0].contains("\"dev\""), "{:?}", c.notes);
    let cursor = convert(
        Client::Cursor,
        "c",
        &json!({"url": "https://h/${env:PATH_PART}"}),
    )
    .unwrap();
    assert_eq!(
        cursor.entry,
        json!({"type": "http", "url": "https://h/${PATH_PART}"})
    );
}

#[test]
fn the_gateways_entry_has_each_clients_shape() {
    let exe = std::path::Path::new("/opt/gatehouse");
    let file = std::path::Path::new("/h/.config/gatehouse/clients/x.json");
    let args = json!(["gateway", "--config", "/h/.config/gatehouse/clients/x.json"]);
    for client in Client::ALL {
        let entry = client.gateway_entry(exe, file).unwrap();
        // The host knows it again, as the gateway over that file (config::behind).
        assert_eq!(
            gatehouse::config::behind::gateway_over(&entry, None),
            file.to_str(),
            "{client:?}"
        );
        assert_eq!(entry["command"], "/opt/gatehouse");
        assert_eq!(entry["args"], args);
        let typed = matches!(client, Client::ClaudeCode | Client::VsCode);
        assert_eq!(entry.get("type").is_some(), typed, "{client:?}");
    }
    assert_eq!(Client::VsCode.servers_key(), "servers");
    assert_eq!(Client::Gemini.servers_key(), "mcpServers");
}

/// A record of connect having written `servers` into a file.
fn record(servers: Value) -> Record {
    Record {
        client: "claude-code".into(),
        file: "/h/.claude.json".into(),
        servers_file: "/h/s.json".into(),
        servers_file_made: true,
        servers_file_sha256: String::new(),
        original_sha256: String::new(),
        written_sha256: String::new(),
        written_servers: servers,
    }
}

#[test]
fn a_file_changed_since_connect_gets_its_servers_back_and_keeps_the_rest() {
    let original = "{\n  \"n\": 1,\n  \"mcpServers\": {\"a\": {\"command\":  \"x\"}, \"old\": {\"type\": \"sse\", \"url\": \"u\"}}\n}\n";
    let written = json!({GATEWAY_ENTRY: {"command": "g"}, "old": {"type": "sse", "url": "u"}});
    let now = "{\n  \"n\": 2,\n  \"mcpServers\": {\"gatehouse\": {\"command\": \"g\"}, \"old\": {\"type\": \"sse\", \"url\": \"u\"}}\n}\n";
    let (merged, added) = merge(
        Client::ClaudeCode,
        &record(written.clone()),
        now.as_bytes(),
        original.as_bytes(),
    )
    .unwrap()
    .unwrap();
    // The other change kept; the original servers back byte for byte.
    assert_eq!(
        merged,
        "{\n  \"n\": 2,\n  \"mcpServers\": {\"a\": {\"command\":  \"x\"}, \"old\": {\"type\": \"sse\", \"url\": \"u\"}}\n}\n"
    );
    assert!(added.is_empty());
    let with_new = now.replace("\"old\": {", "\"new\": {\"command\": \"y\"}, \"old\": {");
    let (merged, added) = merge(
        Client::ClaudeCode,
        &record(written.clone()),
        with_new.as_bytes(),
        original.as_bytes(),
    )
    .unwrap()
    .unwrap();
    assert_eq!(added, ["new"]);
    let servers = doc(&merged)["mcpServers"].clone();
    let names: Vec<&String> = servers.as_object().unwrap().keys().collect();
    assert_eq!(names, ["a", "old", "new"]);
}

#[test]
fn changes_that_cannot_be_merged_are_named() {
    let original = "{\"mcpServers\": {\"a\": {\"command\": \"x\"}, \"old\": {\"type\": \"sse\", \"url\": \"u\"}}}";
    let written = json!({GATEWAY_ENTRY: {"command": "g"}, "old": {"type": "sse", "url": "u"}});
    let now =
        "{\"mcpServers\": {\"gatehouse\": {\"command\": \"g\"}, \"a\": {\"command\": \"z\"}}}";
    let changes = merge(
        Client::ClaudeCode,
        &record(written),
        now.as_bytes(),
        original.as_bytes(),
    )
    .unwrap_err();
    assert_eq!(changes.len(), 2, "{changes:?}");
    assert!(changes[0].contains("old, which connect left in place, was removed"));
    assert!(changes[1].contains("a was added since"));
    let broken = merge(
        Client::ClaudeCode,
        &record(json!({})),
        b"{",
        original.as_bytes(),
    )
    .unwrap_err();
    assert!(broken[0].contains("can no longer be read"), "{broken:?}");
}

#[test]
fn a_file_whose_servers_are_the_original_ones_again_is_left_as_it_is() {
    // A client that was running wrote its file from what it had read before connect.
    let original = "{\"n\": 1, \"mcpServers\": {\"a\": {\"command\": \"x\"}}}";
    let rewritten = "{\n  \"n\": 2,\n  \"mcpServers\": {\n    \"a\": {\n      \"command\": \"x\"\n    }\n  }\n}";
    let written = json!({GATEWAY_ENTRY: {"command": "g"}});
    let merged = merge(
        Client::ClaudeCode,
        &record(written),
        rewritten.as_bytes(),
        original.as_bytes(),
    );
    assert_eq!(merged, Ok(None));
}
