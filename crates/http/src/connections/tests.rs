use super::*;

#[test]
fn the_bound_respects_the_open_file_limit() {
    assert_eq!(
        max_connections(None, Some(1_048_576)).unwrap(),
        DEFAULT_MAX_CONNECTIONS
    );
    assert_eq!(max_connections(None, Some(128)).unwrap(), 128 - FD_HEADROOM);
    assert_eq!(
        max_connections(None, None).unwrap(),
        DEFAULT_MAX_CONNECTIONS
    );
    assert_eq!(max_connections(Some(10), Some(128)).unwrap(), 10);
    assert_eq!(max_connections(Some(5000), Some(u64::MAX)).unwrap(), 5000);
    let err = max_connections(Some(200), Some(128))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--max-connections must be between 1 and 96")
            && err.contains("ulimit -n) is 128"),
        "{err}"
    );
    let err = max_connections(Some(0), Some(1024))
        .unwrap_err()
        .to_string();
    assert!(err.contains("between 1 and 992"), "{err}");
    let err = max_connections(Some(100_000), None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("between 1 and 65536"), "{err}");
    let err = max_connections(None, Some(20)).unwrap_err().to_string();
    assert!(err.contains("ulimit -n) is 20"), "{err}");
    assert!(open_file_limit().is_some_and(|n| n > 0));
}

fn idle_conn(id: u64, since: Instant) -> Arc<Conn> {
    Arc::new(Conn {
        id,
        state: Mutex::new(State {
            phase: Phase::Idle(since),
            stalled_since: None,
        }),
        changed: Notify::new(),
        evict: CancellationToken::new(),
    })
}

#[tokio::test]
async fn at_the_bound_the_longest_waiting_connection_makes_room_and_busy_ones_never_do() {
    let timeouts = Timeouts {
        header: HEADER_TIMEOUT,
        idle: IDLE_TIMEOUT,
    };
    let connections = Connections::new(2, timeouts);
    let first = connections.admit().unwrap();
    let second = connections.admit().unwrap();
    // The first serves a request; the second waits: the second makes room.
    let busy = first.busy();
    let third = connections.admit().unwrap();
    assert!(second.evict.is_cancelled() && !first.evict.is_cancelled());
    assert_eq!(connections.open(), 2);
    // Both busy: the newcomer is turned away.
    let _also_busy = third.busy();
    assert!(connections.admit().is_none());
    // An answer the client stops reading makes its connection evictable again.
    first.write_waits();
    assert!(connections.admit().is_some());
    assert!(first.evict.is_cancelled());
    drop(busy);

    // Among waiting ones, the one waiting the longest goes first.
    let connections = Connections::new(2, timeouts);
    let now = Instant::now();
    let old = idle_conn(10, now - Duration::from_secs(5));
    let young = idle_conn(11, now);
    connections.table().insert(10, old.clone());
    connections.table().insert(11, young.clone());
    connections.admit().unwrap();
    assert!(old.evict.is_cancelled() && !young.evict.is_cancelled());
}

#[test]
fn a_connection_is_due_by_its_phase() {
    let timeouts = Timeouts {
        header: Duration::from_secs(2),
        idle: Duration::from_secs(7),
    };
    let start = Instant::now();
    let conn = idle_conn(1, start);
    assert_eq!(conn.due(&timeouts), Some((start + timeouts.idle, "idle")));
    conn.read_some();
    let (at, why) = conn.due(&timeouts).unwrap();
    assert_eq!(why, "header_timeout");
    assert!(at >= start + timeouts.header && at < start + timeouts.idle);
    let busy = conn.busy();
    assert_eq!(conn.due(&timeouts), None);
    conn.write_waits();
    assert_eq!(conn.due(&timeouts).unwrap().1, "answer_unread");
    conn.wrote();
    assert_eq!(conn.due(&timeouts), None);
    drop(busy);
    assert_eq!(conn.due(&timeouts).unwrap().1, "idle");
}
