//! The backoff, pure and then on a paused clock with a server in this process that is killed
//! and started again.

use super::*;

/// The waits of `n` starts in a row, each made the moment the last wait ended.
fn waits(n: usize) -> Vec<Duration> {
    let mut backoff = Backoff::new(Restart::default());
    let mut now = Instant::now();
    (0..n)
        .map(|_| {
            let wait = backoff.next(now);
            now += wait;
            wait
        })
        .collect()
}

#[test]
fn waits_grow_by_the_factor_from_the_first_delay_up_to_the_cap() {
    let w = waits(12);
    // Until the window is full, each wait is the factor times the last.
    let mut expected = RESTART_FIRST_DELAY;
    for &wait in &w[..RESTART_MAX_ATTEMPTS] {
        assert_eq!(wait, expected, "{w:?}");
        expected *= RESTART_FACTOR;
    }
    // A full window may hold one start back longer; none waits past the window.
    let longest = RESTART_WINDOW.max(RESTART_MAX_DELAY);
    assert!(w.iter().all(|&d| d <= longest), "{w:?}");
    assert_eq!(*w.last().unwrap(), RESTART_MAX_DELAY, "{w:?}");
}

/// The starts of a server that dies at once after each, 40 of them, under `bounds`.
fn starts_dying_at_once(bounds: Restart) -> Vec<Instant> {
    let mut backoff = Backoff::new(bounds);
    let mut now = Instant::now();
    let mut starts = Vec::new();
    for _ in 0..40 {
        now += backoff.next(now);
        starts.push(now);
        backoff.ran_for(Duration::ZERO);
    }
    starts
}

/// No window of `bounds` holds more starts than its bound.
fn assert_windows_hold(starts: &[Instant], bounds: Restart) {
    for (i, &s) in starts.iter().enumerate() {
        let within = starts[i..]
            .iter()
            .filter(|&&t| t.duration_since(s) < bounds.window)
            .count();
        assert!(within <= bounds.max_attempts, "{within} starts in a window");
    }
}

#[test]
fn no_window_holds_more_starts_than_the_bound() {
    let starts = starts_dying_at_once(Restart::default());
    assert_windows_hold(&starts, Restart::default());
}

#[test]
fn the_settings_bounds_are_honoured() {
    let bounds = Restart {
        first_delay: Duration::from_millis(100),
        factor: 3,
        max_delay: Duration::from_millis(1_000),
        max_attempts: 3,
        window: Duration::from_secs(5),
    };
    let starts = starts_dying_at_once(bounds);
    // The waits after the first start (100 ms): 3 times longer each, then the full
    // window holds the fourth start back past the longest delay.
    let waits: Vec<Duration> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    let ms = |d: Duration| d.as_millis();
    assert_eq!(ms(waits[0]), 300, "{waits:?}");
    assert_eq!(ms(waits[1]), 900, "{waits:?}");
    assert_eq!(ms(waits[2]), 3_800, "{waits:?}");
    assert!(waits.iter().all(|&w| w <= bounds.window), "{waits:?}");
    assert_windows_hold(&starts, bounds);
    // A factor of 1 waits the first delay every time, until the window is full.
    let flat = Restart {
        factor: 1,
        ..bounds
    };
    let mut backoff = Backoff::new(flat);
    let now = Instant::now();
    assert_eq!(backoff.next(now), flat.first_delay);
    assert_eq!(backoff.next(now + flat.first_delay), flat.first_delay);
}

#[test]
fn a_long_run_starts_the_waits_afresh_and_a_short_one_does_not() {
    let mut backoff = Backoff::new(Restart::default());
    let now = Instant::now();
    backoff.next(now);
    backoff.ran_for(Duration::from_millis(10));
    assert_eq!(backoff.next(now), RESTART_FIRST_DELAY * RESTART_FACTOR);
    backoff.ran_for(RESTART_WINDOW);
    let later = now + RESTART_WINDOW * 3;
    assert_eq!(backoff.next(later), RESTART_FIRST_DELAY);
}

mod on_a_paused_clock {
    use std::sync::Arc;

    use serde_json::json;
    use tokio::sync::Notify;

    use super::*;
    use crate::{
        model::ToolCall,
        testing::{Scripted, Server, Serving, World, text, within},
    };

    fn call(name: &str) -> ToolCall {
        ToolCall {
            id: "call_1".into(),
            name: name.into(),
            arguments: "{}".into(),
        }
    }

    /// A server whose `hang` never answers (saying when it has the call) and whose `read`
    /// does, every tool allowed.
    async fn crashy() -> (World, Serving, Arc<Notify>) {
        let entered = Arc::new(Notify::new());
        let told = entered.clone();
        let server = Server::new("crashy")
            .tool("hang", move |_| {
                told.notify_one();
                std::future::pending()
            })
            .tool("read", |_| async { text("read") });
        let settings = json!({"allow": ["crashy__hang", "crashy__read"], "toolTimeoutMs": 600_000});
        let (world, mut serving) = World::start(
            vec![("crashy", server)],
            settings,
            json!({}),
            Scripted::new(),
        )
        .await;
        (world, serving.remove(0), entered)
    }

    /// Wait for the server's second run, then see a call go through.
    async fn back_up(world: &World, crashy: &Serving) {
        within("the restart", async {
            crashy.started(2).await;
            world.seen.until("is running again", 1).await;
        })
        .await;
        let shown = world.host.turn().propose(&call("crashy__read")).await;
        assert!(shown.text.contains("read"), "{}", shown.text);
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_in_flight_when_its_server_died_fails_and_is_not_sent_again() {
        let (world, crashy, entered) = crashy().await;
        let proposal = async { world.host.turn().propose(&call("crashy__hang")).await };
        let crash = async {
            entered.notified().await;
            crashy.kill();
        };
        let (shown, ()) = within("the crash", async { tokio::join!(proposal, crash) }).await;
        assert!(
            shown.text.contains("closed during the call"),
            "{}",
            shown.text
        );
        // Down: a call now fails at once, saying when the server starts again.
        within(
            "the restart's wait",
            world.seen.until("starting it again in", 1),
        )
        .await;
        let down = world.host.turn().propose(&call("crashy__read")).await;
        assert!(down.text.contains("the server is down"), "{}", down.text);
        // Up again after the first delay; the call that was in flight was not sent again.
        back_up(&world, &crashy).await;
        let tools: Vec<String> = crashy.received().into_iter().map(|r| r.tool).collect();
        assert_eq!(tools, ["hang", "read"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_that_does_not_start_again_is_tried_with_the_backoff_bounds() {
        let (world, crashy, _) = crashy().await;
        crashy.refuse_starts(true);
        crashy.kill();
        // The first run's start, then the restarts tried: each wait the factor times the
        // last from the first delay, on the clock the supervisor runs on.
        let tried = within("the tries", crashy.tried(1 + RESTART_MAX_ATTEMPTS + 1)).await;
        let waits: Vec<Duration> = tried[1..].windows(2).map(|w| w[1] - w[0]).collect();
        let mut expected = RESTART_FIRST_DELAY * RESTART_FACTOR;
        for wait in &waits[..RESTART_MAX_ATTEMPTS - 1] {
            assert_eq!(*wait, expected, "{waits:?}");
            expected *= RESTART_FACTOR;
        }
        // While it is down, its calls fail at once with the reason.
        let shown = world.host.turn().propose(&call("crashy__read")).await;
        assert!(shown.text.contains("did not start again"), "{}", shown.text);
        // Starting again is taken as soon as the backoff tries.
        crashy.refuse_starts(false);
        back_up(&world, &crashy).await;
    }
}
