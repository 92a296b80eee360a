//! A stdio server that failed its very first start, in a host that runs for long (a
//! gateway): tried again with the restart backoff (`restart.rs`'s `Backoff`, the servers
//! file's `"restart"` settings) until it comes up; its connection is then set, once, and
//! marked as having a new tool list, so the catalog reads it at its next refresh. A host
//! that answers one question (`gatehouse ask`) does not wait for it: the server is
//! reported and left out, as before.

use std::sync::{Arc, Mutex, OnceLock};

use serde_json::json;
// tokio's clock, as in `restart`: a paused test clock drives the backoff.
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{Connection, Limits, restart::Backoff};
use crate::{
    config::ServerSpec,
    person::Person,
    text,
    trace::{Trace, Who},
};

use crate::config::ServerName;

/// Most characters of a failed start's reason kept and told.
const MAX_REASON_CHARS: usize = 500;

/// A server that has not started yet, and its connection once it has.
pub struct Late {
    name: ServerName,
    conn: OnceLock<Connection>,
    /// Why the last start failed, and when the next one is.
    down: Mutex<(String, Option<Instant>)>,
    closing: CancellationToken,
}

impl Late {
    /// The server's name in the servers file.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its connection, once a start succeeded.
    pub fn connection(&self) -> Option<&Connection> {
        self.conn.get()
    }

    /// Why it has not started, and when it is tried again; `None` once it has.
    pub fn down_reason(&self) -> Option<String> {
        if self.conn.get().is_some() {
            return None;
        }
        let (why, next) = &*self.down.lock().unwrap_or_else(|e| e.into_inner());
        let next = next.map_or(String::new(), |at| {
            format!(
                "; the host tries again in {}",
                text::seconds(at.saturating_duration_since(Instant::now()))
            )
        });
        Some(format!("the server has not started ({why}){next}"))
    }

    /// Stop trying, and close the connection if one was made.
    pub async fn close(self: Arc<Late>, retrying: tokio::task::JoinHandle<()>) {
        self.closing.cancel();
        let _ = tokio::time::timeout(super::CLOSE_LIMIT, retrying).await;
        if let Some(conn) = Arc::into_inner(self).and_then(|late| late.conn.into_inner()) {
            conn.close().await;
        }
    }

    /// Stop trying, and close the connection if it came, while others may still hold
    /// this (a gateway shut down with a session alive).
    pub async fn close_shared(&self) {
        self.closing.cancel();
        if let Some(conn) = self.conn.get() {
            conn.close_shared().await;
        }
    }
}

/// Try `spec` again and again, with the backoff of `limits.restart`, until it starts (or
/// the returned [`Late`] is closed); its first start failed with `first`.
pub fn retry(
    spec: ServerSpec,
    person: Arc<dyn Person>,
    trace: Trace,
    limits: Limits,
    first: String,
) -> (Arc<Late>, tokio::task::JoinHandle<()>) {
    let late = Arc::new(Late {
        name: spec.name.clone(),
        conn: OnceLock::new(),
        down: Mutex::new((String::new(), None)),
        closing: CancellationToken::new(),
    });
    let task = tokio::spawn({
        let late = late.clone();
        async move {
            let mut backoff = Backoff::new(limits.restart);
            backoff.started(Instant::now());
            let name = spec.name.clone();
            let mut why = first;
            loop {
                why = text::clip(&text::visible_line(&why), MAX_REASON_CHARS).into_owned();
                let wait = backoff.next(Instant::now());
                *late.down.lock().unwrap_or_else(|e| e.into_inner()) =
                    (why.clone(), Some(Instant::now() + wait));
                trace.add(
                    Who::Host,
                    format!(
                        "server {name} did not start ({why}); trying again in {}",
                        text::seconds(wait)
                    ),
                    json!({"server": name, "event": "retrying", "waitMs": wait.as_millis() as u64}),
                );
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = late.closing.cancelled() => return,
                }
                match super::connect(&spec, person.clone(), &trace, limits).await {
                    Ok(conn) if late.closing.is_cancelled() => return conn.close().await,
                    Ok(conn) => {
                        conn.handler().mark_tools_changed();
                        let _ = late.conn.set(conn);
                        trace.add(
                            Who::Host,
                            format!("server {name} started; its tools are read now"),
                            json!({"server": name, "event": "started"}),
                        );
                        return;
                    }
                    Err(e) => why = e.to_string(),
                }
            }
        }
    });
    (late, task)
}
