//! A thousand tools: the README's question over the pinned real servers' tool lists (each
//! served by the testbed), the built-in servers and generated tools, with `search_tools`
//! instead of every definition; and what each model call carries, as an OpenAI-compatible
//! endpoint receives it.

use crate::common;
use crate::openai_endpoint::{Fake, tool_call};

use common::*;
use serde_json::{Value, json};

/// The default tool budget (config::DEFAULT_TOOL_BUDGET_BYTES).
const BUDGET: usize = 16_384;

/// A servers file of at least 1,000 tools: the built-in servers, every real server pinned
/// in `bench/catalog/servers` served by the testbed, and generated tools to fill.
fn thousand_tools(dir: &std::path::Path, settings: Value) -> String {
    let mut servers = serde_json::Map::new();
    for name in ["support", "cmdb", "tickets", "orders"] {
        servers.insert(name.into(), builtin_server(name, json!({})));
    }
    let pinned =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/catalog/servers");
    let mut count = 8;
    let mut files: Vec<_> = std::fs::read_dir(&pinned)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for path in files {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        count += doc["tools"].as_array().unwrap().len();
        servers.insert(
            doc["server"].as_str().unwrap().into(),
            json!({"command": exe(), "args": ["serve", "testbed"],
                   "env": {"TESTBED_TOOLS_FILE": path.to_string_lossy()}}),
        );
    }
    let one = write(
        dir,
        "one.json",
        &json!([{"name": "lookup", "description": "Look a word up.",
        "inputSchema": {"type": "object", "properties": {"word": {"type": "string"}}}}]),
    );
    servers.insert(
        "generated".into(),
        json!({"command": exe(), "args": ["serve", "testbed"],
               "env": {"TESTBED_TOOLS_FILE": one, "TESTBED_TOOLS": (1_000 - count).to_string()}}),
    );
    let mut gatehouse = json!({"allow": ["support__search_knowledge", "support__get_ticket"]});
    if let (Some(g), Value::Object(more)) = (gatehouse.as_object_mut(), settings) {
        g.extend(more);
    }
    servers_file(dir, Value::Object(servers), gatehouse)
}

/// The data of the steps whose text starts with `prefix`.
fn data_of(ran: &Ran, prefix: &str) -> Vec<Value> {
    ran.json()["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["text"].as_str().unwrap().starts_with(prefix))
        .map(|s| s["data"].clone())
        .collect()
}

#[test]
fn the_readme_question_is_answered_over_a_thousand_tools_with_search_tools() {
    let dir = scratch_dir();
    let config = thousand_tools(&dir, json!({}));
    let ran = run(
        &[
            "ask",
            "Draft a reply to ticket T-30002",
            "--config",
            &config,
            "--json",
        ],
        &[],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let answer = ran.answer();
    assert!(
        answer.starts_with("Draft reply for ticket T-30002:\n\nHi Hugo,"),
        "{answer}"
    );
    assert!(
        answer.contains(
            "(Policy used: Refunds and payments policy, policy://larkfield/refunds-and-payments)"
        ),
        "{answer}"
    );
    let deferred = data_of(&ran, "the definitions of");
    assert_eq!(deferred.len(), 1, "{:#?}", ran.step_texts());
    let d = &deferred[0];
    assert!(d["tools"].as_u64().unwrap() >= 1_000, "{d}");
    assert!(d["catalog_bytes"].as_u64().unwrap() > 300_000, "{d}");
    assert_eq!(d["budget"], BUDGET);
    assert!(d["offered_bytes"].as_u64().unwrap() <= BUDGET as u64, "{d}");
    let searches = data_of(&ran, "search_tools found");
    assert_eq!(searches.len(), 2);
    assert!(
        searches[0]["added"]
            .as_array()
            .unwrap()
            .contains(&json!("support__get_ticket"))
    );
    assert!(
        searches[1]["added"]
            .as_array()
            .unwrap()
            .contains(&json!("support__search_knowledge"))
    );
    for s in &searches {
        assert!(s["offered_bytes"].as_u64().unwrap() <= BUDGET as u64, "{s}");
    }
    let wants = ran.steps_starting("model:");
    assert_eq!(
        wants,
        [
            "model: wants search_tools",
            "model: wants search_tools",
            "model: wants support__get_ticket",
            "model: wants support__search_knowledge",
            "model: final answer"
        ]
    );
    let events = ran.tool_events();
    assert_eq!(events[0]["tool"], "search_tools");
    assert_eq!(events[0]["server"], "host");
    assert_eq!(events[0]["outcome"], "ok");
    assert_eq!(
        events[0]["asked_user"], false,
        "the host's own search never asks the person"
    );

    // The built-in servers alone fit the budget: every definition, no search.
    let small = run(&["ask", "Draft a reply to ticket T-30002", "--json"], &[]);
    assert_eq!(small.status, 0, "{}", small.stderr);
    assert_eq!(small.answer(), answer, "the same answer either way");
    assert!(
        !small
            .step_texts()
            .iter()
            .any(|s| s.contains("search_tools"))
    );
}

/// The names of the tools a chat request carried, and its tools' bytes.
fn offered(request: &Value) -> (Vec<String>, usize) {
    let tools = request["tools"].as_array().cloned().unwrap_or_default();
    let names = tools
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    (names, Value::Array(tools).to_string().len())
}

#[test]
fn each_model_call_carries_search_tools_then_what_was_found_or_called_appended() {
    let dir = scratch_dir();
    let config = thousand_tools(&dir, json!({}));
    let calls = [
        (
            "search_tools",
            json!({"query": "read a text file from my disk"}),
        ),
        (
            "filesystem__read_text_file",
            json!({"path": "/tmp/notes.txt"}),
        ),
        (
            "github__get_issue",
            json!({"owner": "acme", "repo": "web", "issue_number": 7}),
        ),
    ];
    let mut replies: Vec<Value> = (calls.into_iter().enumerate())
        .map(|(i, (name, args))| tool_call(&format!("c{}", i + 1), name, args, (10, 1)))
        .collect();
    replies.push(json!({"choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "done"}}]}));
    let fake = Fake::start(replies);
    let ran = fake.ask(
        "read my notes and issue 7",
        &config,
        "openai:gpt-test",
        &["--yes"],
    );
    assert_eq!(ran.answer(), "done");
    let calls: Vec<(Vec<String>, usize)> = fake
        .chat_requests()
        .iter()
        .map(|r| offered(&r.body))
        .collect();
    assert_eq!(calls.len(), 4);
    assert_eq!(
        calls[0].0,
        ["search_tools", "read_resource"],
        "the search and what is always loaded"
    );
    let found = &calls[1].0;
    common::expect::assert_has(found, "filesystem__read_text_file");
    for (i, pair) in calls.windows(2).enumerate() {
        assert_eq!(
            pair[1].0[..pair[0].0.len()],
            pair[0].0[..],
            "call {} keeps call {}'s start",
            i + 2,
            i + 1
        );
    }
    assert_eq!(
        calls[2].0, calls[1].0,
        "nothing new from a call to an offered tool"
    );
    assert_eq!(
        calls[3].0.last().unwrap(),
        "github__get_issue",
        "a tool called by name is loaded"
    );
    assert!(!calls[2].0.contains(&"github__get_issue".to_string()));
    for (names, bytes) in &calls {
        assert!(*bytes <= BUDGET, "{bytes} bytes: {names:?}");
    }
    let steps = ran.step_texts();
    assert!(
        steps.contains(&"host: github__get_issue was called by name before it was offered: its definition is added to the following model calls".to_string()),
        "{steps:#?}"
    );
    // Kept in the run, marked a detail: the screen shows it only with -v.
    let called = ran
        .steps()
        .into_iter()
        .find(|s| {
            s["text"]
                .as_str()
                .is_some_and(|t| t.contains("before it was offered"))
        })
        .unwrap();
    assert_eq!(called["data"]["detail"], true, "{called}");
    // What the model read back from its search: the tools, by name and server.
    let messages = fake.chat_requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let tool_message = messages.iter().rfind(|m| m["role"] == "tool").unwrap();
    let content: Value = serde_json::from_str(tool_message["content"].as_str().unwrap()).unwrap();
    let hits = content["result"]["tools"].as_array().unwrap();
    assert!(
        hits.iter()
            .any(|h| h["name"] == "filesystem__read_text_file" && h["server"] == "filesystem"),
        "{content}"
    );
    assert!(
        content["result"]["note"]
            .as_str()
            .unwrap()
            .contains("added to your tools")
    );
}

#[test]
fn a_tool_a_rule_hides_is_neither_offered_nor_found_and_the_search_is_no_ledger_line() {
    let dir = scratch_dir();
    let ledger = dir.join("ledger.jsonl");
    let config = write(
        &dir,
        "servers.json",
        &json!({"mcpServers": {"support": builtin_server("support", json!({})),
                               "tickets": builtin_server("tickets", json!({}))},
                "gatehouse": {"toolSearch": "always",
                              "rules": [{"tool": "support__get_ticket", "decision": "deny"}],
                              "ledger": {"path": ledger}}}),
    );
    let model = play_model(json!([
        {"tool_calls": [{"name": "search_tools", "arguments": {"query": "get a ticket by its id"}}]},
        {"answer": "done"}
    ]));
    let ran = run(
        &["ask", "x", "--config", &config, "--model", &model, "--json"],
        &[],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let searches = data_of(&ran, "search_tools found");
    assert_eq!(searches.len(), 1, "{:#?}", ran.step_texts());
    let found: Vec<&str> = searches[0]["found"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        found.contains(&"tickets__list_tickets"),
        "the search finds the other ticket tools: {found:?}"
    );
    assert!(
        !found.contains(&"support__get_ticket"),
        "a hidden tool is not found: {found:?}"
    );
    assert!(
        !ran.step_texts()
            .iter()
            .any(|s| s.contains("host's own tool")),
        "the host's search is no step of the gate: {:#?}",
        ran.step_texts()
    );
    let lines = std::fs::read_to_string(&ledger).unwrap_or_default();
    assert!(
        !lines.contains("search_tools"),
        "the host's search reads only its own state and writes no ledger line:\n{lines}"
    );
}

#[test]
fn a_search_nothing_fits_says_so_and_names_the_closest_servers_instead_of_weak_matches() {
    let dir = scratch_dir();
    let config = write(
        &dir,
        "servers.json",
        &json!({"mcpServers": {"support": builtin_server("support", json!({})),
                               "tickets": builtin_server("tickets", json!({}))},
                "gatehouse": {"toolSearch": "always"}}),
    );
    // Only "get" is a word of the tools: no tool bakes bread.
    let model = play_model(json!([
        {"tool_calls": [{"name": "search_tools", "arguments":
            {"query": "get sourdough starter, flour, salt, a dutch oven and rye for baking bread loaves this weekend"}}]},
        {"answer": "done"}
    ]));
    let ran = run(
        &["ask", "x", "--config", &config, "--model", &model, "--json"],
        &[],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let told = data_of(&ran, "search_tools found nothing that fits");
    assert_eq!(told.len(), 1, "{:#?}", ran.step_texts());
    assert_eq!(told[0]["found"], json!([]));
    let coverage = told[0]["coverage"].as_f64().unwrap();
    assert!(coverage < 0.15, "{coverage}");
    let closest = told[0]["closest"].as_array().unwrap();
    assert!(!closest.is_empty(), "the closest servers are named");
    for c in closest {
        let server = c["server"].as_str().unwrap();
        assert!(["support", "tickets"].contains(&server), "{c}");
        assert!(
            c["tools"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t.as_str().unwrap().starts_with(&format!("{server}__")))
        );
    }
    assert!(
        data_of(&ran, "search_tools found ")
            .iter()
            .all(|d| d.get("coverage").is_some()),
        "no weak matches are offered"
    );
}
