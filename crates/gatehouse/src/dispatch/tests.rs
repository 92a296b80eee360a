//! The request's time limits, on a paused clock: a round that runs out of time is
//! cancelled at its limit, progress extends it no further than the hard maximum, and the
//! person's time answering a server's question is never counted.

use std::time::Duration;

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use serde_json::json;
use tokio::time::Instant;

use crate::{
    model::ToolCall,
    testing::{Called, Scripted, Server, World, text},
};

fn call(name: &str, arguments: serde_json::Value) -> ToolCall {
    ToolCall {
        id: "call_1".into(),
        name: name.into(),
        arguments: arguments.to_string(),
    }
}

/// A form asking for one string, as an older server asks mid-call.
fn question() -> ElicitRequestParams {
    let schema: ElicitationSchema = serde_json::from_value(json!({
        "type": "object", "properties": {"why": {"type": "string"}}, "required": ["why"]
    }))
    .expect("a valid form");
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: "Why?".into(),
        requested_schema: schema,
    }
}

#[tokio::test(start_paused = true)]
async fn a_round_past_its_time_limit_is_cancelled_at_the_limit() {
    let slow = Server::new("slow").tool("wait", |_| async {
        tokio::time::sleep(Duration::from_secs(3_600)).await;
        text("too late")
    });
    let settings = json!({"toolTimeoutMs": 5_000, "allow": ["slow__wait"]});
    let (world, _) = World::start(vec![("slow", slow)], settings, json!({}), Scripted::new()).await;
    let began = Instant::now();
    let shown = world
        .host
        .turn()
        .propose(&call("slow__wait", json!({})))
        .await;
    assert_eq!(began.elapsed(), Duration::from_secs(5), "{}", shown.text);
    assert!(shown.text.contains("timed out"), "{}", shown.text);
}

#[tokio::test(start_paused = true)]
async fn the_persons_time_is_not_counted() {
    // An older server asks its question inside the call; the person takes a minute, the
    // round's limit is five seconds, and the call still ends with the server's answer.
    let asking = Server::new("asking")
        .older()
        .tool("ask", |called: Called| async move {
            match called.peer.create_elicitation(question()).await {
                Ok(answer) if answer.action == ElicitationAction::Accept => text("answered"),
                Ok(_) | Err(_) => text("not answered"),
            }
        });
    let person = Scripted::new()
        .answer(
            ElicitResult::new(ElicitationAction::Accept).with_content(json!({"why": "because"})),
        )
        .thinking(Duration::from_secs(60));
    let settings = json!({"toolTimeoutMs": 5_000, "allow": ["asking__ask"]});
    let (world, _) = World::start(vec![("asking", asking)], settings, json!({}), person).await;
    let began = Instant::now();
    let shown = world
        .host
        .turn()
        .propose(&call("asking__ask", json!({})))
        .await;
    assert!(
        shown.text.contains("answered") && !shown.text.contains("not answered"),
        "{}",
        shown.text
    );
    assert!(began.elapsed() >= Duration::from_secs(60));
    assert_eq!(world.person.shown().len(), 1);
}
