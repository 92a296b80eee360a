//! Requests in flight: every POST bounded by [`REQUEST_TIMEOUT`] and counted until its
//! answer is sent, so that a stop (SIGTERM, Ctrl-C) can let them finish before it closes.

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use axum::{
    body::{Body, HttpBody},
    extract::{Request, State},
    http::{Method, StatusCode},
    middleware::Next,
    response::Response,
};
use futures::{Stream, StreamExt};
use serde_json::json;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::{
    REQUEST_TIMEOUT, SHUTDOWN_CLOSE, SHUTDOWN_DRAIN, connections::Connections, log,
    refusal::Refusal, sessions::Sessions,
};

/// What a graceful stop needs of a running server.
pub(crate) struct Shutdown {
    pub(crate) tracker: Arc<Tracker>,
    pub(crate) sessions: Arc<Sessions>,
    pub(crate) stop_accepting: CancellationToken,
    pub(crate) accepting: tokio::task::JoinHandle<()>,
    pub(crate) signals: Signals,
    pub(crate) closing: CancellationToken,
    pub(crate) connections: Arc<Connections>,
}

/// After the first signal: stop accepting, let requests in flight finish within
/// [`SHUTDOWN_DRAIN`] (a second signal cuts them), then end sessions and connections.
pub(crate) async fn shut_down(stop: Shutdown) {
    let Shutdown {
        tracker,
        sessions,
        stop_accepting,
        accepting,
        mut signals,
        closing,
        connections,
    } = stop;
    let in_flight = tracker.count();
    eprintln!(
        "shutting down: no new connections; {in_flight} request(s) in flight get up to {} s to finish",
        SHUTDOWN_DRAIN.as_secs()
    );
    let open = sessions.count();
    if open > 0 {
        eprintln!("shutting down: {open} legacy session(s) end after that");
    }
    // The listener is closed once the loop has seen this; connections finish their
    // request in flight, then close.
    stop_accepting.cancel();
    let _ = accepting.await;
    let mut counter = tracker.in_flight.subscribe();
    tokio::select! {
        drained = tokio::time::timeout(SHUTDOWN_DRAIN, counter.wait_for(|n| *n == 0)) => {
            if drained.is_err() {
                eprintln!("shutting down: cutting {} request(s) still running", tracker.count());
            }
        }
        _ = signals.next() => {
            eprintln!("shutting down now: cutting {} request(s) still running", tracker.count());
        }
    }
    // Ends sessions, their notification streams and any answer stream still open.
    closing.cancel();
    if tokio::time::timeout(SHUTDOWN_CLOSE, connections.closed())
        .await
        .is_err()
    {
        eprintln!(
            "shutting down: closing {} connection(s) still open",
            connections.open()
        );
    }
}

/// SIGTERM and Ctrl-C (SIGINT), as one stream of "stop" events.
pub(crate) struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
}

impl Signals {
    pub(crate) fn new() -> anyhow::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Signals {
                term: signal(SignalKind::terminate())?,
                interrupt: signal(SignalKind::interrupt())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    pub(crate) async fn next(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.interrupt.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// How many POSTs are in flight (their answer streams included).
#[derive(Default)]
pub(crate) struct Tracker {
    in_flight: watch::Sender<usize>,
}

impl Tracker {
    fn count(&self) -> usize {
        *self.in_flight.borrow()
    }

    fn enter(self: &Arc<Self>) -> InFlight {
        self.in_flight.send_modify(|n| *n += 1);
        InFlight(self.clone())
    }
}

/// One request in flight, until dropped.
struct InFlight(Arc<Tracker>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// An answer body that holds its request's place in flight until it ends.
struct Held<S> {
    inner: Pin<Box<S>>,
    _in_flight: InFlight,
}

impl<S: Stream> Stream for Held<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

/// Count every POST as in flight until its answer has been sent, and bound it by
/// [`REQUEST_TIMEOUT`]. GETs (a legacy session's notification stream) are neither counted
/// nor bounded: they end with their session, or at shutdown.
pub(crate) async fn bound(
    State(tracker): State<Arc<Tracker>>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() == Method::DELETE {
        // Ending a legacy session has nothing to send back: 204, as the Python and
        // TypeScript SDKs answer (and their clients expect), rather than rmcp's 202.
        let mut response = next.run(request).await;
        if response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::NO_CONTENT;
            *response.body_mut() = axum::body::Body::empty();
        }
        return response;
    }
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let in_flight = tracker.enter();
    let deadline = tokio::time::Instant::now() + REQUEST_TIMEOUT;
    let Ok(response) = tokio::time::timeout_at(deadline, next.run(request)).await else {
        timed_out_log();
        return Refusal::TimedOut.into();
    };
    // An answer already whole (plain JSON) is sent as it is; a stream (SSE) holds the
    // request in flight until it ends, and ends at the deadline.
    if response.body().size_hint().exact().is_some() {
        return response;
    }
    let (parts, body) = response.into_parts();
    let deadline = Box::pin(async move {
        tokio::time::sleep_until(deadline).await;
        timed_out_log();
    });
    let stream = body.into_data_stream().take_until(deadline);
    let held = Held {
        inner: Box::pin(stream),
        _in_flight: in_flight,
    };
    Response::from_parts(parts, Body::from_stream(held))
}

fn timed_out_log() {
    log::line(json!({
        "ts": log::timestamp(), "event": "http_request_timeout",
        "after_s": REQUEST_TIMEOUT.as_secs(),
    }));
}
