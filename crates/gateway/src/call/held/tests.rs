//! The held call's parts that need no server: the question as the caller is shown it,
//! the bounds on what is carried, the replica's table, and the person the server's
//! question waits on.

use rmcp::model::ContentBlock;

use super::*;

fn form(message: &str) -> ElicitRequestParams {
    serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string", "title": "Na\u{1b}[31mme"}}},
        "_meta": {"progressToken": 7}
    }))
    .unwrap()
}

#[test]
fn a_question_is_shown_visible_clipped_without_the_servers_meta_and_bounded() {
    let seen = shown(&form("Who are you?\u{1b}]0;pwned\u{7}")).unwrap();
    let value = serde_json::to_value(&seen).unwrap();
    assert_eq!(value["message"], "Who are you?\\u{1b}]0;pwned\\u{7}");
    assert_eq!(
        value["requestedSchema"]["properties"]["name"]["title"],
        "Na\\u{1b}[31mme"
    );
    assert!(value.get("_meta").is_none(), "{value}");
    let long = "x".repeat(MAX_QUESTION_MESSAGE_CHARS + 10);
    let clipped = serde_json::to_value(shown_of(&long)).unwrap();
    assert_eq!(
        clipped["message"].as_str().unwrap().chars().count(),
        MAX_QUESTION_MESSAGE_CHARS
    );
    let mut huge = json!({"mode": "form", "message": "?", "requestedSchema": {"type": "object", "properties": {}}});
    for i in 0..2_000 {
        huge["requestedSchema"]["properties"][format!("field{i}")] =
            json!({"type": "string", "description": "y".repeat(40)});
    }
    let huge: ElicitRequestParams = serde_json::from_value(huge).unwrap();
    assert!(
        shown(&huge).is_none(),
        "larger than {MAX_QUESTION_BYTES} bytes"
    );
}

fn shown_of(message: &str) -> ElicitRequestParams {
    shown(&form(message)).unwrap()
}

#[test]
fn an_outcome_is_kept_whole_or_as_a_tool_error_saying_it_was_too_large() {
    let small = Outcome::Ended {
        result: CallToolResult::success(vec![ContentBlock::text("done")]),
    };
    let kept: Value = serde_json::from_str(&small.kept()).unwrap();
    assert_eq!(kept["kind"], "ended");
    assert_eq!(kept["result"]["content"][0]["text"], "done");
    let large = Outcome::Ended {
        result: CallToolResult::success(vec![ContentBlock::text("z".repeat(MAX_OUTCOME_BYTES))]),
    };
    let kept = large.kept();
    assert!(kept.len() < 1_000, "{}", kept.len());
    let Outcome::Ended { result } = serde_json::from_str(&kept).unwrap() else {
        panic!("{kept}")
    };
    assert_eq!(result.is_error, Some(true));
    let asks: Outcome = serde_json::from_str(
        &Outcome::Asks {
            question: shown_of("again?"),
        }
        .kept(),
    )
    .unwrap();
    assert!(matches!(asks, Outcome::Asks { .. }));
}

#[test]
fn a_replica_holds_at_most_max_held_and_a_forgotten_call_makes_room() {
    let held = Held::default();
    for i in 0..MAX_HELD {
        assert!(held.admit(&format!("c{i}")).is_some());
    }
    assert!(held.admit("one-more").is_none());
    assert!(held.holds("c0") && !held.holds("one-more"));
    held.forget("c0");
    assert!(held.admit("one-more").is_some());
}

#[tokio::test]
async fn the_servers_question_waits_for_the_answer_one_at_a_time_and_is_cancelled_when_dropped() {
    let (person, mut questions) = HeldPerson::new();
    let question = form("Name?");
    let time = person.time();
    let asking = {
        let person = person.clone();
        let question = question.clone();
        tokio::spawn(async move { person.elicit("everything", &question).await })
    };
    while !time.now().0 {
        tokio::task::yield_now().await;
    }
    // The person's time stands out of the round's limit. A second question before the
    // first is taken is declined without anyone asked.
    let (second, by) = person.elicit("everything", &question).await;
    assert_eq!(
        (second.action, by),
        (ElicitationAction::Decline, AnsweredBy::Nobody)
    );
    let asked = questions.recv().await.unwrap();
    assert_eq!(asked.params, question);
    let mut yes = ElicitResult::new(ElicitationAction::Accept);
    yes.content = Some(json!({"name": "Sam"}));
    asked.answer.send(yes.clone()).unwrap();
    assert_eq!(asking.await.unwrap(), (yes, AnsweredBy::Client));
    assert!(!time.now().0);
    // Given up (the holder dropped it): the server is told `cancel`.
    let asking = {
        let person = person.clone();
        tokio::spawn(async move { person.elicit("everything", &question).await })
    };
    drop(questions.recv().await.unwrap());
    let (answer, by) = asking.await.unwrap();
    assert_eq!(
        (answer.action, by),
        (ElicitationAction::Cancel, AnsweredBy::Nobody)
    );
}
