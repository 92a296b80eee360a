//! The gate where it lives: a host on in-process servers ([`crate::testing`]), one
//! proposal at a time, and what reached the server, the person and the ledger.

use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};

use crate::{
    approvals::Scope,
    gate::Keeper,
    ledger::Decision,
    model::ToolCall,
    testing::{InMemory, Scripted, Server, World, text},
    trace::Outcome,
};

fn call(name: &str) -> ToolCall {
    ToolCall {
        id: "call_1".into(),
        name: name.into(),
        arguments: json!({"ticket": "T-1"}).to_string(),
    }
}

fn desk() -> Server {
    Server::new("desk")
        .tool("close", |_| async { text("closed") })
        .tool("read", |_| async { text("read") })
}

async fn start(settings: Value, person: Scripted) -> (World, crate::testing::Serving) {
    let (world, mut serving) =
        World::start(vec![("desk", desk())], settings, json!({}), person).await;
    (world, serving.remove(0))
}

#[tokio::test]
async fn never_sent_unrecorded() {
    let (world, desk) = start(json!({"allow": ["desk__read"]}), Scripted::new()).await;
    // A ledger that cannot be written stops the call before it is sent.
    world.keeper.fail_appends(true);
    let shown = world.host.turn().propose(&call("desk__read")).await;
    assert!(
        desk.received().is_empty(),
        "sent unrecorded: {}",
        shown.text
    );
    assert!(shown.text.contains("error"), "{}", shown.text);
    // Once it can be written, the line is there before the server hears of the call.
    world.keeper.fail_appends(false);
    world.host.turn().propose(&call("desk__read")).await;
    assert_eq!(desk.received().len(), 1);
    let lines = world.keeper.lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(
        (lines[0].tool.as_str(), lines[0].decision),
        ("desk__read", Decision::Run)
    );
}

#[tokio::test]
async fn the_ledger_line_is_on_record_when_the_server_runs_the_call() {
    // The tool itself looks at the ledger as it runs.
    let keeper: Arc<OnceLock<Arc<InMemory>>> = Arc::default();
    let seen = keeper.clone();
    let server = Server::new("desk").tool("read", move |_| {
        let lines = seen.get().map_or(0, |k| k.lines().len());
        async move { text(&format!("lines on record: {lines}")) }
    });
    let settings = json!({"allow": ["desk__read"]});
    let (world, _) =
        World::start(vec![("desk", server)], settings, json!({}), Scripted::new()).await;
    let _ = keeper.set(world.keeper.clone());
    let shown = world.host.turn().propose(&call("desk__read")).await;
    assert!(shown.text.contains("lines on record: 1"), "{}", shown.text);
}

#[tokio::test]
async fn a_deny_wins() {
    // Denied by a rule (with a condition: denied outright, a tool is not even offered),
    // though the allow-list, an allow rule after it, a remembered
    // approval and a person ready to say yes would each let it run.
    let settings = json!({
        "allow": ["desk__*"],
        "rules": [
            {"tool": "desk__close", "decision": "deny", "reason": "closing is for people",
             "when": {"pointer": "/ticket", "glob": "T-*"}},
            {"tool": "desk__*", "decision": "allow"}
        ]
    });
    let (world, desk) = start(settings, Scripted::new().approving()).await;
    let digest = world
        .host
        .catalog()
        .get("desk__close")
        .expect("listed")
        .definition_digest()
        .to_owned();
    let trace = world.host.trace().clone();
    world
        .keeper
        .remember(None, Scope::Session, "desk__close", &digest, &trace)
        .await;
    let shown = world.host.turn().propose(&call("desk__close")).await;
    assert!(
        shown.text.contains("closing is for people"),
        "{}",
        shown.text
    );
    assert!(desk.received().is_empty());
    assert!(world.person.shown().is_empty(), "the person was asked");
    let lines = world.keeper.lines();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0].decision, Decision::Denied);
    let events = world.seen.tool_events();
    assert_eq!(events[0].outcome, Outcome::Refused);
    // The rest of the server is not denied.
    world.host.turn().propose(&call("desk__read")).await;
    assert_eq!(desk.received().len(), 1);
}

#[tokio::test]
async fn an_ask_is_put_to_the_person_and_a_no_sends_nothing() {
    let (world, desk) = start(json!({}), Scripted::new()).await;
    let shown = world.host.turn().propose(&call("desk__close")).await;
    assert!(desk.received().is_empty(), "{}", shown.text);
    let asked = world.person.approvals_asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(
        (asked[0].server.as_str(), asked[0].tool.as_str()),
        ("desk", "desk__close")
    );
    assert_eq!(asked[0].arguments, json!({"ticket": "T-1"}));
    assert_eq!(world.keeper.lines()[0].decision, Decision::Asked);
    // A yes sends exactly the arguments shown.
    let (world, desk) = start(json!({}), Scripted::new().approving()).await;
    world.host.turn().propose(&call("desk__close")).await;
    assert_eq!(
        desk.received()[0].arguments,
        world.person.approvals_asked()[0].arguments
    );
}

#[tokio::test]
async fn a_remembered_yes_runs_its_definition_without_asking_again() {
    let yes_for_session = crate::person::Approval {
        remember: Some(Scope::Session),
        ..crate::person::Approval::once(true, crate::person::AnsweredBy::Terminal)
    };
    let (world, desk) = start(json!({}), Scripted::new().approval(yes_for_session)).await;
    world.host.turn().propose(&call("desk__close")).await;
    world.host.turn().propose(&call("desk__close")).await;
    assert_eq!(desk.received().len(), 2);
    assert_eq!(world.person.approvals_asked().len(), 1);
}

#[tokio::test]
async fn a_tool_denied_outright_is_unknown_to_the_model() {
    let settings = json!({"rules": [{"tool": "desk__close", "decision": "deny"}]});
    let (world, desk) = start(settings, Scripted::new().approving()).await;
    let shown = world.host.turn().propose(&call("desk__close")).await;
    assert!(shown.text.contains("unknown tool"), "{}", shown.text);
    assert!(desk.received().is_empty() && world.person.shown().is_empty());
    // The ledger says what happened; the model learns only that there is no such tool.
    assert_eq!(world.keeper.lines()[0].decision, Decision::Denied);
}
