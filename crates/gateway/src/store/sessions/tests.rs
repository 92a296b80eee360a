//! The session rows in the SQLite store (PostgreSQL's are exercised end to end, in
//! `gateway::sessions` of the end-to-end tests).

use super::*;
use crate::caller::who;
use crate::store::{Kind, Location};

async fn store(dir: &tempfile::TempDir) -> Store {
    let location = Location::File(dir.path().join("state.db"));
    Store::open(&location, None).await.unwrap()
}

fn session(id: &str, caller: &CallerName, expires_at: i64) -> SessionRow {
    SessionRow {
        id: id.into(),
        caller: caller.clone(),
        init: r#"{"protocolVersion":"2025-11-25"}"#.into(),
        expires_at,
    }
}

const NOW: i64 = 1_800_000_000;

#[tokio::test]
async fn a_session_is_found_until_it_expires_or_ends_and_only_its_caller_ends_it() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (store(&dir).await, store(&dir).await);
    assert!(
        a.mcp_session_open(session("s1", &who("sam@larkfield"), NOW + 60), NOW, 4)
            .await
            .unwrap()
    );
    // The other replica finds it, with its caller and initialize parameters.
    let row = b.mcp_session_row("s1", NOW).await.unwrap().unwrap();
    assert_eq!(row, session("s1", &who("sam@larkfield"), NOW + 60));
    assert!(
        b.mcp_session_row("s1", NOW + 60).await.unwrap().is_none(),
        "expired"
    );
    // Used: its expiry moves on, for its caller only.
    b.mcp_session_touch("s1", &who("omar@larkfield"), NOW + 600)
        .await
        .unwrap();
    assert!(a.mcp_session_row("s1", NOW + 60).await.unwrap().is_none());
    b.mcp_session_touch("s1", &who("sam@larkfield"), NOW + 600)
        .await
        .unwrap();
    assert!(a.mcp_session_row("s1", NOW + 60).await.unwrap().is_some());
    // Ended by another caller: nothing happens; by its own: gone on every replica.
    a.mcp_session_end("s1", &who("omar@larkfield"))
        .await
        .unwrap();
    assert!(b.mcp_session_row("s1", NOW).await.unwrap().is_some());
    a.mcp_session_end("s1", &who("sam@larkfield"))
        .await
        .unwrap();
    assert!(b.mcp_session_row("s1", NOW).await.unwrap().is_none());
}

#[tokio::test]
async fn a_caller_has_at_most_its_bound_of_sessions_and_expired_ones_make_room() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir).await;
    // (id, caller, expiry, when opened): at most two of Sam's at once; another caller is
    // not held back by Sam's; once s1 expired, the next write drops it and makes room.
    let opened = [
        ("s1", &who("sam@l"), NOW + 10, NOW),
        ("s2", &who("sam@l"), NOW + 100, NOW),
        ("s3", &who("sam@l"), NOW + 100, NOW),
        ("o1", &who("omar@l"), NOW + 100, NOW),
        ("s3", &who("sam@l"), NOW + 100, NOW + 10),
    ];
    let mut kept = Vec::new();
    for (id, caller, expires_at, at) in opened {
        let row = session(id, caller, expires_at);
        kept.push(s.mcp_session_open(row, at, 2).await.unwrap());
    }
    assert_eq!(kept, [true, true, false, true, true]);
    assert!(
        s.mcp_session_row("s1", 0).await.unwrap().is_none(),
        "pruned"
    );
}

#[tokio::test]
async fn what_the_gateway_keeps_for_a_session_is_its_callers_alone() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir).await;
    s.mcp_session_open(session("s1", &who("sam@l"), NOW + 60), NOW, 4)
        .await
        .unwrap();
    assert_eq!(
        s.mcp_session_data("s1", &who("sam@l"), NOW)
            .await
            .unwrap()
            .as_deref(),
        Some("")
    );
    s.set_mcp_session_data("s1", &who("omar@l"), r#"{"x":1}"#)
        .await
        .unwrap();
    s.set_mcp_session_data("s1", &who("sam@l"), r#"{"logLevel":"debug"}"#)
        .await
        .unwrap();
    let data = s.mcp_session_data("s1", &who("sam@l"), NOW).await.unwrap();
    assert_eq!(data.as_deref(), Some(r#"{"logLevel":"debug"}"#));
    assert_eq!(
        s.mcp_session_data("s1", &who("omar@l"), NOW).await.unwrap(),
        None
    );
    assert_eq!(
        s.mcp_session_data("s1", &who("sam@l"), NOW + 60)
            .await
            .unwrap(),
        None
    );
}

fn answer(session: &str, request: &str, caller: &CallerName, expires_at: i64) -> AnswerRow {
    AnswerRow {
        id: AnswerRow::key(session, request),
        caller: caller.clone(),
        body: format!(r#"{{"jsonrpc":"2.0","id":{request},"result":{{}}}}"#),
        expires_at,
    }
}

#[tokio::test]
async fn an_answer_is_taken_once_by_its_sessions_caller_and_bounded_per_session() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (store(&dir).await, store(&dir).await);
    let first = answer("s1", "\"r1\"", &who("sam@l"), NOW + 60);
    assert!(a.answer_put("s1", first.clone(), NOW, 2).await.unwrap());
    // One answer per request: a second is refused, the first stands.
    let mut second = first.clone();
    second.body = "other".into();
    assert!(!a.answer_put("s1", second, NOW, 2).await.unwrap());
    // Another caller cannot take it; its own caller takes it once, on any replica.
    assert_eq!(
        b.answer_take(&first.id, &who("omar@l"), NOW).await.unwrap(),
        None
    );
    assert_eq!(
        b.answer_take(&first.id, &who("sam@l"), NOW).await.unwrap(),
        Some(first.body.clone())
    );
    assert_eq!(
        a.answer_take(&first.id, &who("sam@l"), NOW).await.unwrap(),
        None
    );
    // At most two waiting in one session; expired ones are not taken and make room.
    let put = async |session: &str, request: &str, expires_at: i64, at: i64| {
        let row = answer(session, request, &who("sam@l"), expires_at);
        a.answer_put(session, row, at, 2).await.unwrap()
    };
    assert!(put("s1", "1", NOW + 5, NOW).await);
    assert!(put("s1", "2", NOW + 60, NOW).await);
    assert!(!put("s1", "3", NOW + 60, NOW).await, "a third waiting");
    assert!(put("s2", "3", NOW + 60, NOW).await, "another session's");
    let late = AnswerRow::key("s1", "1");
    assert_eq!(
        a.answer_take(&late, &who("sam@l"), NOW + 5).await.unwrap(),
        None
    );
    assert!(
        put("s1", "3", NOW + 60, NOW + 5).await,
        "the expired one made room"
    );
    // Ending the session drops its answers.
    a.mcp_session_end("s1", &who("sam@l")).await.unwrap();
    let waiting = AnswerRow::key("s1", "2");
    assert_eq!(
        b.answer_take(&waiting, &who("sam@l"), NOW).await.unwrap(),
        None
    );
}

// Without PostgreSQL a store can only be SQLite: the `else` is then never taken.
#[cfg_attr(not(feature = "postgres"), allow(irrefutable_let_patterns))]
#[tokio::test]
async fn used_confirmations_are_kept_as_long_as_their_state_opens_and_then_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir).await;
    let Kind::Sqlite(lite) = &s.kind else {
        unreachable!("a file store")
    };
    assert!(lite.use_confirmation("n1").unwrap());
    let now = chrono::Utc::now().timestamp();
    // Past the state's own expiry, but within the margin: still used.
    s.prune(now + CONFIRMATION_TTL.as_secs() as i64 + 1)
        .await
        .unwrap();
    assert!(!lite.use_confirmation("n1").unwrap(), "forgotten too early");
    // Past the margin too: gone, and the table does not grow for good.
    s.prune(now + USED_CONFIRMATION_KEPT.as_secs() as i64 + 2)
        .await
        .unwrap();
    assert!(lite.use_confirmation("n1").unwrap(), "kept for good");
    // Pruning now and then runs once per PRUNE_EVERY.
    s.mcp_session_open(session("s1", &who("sam@l"), now + 1), now, 4)
        .await
        .unwrap();
    s.prune_due(now + 2).await.unwrap();
    assert!(s.mcp_session_row("s1", 0).await.unwrap().is_none());
    s.mcp_session_open(session("s2", &who("sam@l"), now + 3), now, 4)
        .await
        .unwrap();
    s.prune_due(now + 4).await.unwrap();
    assert!(
        s.mcp_session_row("s2", 0).await.unwrap().is_some(),
        "pruned again too soon"
    );
}
