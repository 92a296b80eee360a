//! A result past `maxResultChars`: the model reads its first part with a note naming
//! `read_result(id, offset)`, reads on with it, and the person can open the whole of it in
//! the saved file; `read_result` is offered only once a result was cut.

use crate::common;
use crate::openai_endpoint::{Fake, tool_call};

use common::*;
use serde_json::{Value, json};

/// The last tool message a chat request carried, read as JSON.
fn last_tool_message(request: &Value) -> Value {
    let messages = request["messages"].as_array().unwrap();
    let m = messages.iter().rfind(|m| m["role"] == "tool").unwrap();
    serde_json::from_str(m["content"].as_str().unwrap()).unwrap()
}

fn names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_cut_result_is_read_on_with_read_result_and_saved_whole() {
    let dir = scratch_dir();
    let config = servers_file(
        &dir,
        json!({"testbed": {"command": exe(), "args": ["serve", "testbed"]}}),
        json!({"allow": ["testbed__repeat"], "saveDir": dir.join("saved")}),
    );
    let whole = json!({"text": "abcdefghij".repeat(1_000)}).to_string();
    let total = whole.chars().count();
    let fake = Fake::start(vec![
        tool_call(
            "c1",
            "testbed__repeat",
            json!({"text": "abcdefghij", "times": 1000}),
            (1, 1),
        ),
        tool_call(
            "c2",
            "read_result",
            json!({"id": "r1", "offset": 5000}),
            (1, 1),
        ),
        tool_call(
            "c3",
            "read_result",
            json!({"id": "r1", "offset": total - 100}),
            (1, 1),
        ),
        tool_call(
            "c4",
            "read_result",
            json!({"id": "r9", "offset": 0}),
            (1, 1),
        ),
        json!({"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "read"}}]}),
    ]);
    let ran = fake.ask("repeat it", &config, "openai:gpt-test", &[]);
    let requests: Vec<Value> = fake.chat_bodies();
    assert_eq!(requests.len(), 5);
    assert!(
        !names(&requests[0]).contains(&"read_result".to_string()),
        "not before a cut"
    );
    assert_eq!(
        names(&requests[1]).last().unwrap(),
        "read_result",
        "appended after the cut"
    );

    let first = last_tool_message(&requests[1]);
    let shown = first["result"].as_str().unwrap();
    let note = first["note"].as_str().unwrap();
    let kept = shown.chars().count();
    assert!(whole.starts_with(shown));
    assert!(
        note.contains(&format!(
            "call read_result with id r1 and offset {kept} for the next part"
        )),
        "{note}"
    );
    assert!(requests[1]["messages"].to_string().len() > 1_000);

    let part = last_tool_message(&requests[2]);
    assert_eq!(part["tool"], "read_result");
    let text = part["result"].as_str().unwrap();
    assert!(
        whole[5000..].starts_with(text) && text.len() > 3_000,
        "{}",
        text.len()
    );
    assert!(part["note"].as_str().unwrap().contains(&format!(
        "characters 5001-{} of {total}",
        5000 + text.chars().count()
    )));

    let end = last_tool_message(&requests[3]);
    assert_eq!(end["result"].as_str().unwrap(), &whole[total - 100..]);
    assert_eq!(
        end["note"],
        format!(
            "characters {}-{total} of {total}: the end of result r1",
            total - 99
        )
    );

    let refused = last_tool_message(&requests[4]);
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("no result r9 is kept in this turn; kept: r1"),
        "{refused}"
    );

    // The whole result, saved for the person.
    let saved = ran
        .step_data()
        .into_iter()
        .find(|d| d.get("id") == Some(&json!("r1")) && d.get("path").is_some())
        .expect("a saved step");
    let file = std::fs::read_to_string(saved["path"].as_str().unwrap()).unwrap();
    assert_eq!(file, whole);
    assert_eq!(saved["chars"], total);
    let events = ran.tool_events();
    assert!(
        events[1..4]
            .iter()
            .all(|e| e["server"] == "host" && e["asked_user"] == false)
    );
    assert_eq!(events[3]["outcome"], "refused");
}
