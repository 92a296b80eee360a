//! What a team's operations read of a gateway over HTTP, without a token: `/healthz`,
//! `/readyz` (ready only while the store and every server are; `robust.rs` and
//! `database.rs` take a server and the database away) and `/metrics` in Prometheus's
//! text format, counting each decision by verdict and by whom, the calls' times by
//! answer, and the servers up, naming no caller.

use serde_json::{Value, json};

use super::*;
use crate::common::{
    http_server::{call, post, request},
    serve::SAM_TOKEN,
};

/// A client's trace context, as W3C Trace Context spells it.
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
/// One that is not valid: a trace id of zeros.
const ZERO_TRACEPARENT: &str = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";

/// The value of the metric line that starts with `series` (its name and labels).
fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
}

#[tokio::test]
async fn health_readiness_and_metrics_say_what_the_gateway_decided_and_name_nobody() {
    let dir = tempfile::tempdir().unwrap();
    let config = gateway_config(dir.path());
    let gw = start_gateway(
        dir.path(),
        &config,
        dir.path().join("state.db").to_str().unwrap(),
    );

    let (status, body) = operation(&gw, "/healthz").await;
    assert_eq!((status, body.as_str()), (200, "ok\n"));
    let (status, body) = operation(&gw, "/readyz").await;
    let ready: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        ready,
        json!({"ready": true, "store": {"ok": true},
               "servers": {"cmdb": {"ok": true}, "tickets": {"ok": true}}})
    );

    // Two calls a rule allows, one it hides, one it asks about and the person approves.
    // The first carries the client's trace (W3C `traceparent`), which the ledger's line
    // joins; the second an invalid one (all zeros), which it does not.
    for (id, traceparent) in [(1, TRACEPARENT), (2, ZERO_TRACEPARENT)] {
        let params = json!({"name": "tickets__list_tickets", "arguments": {"host": "web-01"},
                            "_meta": {"traceparent": traceparent}});
        let listed = post(&gw.url, Some(SAM_TOKEN), &request(id, "tools/call", params)).await;
        assert_eq!(listed.result(id)["isError"], false, "{}", listed.text);
    }
    let hidden = json!({"name": HIDDEN, "arguments": {"query": "jump"}});
    let refused = call(&gw.url, SAM_TOKEN, 3, hidden).await;
    assert_eq!(refused.result(3)["isError"], true, "{}", refused.text);
    let asked = json!({"name": ASKED, "arguments": asked_args()});
    let asked = call(&gw.url, SAM_TOKEN, 4, asked).await;
    let state = asked.result(4)["requestState"].as_str().unwrap().to_owned();
    let approved = json!({"name": ASKED, "arguments": asked_args(), "requestState": state,
        "inputResponses": {"gatehouse.approve": {"action": "accept", "content": {"approve": true}}}});
    let done = call(&gw.url, SAM_TOKEN, 5, approved).await;
    assert_eq!(done.result(5)["isError"], false, "{}", done.text);

    let (status, text) = operation(&gw, "/metrics").await;
    assert_eq!(status, 200);
    let series = [
        (
            r#"gatehouse_gateway_decisions_total{verdict="allowed",by="rule"}"#,
            2.0,
        ),
        (
            r#"gatehouse_gateway_decisions_total{verdict="refused",by=""}"#,
            1.0,
        ),
        (
            r#"gatehouse_gateway_decisions_total{verdict="asked",by="client"}"#,
            1.0,
        ),
        (
            r#"gatehouse_gateway_decisions_total{verdict="allowed",by="client"}"#,
            1.0,
        ),
        (
            r#"gatehouse_gateway_call_duration_seconds_count{answer="result"}"#,
            4.0,
        ),
        (
            r#"gatehouse_gateway_call_duration_seconds_count{answer="input_required"}"#,
            1.0,
        ),
        ("gatehouse_gateway_calls_in_flight", 0.0),
        ("gatehouse_gateway_ledger_waiting", 0.0),
        (r#"gatehouse_gateway_server_up{server="cmdb"}"#, 1.0),
        (r#"gatehouse_gateway_server_up{server="tickets"}"#, 1.0),
    ];
    for (name, value) in series {
        assert_eq!(metric(&text, name), Some(value), "{name} in:\n{text}");
    }
    // Every call's time is in a bucket: the last (+Inf) holds them all.
    let inf = r#"gatehouse_gateway_call_duration_seconds_bucket{le="+Inf",answer="result"}"#;
    assert_eq!(metric(&text, inf), Some(4.0), "{text}");
    // Nobody is named: no caller, no argument.
    for private in ["usr-sam", "larkfield", "jump-prod-02", "web-01"] {
        assert!(!text.contains(private), "{private} in:\n{text}");
    }
    // The ledger holds a line for each decision the metrics counted.
    let lines = gw_ledger(dir.path());
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["trace_id"], TRACEPARENT.split('-').nth(1).unwrap());
    let own = lines[1]["trace_id"].as_str().unwrap();
    assert!(own.len() == 32 && own.bytes().any(|b| b != b'0'), "{own}");
}

/// The ledger lines of the gateway in `dir`.
fn gw_ledger(dir: &Path) -> Vec<Value> {
    ledger_lines(&dir.join("ledger.jsonl"))
}

/// SIGTERM while a call is in flight: the gateway takes no new connection, the call
/// (decided, its ledger line written) runs to its end and is answered, then the gateway
/// exits 0, saying it drained.
#[tokio::test]
async fn sigterm_lets_the_decided_call_in_flight_finish_and_answer_then_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let exe = crate::common::exe();
    let gw = allowing_gateway(
        dir.path(),
        json!({"testbed": {"command": exe, "args": ["serve", "testbed"],
                                       "env": {"MCP_USER": "usr-sam", "MCP_TENANT": "larkfield"}}}),
    );
    let port = port_of(&gw);
    let url = gw.url.clone();
    let sleeping = tokio::spawn(async move {
        let sleep = json!({"name": "testbed__sleep", "arguments": {"seconds": 2, "quiet": true}});
        call(&url, SAM_TOKEN, 1, sleep).await
    });
    // Its decision is durable before it is sent: once the line is there, it is in flight.
    let deadline = std::time::Instant::now() + LIMIT;
    while gw_ledger(dir.path()).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the call was never decided"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(gw.signal("TERM"));
    gw.wait_for_line(
        "shutting down: no new connections; 1 request(s) in flight",
        LIMIT,
    );
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "a new connection is taken after SIGTERM"
    );
    let answer = sleeping.await.unwrap();
    let result = answer.result(1);
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"]["slept"], 2.0, "{result}");
    let ran = gw.wait(LIMIT);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let lines = gw_ledger(dir.path());
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["tool"], "testbed__sleep", "{lines:?}");
}

/// `gatehouse gateway migrate --state STATE`: what it printed.
fn migrate(state: &str) -> String {
    let out = gatehouse_command(&["gateway", "migrate", "--state", state], &[])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "migrate failed: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A store made before stores had versions is taken to this version by the first replica
/// that opens it (as every earlier version made what was missing at each start); one of a
/// newer version is refused at start and by `gateway migrate`, saying what to run; at its
/// own version a replica starts and runs calls.
pub async fn a_store_of_a_newer_version_is_refused_and_one_made_before_versions_is_taken_up(
    backing: Backing,
) {
    let dir = tempfile::tempdir().unwrap();
    let config = gateway_config(dir.path());
    let shared = SharedState::new(backing, dir.path(), None);
    let made = migrate(&shared.arg);
    assert!(
        made.contains("made the store at schema version 1"),
        "{made}"
    );
    let sql = |statement: &str| match &shared.cluster {
        Some(cluster) => drop(cluster.query(statement)),
        None => {
            let code = "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); \
                        db.execute(sys.argv[2]); db.commit()";
            let ran = std::process::Command::new("python3")
                .args(["-c", code, &shared.arg, statement])
                .status()
                .unwrap();
            assert!(ran.success(), "{statement}");
        }
    };
    let tokens = crate::common::serve::tokens_file(dir.path());
    let mut args = http_args(&config, "127.0.0.1:0", &shared.arg);
    args.extend(["--tokens", tokens.to_str().unwrap()]);

    // A newer gatehouse's store: refused, and not migrated back.
    sql("UPDATE gatehouse_schema SET version = 2");
    let refused = gatehouse_command(&args, &key_env()).output().unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success(),
        "started on a newer store: {stderr}"
    );
    assert!(
        stderr.contains("is at schema version 2, made by a newer gatehouse"),
        "{stderr}"
    );
    let back = gatehouse_command(&["gateway", "migrate", "--state", &shared.arg], &[])
        .output()
        .unwrap();
    assert!(!back.status.success());
    let said = String::from_utf8_lossy(&back.stderr);
    assert!(said.contains("cannot be migrated back"), "{said}");

    // As an earlier Gatehouse left it (no version): the replica takes it up and runs.
    sql("DROP TABLE gatehouse_schema");
    let gw = start_gateway(dir.path(), &config, &shared.arg);
    let listed = super::database::list(&gw.url, 1, "web-01").await;
    assert!(super::database::ran(&listed), "{listed}");
    let again = migrate(&shared.arg);
    assert!(again.contains("at schema version 1 already"), "{again}");
}
