//! server-everything's long operation under the host: progress, time limits that cancel
//! the call on the server, and Ctrl-C.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;
use crate::common::{
    Ran, gatehouse_command,
    process::{Process, Spawn},
    time_limits,
};

/// Each round may go 0.8 s without news, progress extends that to at most 1.5 s: the first
/// operation (1 s, progress every 0.25 s) finishes, the second (3 s) is cancelled, and the
/// turn goes on with one more call (so the connection is still open when the cancellation
/// is written).
pub fn server_everything_long_operation_shows_progress_and_a_short_limit_cancels_it(t: Transport) {
    let world = World::tapped(Peer::Everything, t);
    let started = Instant::now();
    let ran = world.ask(
        json!([
            {"tool_calls": [{"name": "everything__trigger-long-running-operation", "arguments": {"duration": 1, "steps": 4}}]},
            {"tool_calls": [{"name": "everything__trigger-long-running-operation", "arguments": {"duration": 3, "steps": 6}}]},
            {"tool_calls": [{"name": "everything__get-sum", "arguments": {"a": 2, "b": 3}}]},
            {"answer": "ok"}
        ]),
        &[],
        &time_limits("0.8", "1.5"),
    );
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(
        ran.outcomes(),
        vec!["ok", "timeout", "ok"],
        "{:#?}",
        ran.step_texts()
    );
    assert_eq!(ran.answer(), "ok");
    let all = ran.steps();
    let timed_out = all
        .iter()
        .position(|s| {
            let t = s["text"].as_str().unwrap();
            t.starts_with("timed out after ")
                && t.contains(": the call was cancelled on the server")
        })
        .unwrap_or_else(|| panic!("{:#?}", ran.step_texts()));
    // Cut at the hard maximum, after progress had extended the 0.8 s limit.
    let limit_ms = all[timed_out]["data"]["timeout_ms"].as_u64().unwrap();
    assert!((1_450..3_000).contains(&limit_ms), "{limit_ms}");
    let progress: Vec<(usize, &Value)> = all
        .iter()
        .enumerate()
        .filter(|(_, s)| s["text"].as_str().unwrap().starts_with("progress "))
        .collect();
    // The first call: at least 3 of its 4 notifications are steps (the last one may come
    // in after the result), in order, with their total.
    let first: Vec<f64> = progress
        .iter()
        .filter(|(_, s)| s["data"]["total"] == 4.0)
        .map(|(_, s)| s["data"]["progress"].as_f64().unwrap())
        .collect();
    assert!(
        first.len() >= 3 && first.windows(2).all(|w| w[0] < w[1]),
        "{first:?}"
    );
    assert_eq!(progress[0].1["who"], "server");
    assert_eq!(
        progress[0].1["data"]["tool"],
        "trigger-long-running-operation"
    );
    // The second: progress before the limit, which it extended past 0.8 s.
    assert!(
        progress
            .iter()
            .filter(|(i, s)| s["data"]["total"] == 6.0 && *i < timed_out)
            .count()
            >= 2,
        "{:#?}",
        ran.step_texts()
    );
    // No progress of the cancelled operation (server-everything goes on sending it) is
    // counted for the next call.
    assert!(
        !progress.iter().any(|(i, _)| *i > timed_out),
        "{:#?}",
        ran.step_texts()
    );
    // The host sent notifications/cancelled for that request, before the next call.
    assert_cancelled_before_the_next_call(&world.wire(), 1);

    // On the wire, as the server got it: the cancellation before the next call, and no
    // result for the cancelled one.
    let tap = world.tap();
    let calls: Vec<Value> = tap
        .iter()
        .filter(|(d, m)| d == ">>" && m["method"] == "tools/call")
        .map(|(_, m)| m.clone())
        .collect();
    assert_eq!(calls.len(), 3, "{tap:#?}");
    let cancelled = tap
        .iter()
        .position(|(d, m)| {
            d == ">>"
                && m["method"] == "notifications/cancelled"
                && m["params"]["requestId"] == calls[1]["id"]
        })
        .unwrap_or_else(|| panic!("no notifications/cancelled reached the server: {tap:#?}"));
    let next = tap
        .iter()
        .position(|(d, m)| d == ">>" && m["id"] == calls[2]["id"] && m["method"] == "tools/call")
        .unwrap();
    assert!(cancelled < next);
    assert!(
        !tap.iter()
            .any(|(d, m)| d == "<<" && m["id"] == calls[1]["id"] && m.get("result").is_some()),
        "the cancelled call never got its result"
    );
    if t == Transport::Http {
        // The progress came on the call's own event stream; the cancellation was POSTed
        // in the call's session (202).
        let stream = exchange_of(&tap, &calls[0]);
        assert_eq!(stream["content_type"], "text/event-stream", "{stream}");
        let posted = exchange_of(&tap, &tap[cancelled].1);
        assert_eq!(posted["status"], 202, "{posted}");
        assert!(posted["headers"]["mcp-session-id"].is_string(), "{posted}");
    }
}

/// The host sent `notifications/cancelled` for its `n`-th `tools/call`, and before its
/// next request.
fn assert_cancelled_before_the_next_call(wire: &[(String, Value)], n: usize) {
    let sent: Vec<&Value> = wire
        .iter()
        .filter(|(d, _)| d == "to_server")
        .map(|(_, m)| m)
        .collect();
    let call = sent
        .iter()
        .filter(|m| m["method"] == "tools/call")
        .nth(n)
        .expect("the call")["id"]
        .clone();
    let cancelled = sent
        .iter()
        .position(|m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == call)
        .unwrap_or_else(|| panic!("no notifications/cancelled for request {call}: {sent:#?}"));
    let next = sent
        .iter()
        .rposition(|m| m["method"] == "tools/call")
        .unwrap();
    assert!(cancelled < next, "{sent:#?}");
    assert!(
        !wire
            .iter()
            .any(|(d, m)| d == "from_server" && m["id"] == call && m.get("result").is_some()),
        "the cancelled call never got its result"
    );
}

/// server-everything goes on reporting a cancelled operation: those notifications are
/// not shown as the next call's progress, nor do they extend its time limit.
pub fn progress_of_a_cancelled_call_is_not_counted_for_the_next_one(t: Transport) {
    let world = World::new(Peer::Everything, t);
    let ran = world.ask(
        json!([
            {"tool_calls": [{"name": "everything__trigger-long-running-operation", "arguments": {"duration": 3, "steps": 6}}]},
            {"tool_calls": [{"name": "everything__trigger-long-running-operation", "arguments": {"duration": 1, "steps": 1}}]},
            {"answer": "ok"}
        ]),
        &[],
        // The first call times out at the hard maximum; the second (one step, done
        // after 1 s, with no progress before) ends within the plain limit.
        &time_limits("1.3", "1.5"),
    );
    let all = ran.steps();
    let second = all
        .iter()
        .rposition(|s| s["text"] == "wants everything__trigger-long-running-operation")
        .unwrap();
    let stale: Vec<&Value> = all[second..]
        .iter()
        .filter(|s| s["data"]["total"] == 6.0)
        .collect();
    assert!(
        stale.is_empty(),
        "the first call's progress shown for the second: {stale:#?}"
    );
    assert_eq!(ran.outcomes(), vec!["timeout", "ok"]);
}

/// `gatehouse ask` calling a 4 s operation, then the calls of `more`, then answering "ok";
/// sent SIGINT once the operation has reported progress (it is in flight). What it printed,
/// which must say the call was stopped and the model went on.
fn interrupted(world: &World, more: &[Value]) -> Ran {
    let mut decisions = vec![
        json!({"tool_calls": [{"name": "everything__trigger-long-running-operation", "arguments": {"duration": 4, "steps": 8}}]}),
    ];
    decisions.extend_from_slice(more);
    decisions.push(json!({"answer": "ok"}));
    let model = playback(world.path(), Value::from(decisions));
    let record = world.path().join("record.jsonl");
    let config = world.config();
    let args = ask_args(&config, &model, &["--record", record.to_str().unwrap()]);
    let host: Process = Spawn::new(gatehouse_command(&args, &[]), "gatehouse ask").run();
    let deadline = Instant::now() + Duration::from_secs(15);
    while !json_lines(&record)
        .iter()
        .any(|l| l["method"] == "notifications/progress")
    {
        if Instant::now() > deadline {
            let ran = host.wait(Duration::from_secs(1));
            panic!("the operation never reported progress:\n{}", ran.stderr);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(host.signal("INT"));
    let ran = host.wait(PEER_LIMIT);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    crate::common::expect::says(
        &ran.stderr,
        "[host] stopping the call in flight; press Ctrl-C again to quit",
    );
    ran.assert_steps(&["person: stopped the call: it was cancelled on the server"]);
    assert_eq!(ran.answer(), "ok", "the model heard it and went on");
    ran
}

/// Ctrl-C stops the call in flight, and the turn goes on with one more call.
pub fn ctrl_c_stops_server_everythings_long_operation_and_the_turn_goes_on(t: Transport) {
    let world = World::new(Peer::Everything, t);
    let ran = interrupted(
        &world,
        &[json!({"tool_calls": [{"name": "everything__get-sum", "arguments": {"a": 2, "b": 3}}]})],
    );
    assert_eq!(ran.outcomes(), vec!["stopped", "ok"]);
    assert_cancelled_before_the_next_call(&world.wire(), 0);
}

/// Ctrl-C on the turn's last call: the server still gets `notifications/cancelled` (the
/// host awaits the cancellation before it closes the connection), and over HTTP the
/// session is closed after it.
pub fn ctrl_c_on_the_turns_last_call_still_tells_the_server(t: Transport) {
    let world = World::tapped(Peer::Everything, t);
    let ran = interrupted(&world, &[]);
    assert_eq!(ran.outcomes(), vec!["stopped"]);
    let tap = world.tap();
    let call = sent(&tap, "tools/call")["id"].clone();
    let cancelled = tap
        .iter()
        .position(|(d, m)| {
            d == ">>"
                && m["method"] == "notifications/cancelled"
                && m["params"]["requestId"] == call
        })
        .unwrap_or_else(|| panic!("no notifications/cancelled reached the server: {tap:#?}"));
    if t == Transport::Http {
        assert_eq!(exchange_of(&tap, &tap[cancelled].1)["status"], 202);
        // Then the session was closed.
        assert!(
            http_exchanges(&tap[cancelled..])
                .iter()
                .any(|e| e["method"] == "DELETE"),
            "{tap:#?}"
        );
    }
}
