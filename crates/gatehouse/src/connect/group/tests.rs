use std::{path::Path, process::Stdio, time::Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt};

use super::*;

/// A group whose leader is `sh -c SCRIPT`, and the pid of the first line it prints.
async fn started(script: &str) -> (Group, u32) {
    let mut command = Command::new("sh");
    command
        .args(["-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    let mut group = Group::spawn(&mut command).unwrap();
    let stdout = group.child().stdout.take().unwrap();
    let mut line = String::new();
    tokio::io::BufReader::new(stdout)
        .read_line(&mut line)
        .await
        .unwrap();
    (group, line.trim().parse().unwrap())
}

/// Is `pid` a live process (not gone, not a zombie)?
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|s| !s.trim_start().starts_with('Z'))
    })
}

async fn gone_within(pid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn a_dropped_group_takes_every_process_it_started_with_it() {
    // The leader started a process of its own, as npx starts the server it installed.
    let (group, grandchild) = started("sleep 300 & echo $!; wait").await;
    assert!(alive(grandchild));
    drop(group);
    assert!(
        gone_within(grandchild, STOP_GRACE + Duration::from_secs(2)).await,
        "the leader's own child outlived the group"
    );
}

#[tokio::test]
async fn a_stop_asks_first_and_the_group_cleans_up_before_it_exits() {
    let dir = std::env::temp_dir().join(format!("gatehouse-group-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mark = dir.join("cleaned");
    let script = format!(
        "trap 'echo cleaned > {}; exit 0' TERM; sleep 300 & echo $$; wait",
        mark.display()
    );
    let (mut group, leader) = started(&script).await;
    let begun = Instant::now();
    group.stop().await.unwrap();
    assert!(
        Path::new(&mark).exists(),
        "SIGTERM came first, and was heard"
    );
    assert!(begun.elapsed() < STOP_GRACE, "{:?}", begun.elapsed());
    assert!(!alive(leader));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_stopper_kills_a_group_that_ignores_sigterm_after_the_grace() {
    let (group, grandchild) = started("trap '' TERM; sleep 300 & echo $!; wait").await;
    let stopper = group.stopper();
    // A start that ran out of time: its transport is dropped, then the stop awaited.
    drop(group);
    stopper.stop().await;
    assert!(gone_within(grandchild, Duration::from_secs(2)).await);
}

/// A group whose output has ended is let exit by itself before any signal: a process of
/// it still saying why on stderr is heard. A SIGTERM at the drop, while the leader was
/// between closing its stdout and exiting, killed it first.
#[tokio::test]
async fn a_leaving_group_is_let_say_why_before_any_signal() {
    let script = "(exec 1>&-; sleep 0.2; echo the reason >&2) & exec 1>&-; sleep 0.4";
    let mut command = Command::new("sh");
    command
        .args(["-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut group = Group::spawn(&mut command).unwrap();
    let mut stdout = group.child().stdout.take().unwrap();
    let mut stderr = group.child().stderr.take().unwrap();
    // Its output ends while the leader is still there.
    stdout.read_to_end(&mut Vec::new()).await.unwrap();
    group.leaving();
    drop(group);
    let mut said = String::new();
    tokio::time::timeout(STOP_GRACE, stderr.read_to_string(&mut said))
        .await
        .expect("its stderr ends when its processes exit")
        .unwrap();
    assert_eq!(said, "the reason\n");
}

/// A leader that closed its stdout but stays is stopped once the grace is over.
#[tokio::test]
async fn a_leaving_leader_that_stays_is_stopped_after_the_grace() {
    let (mut group, leader) = started("echo $$; exec 1>&-; sleep 300").await;
    group.leaving();
    drop(group);
    assert!(gone_within(leader, STOP_GRACE + Duration::from_secs(2)).await);
}
