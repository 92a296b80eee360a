//! The held calls' rows in the SQLite store, two handles on one file standing for two
//! replicas (PostgreSQL's are exercised end to end, in `gateway::questions`), and each
//! statement's spelling in both databases.

use super::*;
use crate::caller::who;
use crate::store::{Location, page::assert_spelled};

async fn store(dir: &tempfile::TempDir) -> Store {
    Store::open(&Location::File(dir.path().join("state.db")), None)
        .await
        .unwrap()
}

const NOW: i64 = 1_800_000_000_000;
const SAM: &str = "usr-sam@larkfield";
const OMAR: &str = "usr-omar@larkfield";
const YES: &str = r#"{"action":"accept","content":{"name":"Sam"}}"#;

fn row(id: &str, caller: &str) -> HeldRow {
    HeldRow::first(
        id.into(),
        CallerName::kept(caller.into()),
        NOW,
        NOW + 60_000,
    )
}

/// Two replicas' handles on one store, with Sam's call `h` held on the first.
async fn held(dir: &tempfile::TempDir) -> (Store, Store) {
    let (holder, other) = (store(dir).await, store(dir).await);
    assert!(holder.held_open(&row("h", SAM), NOW, 8).await.unwrap());
    (holder, other)
}

#[tokio::test]
async fn a_caller_holds_at_most_max_and_expired_calls_make_room() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir).await;
    let opened = |id: &'static str, caller, now| {
        let s = s.clone();
        async move { s.held_open(&row(id, caller), now, 2).await.unwrap() }
    };
    assert!(opened("a1", SAM, NOW).await && opened("a2", SAM, NOW).await);
    assert!(!opened("a3", SAM, NOW).await, "a third of Sam's");
    assert!(opened("b1", OMAR, NOW).await, "Omar's are not Sam's");
    assert_eq!(s.held_row("a1", NOW).await.unwrap(), Some(row("a1", SAM)));
    let later = NOW + 60_000;
    assert!(s.held_row("a1", later).await.unwrap().is_none(), "expired");
    assert!(opened("a4", SAM, later).await, "the expired make room");
    assert_eq!(s.held_row("a1", 0).await, Ok(None), "and are dropped");
}

#[tokio::test]
async fn an_answer_is_written_once_by_its_caller_for_the_question_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let (holder, other) = held(&dir).await;
    let refused = [
        (("h", 1), OMAR, NOW),
        (("h", 2), SAM, NOW),
        (("h", 1), SAM, NOW + 60_000),
        (("nope", 1), SAM, NOW),
    ];
    for (key, caller, now) in refused {
        assert!(
            !other
                .held_answer(key, &who(caller), YES, now)
                .await
                .unwrap(),
            "{key:?} {caller}"
        );
    }
    assert!(
        other
            .held_answer(("h", 1), &who(SAM), YES, NOW)
            .await
            .unwrap()
    );
    let again = other.held_answer(("h", 1), &who(SAM), "{}", NOW).await;
    assert_eq!(again, Ok(false), "a second answer to the same question");
    let seen = holder.held_row("h", NOW).await.unwrap().unwrap();
    assert_eq!(
        (seen.answered, seen.taken, seen.answer.as_str()),
        (1, Some(false), YES)
    );

    // Taken once, by the holder, who says it runs; then nothing is left to withdraw.
    assert!(holder.held_take(("h", 1), NOW + 5).await.unwrap());
    assert!(!holder.held_take(("h", 1), NOW + 6).await.unwrap());
    assert!(!other.held_withdraw(("h", 1)).await.unwrap());
    let taken = other.held_row("h", NOW).await.unwrap().unwrap();
    assert_eq!(
        (taken.taken, taken.answer.as_str(), taken.alive),
        (Some(true), "", NOW + 5)
    );
    holder.held_alive("h", NOW + 7).await.unwrap();
    assert_eq!(
        other.held_row("h", NOW).await.unwrap().unwrap().alive,
        NOW + 7
    );
}

#[tokio::test]
async fn an_answer_nobody_took_is_withdrawn_with_the_call_and_then_cannot_be_taken() {
    let dir = tempfile::tempdir().unwrap();
    let (holder, other) = held(&dir).await;
    let early = other.held_withdraw(("h", 1)).await;
    assert_eq!(early, Ok(false), "no answer yet: nothing to take back");
    other
        .held_answer(("h", 1), &who(SAM), YES, NOW)
        .await
        .unwrap();
    assert!(other.held_withdraw(("h", 1)).await.unwrap());
    assert_eq!(holder.held_take(("h", 1), NOW).await, Ok(false));
    assert_eq!(holder.held_row("h", NOW).await, Ok(None));
    let late = holder.held_outcome(("h", 1), "{}", (0, NOW + 1_000)).await;
    assert_eq!(late, Ok(false));
}

#[tokio::test]
async fn outcomes_follow_questions_in_order_and_only_its_caller_closes_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let (holder, other) = held(&dir).await;
    other
        .held_answer(("h", 1), &who(SAM), YES, NOW)
        .await
        .unwrap();
    holder.held_take(("h", 1), NOW).await.unwrap();
    // The server asks again: the call now waits on question 2.
    let asks = r#"{"kind":"asks"}"#;
    let then = (2, NOW + 60_000);
    assert_eq!(holder.held_outcome(("h", 1), asks, then).await, Ok(true));
    assert_eq!(
        holder.held_outcome(("h", 1), asks, then).await,
        Ok(false),
        "followed already"
    );
    let next = other.held_row("h", NOW).await.unwrap().unwrap();
    assert_eq!(
        (next.asked, next.outcome_of, next.outcome.as_str()),
        (2, 1, asks)
    );
    assert!(
        !other
            .held_answer(("h", 1), &who(SAM), YES, NOW)
            .await
            .unwrap()
    );
    assert!(
        other
            .held_answer(("h", 2), &who(SAM), YES, NOW)
            .await
            .unwrap()
    );
    holder.held_take(("h", 2), NOW).await.unwrap();
    let ended = r#"{"kind":"ended"}"#;
    assert_eq!(
        holder.held_outcome(("h", 2), ended, (0, NOW + 1_000)).await,
        Ok(true)
    );
    let last = other.held_row("h", NOW).await.unwrap().unwrap();
    assert_eq!((last.asked, last.outcome_of), (0, 2));
    assert!(
        !other
            .held_answer(("h", 3), &who(SAM), YES, NOW)
            .await
            .unwrap()
    );
    // Read: only the mark of what was answered stays, not counted against Sam's bound.
    other
        .held_close("h", &who(SAM), Closed::Read)
        .await
        .unwrap();
    let done = other.held_row("h", NOW).await.unwrap().unwrap();
    assert_eq!(
        (done.asked, done.answered, done.outcome.as_str()),
        (0, 2, "")
    );
    assert!(holder.held_open(&row("h2", SAM), NOW, 1).await.unwrap());
    // Given up, by its caller only.
    other
        .held_close("h2", &who(OMAR), Closed::GivenUp)
        .await
        .unwrap();
    assert!(other.held_row("h2", NOW).await.unwrap().is_some());
    other
        .held_close("h2", &who(SAM), Closed::GivenUp)
        .await
        .unwrap();
    assert!(holder.held_row("h2", NOW).await.unwrap().is_none());
}

#[test]
fn each_statement_is_spelled_in_each_databases_dialect() {
    assert_eq!(
        HeldRow::COLUMNS,
        "id, caller, taken, asked, answered, answer, outcome_of, outcome, alive, expires_at"
    );
    let templates = [
        COUNT_HELD,
        INSERT_HELD,
        ANSWER,
        TAKE,
        WITHDRAW,
        OUTCOME,
        ALIVE,
        DROP,
        DONE,
    ];
    assert_spelled(&templates, " gatehouse_held_calls");
}
