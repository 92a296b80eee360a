//! Two gateways sharing one state store and one ledger: a confirmation begun on one is
//! finished on the other and cannot be used again on either; behind nginx the Python
//! client's two rounds land on different replicas; a replica killed with SIGKILL in the
//! middle of calls loses no acknowledged decision and doubles no call. Each test runs on
//! both backings: a SQLite file (the ledger a file), and a real PostgreSQL (the ledger a
//! table there, read back with `gatehouse ledger show|verify --state`).

use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::common::{
    http_server::{Answer, call},
    nginx::start_nginx,
    serve::SAM_TOKEN,
};

fn approve(state: &str) -> Value {
    json!({"name": ASKED, "arguments": asked_args(), "requestState": state,
           "inputResponses": {"gatehouse.approve": {"action": "accept", "content": {"approve": true}}}})
}

pub async fn a_confirmation_begun_on_one_replica_finishes_on_the_other_and_only_once(
    backing: Backing,
) {
    let dir = tempfile::tempdir().unwrap();
    let (shared, a, b) = two_replicas(dir.path(), backing, gateway_config(dir.path()));
    let params = json!({"name": ASKED, "arguments": asked_args()});
    let asked = call(&a.url, SAM_TOKEN, 1, params).await;
    let asked = asked.result(1);
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let state = asked["requestState"]
        .as_str()
        .expect("a sealed state")
        .to_owned();
    let form = &asked["inputRequests"]["gatehouse.approve"];
    assert_eq!(form["method"], "elicitation/create", "{asked}");

    let done = call(&b.url, SAM_TOKEN, 2, approve(&state)).await;
    let done = done.result(2);
    assert_eq!(
        done["structuredContent"]["hostname"], "jump-prod-02",
        "{done}"
    );

    // Used: on either replica, the same state runs nothing again.
    for (url, id) in [(&a.url, 3), (&b.url, 4)] {
        let again: Answer = call(url, SAM_TOKEN, id, approve(&state)).await;
        let again = again.result(id);
        assert_eq!(again["isError"], true, "{again}");
        assert!(again.to_string().contains("used already"), "{again}");
    }
    // Edited, or for other arguments: refused as invalid, on either replica.
    let mut edited = state.clone();
    edited.replace_range(edited.len() - 3.., "AAA");
    let r = call(&a.url, SAM_TOKEN, 5, approve(&edited)).await;
    assert_eq!(r.error_code(5), -32602, "{}", r.text);
    let mut other = approve(&state);
    other["arguments"]["hostname"] = json!("db-prod-01");
    let r = call(&b.url, SAM_TOKEN, 6, other).await;
    assert_eq!(r.error_code(6), -32602, "{}", r.text);

    assert!(
        said(&a, "asked usr-sam@larkfield in their client"),
        "{:?}",
        a.lines()
    );
    assert!(
        said(&b, "usr-sam@larkfield said yes in their client"),
        "{:?}",
        b.lines()
    );
    let lines = shared.ledger();
    let yes: Vec<&Value> = lines.iter().filter(|l| l["answer"] == "yes").collect();
    assert_eq!(yes.len(), 1, "{lines:#?}");
    assert_eq!(yes[0]["confirmation"].as_str().map(str::len), Some(32));
    shared.assert_ledger_verifies();
}

pub fn behind_nginx_the_python_clients_two_rounds_land_on_two_replicas(backing: Backing) {
    let dir = tempfile::tempdir().unwrap();
    let (shared, a, b) = two_replicas(dir.path(), backing, gateway_config(dir.path()));
    let proxy = start_nginx(dir.path(), &[port_of(&a), port_of(&b)]);
    let extra = ["--mode", "auto", "--no-list"];
    let argv = approving(script("py_mcp_client.py"), &extra, &proxy.url);
    let out = py_client(&argv, dir.path());
    assert_eq!(out["protocolVersion"], "2026-07-28", "{out}");
    let result = &out["calls"][0]["result"];
    assert_eq!(
        result["structuredContent"]["hostname"], "jump-prod-02",
        "{out}"
    );
    // nginx's round robin sent round 1 to one replica and round 2 to the other.
    let asked = [&a, &b].map(|p| said(p, "asked usr-sam@larkfield"));
    let answered = [&a, &b].map(|p| said(p, "said yes in their client"));
    assert!(
        asked.iter().filter(|x| **x).count() == 1 && answered != asked && answered.contains(&true),
        "asked on {asked:?}, answered on {answered:?}"
    );
    shared.assert_ledger_verifies();
}

/// A tools/call of `tickets__list_tickets` for host `h-N` through `url`: `Some(true)`
/// when it was acknowledged with a result, `None` when the connection broke.
async fn list_for(url: String, n: usize) -> Option<bool> {
    let body = crate::common::http_server::request(
        n as i64,
        "tools/call",
        json!({"name": "tickets__list_tickets", "arguments": {"host": format!("h-{n}")}}),
    );
    let headers = crate::common::http_server::standard_headers(&body);
    let mut req = reqwest::Client::new()
        .post(&url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("Authorization", format!("Bearer {SAM_TOKEN}"))
        .timeout(Duration::from_secs(30));
    for (k, v) in &headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let response = req.body(body.to_string()).send().await.ok()?;
    let text = response.text().await.ok()?;
    let messages = crate::common::http_server::parse_messages(&text);
    let answered = messages
        .iter()
        .any(|m| m["id"] == n as i64 && m["result"]["structuredContent"]["total"].is_number());
    Some(answered)
}

pub async fn a_replica_killed_in_the_middle_of_calls_loses_no_acknowledged_decision_and_doubles_none(
    backing: Backing,
) {
    const CALLS: usize = 60;
    let dir = tempfile::tempdir().unwrap();
    let (shared, a, b) = two_replicas(dir.path(), backing, gateway_config(dir.path()));
    let proxy = start_nginx(dir.path(), &[port_of(&a), port_of(&b)]);
    let mut calls = Vec::new();
    for n in 0..CALLS {
        calls.push(tokio::spawn(list_for(proxy.url.clone(), n)));
        if n == CALLS / 3 {
            assert!(a.signal("KILL"), "replica A could not be killed");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut acknowledged = Vec::new();
    for (n, call) in calls.into_iter().enumerate() {
        if call.await.unwrap() == Some(true) {
            acknowledged.push(n);
        }
    }
    assert!(
        acknowledged.len() > CALLS / 2,
        "only {acknowledged:?} were answered"
    );
    let lines = shared.ledger();
    let decided = |n: usize| {
        let host = format!("h-{n}");
        lines
            .iter()
            .filter(|l| l["tool"] == "tickets__list_tickets" && l["arguments"]["host"] == host)
            .count()
    };
    for n in 0..CALLS {
        let lines_of_n = decided(n);
        assert!(lines_of_n <= 1, "call {n} was decided {lines_of_n} times");
        if acknowledged.contains(&n) {
            assert_eq!(
                lines_of_n, 1,
                "call {n} was answered but is not in the ledger"
            );
        }
    }
    shared.assert_ledger_verifies();
}

/// Many callers at once on each of two replicas (appends that share a write or a
/// transaction): every call answered, each decided once, in one chain that verifies.
pub async fn calls_made_at_once_on_two_replicas_are_each_decided_once_in_one_chain(
    backing: Backing,
) {
    const CALLS: usize = 96;
    let dir = tempfile::tempdir().unwrap();
    let (shared, a, b) = two_replicas(dir.path(), backing, gateway_config(dir.path()));
    let calls: Vec<_> = (0..CALLS)
        .map(|n| {
            let url = if n % 2 == 0 { &a.url } else { &b.url };
            tokio::spawn(list_for(url.clone(), n))
        })
        .collect();
    for (n, call) in calls.into_iter().enumerate() {
        assert_eq!(call.await.unwrap(), Some(true), "call {n} was not answered");
    }
    let lines = shared.ledger();
    for n in 0..CALLS {
        let host = format!("h-{n}");
        let decided = lines
            .iter()
            .filter(|l| l["tool"] == "tickets__list_tickets" && l["arguments"]["host"] == host)
            .count();
        assert_eq!(decided, 1, "call {n} was decided {decided} times");
    }
    let seqs: std::collections::BTreeSet<u64> =
        lines.iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs.len(), lines.len(), "each line its own place");
    shared.assert_ledger_verifies();
}

/// A replica keeps each caller's approvals a few seconds rather than read them for every
/// call; one given on the other replica meanwhile still counts: the replica reads again
/// before it would ask the person, so they are never asked about what they approved.
pub async fn an_approval_remembered_on_one_replica_holds_at_once_on_the_other(backing: Backing) {
    let dir = tempfile::tempdir().unwrap();
    let config = gateway_config(dir.path());
    let mut file: Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    file["gatehouse"]["approvals"] = json!({"rememberFromClient": true});
    // Asked by default rather than by a rule: only such an ask may be remembered.
    let rules = file["gatehouse"]["rules"].as_array_mut().unwrap();
    rules.retain(|r| r["tool"] != ASKED);
    std::fs::write(&config, file.to_string()).unwrap();
    let (shared, a, b) = two_replicas(dir.path(), backing, config);
    let params = json!({"name": ASKED, "arguments": asked_args()});

    // B reads Sam's approvals (none) and keeps them: asked.
    let on_b = call(&b.url, SAM_TOKEN, 1, params.clone()).await;
    assert_eq!(
        on_b.result(1)["resultType"],
        "input_required",
        "{}",
        on_b.text
    );
    // On A Sam says yes, and to remember it.
    let on_a = call(&a.url, SAM_TOKEN, 2, params.clone()).await;
    let state = on_a.result(2)["requestState"].as_str().unwrap().to_owned();
    let mut yes = approve(&state);
    yes["inputResponses"]["gatehouse.approve"]["content"]["remember"] = json!(true);
    let done = call(&a.url, SAM_TOKEN, 3, yes).await;
    assert_eq!(done.result(3)["isError"], false, "{}", done.text);

    // At once on B, within the time it keeps what it read: run, not asked.
    let again = call(&b.url, SAM_TOKEN, 4, params).await;
    let again = again.result(4);
    assert_eq!(again["isError"], false, "{again}");
    assert_ne!(again["resultType"], "input_required", "{again}");
    assert_eq!(
        again["structuredContent"]["hostname"], "jump-prod-02",
        "{again}"
    );
    let lines = shared.ledger();
    let last = lines.last().unwrap();
    assert_eq!(
        (&last["decision"], &last["rule"]),
        (&json!("run"), &json!("project")),
        "{last}"
    );
    shared.assert_ledger_verifies();
}

/// One confirmation sent eight times at once, four to each replica (so that some share a
/// group commit): the call runs once, the other seven are told it was used, and the
/// ledger has one yes.
pub async fn a_confirmation_sent_many_times_at_once_runs_once(backing: Backing) {
    let dir = tempfile::tempdir().unwrap();
    let (shared, a, b) = two_replicas(dir.path(), backing, gateway_config(dir.path()));
    let params = json!({"name": ASKED, "arguments": asked_args()});
    let asked = call(&a.url, SAM_TOKEN, 1, params).await;
    let state = asked.result(1)["requestState"].as_str().unwrap().to_owned();
    let sends: Vec<_> = (0..8)
        .map(|i| {
            let url = if i % 2 == 0 {
                a.url.clone()
            } else {
                b.url.clone()
            };
            let body = approve(&state);
            tokio::spawn(async move { call(&url, SAM_TOKEN, 10 + i, body).await })
        })
        .collect();
    let (mut ran, mut used) = (0, 0);
    for (i, send) in (10..).zip(sends) {
        let answer = send.await.unwrap();
        let result = answer.result(i);
        if result["isError"] == false {
            assert_eq!(
                result["structuredContent"]["hostname"], "jump-prod-02",
                "{result}"
            );
            ran += 1;
        } else {
            assert!(result.to_string().contains("used already"), "{result}");
            used += 1;
        }
    }
    assert_eq!((ran, used), (1, 7));
    let lines = shared.ledger();
    let yes = lines.iter().filter(|l| l["answer"] == "yes").count();
    assert_eq!(yes, 1, "{lines:#?}");
    shared.assert_ledger_verifies();
}
