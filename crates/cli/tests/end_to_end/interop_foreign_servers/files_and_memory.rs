//! server-filesystem and server-memory under the host, doing real tasks. Neither has an
//! HTTP mode: these cases run over stdio only.

use std::path::Path;

use serde_json::{Value, json};

use super::*;
use crate::common::servers_file;

fn filesystem_file(dir: &Path, root: &Path) -> String {
    servers_file(
        dir,
        json!({"files": stdio_server(&node(), &[&npm_server("filesystem"), root.to_str().unwrap()])}),
        json!({"allow": ["files__read_text_file", "files__list_directory"]}),
    )
}

pub fn server_filesystem_writes_with_the_persons_yes_reads_back_and_lists(_: Transport) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    let notes = root.join("notes.md");
    let content = "# Interop\nwritten through gatehouse\n";
    let config = filesystem_file(dir.path(), &root);
    let decisions = json!([
        {"tool_calls": [{"name": "files__write_file", "arguments": {"path": notes, "content": content}}]},
        {"tool_calls": [{"name": "files__read_text_file", "arguments": {"path": notes}}]},
        {"tool_calls": [{"name": "files__list_directory", "arguments": {"path": root}}]},
        {"tool_calls": [{"name": "files__read_text_file", "arguments": {"path": "/etc/passwd"}}]},
        {"answer": "done"}
    ]);

    // The person says no: nothing is written, the server never sees the call.
    let ran = ask(dir.path(), &config, decisions.clone(), &["--no"], &[]);
    assert_eq!(ran.outcomes()[0], "declined");
    assert!(!notes.exists());
    assert!(
        !wire(dir.path(), "files")
            .iter()
            .any(|(d, m)| d == "to_server"
                && m["method"] == "tools/call"
                && m["params"]["name"] == "write_file")
    );

    // The person says yes.
    let ran = ask(dir.path(), &config, decisions, &["--yes"], &[]);
    discovered(&ran, "files", "2025-11-25", "secure-filesystem-server");
    let texts_ = ran.step_texts();
    assert_eq!(
        texts_[texts_
            .iter()
            .position(|t| t == "model: wants files__write_file")
            .unwrap()
            + 1],
        "host: not on the allow-list: ask the person"
    );
    assert_eq!(
        ran.outcomes(),
        vec!["ok", "ok", "ok", "tool_error"],
        "{texts_:#?}"
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), content);
    let wire = wire(dir.path(), "files");
    assert_eq!(
        tool_result(&wire, "read_text_file", 0)["structuredContent"]["content"],
        content
    );
    assert_eq!(
        tool_result(&wire, "list_directory", 0)["structuredContent"]["content"],
        "[FILE] notes.md"
    );
    // The server's own check: a path outside its folder is a tool error the model reads.
    assert!(
        texts_.iter().any(|t| t.starts_with(
            "server: tool error: Access denied - path outside allowed directories: /etc/passwd"
        )),
        "{texts_:#?}"
    );
}

pub fn server_memory_keeps_entities_and_relations_and_finds_them(_: Transport) {
    let dir = tempfile::tempdir().unwrap();
    let memory = dir.path().join("memory.jsonl");
    let mut server = stdio_server(&node(), &[&npm_server("memory")]);
    server["env"] = json!({"MEMORY_FILE_PATH": memory});
    let config = servers_file(
        dir.path(),
        json!({"memory": server}),
        json!({"allow": ["memory__search_nodes", "memory__read_graph"]}),
    );
    let ran = ask(
        dir.path(),
        &config,
        json!([
            {"tool_calls": [{"name": "memory__create_entities", "arguments": {"entities": [
                {"name": "jump-prod-02", "entityType": "host", "observations": ["bastion for prod"]},
                {"name": "Camille Michel", "entityType": "person", "observations": ["platform team"]}
            ]}}]},
            {"tool_calls": [{"name": "memory__create_relations", "arguments": {"relations": [
                {"from": "Camille Michel", "to": "jump-prod-02", "relationType": "owns"}
            ]}}]},
            {"tool_calls": [{"name": "memory__search_nodes", "arguments": {"query": "Camille"}}]},
            {"answer": "done"}
        ]),
        &["--yes"],
        &[],
    );
    discovered(&ran, "memory", "2025-11-25", "memory-server");
    assert_eq!(
        ran.outcomes(),
        vec!["ok", "ok", "ok"],
        "{:#?}",
        ran.step_texts()
    );
    // The writes were put to the person; the search was on the allow-list.
    let asked = ran
        .step_texts()
        .iter()
        .filter(|t| *t == "host: not on the allow-list: ask the person")
        .count();
    assert_eq!(asked, 2);
    let stored: Vec<Value> = json_lines(&memory);
    assert_eq!(stored.len(), 3, "{stored:?}");
    assert!(stored.contains(&json!({"type": "relation", "from": "Camille Michel", "to": "jump-prod-02", "relationType": "owns"})));
    let search = tool_result(&wire(dir.path(), "memory"), "search_nodes", 0);
    let names: Vec<&str> = search["structuredContent"]["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"Camille Michel"), "{search}");
    assert_eq!(
        search["structuredContent"]["relations"][0]["relationType"],
        "owns"
    );
}
