//! The PostgreSQL store under a gateway going away, and going slow: each call is refused
//! with an error that names the store (never sent unrecorded, the URL's password never
//! shown), the gateway says it is not ready, and calls run again once the database is
//! back; a malformed URL is refused when read.

use serde_json::{Value, json};

use super::*;
use crate::common::{http_server::call, serve::SAM_TOKEN, texts};

/// The password in the state's URL: never on the gateway's stderr or in an answer.
const PASSWORD: &str = "pg-pass-never-shown";

/// `tickets__list_tickets` for `host` through the gateway at `url`: the call's result.
pub(super) async fn list(url: &str, id: i64, host: &str) -> Value {
    let params = json!({"name": "tickets__list_tickets", "arguments": {"host": host}});
    call(url, SAM_TOKEN, id, params).await.result(id).clone()
}

/// Did the call run (and list tickets)?
pub(super) fn ran(result: &Value) -> bool {
    result["structuredContent"]["total"].is_number() && result["isError"] != true
}

/// A gateway in a folder of its own on a PostgreSQL of `backing` whose URL holds
/// `password`, its first call (for `host`) run: the folder, the state, the gateway.
pub(super) async fn gateway_on_postgres(
    backing: Backing,
    password: &str,
    host: &str,
) -> (tempfile::TempDir, SharedState, Process) {
    let dir = tempfile::tempdir().unwrap();
    let config = gateway_config(dir.path());
    let shared = SharedState::new(backing, dir.path(), Some(password));
    let gw = start_gateway(dir.path(), &config, &shared.arg);
    let first = list(&gw.url, 1, host).await;
    assert!(ran(&first), "{first}");
    (dir, shared, gw)
}

#[tokio::test]
async fn calls_are_refused_while_the_database_is_away_or_slow_and_run_again_when_it_is_back() {
    let (_dir, shared, gw) = gateway_on_postgres(Backing::Postgres, PASSWORD, "before").await;
    let cluster = shared.cluster.as_ref().expect("a PostgreSQL cluster");

    cluster.down();
    // Not ready while the store is away, saying why without the URL's password.
    let (status, body) = operation(&gw, "/readyz").await;
    assert_eq!(status, 503, "{body}");
    let ready: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(ready["store"]["why"], "the store is unavailable", "{body}");
    assert!(!body.contains(PASSWORD), "{body}");
    let away = list(&gw.url, 2, "away").await;
    let text = away.to_string();
    assert_eq!(away["isError"], true, "{away}");
    assert!(text.contains("the call was not run"), "{text}");
    assert!(
        text.contains(&format!(
            "the state store postgres://[redacted]@127.0.0.1:{}/postgres is unavailable",
            cluster.port
        )),
        "{text}"
    );

    cluster.up();
    let back = list(&gw.url, 3, "back").await;
    assert!(ran(&back), "{back}");
    let (status, body) = operation(&gw, "/readyz").await;
    assert_eq!(status, 200, "ready again: {body}");

    // Slow: another session holds the ledger's head row; the append waits its bound.
    let holder = cluster.hold("SELECT 1 FROM gatehouse_ledger_head WHERE id = 1 FOR UPDATE");
    let started = std::time::Instant::now();
    let slow = list(&gw.url, 4, "slow").await;
    let waited = started.elapsed();
    drop(holder);
    assert_eq!(slow["isError"], true, "{slow}");
    assert!(
        slow.to_string().contains("did not answer within 5 s"),
        "{slow}"
    );
    assert!(
        waited >= gatehouse_gateway::store::STORE_TIMEOUT,
        "{waited:?}"
    );
    let after = list(&gw.url, 5, "after").await;
    assert!(ran(&after), "{after}");

    let hosts: Vec<String> = shared
        .ledger()
        .iter()
        .filter(|l| l["tool"] == "tickets__list_tickets")
        .map(|l| l["arguments"]["host"].as_str().unwrap_or("?").to_owned())
        .collect();
    assert_eq!(hosts, ["before", "back", "after"]);
    shared.assert_ledger_verifies();
    for text in gw.lines().iter().chain([&text]) {
        assert!(!text.contains(PASSWORD), "the password was shown: {text}");
    }
    assert!(
        gw.lines()
            .iter()
            .any(|l| l.contains("the ledger is kept in postgres://[redacted]@")),
        "{:?}",
        gw.lines()
    );
}

#[test]
fn a_malformed_state_url_is_refused_when_read_without_its_password() {
    let dir = tempfile::tempdir().unwrap();
    let config = gateway_config(dir.path());
    for (url, says) in [
        (
            format!("postgres://gh:{PASSWORD}@127.0.0.1:notaport/db"),
            "not a PostgreSQL URL",
        ),
        (
            format!("postgres://gh:{PASSWORD}@127.0.0.1:5432"),
            "names no database",
        ),
        (
            "mysql://gh@127.0.0.1/db".to_owned(),
            "takes a file or a postgres:// URL",
        ),
    ] {
        let out = crate::common::run(&["gateway", "--config", &config, "--state", &url], &[]);
        assert_eq!(out.status, 2, "{url}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{url}: {}", out.stderr);
        assert!(!out.stderr.contains(PASSWORD), "{}", out.stderr);
    }
    let out = crate::common::run(
        &[
            "ledger",
            "verify",
            "--state",
            &format!("postgres://gh:{PASSWORD}@127.0.0.1:1/db"),
        ],
        &[],
    );
    assert_ne!(out.status, 0, "{}", out.stdout);
    crate::common::expect::says(
        &out.stderr,
        "the state store postgres://[redacted]@127.0.0.1:1/db is unavailable",
    );
    assert!(!out.stderr.contains(PASSWORD), "{}", out.stderr);
}

/// The database killed with SIGKILL at a moment of the clock's choosing while calls
/// arrive eight at a time, then started again: every call the server behind saw has its
/// line in the ledger (a call is sent only once its line is committed, and a commit
/// survives the crash), every call answered too, each line once, and the chain verifies.
#[tokio::test]
async fn a_database_killed_under_load_loses_no_line_of_a_call_that_was_sent() {
    const CALLS: usize = 160;
    const AT_ONCE: usize = 8;
    let dir = tempfile::tempdir().unwrap();
    let tickets = dir.path().join("tickets.db");
    let env = [
        ("MCP_USER", "usr-sam"),
        ("MCP_TENANT", "larkfield"),
        ("GATEHOUSE_TICKETS_DB", tickets.to_str().unwrap()),
    ];
    let server = crate::common::http_server::serve("tickets", &["--no-auth"], &env);
    let shared = SharedState::new(Backing::Postgres, dir.path(), None);
    let cluster = shared.cluster.as_ref().expect("a PostgreSQL cluster");
    let config = crate::common::servers_file(
        dir.path(),
        json!({"tickets": crate::common::http_server(&server.url, json!({}))}),
        json!({"rules": [{"tool": "*", "decision": "allow"}],
               "ledger": {"path": dir.path().join("ledger.jsonl"), "arguments": true}}),
    );
    let gw = start_gateway(dir.path(), &config, &shared.arg);
    // Which call the database dies after: from the clock, said if the test fails.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as usize;
    let kill_after = CALLS / 8 + nanos % (CALLS / 2);

    let mut answered = Vec::new();
    let mut refused = 0;
    let mut running = tokio::task::JoinSet::new();
    for n in 0..CALLS {
        let url = gw.url.clone();
        running.spawn(async move {
            let params =
                json!({"name": "tickets__list_tickets", "arguments": {"host": format!("c-{n}")}});
            (n, call(&url, SAM_TOKEN, n as i64 + 1, params).await)
        });
        if n == kill_after {
            cluster.kill();
        }
        if running.len() >= AT_ONCE || n + 1 == CALLS {
            while let Some(done) = running.join_next().await {
                let (n, answer) = done.unwrap();
                let result = answer.result(n as i64 + 1);
                match result["isError"] == false {
                    true => answered.push(n),
                    false => {
                        // Refused while the database was away, never sent unrecorded.
                        assert!(texts(result).contains("the call was not run"), "{result}");
                        refused += 1;
                    }
                }
                if running.len() < AT_ONCE / 2 {
                    break;
                }
            }
        }
        if n == kill_after + AT_ONCE {
            // Some calls have met the database gone: back it comes, through recovery.
            cluster.up();
        }
    }
    while let Some(done) = running.join_next().await {
        let (n, answer) = done.unwrap();
        if answer.result(n as i64 + 1)["isError"] == false {
            answered.push(n);
        }
    }
    let why = format!(
        "killed after call {kill_after}; {} answered, {refused} refused",
        answered.len()
    );
    assert!(refused > 0, "the kill refused nothing: {why}");
    assert!(answered.len() > CALLS / 4, "{why}");

    let lines = shared.ledger();
    let line_of = |trace_id: &Value, step: &Value| {
        lines
            .iter()
            .filter(|l| {
                &l["trace_id"] == trace_id
                    && &l["step"] == step
                    && l["tool"] == "tickets__list_tickets"
            })
            .count()
    };
    // The server's records are read from its stderr as it writes them.
    let logged = server.wait_calls("list_tickets", answered.len()).await;
    assert!(
        logged,
        "the server logged {} calls ({why})",
        server.calls_of("list_tickets")
    );
    let seen: Vec<Value> = server
        .records()
        .into_iter()
        .filter(|r| r["operation"] == "mcp.request" && r["method"] == "tools/call")
        .collect();
    assert!(seen.len() >= answered.len(), "{why}");
    for record in &seen {
        assert!(
            record["trace_id"].is_string() && record["step"].is_u64(),
            "{record}"
        );
        let found = line_of(&record["trace_id"], &record["step"]);
        assert_eq!(
            found, 1,
            "the server saw a call the ledger has {found} lines of ({why}): {record}"
        );
    }
    for n in &answered {
        let host = format!("c-{n}");
        let of_n = lines
            .iter()
            .filter(|l| l["arguments"]["host"] == host.as_str())
            .count();
        assert_eq!(of_n, 1, "call {n} was answered, {of_n} lines ({why})");
    }
    shared.assert_ledger_verifies();
}
