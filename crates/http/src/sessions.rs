//! Legacy (handshake) sessions: who opened each, how many a caller and the whole server
//! may hold, and when they end.
//!
//! A session costs memory for as long as it lives (rmcp runs a service for it), so a
//! caller may hold at most `--max-sessions-per-caller` ([`MAX_SESSIONS_PER_CALLER`]) and
//! the server `--max-sessions` ([`MAX_SESSIONS`]). Past them a new `initialize` is refused
//! (429 for the caller's bound, 503 for the server's); no live session is ever pushed out
//! to make room, so nobody can end another caller's session. A session unused for
//! `--session-idle` ([`SESSION_IDLE`]) is ended by rmcp's own session worker, which closes
//! it in the session manager, and its place is given back here at that moment.
//!
//! A session's memory is freed when it ends, but glibc's allocator keeps freed memory in
//! its arenas: 2,000 expired sessions left a server at 187 MB of a 192 MB peak. So after
//! sessions end the server hands free memory back with `malloc_trim`, once per
//! [`MEMORY_TRIM_DELAY`] however many ended.
//!
//! The HTTP layer admits an `initialize` before rmcp sees it and hands the admission to
//! [`BoundedSessions::create_session`] through a task-local value, since rmcp creates the
//! session inside the same request's task and tells the manager nothing about the
//! request. A session created without an admission is refused (rmcp answers 500), so a
//! request the HTTP layer did not take for an `initialize` can never open one unbounded.

use std::{
    cell::RefCell,
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::sync::Notify;

use futures::Stream;
use rmcp::{
    model::{ClientJsonRpcMessage, ServerJsonRpcMessage},
    transport::streamable_http_server::session::{
        RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
        local::{LocalSessionManager, LocalSessionManagerError},
    },
};

use super::{
    answers::Routed,
    refusal::Refusal,
    shared::{Shared, TOUCH_EVERY, Vetted, bounded, note, now, unavailable},
};
use crate::Caller;

/// Most legacy sessions one caller (user and organization) may hold at once.
pub const MAX_SESSIONS_PER_CALLER: usize = 16;
/// Most legacy sessions the server holds at once.
pub const MAX_SESSIONS: usize = 1_000;
/// Largest `--max-sessions` and `--max-sessions-per-caller`.
pub const MAX_SESSIONS_LIMIT: usize = 100_000;
/// A legacy session unused this long is ended; longer than [`super::REQUEST_TIMEOUT`], so
/// that a call in flight, even a silent one, never loses its session.
pub const SESSION_IDLE: Duration = Duration::from_secs(30 * 60);
/// Largest `--session-idle`, in seconds.
pub const MAX_SESSION_IDLE_SECS: u64 = 86_400;
/// After sessions end, how long the server waits before it hands the memory they freed
/// back to the system, so that a wave of expiries costs one trim.
pub const MEMORY_TRIM_DELAY: Duration = Duration::from_secs(1);

/// The bounds on sessions.
#[derive(Debug, Clone, Copy)]
pub struct SessionLimits {
    /// Most legacy sessions open at once.
    pub total: usize,
    /// Most legacy sessions one caller may hold.
    pub per_caller: usize,
    /// How long a session may go unused before it is closed.
    pub idle: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            total: MAX_SESSIONS,
            per_caller: MAX_SESSIONS_PER_CALLER,
            idle: SESSION_IDLE,
        }
    }
}

/// Why a new session is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// The caller holds its most sessions.
    CallerFull(usize),
    /// The server holds its most sessions.
    ServerFull(usize),
}

/// A caller as the per-caller bound counts it.
type CallerKey = (String, String);

fn key_of(caller: &Caller) -> CallerKey {
    (caller.user.clone(), caller.tenant.clone())
}

#[derive(Default)]
struct Held {
    /// Each live session's owner.
    owners: HashMap<String, Caller>,
    /// Sessions held or being opened, by caller (only when the per-caller bound applies).
    per_caller: HashMap<CallerKey, usize>,
    /// Sessions held or being opened.
    total: usize,
}

impl Held {
    fn release(&mut self, key: Option<&CallerKey>) {
        self.total = self.total.saturating_sub(1);
        if let Some(key) = key
            && let Some(n) = self.per_caller.get_mut(key)
        {
            *n -= 1;
            if *n == 0 {
                self.per_caller.remove(key);
            }
        }
    }
}

/// Every live session and the bounds on them.
pub(super) struct Sessions {
    limits: SessionLimits,
    /// Whether each caller is bounded on its own (not with `--no-auth`, where every request
    /// is the same caller).
    per_caller: bool,
    held: Mutex<Held>,
    /// Told when a session ends, for [`Sessions::give_memory_back`].
    ended: Notify,
}

impl Sessions {
    pub(super) fn new(limits: SessionLimits, per_caller: bool) -> Arc<Self> {
        Arc::new(Sessions {
            limits,
            per_caller,
            held: Mutex::new(Held::default()),
            ended: Notify::new(),
        })
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hold a place for a session `caller` is opening, or say why there is none.
    pub(super) fn reserve(self: &Arc<Self>, caller: &Caller) -> Result<Admission, Refused> {
        let mut held = self.held();
        let key = self.per_caller.then(|| key_of(caller));
        if let Some(key) = &key
            && held.per_caller.get(key).copied().unwrap_or(0) >= self.limits.per_caller
        {
            return Err(Refused::CallerFull(self.limits.per_caller));
        }
        if held.total >= self.limits.total {
            return Err(Refused::ServerFull(self.limits.total));
        }
        held.total += 1;
        if let Some(key) = &key {
            *held.per_caller.entry(key.clone()).or_default() += 1;
        }
        Ok(Admission {
            sessions: self.clone(),
            caller: caller.clone(),
            key,
            used: false,
        })
    }

    /// Whether `caller` may use the session `id`: only the caller that opened it, while it
    /// lives.
    pub(super) fn may_use(&self, id: &str, caller: &Caller) -> bool {
        self.held()
            .owners
            .get(id)
            .is_some_and(|owner| owner.user == caller.user && owner.tenant == caller.tenant)
    }

    /// The session `id` ended (closed by its client, idle, or at shutdown): its place is free.
    fn ended(&self, id: &str) {
        let mut held = self.held();
        if let Some(owner) = held.owners.remove(id) {
            let key = self.per_caller.then(|| key_of(&owner));
            held.release(key.as_ref());
            self.ended.notify_one();
        }
    }

    /// For as long as the server runs: after sessions end, give the memory they freed back
    /// to the system (at most once per [`MEMORY_TRIM_DELAY`]).
    pub(super) async fn give_memory_back(self: Arc<Self>) {
        loop {
            self.ended.notified().await;
            tokio::time::sleep(MEMORY_TRIM_DELAY).await;
            let _ = tokio::task::spawn_blocking(trim_free_memory).await;
        }
    }

    /// How many sessions are live or being opened.
    pub(super) fn count(&self) -> usize {
        self.held().total
    }
}

/// Return the allocator's free memory to the system (glibc only; others do it themselves
/// or have no such call).
fn trim_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers; it only releases free memory of the heap.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// A place held for one session being opened; given back if no session comes of it.
pub(super) struct Admission {
    sessions: Arc<Sessions>,
    caller: Caller,
    key: Option<CallerKey>,
    used: bool,
}

impl Admission {
    /// The session `id` was created with this place.
    fn bind(mut self, id: &str) {
        self.used = true;
        let mut held = self.sessions.held();
        held.owners.insert(id.to_owned(), self.caller.clone());
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        if !self.used {
            self.sessions.held().release(self.key.as_ref());
        }
    }
}

tokio::task_local! {
    /// The admission of the `initialize` this task is serving, if it was admitted.
    static ADMITTED: RefCell<Option<Admission>>;
}

/// Run `serving` with `admission` where [`BoundedSessions::create_session`] finds it.
pub(super) async fn with_admission<F: Future>(
    admission: Option<Admission>,
    serving: F,
) -> F::Output {
    ADMITTED.scope(RefCell::new(admission), serving).await
}

/// Why the session manager refused.
#[derive(Debug)]
pub enum BoundedSessionError {
    /// rmcp wanted a session for a request the HTTP layer did not admit as an `initialize`.
    NotAdmitted,
    /// rmcp's own session manager failed.
    Local(LocalSessionManagerError),
}

impl std::fmt::Display for BoundedSessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BoundedSessionError::NotAdmitted => {
                f.write_str("a session for a request that was not admitted as an initialize")
            }
            BoundedSessionError::Local(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for BoundedSessionError {}

impl From<LocalSessionManagerError> for BoundedSessionError {
    fn from(e: LocalSessionManagerError) -> Self {
        BoundedSessionError::Local(e)
    }
}

/// rmcp's `LocalSessionManager`, with every session created (or restored from the shared
/// store) against an admission and its end reported to [`Sessions`].
pub struct BoundedSessions {
    inner: LocalSessionManager,
    sessions: Arc<Sessions>,
    /// The store replicas share sessions through, if any (`shared.rs`).
    shared: Option<Arc<Shared>>,
}

impl BoundedSessions {
    pub(super) fn new(sessions: Arc<Sessions>, shared: Option<Arc<Shared>>) -> Self {
        let mut inner = LocalSessionManager::default();
        // rmcp's worker ends a session after this long without a message either way,
        // and then closes it here (close_session), which gives its place back.
        inner.session_config.keep_alive = Some(sessions.limits.idle);
        BoundedSessions {
            inner,
            sessions,
            shared,
        }
    }

    /// Whether `caller` may use the session `id` held here.
    pub(super) fn may_use(&self, id: &str, caller: &Caller) -> bool {
        self.sessions.may_use(id, caller)
    }

    /// The admission this request's task was given, if any.
    fn admitted() -> Result<Admission, BoundedSessionError> {
        ADMITTED
            .try_with(|a| a.borrow_mut().take())
            .ok()
            .flatten()
            .ok_or(BoundedSessionError::NotAdmitted)
    }

    /// `transport` of session `id`, bound to `admission`'s caller.
    fn routed(&self, id: &str, admission: Admission, transport: LocalTransport) -> Routed {
        let owner = match &self.shared {
            Some(shared) => shared.book.owner(&admission.caller),
            None => String::new(),
        };
        admission.bind(id);
        Routed::new(transport, id, owner, self.shared.clone())
    }
}

type LocalTransport = <LocalSessionManager as SessionManager>::Transport;

impl SessionManager for BoundedSessions {
    type Error = BoundedSessionError;
    type Transport = Routed;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let admission = Self::admitted()?;
        let (id, transport) = self.inner.create_session().await?;
        let transport = self.routed(&id, admission, transport);
        Ok((id, transport))
    }

    /// A session of the shared store that this replica does not hold, made here under
    /// the id it has, within the bounds of a new one: the HTTP layer admitted it for the
    /// row's own caller (without an admission nothing is restored).
    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        if self.shared.is_none() {
            return Ok(RestoreOutcome::NotSupported);
        }
        let admission = Self::admitted()?;
        match self.inner.restore_session(id.clone()).await? {
            RestoreOutcome::Restored(transport) => {
                super::shared::note("http_session_restored", "its row is in the shared store");
                Ok(RestoreOutcome::Restored(
                    self.routed(&id, admission, transport),
                ))
            }
            RestoreOutcome::AlreadyPresent => Ok(RestoreOutcome::AlreadyPresent),
            _ => Ok(RestoreOutcome::NotSupported),
        }
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let closed = self.inner.close_session(id).await;
        self.sessions.ended(id);
        Ok(closed?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}

impl BoundedSessions {
    /// The row of session `id` in the shared store if it is `caller`'s: otherwise (none, expired, another
    /// caller's) 404 as for an unknown session, and a copy still held here is ended; a
    /// store that does not answer is 503. Its expiry is moved on by this use.
    pub(super) async fn vet(
        &self,
        shared: &Shared,
        id: &str,
        caller: &Caller,
    ) -> Result<Vetted, axum::response::Response> {
        let sessions = self;
        let now = now();
        let here = sessions.has(id).await;
        let row = match bounded(shared.book.find(id, now)).await {
            Ok(row) => row,
            Err(e) => return Err(unavailable(&e)),
        };
        let owner = shared.book.owner(caller);
        let Some(row) = row.filter(|r| r.owner == owner) else {
            if here && !sessions.may_use(id, caller) {
                // Another caller's session held here: theirs goes on.
                return Err(Refusal::NoSuchSession.into());
            }
            if here {
                // Ended on another replica (DELETE), or expired: end the copy here too.
                sessions.end(id).await;
            }
            return Err(Refusal::NoSuchSession.into());
        };
        if here && !sessions.may_use(id, caller) {
            return Err(Refusal::NoSuchSession.into());
        }
        let fresh = now + shared.idle.as_secs() as i64;
        if row.expires_at < fresh - TOUCH_EVERY.as_secs() as i64
            && let Err(e) = bounded(shared.book.touch(id, &row.owner, fresh)).await
        {
            note("http_session_touch_failed", &e);
        }
        Ok(Vetted { row, here })
    }

    /// Does this replica hold session `id`?
    pub(super) async fn has(&self, id: &str) -> bool {
        self.has_session(&id.to_owned().into())
            .await
            .unwrap_or(false)
    }

    /// End this replica's copy of session `id` (its row is gone).
    pub(super) async fn end(&self, id: &str) {
        let _ = self.close_session(&id.to_owned().into()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(total: usize, per_caller: usize) -> SessionLimits {
        SessionLimits {
            total,
            per_caller,
            idle: SESSION_IDLE,
        }
    }

    #[test]
    fn a_session_belongs_to_the_caller_that_opened_it() {
        let sessions = Sessions::new(limits(10, 10), true);
        let sam = Caller::new("usr-sam", "larkfield", "http");
        let omar = Caller::new("usr-omar", "larkfield", "http");
        sessions.reserve(&sam).unwrap().bind("s1");
        assert!(sessions.may_use("s1", &sam));
        assert!(!sessions.may_use("s1", &omar));
        assert!(!sessions.may_use("s1", &Caller::new("usr-sam", "bramble", "http")));
        assert!(!sessions.may_use("s2", &sam));
        sessions.ended("s1");
        assert!(!sessions.may_use("s1", &sam));
        assert_eq!(sessions.count(), 0);
    }

    #[test]
    fn each_caller_and_the_server_are_bounded_and_no_live_session_is_pushed_out() {
        let sessions = Sessions::new(limits(3, 2), true);
        let sam = Caller::new("usr-sam", "larkfield", "http");
        let omar = Caller::new("usr-omar", "larkfield", "http");
        let jun = Caller::new("usr-jun", "larkfield", "http");
        sessions.reserve(&sam).unwrap().bind("s1");
        let pending = sessions.reserve(&sam).unwrap();
        // Sam holds two (one still being opened): his third is refused.
        assert_eq!(sessions.reserve(&sam).err(), Some(Refused::CallerFull(2)));
        sessions.reserve(&omar).unwrap().bind("o1");
        // The server is full: Jun is refused, and nobody's session went.
        assert_eq!(sessions.reserve(&jun).err(), Some(Refused::ServerFull(3)));
        assert!(sessions.may_use("s1", &sam) && sessions.may_use("o1", &omar));
        // An admission that opened nothing gives its place back.
        drop(pending);
        sessions.reserve(&jun).unwrap().bind("j1");
        // A session that ends gives its place back.
        sessions.ended("s1");
        assert_eq!(sessions.count(), 2);
        sessions.reserve(&sam).unwrap().bind("s2");
        assert_eq!(sessions.count(), 3);
        // Ending an unknown or already ended session changes nothing.
        sessions.ended("s1");
        sessions.ended("nope");
        assert_eq!(sessions.count(), 3);
    }

    #[test]
    fn without_authentication_only_the_server_is_bounded() {
        let sessions = Sessions::new(limits(3, 1), false);
        let local = Caller::new("usr-sam", "larkfield", "local");
        for id in ["a", "b", "c"] {
            sessions.reserve(&local).unwrap().bind(id);
        }
        assert_eq!(sessions.reserve(&local).err(), Some(Refused::ServerFull(3)));
    }
}
