//! The HTTP servers' own accept loop: how many connections stay open, and for how long a
//! connection may keep the server waiting.
//!
//! Each connection is served by hyper's HTTP/1.1 with the axum `Router` as its service, and
//! watched by its task. A connection is in one of three phases: *idle* (waiting for a
//! request: a new connection, or keep-alive after an answer), *reading a head* (some bytes
//! of a request have come, its headers are not complete) or *busy* (a request is being
//! served, its streamed answer included). An idle connection is closed after
//! [`IDLE_TIMEOUT`], one reading a head [`HEADER_TIMEOUT`] after its first byte, and a busy
//! one only when its client stops reading the answer for [`IDLE_TIMEOUT`]; a long call is
//! never cut here (its bound is `REQUEST_TIMEOUT`, in `http`). The body's own time limit is
//! the HTTP layer's, which reads it ([`BODY_TIMEOUT`]).
//!
//! At most `--max-connections` are open at once (default [`DEFAULT_MAX_CONNECTIONS`], and
//! never more than the open-file limit leaves room for, [`FD_HEADROOM`] kept aside). At the
//! bound, a newcomer is still served: the connection that has kept the server waiting the
//! longest (idle, reading a head, or not reading its answer) is closed to make room. Only
//! when every connection is busy serving a request is the newcomer turned away with 503.
//! An accept error (for instance EMFILE, out of descriptors) closes the longest-waiting
//! connection too, and is retried after [`ACCEPT_ERROR_BACKOFF`]: it never ends the loop,
//! and never spins it.

use std::{
    collections::HashMap,
    convert::Infallible,
    io,
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use axum::{
    Router,
    body::{Body, Bytes},
};
use http_body::{Frame, SizeHint};
use hyper::{body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::{TcpListener, TcpStream},
    sync::{Notify, watch},
    time::Instant,
};
use tokio_util::sync::CancellationToken;
use tower_service::Service;

use crate::log::ThrottledLog;

/// How long a request's headers may take to arrive, from their first byte.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest `--header-timeout`, in seconds.
pub const MAX_HEADER_TIMEOUT_SECS: u64 = 300;
/// How long a request's body may take to arrive, from the end of its headers.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest `--body-timeout`, in seconds.
pub const MAX_BODY_TIMEOUT_SECS: u64 = 600;
/// How long a connection may wait for a request (new, or kept alive after an answer), and
/// how long a client may leave its answer unread, before the connection is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest `--idle-timeout`, in seconds.
pub const MAX_IDLE_TIMEOUT_SECS: u64 = 3600;
/// Most connections open at once, unless the open-file limit allows fewer.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Largest `--max-connections` (the open-file limit may allow fewer).
pub const MAX_CONNECTIONS_LIMIT: usize = 65_536;
/// File descriptors kept aside from connections: stdio, the listener, the runtime's own,
/// the tickets store and its WAL files, the key and tokens files, and one accepted socket
/// before a connection is closed to make room for it.
pub const FD_HEADROOM: usize = 32;
/// How long the accept loop waits after an accept error before it tries again.
pub const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(50);

/// The log event of a connection closed or turned away.
const CLOSED: &str = "http_connection_closed";
/// What the server answers a connection it has no room for.
const TURNED_AWAY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n\
Content-Length: 56\r\nRetry-After: 1\r\nConnection: close\r\n\r\n\
Service Unavailable: every connection is serving a call\n";

/// The time limits of a connection.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// How long a started request head may take to arrive.
    pub header: Duration,
    /// How long a connection may wait for its next request.
    pub idle: Duration,
}

/// The open-file limit (RLIMIT_NOFILE) this process may use, its soft limit.
pub fn open_file_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes one rlimit into the struct it is given.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
            return None;
        }
        if limit.rlim_cur == libc::RLIM_INFINITY {
            return Some(u64::MAX);
        }
        #[allow(
            clippy::unnecessary_cast,
            reason = "rlim_t is u64 on Linux, not everywhere"
        )]
        Some(limit.rlim_cur as u64)
    }
    #[cfg(not(unix))]
    None
}

/// The connection bound: `requested` (`--max-connections`) if the open-file limit leaves
/// room for it, else the reason in words; without a request, [`DEFAULT_MAX_CONNECTIONS`]
/// or what the limit leaves room for, if that is less.
pub fn max_connections(requested: Option<usize>, open_files: Option<u64>) -> anyhow::Result<usize> {
    let room = open_files.map(|n| {
        usize::try_from(n)
            .unwrap_or(usize::MAX)
            .saturating_sub(FD_HEADROOM)
    });
    let allowed = room
        .unwrap_or(MAX_CONNECTIONS_LIMIT)
        .min(MAX_CONNECTIONS_LIMIT);
    let limit_words = |n: u64| {
        format!(
            "the open-file limit (ulimit -n) is {n}, and {FD_HEADROOM} descriptors are kept for the listener, the store and stdio"
        )
    };
    if allowed == 0 {
        anyhow::bail!(
            "cannot serve HTTP: {}; raise it with ulimit -n",
            limit_words(open_files.unwrap_or_default())
        );
    }
    match requested {
        None => Ok(DEFAULT_MAX_CONNECTIONS.min(allowed)),
        Some(n) if (1..=allowed).contains(&n) => Ok(n),
        Some(n) => match open_files {
            Some(files) if room.is_some_and(|r| r < MAX_CONNECTIONS_LIMIT) => anyhow::bail!(
                "--max-connections must be between 1 and {allowed} ({}), not {n}",
                limit_words(files)
            ),
            _ => anyhow::bail!("--max-connections must be between 1 and {allowed}, not {n}"),
        },
    }
}

/// What a connection is doing.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Waiting for a request since then.
    Idle(Instant),
    /// Some bytes of a request's head came, the first then; the head is not complete.
    Head(Instant),
    /// Serving this many requests (HTTP/1.1 serves one at a time; its answer included).
    Busy(usize),
}

#[derive(Debug, Clone, Copy)]
struct State {
    phase: Phase,
    /// Since when a write to the client has made no progress, if one is waiting.
    stalled_since: Option<Instant>,
}

/// One open connection, as its task and the table see it.
struct Conn {
    id: u64,
    state: Mutex<State>,
    changed: Notify,
    evict: CancellationToken,
}

impl Conn {
    fn update(&self, change: impl FnOnce(&mut State) -> bool) {
        let changed = change(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()));
        if changed {
            self.changed.notify_one();
        }
    }

    fn state(&self) -> State {
        *self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes came from the client: an idle connection starts reading a head.
    fn read_some(&self) {
        self.update(|s| match s.phase {
            Phase::Idle(_) => {
                s.phase = Phase::Head(Instant::now());
                true
            }
            _ => false,
        });
    }

    /// A write is waiting for the client to read.
    fn write_waits(&self) {
        self.update(|s| {
            let first = s.stalled_since.is_none();
            if first {
                s.stalled_since = Some(Instant::now());
            }
            first
        });
    }

    /// A write made progress.
    fn wrote(&self) {
        self.update(|s| s.stalled_since.take().is_some());
    }

    /// A request is being served until the guard is dropped.
    fn busy(self: &Arc<Self>) -> BusyGuard {
        self.update(|s| {
            s.phase = match s.phase {
                Phase::Busy(n) => Phase::Busy(n + 1),
                _ => Phase::Busy(1),
            };
            true
        });
        BusyGuard(self.clone())
    }

    /// When the connection is due to be closed for making the server wait, and why; none
    /// while it is serving a request whose client keeps up.
    fn due(&self, timeouts: &Timeouts) -> Option<(Instant, &'static str)> {
        let s = self.state();
        match s.phase {
            Phase::Idle(since) => Some((since + timeouts.idle, "idle")),
            Phase::Head(since) => Some((since + timeouts.header, "header_timeout")),
            Phase::Busy(_) => s
                .stalled_since
                .map(|since| (since + timeouts.idle, "answer_unread")),
        }
    }

    /// Since when it has kept the server waiting, if it does: the order in which
    /// connections are closed to make room.
    fn waiting_since(&self) -> Option<Instant> {
        let s = self.state();
        match s.phase {
            Phase::Idle(since) | Phase::Head(since) => Some(since),
            Phase::Busy(_) => s.stalled_since,
        }
    }
}

/// A request in service; dropped when its answer is done (or abandoned).
struct BusyGuard(Arc<Conn>);

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.update(|s| {
            s.phase = match s.phase {
                Phase::Busy(n) if n > 1 => Phase::Busy(n - 1),
                _ => Phase::Idle(Instant::now()),
            };
            true
        });
    }
}

/// Every open connection, and the bound on how many.
pub(super) struct Connections {
    max: usize,
    timeouts: Timeouts,
    table: Mutex<HashMap<u64, Arc<Conn>>>,
    open: watch::Sender<usize>,
    next_id: AtomicU64,
    log: ThrottledLog,
}

impl Connections {
    pub(super) fn new(max: usize, timeouts: Timeouts) -> Self {
        Connections {
            max,
            timeouts,
            table: Mutex::new(HashMap::new()),
            open: watch::Sender::new(0),
            next_id: AtomicU64::new(0),
            log: ThrottledLog::default(),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Conn>>> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Close the connection that has kept the server waiting the longest, if one has.
    fn evict_longest_waiting(&self, table: &mut HashMap<u64, Arc<Conn>>) -> bool {
        let victim = table
            .values()
            .filter_map(|c| c.waiting_since().map(|since| (since, c.id)))
            .min()
            .map(|(_, id)| id);
        let Some(conn) = victim.and_then(|id| table.remove(&id)) else {
            return false;
        };
        conn.evict.cancel();
        self.open.send_replace(table.len());
        self.log.note(CLOSED, "evicted", json!({}));
        true
    }

    /// Make room for a new connection and register it, or `None` when every open
    /// connection is busy serving a request.
    fn admit(&self) -> Option<Arc<Conn>> {
        let mut table = self.table();
        if table.len() >= self.max && !self.evict_longest_waiting(&mut table) {
            return None;
        }
        let conn = Arc::new(Conn {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            state: Mutex::new(State {
                phase: Phase::Idle(Instant::now()),
                stalled_since: None,
            }),
            changed: Notify::new(),
            evict: CancellationToken::new(),
        });
        table.insert(conn.id, conn.clone());
        self.open.send_replace(table.len());
        Some(conn)
    }

    fn remove(&self, id: u64) {
        let mut table = self.table();
        if table.remove(&id).is_some() {
            self.open.send_replace(table.len());
        }
    }

    /// How many connections are open.
    pub(super) fn open(&self) -> usize {
        *self.open.borrow()
    }

    /// Wait until no connection is open.
    pub(super) async fn closed(&self) {
        let mut open = self.open.subscribe();
        let _ = open.wait_for(|n| *n == 0).await;
    }
}

/// Accept connections until `stop`, serving each with `app`; then stop listening (new
/// connections are refused) and ask every connection to finish its request and close.
pub(super) async fn accept(
    listener: TcpListener,
    app: Router,
    connections: Arc<Connections>,
    stop: CancellationToken,
) {
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                match connections.admit() {
                    Some(conn) => {
                        let task =
                            serve(stream, conn, app.clone(), connections.clone(), stop.clone());
                        tokio::spawn(task);
                    }
                    None => {
                        // Best effort, never waiting: the socket is fresh, its send buffer
                        // empty.
                        let _ = stream.try_write(TURNED_AWAY);
                        connections.log.note(CLOSED, "turned_away", json!({}));
                    }
                }
            }
            Err(e) => {
                // Out of descriptors (EMFILE, ENFILE) or memory for one: close the
                // longest-waiting connection to get one back. Any error: wait a moment,
                // since the listener stays ready and would spin the loop.
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
                ) {
                    let mut table = connections.table();
                    connections.evict_longest_waiting(&mut table);
                }
                connections.log.note(
                    "http_accept_error",
                    "accept",
                    json!({"error": e.to_string()}),
                );
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = tokio::time::sleep(ACCEPT_ERROR_BACKOFF) => {}
                }
            }
        }
    }
    drop(listener);
}

/// Serve one connection until it ends, is closed to make room, or keeps the server
/// waiting too long; on `stop`, let its request in flight finish, then close it.
async fn serve(
    stream: TcpStream,
    conn: Arc<Conn>,
    app: Router,
    connections: Arc<Connections>,
    stop: CancellationToken,
) {
    let timeouts = connections.timeouts;
    let io = TokioIo::new(Watched {
        stream,
        conn: conn.clone(),
    });
    let in_service = conn.clone();
    let service = service_fn(move |request: hyper::Request<Incoming>| {
        let busy = in_service.busy();
        let mut app = app.clone();
        async move {
            let response = match app.call(request.map(Body::new)).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            Ok::<_, Infallible>(response.map(|body| Guarded {
                body,
                busy: Some(busy),
            }))
        }
    });
    let served = http1::Builder::new().serve_connection(io, service);
    tokio::pin!(served);
    let mut draining = false;
    let closed_for = loop {
        let due = conn.due(&timeouts);
        tokio::select! {
            _ = served.as_mut() => break None,
            _ = conn.evict.cancelled() => break None,
            _ = stop.cancelled(), if !draining => {
                served.as_mut().graceful_shutdown();
                draining = true;
            }
            _ = conn.changed.notified() => {}
            _ = sleep_until(due.map(|(at, _)| at)) => {
                if let Some((at, why)) = conn.due(&timeouts)
                    && at <= Instant::now()
                {
                    break Some(why);
                }
            }
        }
    };
    connections.remove(conn.id);
    if let Some(why) = closed_for {
        connections.log.note(CLOSED, why, json!({}));
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A connection's socket, telling its [`Conn`] when bytes come and when writes wait.
struct Watched {
    stream: TcpStream,
    conn: Arc<Conn>,
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let read = Pin::new(&mut this.stream).poll_read(cx, buf);
        if matches!(read, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.conn.read_some();
        }
        read
    }
}

impl Watched {
    fn watch_write(&self, written: Poll<io::Result<usize>>) -> Poll<io::Result<usize>> {
        match &written {
            Poll::Pending => self.conn.write_waits(),
            Poll::Ready(Ok(n)) if *n > 0 => self.conn.wrote(),
            Poll::Ready(_) => {}
        }
        written
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.watch_write(written)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        this.watch_write(written)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// An answer's body that keeps its connection busy until it ends or is dropped.
struct Guarded {
    body: Body,
    busy: Option<BusyGuard>,
}

impl http_body::Body for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        let frame = Pin::new(&mut this.body).poll_frame(cx);
        if matches!(frame, Poll::Ready(None)) {
            this.busy = None;
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests;
