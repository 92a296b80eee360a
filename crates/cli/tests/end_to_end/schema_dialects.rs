//! Tool schemas in each model provider's dialect (`schemaDialect`), on the foreign servers
//! the tests run (server-everything, server-filesystem, server-memory) and the testbed's
//! odd ones: what an OpenAI-compatible endpoint receives breaks none of the dialect's
//! rules, and a strict null for an optional argument never reaches the server.

use crate::common;
use crate::interop_peers::{node, npm_server};
use crate::openai_endpoint::{Fake, tool_call};

use common::*;
use gatehouse::{config::SchemaDialect, dialect};
use serde_json::{Value, json};

fn foreign_servers(dir: &std::path::Path) -> String {
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(files.join("notes.txt"), "milk, eggs, rust\n").unwrap();
    let node = node();
    servers_file(
        dir,
        json!({
            "everything": {"command": node, "args": [npm_server("everything")]},
            "filesystem": {"command": node, "args": [npm_server("filesystem"), files.to_string_lossy()]},
            "memory": {"command": node, "args": [npm_server("memory")], "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl").to_string_lossy()}},
            "testbed": {"command": exe(), "args": ["serve", "testbed"]}}),
        json!({
            "allow": ["filesystem__read_text_file"],
            "toolSearch": "never",
            "schemaDialect": {"openai:gemini-*": "gemini", "openai:*": "openai-strict"}}),
    )
}

fn answer(text: &str) -> Value {
    json!({"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]})
}

/// Every tool definition a request carried, with what its dialect's rules say of it.
fn problems(request: &Value, dialect: SchemaDialect) -> Vec<String> {
    let mut out = Vec::new();
    for t in request["tools"].as_array().unwrap() {
        let f = &t["function"];
        let strict = f["strict"] == true;
        let found = match (dialect, strict) {
            (SchemaDialect::OpenAiStrict, false) => dialect::lenient_violations(&f["parameters"]),
            _ => dialect::violations(&f["parameters"], dialect),
        };
        out.extend(found.into_iter().map(|p| format!("{}: {p}", f["name"])));
    }
    out
}

#[test]
fn openai_strict_schemas_of_foreign_servers_and_a_null_taken_out_before_the_call() {
    let dir = scratch_dir();
    let config = foreign_servers(&dir);
    let path = dir.join("files/notes.txt").canonicalize().unwrap();
    let fake = Fake::start(vec![
        tool_call(
            "c1",
            "filesystem__read_text_file",
            json!({"path": path.to_string_lossy(), "head": null, "tail": null}),
            (1, 1),
        ),
        answer("read it"),
    ]);
    let ran = fake.ask("read my notes", &config, "openai:gpt-4o", &[]);
    let requests: Vec<Value> = fake.chat_bodies();
    let tools = requests[0]["tools"].as_array().unwrap();
    assert!(tools.len() > 35, "{}", tools.len());
    assert_eq!(
        problems(&requests[0], SchemaDialect::OpenAiStrict),
        Vec::<String>::new()
    );
    let strict = tools
        .iter()
        .filter(|t| t["function"]["strict"] == true)
        .count();
    assert!(
        strict * 2 > tools.len(),
        "most go strict: {strict} of {}",
        tools.len()
    );
    let read = tools
        .iter()
        .find(|t| t["function"]["name"] == "filesystem__read_text_file")
        .unwrap();
    assert_eq!(read["function"]["strict"], true);
    assert_eq!(
        read["function"]["parameters"]["required"],
        json!(["path", "tail", "head"])
    );
    assert_eq!(
        read["function"]["parameters"]["properties"]["head"]["type"],
        json!(["number", "null"])
    );
    // The nulls never reached the server: the call ran and read the file.
    assert_eq!(
        ran.tool_events()[0]["outcome"],
        "ok",
        "{:#?}",
        ran.step_texts()
    );
    let content = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "tool")
        .unwrap()["content"]
        .clone();
    assert!(
        content.as_str().unwrap().contains("milk, eggs, rust"),
        "{content}"
    );
}

#[test]
fn gemini_schemas_of_foreign_servers_break_none_of_its_rules() {
    let dir = scratch_dir();
    let config = foreign_servers(&dir);
    let fake = Fake::start(vec![answer("nothing to do")]);
    fake.ask("hello", &config, "openai:gemini-2.5-flash", &[]);
    let request = &fake.chat_requests()[0].body;
    assert_eq!(
        problems(request, SchemaDialect::Gemini),
        Vec::<String>::new()
    );
    let text = request["tools"].to_string();
    assert!(
        !text.contains("$ref") && !text.contains("$defs") && !text.contains("additionalProperties")
    );
    assert!(!text.contains("\"strict\""));
}
