//! A quick look at every configured server, without a model or a question: start or reach
//! it, agree on a revision, read its tools as the catalog would take them, and close. What
//! `gatehouse mcp list` and `gatehouse doctor` report; a failure comes with what to do,
//! read from the server's last words where they say ([`diagnosis`]).

pub mod diagnosis;

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use crate::{
    catalog::{self, Catalog},
    config::{Config, ServerSpec, Transport},
    connect::{self, ConnectError},
    person::{Person, Unattended},
    trace::Trace,
};

/// How one server did.
#[derive(Debug, Clone)]
pub struct Probe {
    /// The server's name in the servers file.
    pub server: String,
    /// How long it took to start (or reach) it and read its tools.
    pub elapsed: Duration,
    /// What came of it.
    pub outcome: Result<Reached, Failure>,
}

/// A server that started and listed its tools.
#[derive(Debug, Clone)]
pub struct Reached {
    /// The revision both sides agreed on.
    pub protocol: String,
    /// The server's own name and version, as it gave them.
    pub implementation: Option<(String, String)>,
    /// Its tools as the model would be offered them (`server__tool`).
    pub tools: Vec<String>,
    /// The tools left out, each with the reason.
    pub left_out: Vec<String>,
}

/// A server the host could not use, and what to do about it.
#[derive(Debug, Clone)]
pub struct Failure {
    /// What went wrong, in words.
    pub reason: String,
    /// What to do about it, in words.
    pub fix: String,
}

/// Probe every server of `config` at once, each within `timeout` (to start and to list),
/// in the configuration's order: the servers that parsed, then the entries that did not.
/// Their stderr and any step goes to `trace`.
pub async fn probe_all(config: &Config, timeout: Duration, trace: &Trace) -> Vec<Probe> {
    probe_each(config, timeout, trace, |_| {}).await
}

/// [`probe_all`], telling `ready` of each server as soon as it is known: the entries that
/// did not parse at once, then each server as it answers or fails, while the others are
/// still starting. What it returns is in the configuration's order all the same.
pub async fn probe_each(
    config: &Config,
    timeout: Duration,
    trace: &Trace,
    mut ready: impl FnMut(&Probe),
) -> Vec<Probe> {
    use futures::stream::{FuturesUnordered, StreamExt};
    // Nobody to ask: no call is made while probing, and a question is declined.
    let person: Arc<dyn Person> = Arc::new(Unattended::NOBODY);
    let limits = connect::Limits {
        timeout,
        ..connect::Limits::from_settings(&config.settings)
    };
    let broken: Vec<Probe> = config
        .broken
        .iter()
        .map(|(name, reason)| unusable_entry(config, name, reason))
        .collect();
    broken.iter().for_each(&mut ready);
    let mut pending: FuturesUnordered<_> = config
        .servers
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let probing = probe(spec, person.clone(), trace, limits, &config.source);
            async move { (i, probing.await) }
        })
        .collect();
    let mut done: Vec<Option<Probe>> = vec![None; config.servers.len()];
    while let Some((i, probe)) = pending.next().await {
        ready(&probe);
        done[i] = Some(probe);
    }
    done.into_iter().flatten().chain(broken).collect()
}

/// An entry of the servers file that could not be used at all, as its probe.
fn unusable_entry(config: &Config, name: &str, reason: &str) -> Probe {
    Probe {
        server: name.to_owned(),
        elapsed: Duration::ZERO,
        outcome: Err(Failure {
            reason: reason.to_owned(),
            fix: if reason.contains("is not set and has no default") {
                "set that variable where the host runs, or give it a default (${NAME:-value})"
                    .into()
            } else {
                format!("correct the entry {name} in {}", config.source)
            },
        }),
    }
}

async fn probe(
    spec: &ServerSpec,
    person: Arc<dyn Person>,
    trace: &Trace,
    limits: connect::Limits,
    source: &str,
) -> Probe {
    let started = Instant::now();
    let outcome = match connect::connect(spec, person, trace, limits).await {
        Err(e) => Err(connect_failure(spec, &e, source)),
        Ok(conn) => {
            let listed = tokio::time::timeout(
                limits.timeout,
                catalog::list_tools(&conn, catalog::live::MAX_LIST_PAGES),
            )
            .await;
            let outcome = match listed {
                Err(_) => Err(Failure {
                    reason: format!(
                        "tools/list got no answer within {}",
                        crate::text::seconds(limits.timeout)
                    ),
                    fix: "the server started but does not list its tools: run it by hand and look at its stderr".into(),
                }),
                Ok(Err(e)) => Err(Failure {
                    reason: e.to_string(),
                    fix: "the server started but its tool list could not be read: check its version, or report it to its authors".into(),
                }),
                Ok(Ok(listing)) => {
                    let catalog = Catalog::build(vec![(spec.name.clone(), listing.tools)]);
                    Ok(Reached {
                        protocol: conn.protocol.to_string(),
                        implementation: conn
                            .implementation
                            .as_ref()
                            .map(|i| (i.name.clone(), i.version.clone())),
                        tools: catalog.tools().iter().map(|t| t.name.clone()).collect(),
                        left_out: catalog.left_out,
                    })
                }
            };
            conn.close().await;
            outcome
        }
    };
    Probe {
        server: spec.name.to_string(),
        elapsed: started.elapsed(),
        outcome,
    }
}

/// Why a server could not be reached, with the fix in words: what its last words name
/// first, else what the kind of failure suggests.
pub fn connect_failure(spec: &ServerSpec, e: &ConnectError, source: &str) -> Failure {
    let host_env: Vec<_> = std::env::vars_os().collect();
    let by_hand = || diagnosis::by_hand(spec, &host_env).unwrap_or_default();
    let named = match e {
        ConnectError::Handshake { stderr, .. } | ConnectError::Timeout { stderr, .. } => {
            diagnosis::cause(spec, stderr, &host_env)
        }
        _ => None,
    };
    let fix = match (e, &spec.transport) {
        _ if named.is_some() => named.as_ref().map(|c| c.fix(&spec.name, source)).unwrap_or_default(),
        (ConnectError::Spawn { command, .. }, _) => format!(
            "install {command}, or correct \"command\" of {} (it must be a program on the PATH or a full path)",
            spec.name
        ),
        (ConnectError::Handshake { .. }, Transport::Stdio { .. }) => {
            format!("run it by hand to see why it stops: {}", by_hand())
        }
        (ConnectError::Timeout { runner: Some(_), .. }, _) => format!(
            "it may still have been downloading: raise firstStartTimeoutMs, or run it once by hand until it waits for input: {}",
            by_hand()
        ),
        (ConnectError::Timeout { .. }, _) => format!(
            "it may still be starting: raise connectTimeoutMs, or run it by hand to see what it does: {}",
            by_hand()
        ),
        (ConnectError::Http { reason, .. }, _) if reason.contains("needs a sign-in") => {
            format!("sign in: gatehouse auth login {}", spec.name)
        }
        (ConnectError::Http { reason, .. }, _) if reason.contains("(401)") || reason.contains("(403)") => {
            "renew the token its \"headers\" name (a ${VAR} must be set, and current, where the host runs)".into()
        }
        (ConnectError::Http { .. }, Transport::Http { .. }) => {
            "check that the server runs and that \"url\" is its MCP endpoint".into()
        }
        _ => "run the server by hand and look at what it says".into(),
    };
    // The report names the server and its URL already.
    let reason = match e {
        ConnectError::Http { reason, .. } => reason.clone(),
        other => {
            let text = other.to_string();
            let prefix = format!("server {}: ", spec.name);
            text.strip_prefix(&prefix)
                .map(str::to_owned)
                .unwrap_or(text)
        }
    };
    Failure { reason, fix }
}
