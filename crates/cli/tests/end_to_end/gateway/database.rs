//! The PostgreSQL store under a gateway going away, and going slow: each call is refused
//! with an error that names the store (never sent unrecorded, the URL's password never
//! shown), the gateway says it is not ready, and calls run again once the database is
//! back; a malformed URL is refused when read.

use serde_json::{Value, json};

use super::*;
use crate::common::{http_server::call, serve::SAM_TOKEN};

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
    assert!(body.contains("is unavailable"), "{body}");
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
        waited >= gatehouse::gateway::store::STORE_TIMEOUT,
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
