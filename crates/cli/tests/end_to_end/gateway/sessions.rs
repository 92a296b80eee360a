//! Older clients' sessions (2025-11-25: `initialize`, `Mcp-Session-Id`) kept in the
//! shared store, behind nginx's round robin without stickiness, on SQLite and on a real
//! PostgreSQL: the Python SDK client's session is served by both replicas (the one that
//! did not open it restores it, as its log says), its approval is answered through
//! `elicitation/create` whose answer lands on the other replica and is carried back
//! through the store, and the call runs once; another caller's token with the session's
//! id is refused on both replicas as an unknown session is; a session ended with DELETE
//! is gone on both; and when the replica that opened it is killed, the session goes on
//! on the other. The TypeScript SDK client does the same through both replicas. A
//! `logging/setLevel` made on one replica holds for the session's calls on the other
//! (the conformance fixture behind the gateway logs only when asked).

use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::common::{
    http_server::{Answer, post_raw},
    nginx::start_nginx,
    process::Spawn,
    serve::{OMAR_TOKEN, SAM_IN_BRAMBLE_TOKEN, SAM_TOKEN},
};

/// The revision of the clients here.
const LEGACY: &str = "2025-11-25";
/// Rows the replicas find in PostgreSQL: a used confirmation from long ago and one from
/// now, and a session that expired.
const OLD_ROWS: &str = "INSERT INTO gatehouse_used_confirmations (nonce, used_at) VALUES
    ('old-nonce', '2000-01-01T00:00:00.000Z'),
    ('fresh-nonce', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'));
    INSERT INTO gatehouse_sessions (id, caller, init, expires_at)
    VALUES ('expired', 'usr-sam@larkfield', '{}', 1)";
/// What the replica running the asked call says.
const ASKED_HERE: &str = "rules[1] says ask the person";

/// A request (or, with no `id`, a notification) of session `session` to `url` with
/// `token`.
async fn in_session_with(
    url: &str,
    token: &str,
    session: &str,
    id: Option<i64>,
    method: &str,
    params: Value,
) -> Answer {
    let mut body = json!({"jsonrpc": "2.0", "method": method, "params": params});
    if let Some(id) = id {
        body["id"] = json!(id);
    }
    let headers = [
        ("Mcp-Session-Id".to_owned(), session.to_owned()),
        ("MCP-Protocol-Version".to_owned(), LEGACY.to_owned()),
    ];
    post_raw(url, Some(token), &headers, body.to_string()).await
}

/// A request without params of session `session` to `url` with `token`.
async fn in_session(url: &str, token: &str, session: &str, id: i64, method: &str) -> Answer {
    in_session_with(url, token, session, Some(id), method, json!({})).await
}

/// DELETE session `session` at `url` with `token`: the status.
async fn end(url: &str, token: &str, session: &str) -> u16 {
    reqwest::Client::new()
        .delete(url)
        .header("Authorization", format!("Bearer {token}"))
        .header("Mcp-Session-Id", session)
        .header("MCP-Protocol-Version", LEGACY)
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .expect("the gateway answers")
        .status()
        .as_u16()
}

/// The replicas on which `event` was logged.
fn logged(replicas: [&Process; 2], event: &str) -> [bool; 2] {
    replicas.map(|p| said(p, &format!("\"event\":\"{event}\"")))
}

/// The Python client in legacy mode through `url`: the asked call (approved), then two
/// calls the rules allow, with `extra` flags.
fn python_argv(url: &str, extra: &[&str]) -> Vec<String> {
    let list = "tickets__list_tickets";
    let mut flags = vec!["--mode", "legacy", "--call", list, "--call", list];
    flags.extend_from_slice(extra);
    approving(script("py_mcp_client.py"), &flags, url)
}

/// What the client printed: the asked call ran after one form, the others ran too.
fn assert_ran(out: &Value) {
    assert_eq!(out["protocolVersion"], LEGACY, "{out}");
    let calls = out["calls"].as_array().expect("calls");
    assert_eq!(calls.len(), 3, "{out}");
    let asked = &calls[0]["result"];
    assert_eq!(asked["isError"], false, "{out}");
    assert_eq!(
        asked["structuredContent"]["hostname"], "jump-prod-02",
        "{out}"
    );
    for listed in &calls[1..] {
        assert!(
            listed["result"]["structuredContent"]["total"].is_number(),
            "{out}"
        );
    }
    assert_eq!(
        out["elicitations"].as_array().map(Vec::len),
        Some(1),
        "{out}"
    );
}

/// The ledger says the asked call was approved once, and its chain holds.
fn assert_ran_once(shared: &SharedState) {
    let lines = shared.ledger();
    let asked: Vec<&Value> = lines.iter().filter(|l| l["tool"] == ASKED).collect();
    assert_eq!(asked.len(), 1, "{lines:#?}");
    assert_approved_in_the_client(asked[0], "usr-sam@larkfield");
    shared.assert_ledger_verifies();
}

pub async fn an_older_clients_session_is_served_by_both_replicas_behind_round_robin(
    backing: Backing,
) {
    let dir = tempfile::tempdir().unwrap();
    let (shared, a, b) = two_replicas(dir.path(), backing, gateway_config(dir.path()));
    let proxy = start_nginx(dir.path(), &[port_of(&a), port_of(&b)]);
    if let Some(db) = &shared.cluster {
        db.query(OLD_ROWS);
    }
    let argv = python_argv(&proxy.url, &["--keep-session"]);
    let out = py_client(&argv, dir.path());
    assert_ran(&out);
    if let Some(db) = &shared.cluster {
        // Each replica's first decision dropped what expired: a used confirmation older
        // than its state could be, an expired session; a fresh confirmation stays.
        let used = db.query("SELECT nonce FROM gatehouse_used_confirmations ORDER BY nonce");
        assert_eq!(used, "fresh-nonce");
        let expired = db.query("SELECT count(*) FROM gatehouse_sessions WHERE id = 'expired'");
        assert_eq!(expired, "0");
    }
    assert!(
        out["tools"].as_array().is_some_and(|t| !t.is_empty()),
        "{out}"
    );
    let session = out["sessionId"].as_str().expect("a session id").to_owned();

    // One replica opened the session, the other restored it from the store: the
    // client's requests landed on both.
    let opened = logged([&a, &b], "http_session_kept");
    let restored = logged([&a, &b], "http_session_restored");
    assert_eq!(opened.iter().filter(|x| **x).count(), 1, "{opened:?}");
    assert_eq!(
        restored,
        opened.map(|o| !o),
        "opened {opened:?}, restored {restored:?}"
    );
    // The approval's answer landed on the replica not running the call, and was
    // carried to the one that was through the store.
    let kept = logged([&a, &b], "http_answer_kept_for_another_replica");
    let taken = logged([&a, &b], "http_answer_taken_from_store");
    assert_eq!(kept.iter().filter(|x| **x).count(), 1, "kept {kept:?}");
    assert_eq!(taken, kept.map(|k| !k), "kept {kept:?}, taken {taken:?}");
    let asked = [&a, &b].map(|p| said(p, ASKED_HERE));
    assert_eq!(asked, taken, "asked on {asked:?}");
    // The two calls the rules allow came one after the other: one on each replica.
    let allowed = [&a, &b].map(|p| said(p, "allowed by rules[2]"));
    assert_eq!(allowed, [true, true], "allowed on {allowed:?}");
    assert_ran_once(&shared);

    // The session is Sam's on both replicas, and nobody else's: another caller's token
    // with its id is an unknown session (404), on either, and cannot end it.
    let mut id = 100;
    for replica in [&a, &b] {
        id += 1;
        let listed = in_session(&replica.url, SAM_TOKEN, &session, id, "tools/list").await;
        assert_eq!(listed.status, 200, "{}", listed.text);
        assert!(listed.result(id)["tools"].is_array(), "{}", listed.text);
        for other in [OMAR_TOKEN, SAM_IN_BRAMBLE_TOKEN] {
            let refused = in_session(&replica.url, other, &session, id, "tools/list").await;
            assert_eq!(refused.status, 404, "{}", refused.text);
            assert!(
                refused.text.contains("Session not found"),
                "{}",
                refused.text
            );
            assert_eq!(end(&replica.url, other, &session).await, 404);
        }
        let unknown = in_session(&replica.url, SAM_TOKEN, "not-a-session", id, "tools/list");
        assert_eq!(unknown.await.status, 404);
    }
    // Ended with DELETE (through the balancer, so on either replica): gone on both.
    assert_eq!(end(&proxy.url, SAM_TOKEN, &session).await, 204);
    for replica in [&a, &b] {
        let gone = in_session(&replica.url, SAM_TOKEN, &session, 200, "tools/list").await;
        assert_eq!(gone.status, 404, "{}", gone.text);
    }
}

pub fn the_session_goes_on_when_the_replica_that_opened_it_is_killed(backing: Backing) {
    let dir = tempfile::tempdir().unwrap();
    let (shared, a, b) = two_replicas(dir.path(), backing, gateway_config(dir.path()));
    let proxy = start_nginx(dir.path(), &[port_of(&a), port_of(&b)]);
    let (session_file, go) = (dir.path().join("session"), dir.path().join("go"));
    let extra = [
        "--no-list",
        "--session-file",
        session_file.to_str().unwrap(),
        "--go-file",
        go.to_str().unwrap(),
    ];
    let argv = python_argv(&proxy.url, &extra);
    let mut cmd = std::process::Command::new(python());
    cmd.args(&argv).current_dir(dir.path());
    let client = Spawn::new(cmd, "py_mcp_client.py (legacy, paused)").run();
    let deadline = std::time::Instant::now() + LIMIT;
    while !session_file.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the client never connected"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let opened = logged([&a, &b], "http_session_kept");
    let (opener, other) = match opened {
        [true, false] => (&a, &b),
        [false, true] => (&b, &a),
        _ => panic!("opened on {opened:?}"),
    };
    assert!(
        opener.signal("KILL"),
        "the opening replica could not be killed"
    );
    std::fs::write(&go, "").unwrap();
    let ran = client.wait(LIMIT * 4);
    let out: Value = serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e}):\n{}\n{}", ran.stdout, ran.stderr));
    assert_ran(&out);
    assert!(
        said(other, "\"event\":\"http_session_restored\""),
        "{:?}",
        other.lines()
    );
    assert!(said(other, ASKED_HERE));
    assert_ran_once(&shared);
}

pub fn the_typescript_sdk_clients_session_is_served_by_both_replicas(backing: Backing) {
    let dir = tempfile::tempdir().unwrap();
    let (shared, a, b) = two_replicas(dir.path(), backing, gateway_config(dir.path()));
    let proxy = start_nginx(dir.path(), &[port_of(&a), port_of(&b)]);
    let argv = approving(ts_client(), &[], &proxy.url);
    let out = peer_client(&node(), &argv, dir.path());
    assert_eq!(out["protocolVersion"], LEGACY, "{out}");
    let result = &out["calls"][0]["result"];
    assert_eq!(
        result["structuredContent"]["hostname"], "jump-prod-02",
        "{out}"
    );
    let opened = logged([&a, &b], "http_session_kept");
    let restored = logged([&a, &b], "http_session_restored");
    assert_eq!(
        restored,
        opened.map(|o| !o),
        "opened {opened:?}, restored {restored:?}"
    );
    assert_ran_once(&shared);
}

/// An older session's `logging/setLevel` on one replica holds for its calls on the
/// other: the gateway asks the server behind (the conformance fixture, which logs only
/// when a request asks for a level) to log from it, and relays what it logs.
pub async fn an_older_sessions_log_level_set_on_one_replica_holds_on_the_other(backing: Backing) {
    let dir = tempfile::tempdir().unwrap();
    let fixture = crate::conformance::start_fixture();
    let config = crate::common::write(
        dir.path(),
        "servers.json",
        &json!({
            "mcpServers": {"fixture": {"url": fixture.url}},
            "gatehouse": {
                "rules": [{"tool": "fixture__*", "decision": "allow"}],
                "ledger": {"path": dir.path().join("ledger.jsonl")}
            }
        }),
    );
    let state = SharedState::new(backing, dir.path(), None);
    let a = start_gateway(dir.path(), &config, &state.arg);
    let b = start_gateway(dir.path(), &config, &state.arg);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "sessions-test", "version": "0.1.0"}}});
    let version = [("MCP-Protocol-Version".to_owned(), LEGACY.to_owned())];
    let opened = post_raw(&a.url, Some(SAM_TOKEN), &version, init.to_string()).await;
    let session = opened.headers["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let initialized = "notifications/initialized";
    let sent = in_session_with(&a.url, SAM_TOKEN, &session, None, initialized, json!({}));
    assert_eq!(sent.await.status, 202);

    // The session's own stream (GET) on each replica: a log message names no request,
    // so it goes there, on the replica whose call it came from.
    let (mut on_a, mut on_b) = (
        listen(&a.url, &session).await,
        listen(&b.url, &session).await,
    );
    let set_level = async |on: &Process, level: &str, id: i64| {
        let set = json!({"level": level});
        let method = "logging/setLevel";
        let set = in_session_with(&on.url, SAM_TOKEN, &session, Some(id), method, set).await;
        assert_eq!(set.status, 200, "{}", set.text);
    };
    let call_on = async |on: &Process, id: i64| {
        let call = json!({"name": "fixture__test_logging_tool", "arguments": {}});
        let method = "tools/call";
        let called = in_session_with(&on.url, SAM_TOKEN, &session, Some(id), method, call).await;
        assert!(called.result(id)["content"].is_array(), "{}", called.text);
    };
    // Debug set on A: B's call asks the fixture to log, and relays its info message.
    set_level(&a, "debug", 10).await;
    call_on(&b, 11).await;
    assert!(
        heard(&mut on_b, Duration::from_secs(10)).await,
        "the level set on A was not used on B"
    );
    // Error set on B: A's call no longer asks for info.
    set_level(&b, "error", 20).await;
    call_on(&a, 21).await;
    assert!(
        !heard(&mut on_a, Duration::from_secs(2)).await,
        "the level set on B was not used on A"
    );
}

/// The session's stream of messages not tied to a request, on `url`.
async fn listen(url: &str, session: &str) -> reqwest::Response {
    let response = reqwest::Client::new()
        .get(url)
        .header("Authorization", format!("Bearer {SAM_TOKEN}"))
        .header("Accept", "text/event-stream")
        .header("Mcp-Session-Id", session)
        .header("MCP-Protocol-Version", LEGACY)
        .send()
        .await
        .expect("the gateway answers");
    assert_eq!(response.status(), 200);
    response
}

/// Whether the fixture's log message comes on `stream` within `within`.
async fn heard(stream: &mut reqwest::Response, within: Duration) -> bool {
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + within;
    while !text.contains("test_logging_tool ran") {
        match tokio::time::timeout_at(deadline, stream.chunk()).await {
            Ok(Ok(Some(chunk))) => text.push_str(&String::from_utf8_lossy(&chunk)),
            _ => return false,
        }
    }
    true
}
