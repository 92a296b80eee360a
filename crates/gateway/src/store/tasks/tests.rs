use super::*;
use crate::caller::who;
use crate::store::Location;

async fn store(dir: &tempfile::TempDir) -> Store {
    Store::open(&Location::File(dir.path().join("state.db")), None)
        .await
        .unwrap()
}

fn row(id: &str, caller: &CallerName, now: i64) -> TaskRow {
    TaskRow {
        id: id.into(),
        server: "orders".into(),
        tool: "orders__export_report".into(),
        arguments: r#"{"rows":3000}"#.into(),
        server_task: "srv-1".into(),
        status: "working".into(),
        poll_ms: 1000,
        trace_id: "t1".into(),
        step: 3,
        created_at: now,
        updated_at: now,
        expires_at: now + 60_000,
        ..TaskRow::blank(caller.clone())
    }
}

#[tokio::test]
async fn a_task_reads_back_whole_until_it_expires_and_a_caller_keeps_at_most_max() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir).await;
    let now = 1_000_000;
    let a = row("a1", &who("sam@larkfield"), now);
    assert!(s.task_insert(a.clone(), now, 2).await.unwrap());
    assert_eq!(s.task_row("a1", now).await.unwrap(), Some(a.clone()));
    assert_eq!(s.task_row("nope", now).await.unwrap(), None);
    assert_eq!(s.task_row("a1", a.expires_at).await.unwrap(), None);
    assert!(
        s.task_insert(row("a2", &who("sam@larkfield"), now), now, 2)
            .await
            .unwrap()
    );
    // A third of Sam's is refused; Omar's is not counted against Sam.
    assert!(
        !s.task_insert(row("a3", &who("sam@larkfield"), now), now, 2)
            .await
            .unwrap()
    );
    assert!(
        s.task_insert(row("b1", &who("omar@larkfield"), now), now, 2)
            .await
            .unwrap()
    );
    // Once Sam's have expired they are dropped, and make room.
    let later = now + 60_000;
    assert!(
        s.task_insert(row("a4", &who("sam@larkfield"), later), later, 2)
            .await
            .unwrap()
    );
    assert_eq!(
        s.task_row("a1", 0).await.unwrap(),
        None,
        "an expired row is gone"
    );
}

#[tokio::test]
async fn the_first_end_wins_and_nothing_moves_an_ended_task() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir).await;
    let now = 5_000;
    assert!(
        s.task_insert(row("t", &who("sam@larkfield"), now), now, 8)
            .await
            .unwrap()
    );
    let mut asking = Move::from(&row("t", &who("sam@larkfield"), now));
    asking.status = "input_required".into();
    asking.message = "asks".into();
    assert!(s.task_move("t", &asking, now + 1).await.unwrap());
    let seen = s.task_row("t", now).await.unwrap().unwrap();
    assert_eq!(
        (seen.status.as_str(), seen.updated_at),
        ("input_required", now + 1)
    );
    let end = ("completed", "", r#"{"content":[]}"#);
    assert!(s.task_end("t", end, now + 2, now + 9_000).await.unwrap());
    let other = ("failed", "late", r#"{"code":-1,"message":"x"}"#);
    assert!(!s.task_end("t", other, now + 3, now + 9_000).await.unwrap());
    assert!(!s.task_move("t", &asking, now + 4).await.unwrap());
    let ended = s.task_row("t", now).await.unwrap().unwrap();
    assert_eq!(ended.status, "completed");
    assert_eq!(ended.end_json, r#"{"content":[]}"#);
    assert_eq!(ended.expires_at, now + 9_000);
    assert!(!s.task_end("gone", end, now, now).await.unwrap());
}
