//! The loop where it lives: a playing model ([`crate::testing::Plays`]) on in-process
//! servers, on a paused clock.

use std::time::Duration;

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;

use crate::{
    model::{Decision, Message, ToolCall},
    testing::{Plays, Scripted, Server, World, text},
};

fn desk() -> Server {
    Server::new("desk")
        .tool("read", |_| async { text("a ticket") })
        .tool("broken", |_| async {
            CallToolResult::error(vec![ContentBlock::text("the desk is closed")]).into()
        })
        .tool("slow", |_| async {
            tokio::time::sleep(Duration::from_secs(3_600)).await;
            text("late")
        })
        .tool("huge", |_| async { text(&"x".repeat(100_000)) })
}

async fn start(settings: serde_json::Value) -> World {
    let (world, _) =
        World::start(vec![("desk", desk())], settings, json!({}), Scripted::new()).await;
    world
}

/// What the model read back for each call, in order.
fn tool_messages(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { content, .. } => Some(content.clone()),
            _ => None,
        })
        .collect()
}

fn calls(calls: &[(&str, &str)]) -> Decision {
    Decision {
        tool_calls: calls
            .iter()
            .enumerate()
            .map(|(i, (name, arguments))| ToolCall {
                id: format!("call_{i}"),
                name: (*name).into(),
                arguments: (*arguments).into(),
            })
            .collect(),
        ..Decision::default()
    }
}

#[tokio::test(start_paused = true)]
async fn the_step_limit_ends_a_turn_that_never_answers() {
    let world = start(json!({"maxSteps": 3, "allow": ["desk__read"]})).await;
    let mut model = Plays::new(vec![calls(&[("desk__read", "{}")])]);
    let mut conversation = Vec::new();
    let (answer, _) = world.host.ask(&mut model, &mut conversation, "loop").await;
    assert!(answer.contains("stopped after 3 steps"), "{answer}");
    assert_eq!(model.asked().len(), 3);
    assert!(world.seen.said("reached the step limit (3)"));
}

#[tokio::test(start_paused = true)]
async fn every_failure_goes_back_to_the_model_and_the_loop_goes_on() {
    let settings = json!({"toolTimeoutMs": 1_000, "allow": ["desk__broken", "desk__slow"]});
    let world = start(settings).await;
    let mut model = Plays::new(vec![
        calls(&[
            ("desk__nothing", "{}"),
            ("desk__broken", "not json"),
            ("desk__broken", "{}"),
            ("desk__slow", "{}"),
            ("desk__read", "{}"),
        ]),
        Decision::answer("done"),
    ]);
    let mut conversation = Vec::new();
    let (answer, _) = world.host.ask(&mut model, &mut conversation, "try").await;
    assert_eq!(answer, "done");
    let read = tool_messages(&conversation);
    assert_eq!(read.len(), 5, "{read:#?}");
    let expected = [
        "unknown tool",
        "not valid JSON",
        "the desk is closed",
        "timed out",
        // Not on the allow-list, and nobody there to say yes.
        "declined",
    ];
    for (text, words) in read.iter().zip(expected) {
        assert!(text.contains(words), "{words:?} not in {text}");
        assert!(text.chars().count() < 1_000, "{text}");
    }
}

#[tokio::test(start_paused = true)]
async fn what_goes_back_to_the_model_is_at_most_max_result_chars() {
    let world = start(json!({"maxResultChars": 1_000, "allow": ["desk__huge"]})).await;
    let mut turn = world.host.turn();
    let call = ToolCall {
        id: "call_1".into(),
        name: "desk__huge".into(),
        arguments: "{}".into(),
    };
    let shown = turn.propose(&call).await;
    assert!(
        shown.clipped && shown.chars <= 1_000,
        "{} chars",
        shown.chars
    );
    assert_eq!(shown.text.chars().count(), shown.chars);
}
