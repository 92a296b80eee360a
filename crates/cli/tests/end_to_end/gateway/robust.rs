//! One bad server does not hurt the rest. The gateway (over HTTP, 2026-07-28) fronts the
//! testbed and cmdb: a testbed that dies is started again with backoff and its tools come
//! back, while calls to it fail at once naming it and calls to cmdb go on; one that fails
//! its very first start is tried again with the servers file's `restart` backoff and its
//! tools appear when it comes up; a testbed
//! sleeping in one call does not hold up calls to cmdb; the list is marked as the same
//! for every caller. And the Python SDK's 2025-11-25 server, started again under the
//! gateway, forgets its session: the gateway opens a new one and sends the call again.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;
use crate::common::{
    http_server,
    http_server::{Answer, call, post, request},
    serve::SAM_TOKEN,
    texts,
};

/// The longest a test waits for the gateway to notice a change (a server down, back).
const NOTICE_LIMIT: Duration = Duration::from_secs(45);

/// The testbed, started through a shell that writes a line to `starts.log` on every
/// start and exits at once (status 3) while the file `broken` exists; cmdb as it is.
/// Every tool is allowed; a server round may take two minutes.
fn robust_config(dir: &Path) -> String {
    robust_config_with(dir, json!({}))
}

/// [`robust_config`] with these `restart` settings.
fn robust_config_with(dir: &Path, restart: Value) -> String {
    let exe = exe().to_string_lossy().into_owned();
    let script = r#"echo start >> "$DIR/starts.log"
if [ -e "$DIR/broken" ]; then echo "testbed: broken on purpose" >&2; exit 3; fi
exec "$EXE" serve testbed"#;
    let env = json!({"DIR": dir, "EXE": exe, "MCP_USER": "usr-sam", "MCP_TENANT": "larkfield"});
    write(
        dir,
        "servers.json",
        &json!({
            "mcpServers": {
                "testbed": {"command": "/bin/sh", "args": ["-c", script], "env": env},
                "cmdb": {"command": exe, "args": ["serve", "cmdb"],
                         "env": {"MCP_USER": "usr-sam", "MCP_TENANT": "larkfield"}}
            },
            "gatehouse": {
                "rules": [{"tool": "*", "decision": "allow"}],
                "toolTimeoutMs": 120000,
                "restart": restart,
                "ledger": {"path": dir.join("ledger.jsonl"), "arguments": true}
            }
        }),
    )
}

/// The gateway over HTTP on [`robust_config`], in `dir`.
fn robust_gateway(dir: &Path) -> Process {
    let config = robust_config(dir);
    start_gateway(dir, &config, dir.join("state.db").to_str().unwrap())
}

async fn list(url: &str, id: i64) -> Value {
    let listed = post(url, Some(SAM_TOKEN), &request(id, "tools/list", json!({}))).await;
    listed.result(id).clone()
}

/// List until `holds` says yes of the names, within [`NOTICE_LIMIT`]; the last names.
async fn list_until(url: &str, what: &str, holds: impl Fn(&[String]) -> bool) -> Vec<String> {
    let started = Instant::now();
    let mut id = 1_000;
    loop {
        id += 1;
        let now = tool_names(&list(url, id).await);
        if holds(&now) {
            return now;
        }
        assert!(started.elapsed() < NOTICE_LIMIT, "never {what}: {now:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn starts(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("starts.log"))
        .unwrap_or_default()
        .lines()
        .count()
}

async fn get_asset(url: &str, id: i64) -> Answer {
    call(
        url,
        SAM_TOKEN,
        id,
        json!({"name": "cmdb__get_asset", "arguments": asked_args()}),
    )
    .await
}

fn assert_asset(answer: &Answer, id: i64) {
    let result = answer.result(id);
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"]["hostname"], "jump-prod-02");
}

#[tokio::test]
async fn a_stdio_server_that_dies_is_restarted_with_backoff_and_its_tools_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let gw = robust_gateway(dir.path());
    let has_echo = |n: &[String]| n.iter().any(|n| n == "testbed__echo");
    let first = tool_names(&list(&gw.url, 1).await);
    assert!(has_echo(&first), "{first:?}");
    assert_eq!(starts(dir.path()), 1);

    // From now on the testbed exits at once on every start.
    std::fs::write(dir.path().join("broken"), "").unwrap();
    let crashed = call(&gw.url, SAM_TOKEN, 2, json!({"name": "testbed__crash"})).await;
    assert_eq!(crashed.result(2)["isError"], true, "{}", crashed.text);
    let down = list_until(&gw.url, "left out while down", |n| !has_echo(n)).await;
    assert!(down.iter().any(|n| n == "cmdb__get_asset"), "{down:?}");
    // Not ready while a server of the file is down (a balancer sends calls elsewhere),
    // saying which and why; the metrics say it too.
    let (status, body) = operation(&gw, "/readyz").await;
    assert_eq!(status, 503, "{body}");
    let ready: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(ready["servers"]["cmdb"]["ok"], true, "{body}");
    assert_eq!(ready["servers"]["testbed"]["ok"], false, "{body}");
    assert_eq!(ready["servers"]["testbed"]["why"], "down", "{body}");
    // Fixed words only: nothing the server said reaches a reader without a token.
    assert!(!body.contains("broken on purpose"), "{body}");
    let (_, metrics) = operation(&gw, "/metrics").await;
    assert!(
        metrics
            .lines()
            .any(|l| l == r#"gatehouse_gateway_server_up{server="testbed"} 0"#),
        "{metrics}"
    );

    // While it is down its calls fail at once, saying so; cmdb's go on.
    let echo = json!({"name": "testbed__echo", "arguments": {"text": "hi"}});
    let refused = call(&gw.url, SAM_TOKEN, 3, echo.clone()).await;
    let refused = refused.result(3);
    assert_eq!(refused["isError"], true, "{refused}");
    let why = texts(refused);
    assert!(why.contains("testbed") && why.contains("down"), "{why}");
    assert_asset(&get_asset(&gw.url, 4).await, 4);

    // Started again, with backoff: waited for, then counted against the time it took (the
    // schedule itself is proved on a paused clock, connect/restart/tests.rs).
    let waiting = Instant::now();
    let tried = loop {
        let tried = starts(dir.path());
        if tried >= 2 {
            break tried;
        }
        assert!(
            waiting.elapsed() < NOTICE_LIMIT,
            "never started again: {tried}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let seconds = waiting.elapsed().as_secs_f64();
    assert!(
        (tried as f64) <= 2.0 + 2.0 * seconds,
        "{tried} starts in {seconds:.1} s: a tight loop"
    );

    // Mended: it comes back, with its tools, and runs calls again.
    std::fs::remove_file(dir.path().join("broken")).unwrap();
    list_until(&gw.url, "listed again", has_echo).await;
    let (status, body) = operation(&gw, "/readyz").await;
    assert_eq!(status, 200, "ready again once it is back: {body}");
    let echoed = call(&gw.url, SAM_TOKEN, 5, echo).await;
    let echoed = echoed.result(5);
    assert_eq!(echoed["isError"], false, "{echoed}");
    assert!(texts(echoed).contains("hi"), "{echoed}");
    assert!(
        gw.lines().iter().any(|l| l.contains("starting it again")),
        "{:?}",
        gw.lines()
    );
}

#[tokio::test]
async fn a_stdio_server_that_fails_its_first_start_is_tried_again_with_backoff_and_comes_up() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("broken"), "").unwrap();
    // 200 ms, then 400 ms; three starts fill the 6 s window, so the fourth waits for it.
    let restart = json!({"firstDelayMs": 200, "factor": 2, "maxDelayMs": 1000,
                         "attemptsPerWindow": 3, "windowMs": 6000});
    let config = robust_config_with(dir.path(), restart);
    let gw = start_gateway(
        dir.path(),
        &config,
        dir.path().join("state.db").to_str().unwrap(),
    );
    let has_echo = |n: &[String]| n.iter().any(|n| n == "testbed__echo");

    // Left out, the others served.
    let first = tool_names(&list(&gw.url, 1).await);
    assert!(!has_echo(&first), "{first:?}");
    assert_asset(&get_asset(&gw.url, 2).await, 2);

    // Tried again with the settings' backoff: the first start and two more, then the
    // full window holds the next one back longer than the longest delay (1 s). Each
    // failure says its wait; the third is said while the fourth start is seconds away.
    let waits = retry_waits(&gw, 3).await;
    assert_eq!(starts(dir.path()), 3, "{:?}", gw.lines());
    assert_eq!(waits[..2], [0.2, 0.4], "{:?}", gw.lines());
    assert!(waits[2] > 1.0, "the window held nothing back: {waits:?}");

    // Mended: it comes up at its next try, and its tools are listed and called.
    std::fs::remove_file(dir.path().join("broken")).unwrap();
    list_until(&gw.url, "listed once it started", has_echo).await;
    let echo = json!({"name": "testbed__echo", "arguments": {"text": "late"}});
    let echoed = call(&gw.url, SAM_TOKEN, 3, echo).await;
    let echoed = echoed.result(3);
    assert_eq!(echoed["isError"], false, "{echoed}");
    assert!(texts(echoed).contains("late"), "{echoed}");
    assert_eq!(starts(dir.path()), 4, "one start after it was mended");
    assert!(said(&gw, "server testbed started"), "{:?}", gw.lines());
}

#[tokio::test]
async fn a_server_that_started_late_is_called_on_every_replica_without_a_list_first() {
    let dir = tempfile::tempdir().unwrap();
    let config = broken_testbed_config(dir.path());
    let (a, b) = two_replicas_once_it_is_mended(dir.path(), &config).await;
    for (gw, id) in [(&a, 1), (&b, 2)] {
        let echo = json!({"name": "testbed__echo", "arguments": {"text": "called first"}});
        let echoed = call(&gw.url, SAM_TOKEN, id, echo).await;
        let echoed = echoed.result(id);
        assert_eq!(echoed["isError"], false, "{echoed}");
        assert!(texts(echoed).contains("called first"), "{echoed}");
    }
}

/// Both replicas started while the testbed was broken, and it came up late on each: a call
/// the policy asks about is begun on one replica and its approval finishes on the other,
/// with no client listing tools on either first.
#[tokio::test]
async fn an_approval_for_a_server_that_started_late_begins_on_one_replica_and_ends_on_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let config = broken_testbed_config(dir.path());
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    doc["gatehouse"]["rules"] = json!([{"tool": "testbed__echo", "decision": "ask"}]);
    std::fs::write(&config, doc.to_string()).unwrap();
    let (a, b) = two_replicas_once_it_is_mended(dir.path(), &config).await;
    let args = json!({"text": "asked late"});
    let asked = call(
        &a.url,
        SAM_TOKEN,
        1,
        json!({"name": "testbed__echo", "arguments": args}),
    )
    .await;
    let asked = asked.result(1);
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let state = asked["requestState"].as_str().expect("a sealed state");
    let approve = json!({"name": "testbed__echo", "arguments": args, "requestState": state,
        "inputResponses": {"gatehouse.approve": {"action": "accept", "content": {"approve": true}}}});
    let done = call(&b.url, SAM_TOKEN, 2, approve).await;
    let done = done.result(2);
    assert_eq!(done["isError"], false, "{done} {:?}", b.lines());
    assert!(texts(done).contains("asked late"), "{done}");
    let lines = ledger_lines(&dir.path().join("ledger.jsonl"));
    let yes: Vec<&Value> = lines.iter().filter(|l| l["answer"] == "yes").collect();
    assert_eq!(yes.len(), 1, "{lines:#?}");
}

#[tokio::test]
async fn a_slow_server_does_not_hold_up_calls_to_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let gw = robust_gateway(dir.path());
    let url = gw.url.clone();
    let slow = tokio::spawn(async move {
        let sleep = json!({"name": "testbed__sleep", "arguments": {"seconds": 60, "quiet": true}});
        call(&url, SAM_TOKEN, 1, sleep).await
    });
    // The gateway writes a call's ledger line just before it sends it.
    let ledger = dir.path().join("ledger.jsonl");
    let started = Instant::now();
    while !ledger_lines(&ledger)
        .iter()
        .any(|l| l["tool"] == "testbed__sleep")
    {
        assert!(
            started.elapsed() < NOTICE_LIMIT,
            "the slow call never went out"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let fast = (0..4).map(|i| get_asset(&gw.url, 10 + i));
    let answers = futures::future::join_all(fast).await;
    for (i, answer) in answers.iter().enumerate() {
        assert_asset(answer, 10 + i as i64);
    }
    assert!(
        !slow.is_finished(),
        "the slow call ended before the fast ones: {:?}",
        slow.await.map(|a| a.text)
    );
    slow.abort();
}

#[tokio::test]
async fn the_list_is_marked_the_same_for_every_caller_and_never_fresh() {
    let dir = tempfile::tempdir().unwrap();
    let gw = robust_gateway(dir.path());
    let listed = list(&gw.url, 1).await;
    assert_eq!(listed["cacheScope"], "public", "{listed}");
    assert_eq!(listed["ttlMs"], 0, "{listed}");
}

/// The Python SDK's 2025-11-25-only server on Streamable HTTP (sessions) at `port`
/// (0: a free one).
fn legacy_server(port: u16) -> Process {
    let mut cmd = std::process::Command::new(python());
    cmd.arg(script("py_legacy_only_server.py"))
        .args(["--http", &port.to_string()]);
    http_peer(cmd, "py_legacy_only_server.py --http")
}

fn port_of(url: &str) -> u16 {
    url.trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap_or_else(|_| panic!("no port in {url}"))
}

async fn add(url: &str, id: i64) -> Value {
    let params = json!({"name": "legacy__add", "arguments": {"a": 2, "b": id}});
    let answer = call(url, SAM_TOKEN, id, params).await;
    answer.result(id).clone()
}

#[tokio::test]
async fn an_http_server_that_forgets_the_session_gets_a_new_one_and_the_call_is_sent_again() {
    let dir = tempfile::tempdir().unwrap();
    let server = legacy_server(0);
    let port = port_of(&server.url);
    let log = dir.path().join("tap.log");
    let tap = http_tap(&server.url, &log);
    let gw = allowing_gateway(
        dir.path(),
        json!({"legacy": http_server(&tap.url, json!({}))}),
    );
    let first = add(&gw.url, 1).await;
    assert_eq!(first["structuredContent"]["sum"], 3, "{first}");

    // The server starts again on the same port, knowing no session.
    drop(server);
    let again = legacy_server(port);
    let second = add(&gw.url, 40).await;
    assert_eq!(second["structuredContent"]["sum"], 42, "{second}");

    // The call went out on the old session, was refused with 404 (so it did not run),
    // and was sent once more on a session opened by a second `initialize`.
    let exchanges = http_exchanges(&tapped(&log));
    let carried = |e: &Value, method: &str| {
        e["body"]
            .as_array()
            .is_some_and(|b| b.iter().any(|m| m["method"] == method))
    };
    let calls: Vec<&Value> = exchanges
        .iter()
        .filter(|e| carried(e, "tools/call"))
        .collect();
    let statuses: Vec<&Value> = calls.iter().map(|e| &e["status"]).collect();
    assert_eq!(statuses, [200, 404, 200], "{exchanges:#?}");
    let inits = exchanges
        .iter()
        .filter(|e| carried(e, "initialize"))
        .count();
    assert_eq!(inits, 2, "{exchanges:#?}");
    assert_ne!(calls[1]["session"], calls[2]["session"], "{exchanges:#?}");
    // The new server ran the call once.
    let ran = again
        .lines()
        .iter()
        .filter(|l| l.contains("tools/call"))
        .count();
    assert_eq!(ran, 1, "{:?}", again.lines());
}

#[tokio::test]
async fn an_http_server_that_stops_answering_is_used_again_once_it_is_back() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = crate::common::serve::tokens_file(dir.path());
    let tokens = tokens.to_str().unwrap();
    let cmdb = http_server::serve("cmdb", &["--tokens", tokens], &[]);
    let port = cmdb.port();
    let config = write(
        dir.path(),
        "servers.json",
        &json!({
            "mcpServers": {"cmdb": crate::common::http_server(
                &cmdb.url, json!({"Authorization": format!("Bearer {SAM_TOKEN}")}))},
            "gatehouse": {"rules": [{"tool": "*", "decision": "allow"}]}
        }),
    );
    let gw = start_gateway(
        dir.path(),
        &config,
        dir.path().join("state.db").to_str().unwrap(),
    );
    assert_asset(&get_asset(&gw.url, 1).await, 1);

    // Gone: its call fails at once, saying so; nothing is restarted or waited for.
    drop(cmdb);
    let refused = get_asset(&gw.url, 2).await;
    let refused = refused.result(2);
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        texts(refused).contains("error sending request"),
        "{refused}"
    );

    // Back on the same address: the next call reaches it. Each 2026-07-28 request is a
    // POST of its own, so there is no connection to make again.
    let _back = http_server::serve_on(
        "cmdb",
        &format!("127.0.0.1:{port}"),
        &["--tokens", tokens],
        &[],
    );
    assert_asset(&get_asset(&gw.url, 3).await, 3);
}

/// A servers file whose testbed fails to start until `broken` is removed, retried every 100 ms.
fn broken_testbed_config(dir: &Path) -> String {
    std::fs::write(dir.join("broken"), "").unwrap();
    let restart = json!({"firstDelayMs": 100, "factor": 1, "maxDelayMs": 100,
                         "attemptsPerWindow": 1000, "windowMs": 60000});
    robust_config_with(dir, restart)
}

/// Two replicas on one store started while the testbed is broken; mends it and waits until
/// each replica says its own start succeeded (no client lists tools meanwhile).
async fn two_replicas_once_it_is_mended(dir: &Path, config: &str) -> (Process, Process) {
    let state = dir.join("state.db");
    let (a, b) = (
        start_gateway(dir, config, state.to_str().unwrap()),
        start_gateway(dir, config, state.to_str().unwrap()),
    );
    std::fs::remove_file(dir.join("broken")).unwrap();
    let started = Instant::now();
    while !(said(&a, "server testbed started") && said(&b, "server testbed started")) {
        assert!(
            started.elapsed() < NOTICE_LIMIT,
            "{:?} {:?}",
            a.lines(),
            b.lines()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (a, b)
}

/// The waits the gateway announced after each of the testbed's first `n` failed starts
/// ("did not start (…); trying again in 0.4 s"), in seconds, waited for.
async fn retry_waits(gw: &Process, n: usize) -> Vec<f64> {
    let started = Instant::now();
    loop {
        let waits: Vec<f64> = gw
            .lines()
            .iter()
            .filter(|l| l.contains("server testbed did not start ("))
            .filter_map(|l| l.split("trying again in ").nth(1))
            .filter_map(|w| w.split(' ').next()?.parse().ok())
            .collect();
        if waits.len() >= n {
            return waits;
        }
        assert!(started.elapsed() < NOTICE_LIMIT, "{:?}", gw.lines());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
