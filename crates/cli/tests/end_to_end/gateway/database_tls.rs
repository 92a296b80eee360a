//! The gateway's PostgreSQL over TLS (`sslmode`, `sslrootcert`, as libpq names them), on
//! a real PostgreSQL with `ssl = on` and a certificate a CA of the test's own signed for
//! `db.gatehouse.test`: `verify-full` works and PostgreSQL's `pg_stat_ssl` shows every
//! connection of the gateway encrypted; a certificate for another host name is refused
//! by `verify-full` (and taken by `verify-ca`, which checks only the CA); one another CA
//! signed is refused by both; `require` to a server without TLS is refused. Each refusal
//! says why, and the URL's password is never shown. (The replicas' confirmation across
//! two gateways runs over `verify-full` too: `replicas.rs`, `postgres_tls`.)

use super::*;
use crate::common::{Ran, expect::says, postgres::Certificates};

/// The password in the state's URL: never on the gateway's stderr.
const PASSWORD: &str = "pg-tls-pass-never-shown";

/// `gatehouse gateway --http` on `state` that must fail to start (its store refused):
/// how it ended, within [`LIMIT`].
fn refused_start(config: &str, state: &str) -> Ran {
    let args = http_args(config, "127.0.0.1:0", state);
    let ran = Spawn::new(
        gatehouse_command(&args, &key_env()),
        "gatehouse gateway --http",
    )
    .run()
    .wait(LIMIT);
    assert_ne!(ran.status, 0, "it started on {state}: {}", ran.stderr);
    assert!(!ran.stderr.contains(PASSWORD), "{}", ran.stderr);
    ran
}

/// `sslmode=MODE&sslrootcert=CA`.
fn verified(mode: &str, ca: &Certificates) -> String {
    format!("sslmode={mode}&sslrootcert={}", ca.ca.display())
}

#[tokio::test]
async fn over_verify_full_the_gateways_connections_are_encrypted() {
    let (_dir, shared, gw) =
        super::database::gateway_on_postgres(Backing::PostgresTls, PASSWORD, "tls").await;
    let cluster = shared.cluster.as_ref().expect("a PostgreSQL cluster");

    // Every connection of the gateway's is one pg_stat_ssl says is encrypted.
    let seen = cluster.query(
        "SELECT s.ssl, s.version FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
         WHERE a.application_name = 'gatehouse-gateway'",
    );
    let rows: Vec<&str> = seen.lines().collect();
    assert!(!rows.is_empty(), "no connection of the gateway's");
    for row in &rows {
        assert!(row.starts_with("t|TLSv1."), "not encrypted: {row}");
    }
    // The ledger, read back over the same TLS, holds the call and verifies.
    let lines = shared.ledger();
    assert_eq!(
        last_line_of(&lines, "tickets__list_tickets")["decision"],
        "run"
    );
    shared.assert_ledger_verifies();
    assert!(!said(&gw, PASSWORD), "the password was shown");
}

#[test]
fn a_certificate_for_another_host_or_from_another_ca_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = gateway_config(dir.path());
    let ours = dir.path().join("ours");
    let theirs = dir.path().join("theirs");
    std::fs::create_dir_all(&ours).unwrap();
    std::fs::create_dir_all(&theirs).unwrap();
    let ca = crate::common::postgres::certificates(&ours, DB_HOST);
    let other_ca = crate::common::postgres::certificates(&theirs, DB_HOST);
    let cluster = Cluster::start_tls(&ca);

    // The server's certificate names db.gatehouse.test; the URL names another host.
    let elsewhere = "elsewhere.gatehouse.test";
    let url = cluster.url_naming(Some(PASSWORD), elsewhere, &verified("verify-full", &ca));
    let ran = refused_start(&config, &url);
    says(
        &ran.stderr,
        "the state store postgres://[redacted]@elsewhere.gatehouse.test",
    );
    says(
        &ran.stderr,
        "is unavailable: error performing TLS handshake",
    );
    says(
        &ran.stderr,
        "certificate not valid for name \"elsewhere.gatehouse.test\"",
    );

    // verify-ca checks the CA alone: the same certificate is taken.
    let url = cluster.url_naming(Some(PASSWORD), elsewhere, &verified("verify-ca", &ca));
    let gw = start_gateway(dir.path(), &config, &url);
    drop(gw);

    // A certificate another CA signed, for the right name: refused by both.
    for mode in ["verify-full", "verify-ca"] {
        let url = cluster.url_naming(Some(PASSWORD), DB_HOST, &verified(mode, &other_ca));
        let ran = refused_start(&config, &url);
        says(&ran.stderr, "error performing TLS handshake");
        says(&ran.stderr, "UnknownIssuer");
    }
}

#[test]
fn require_to_a_server_without_tls_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = gateway_config(dir.path());
    let cluster = Cluster::start();
    let url = format!("{}?sslmode=require", cluster.url(Some(PASSWORD)));
    let ran = refused_start(&config, &url);
    says(
        &ran.stderr,
        "the state store postgres://[redacted]@127.0.0.1",
    );
    says(&ran.stderr, "server does not support TLS");
    // Without sslmode (libpq's `prefer`) the same server is used, in the clear.
    let _gw = start_gateway(dir.path(), &config, &cluster.url(Some(PASSWORD)));
    let plain = cluster.query(
        "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
         WHERE a.application_name = 'gatehouse-gateway'",
    );
    assert!(
        !plain.is_empty() && plain.lines().all(|l| l == "f"),
        "{plain}"
    );
}
