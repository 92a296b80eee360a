//! Legacy sessions shared by the replicas of one server behind a balancer: each session
//! is a row of a store every replica reads ([`SharedSessions`], handed in by whoever
//! serves: the gateway's is its `--state`), so a request of the session may land on any
//! replica.
//!
//! - **Who**: the row names the caller who opened the session. Every request with a
//!   session id is checked against the row first, on every replica: a missing, expired or
//!   another caller's row is 404, exactly as an unknown session, and a replica that still
//!   holds a session whose row is gone (ended elsewhere) ends it too.
//! - **Restore**: a replica that does not hold the session restores it through rmcp's
//!   hooks (`session_store` and `SessionManager::restore_session`, which replay the
//!   `initialize` the row keeps), within the same bounds per caller and in all as a new
//!   session. rmcp can restore only a row this layer checked for this request's caller
//!   ([`RowStore::load`] reads nothing else).
//! - **How long**: a row expires `--session-idle` after its last use (moved at most once
//!   per [`TOUCH_EVERY`]); DELETE removes it on any replica; expired rows are dropped as
//!   new ones are written.
//! - **Answers**: a client's answer to a server's request (elicitation, sampling, roots)
//!   may land on another replica than the one waiting for it; `answers.rs` carries it
//!   there through the same store.
//!
//! Nothing secret is kept: the caller's name, the `initialize` parameters, the answers.

use std::{
    cell::RefCell,
    collections::HashSet,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::response::Response;
use futures::future::BoxFuture;
use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};
use serde_json::json;

use crate::{Caller, log, refusal::Refusal};

/// How often a session row's expiry is moved forward by its use, at most: a session may
/// so end up to this much before `--session-idle` after its last request.
pub const TOUCH_EVERY: Duration = Duration::from_secs(60);
/// How long this layer waits on the shared store for one operation before it gives up
/// (the request is then refused with 503): the store's own bound, with room.
pub const SHARED_STORE_WAIT: Duration = Duration::from_secs(10);
/// Most session rows one caller may have in the store, across every replica: past it a
/// new `initialize` is refused (429). Each replica bounds its own live sessions too.
pub const MAX_SHARED_SESSIONS_PER_CALLER: usize = 256;
/// The largest `initialize` parameters kept for a session (a bigger one opens no session).
pub const MAX_SESSION_INIT_BYTES: usize = 64 * 1024;

/// A legacy session as the shared store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedSession {
    /// rmcp's session id: a random UUID (122 random bits), the `Mcp-Session-Id`.
    pub id: String,
    /// Who opened it, as [`SharedSessions::owner`] names a caller.
    pub owner: String,
    /// The client's `initialize` parameters, as JSON.
    pub init: String,
    /// When it expires unless used again, in seconds since the Unix epoch.
    pub expires_at: i64,
}

/// Which answer: to the request `request` (its id as JSON) in `owner`'s `session`.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerKey {
    /// The session it was sent in.
    pub session: String,
    /// The id of the request it answers, as JSON.
    pub request: String,
    /// The session's owner (who sent it).
    pub owner: String,
}

/// A client's answer to a server's request, kept for the replica waiting for it.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedAnswer {
    /// Which answer it is.
    pub key: AnswerKey,
    /// The JSON-RPC response, as the client sent it.
    pub body: String,
    /// When it is dropped if nobody took it, in seconds since the Unix epoch.
    pub expires_at: i64,
}

/// Where the replicas keep their sessions and the answers in transit. Every operation is
/// bounded in time by the implementation (and by [`SHARED_STORE_WAIT`] here).
pub trait SharedSessions: Send + Sync + 'static {
    /// The name a session row keeps for `caller`: two callers never share one.
    fn owner(&self, caller: &Caller) -> String;
    /// Keep a new session, unless its owner has `max_per_owner` already (`Ok(false)`);
    /// expired rows are dropped first.
    fn open(
        &self,
        session: SharedSession,
        max_per_owner: usize,
    ) -> BoxFuture<'_, Result<bool, String>>;
    /// The session `id`, unless it expired by `now`.
    fn find<'a>(
        &'a self,
        id: &'a str,
        now: i64,
    ) -> BoxFuture<'a, Result<Option<SharedSession>, String>>;
    /// Move the expiry of `owner`'s session `id` to `expires_at`.
    fn touch<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<(), String>>;
    /// End `owner`'s session `id`, with anything kept for it.
    fn end<'a>(&'a self, id: &'a str, owner: &'a str) -> BoxFuture<'a, Result<(), String>>;
    /// Keep an answer, unless its session has `max_per_session` waiting (`Ok(false)`) or
    /// one for the same request is kept already (the first stands); expired ones are
    /// dropped first.
    fn put_answer(
        &self,
        answer: SharedAnswer,
        max_per_session: usize,
    ) -> BoxFuture<'_, Result<bool, String>>;
    /// Take (read and remove) the answer `key` names, if one is kept and unexpired by
    /// `now`.
    fn take_answer<'a>(&'a self, key: &'a AnswerKey, now: i64) -> Answered<'a>;
}

/// What taking an answer gives: its body, if one was kept.
pub type Answered<'a> = BoxFuture<'a, Result<Option<String>, String>>;

/// Seconds since the Unix epoch, now.
pub(super) fn now() -> i64 {
    (crate::log::now_ms() / 1000) as i64
}

/// A store operation within [`SHARED_STORE_WAIT`].
pub(super) async fn bounded<T>(op: impl Future<Output = Result<T, String>>) -> Result<T, String> {
    tokio::time::timeout(SHARED_STORE_WAIT, op)
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "the session store did not answer within {} s",
                SHARED_STORE_WAIT.as_secs()
            ))
        })
}

/// The shared store as this server uses it, and the server requests waiting here.
pub struct Shared {
    pub(super) book: Arc<dyn SharedSessions>,
    /// `--session-idle`: how long a row lives after its last use.
    pub(super) idle: Duration,
    /// Server requests sent from this replica and not answered yet: (session, id as JSON).
    awaiting: Mutex<HashSet<(String, String)>>,
}

/// How a request's session stands once checked against the store.
pub(super) struct Vetted {
    /// Its row.
    pub row: SharedSession,
    /// Whether this replica holds it already (else rmcp restores it).
    pub here: bool,
}

impl Shared {
    /// Sessions kept in `book`, each living `idle` after its last use.
    pub fn new(book: Arc<dyn SharedSessions>, idle: Duration) -> Arc<Shared> {
        Arc::new(Shared {
            book,
            idle,
            awaiting: Mutex::default(),
        })
    }

    fn awaiting(&self) -> std::sync::MutexGuard<'_, HashSet<(String, String)>> {
        self.awaiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A server request sent in `session` from here now waits for its answer.
    pub(super) fn asked(&self, session: &str, request: &str) {
        self.awaiting()
            .insert((session.to_owned(), request.to_owned()));
    }

    /// It was answered, or given up.
    pub(super) fn settled(&self, session: &str, request: &str) {
        self.awaiting()
            .remove(&(session.to_owned(), request.to_owned()));
    }

    /// Is a server request of `session` with this id (as JSON) waiting here?
    pub(super) fn awaits(&self, session: &str, request: &str) -> bool {
        self.awaiting()
            .contains(&(session.to_owned(), request.to_owned()))
    }

    /// Keep the session `id` that `caller` just opened here with `state`: `Ok(false)`
    /// when the caller has [`MAX_SHARED_SESSIONS_PER_CALLER`] rows already.
    async fn open(&self, id: &str, caller: &Caller, state: &SessionState) -> Result<bool, String> {
        let init = serde_json::to_string(&state.initialize_params).map_err(|e| e.to_string())?;
        if init.len() > MAX_SESSION_INIT_BYTES {
            return Err(format!(
                "the initialize parameters are over {MAX_SESSION_INIT_BYTES} bytes"
            ));
        }
        let row = SharedSession {
            id: id.to_owned(),
            owner: self.book.owner(caller),
            init,
            expires_at: now() + self.idle.as_secs() as i64,
        };
        bounded(self.book.open(row, MAX_SHARED_SESSIONS_PER_CALLER)).await
    }
}

/// The answer when the store cannot be read: the request is not served.
pub(super) fn unavailable(why: &str) -> Response {
    note("http_session_store_unavailable", why);
    Refusal::StoreUnavailable.into()
}

/// A log line about the shared store (its error text is the store's, never a secret).
pub(super) fn note(event: &str, why: &str) {
    log::line(json!({"ts": log::timestamp(), "event": event, "reason": why}));
}

/// What a request of a shared session brings to rmcp's session store hooks, which are
/// called inside the request's task but told only the session's id.
#[derive(Default)]
pub(super) struct Serving {
    /// The request's caller.
    caller: Option<Caller>,
    /// The row this layer checked for this request, which rmcp may restore.
    vetted: Option<SharedSession>,
    /// How keeping a new session went, for the layer to refuse it if it failed.
    pub opened: Option<Result<bool, String>>,
}

tokio::task_local! {
    static SERVING: RefCell<Serving>;
}

/// Run `serving` with what rmcp's store hooks may read of this request.
pub(super) async fn with_request<F: Future>(
    caller: Caller,
    vetted: Option<SharedSession>,
    serving: F,
) -> (F::Output, Serving) {
    let request = RefCell::new(Serving {
        caller: Some(caller),
        vetted,
        opened: None,
    });
    SERVING
        .scope(request, async move {
            let out = serving.await;
            let left = SERVING.with(|s| std::mem::take(&mut *s.borrow_mut()));
            (out, left)
        })
        .await
}

fn caller_here() -> Option<Caller> {
    SERVING
        .try_with(|s| s.borrow().caller.clone())
        .ok()
        .flatten()
}

/// rmcp's session store over [`Shared`], for this request only: it loads only the row
/// the HTTP layer checked for this request's caller, and keeps a new session under the
/// request's caller.
pub struct RowStore(pub(super) Arc<Shared>);

#[async_trait::async_trait]
impl SessionStore for RowStore {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let vetted = SERVING
            .try_with(|s| s.borrow_mut().vetted.take())
            .ok()
            .flatten()
            .filter(|row| row.id == session_id);
        let Some(row) = vetted else {
            return Ok(None);
        };
        let params = serde_json::from_str(&row.init)?;
        Ok(Some(SessionState::new(params)))
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let opened = match caller_here() {
            Some(caller) => self.0.open(session_id, &caller, state).await,
            None => Err("a session opened outside a request".into()),
        };
        let failed = match &opened {
            Ok(true) => {
                note("http_session_kept", "a new session, in the shared store");
                None
            }
            Ok(false) => Some("the caller holds the most sessions the store keeps".to_owned()),
            Err(e) => Some(e.clone()),
        };
        let _ = SERVING.try_with(|s| s.borrow_mut().opened = Some(opened));
        match failed {
            None => Ok(()),
            Some(why) => Err(why.into()),
        }
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        // Only after the HTTP layer found the row to be this caller's.
        let Some(caller) = caller_here() else {
            return Ok(());
        };
        let owner = self.0.book.owner(&caller);
        bounded(self.0.book.end(session_id, &owner))
            .await
            .map_err(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::{BoundedSessions, SessionLimits, Sessions};

    /// Sessions kept in memory, as a store keeps them.
    #[derive(Default)]
    struct Memory {
        rows: Mutex<Vec<SharedSession>>,
        touched: Mutex<Vec<i64>>,
    }

    impl SharedSessions for Memory {
        fn owner(&self, caller: &Caller) -> String {
            format!("{}@{}", caller.user, caller.tenant)
        }
        fn open(&self, s: SharedSession, _max: usize) -> BoxFuture<'_, Result<bool, String>> {
            self.rows.lock().unwrap().push(s);
            Box::pin(async { Ok(true) })
        }
        fn find<'a>(
            &'a self,
            id: &'a str,
            now: i64,
        ) -> BoxFuture<'a, Result<Option<SharedSession>, String>> {
            let rows = self.rows.lock().unwrap();
            let found = rows.iter().find(|r| r.id == id && r.expires_at > now);
            let found = found.cloned();
            Box::pin(async move { Ok(found) })
        }
        fn touch<'a>(
            &'a self,
            _: &'a str,
            _: &'a str,
            at: i64,
        ) -> BoxFuture<'a, Result<(), String>> {
            self.touched.lock().unwrap().push(at);
            Box::pin(async { Ok(()) })
        }
        fn end<'a>(&'a self, id: &'a str, owner: &'a str) -> BoxFuture<'a, Result<(), String>> {
            self.rows
                .lock()
                .unwrap()
                .retain(|r| r.id != id || r.owner != owner);
            Box::pin(async { Ok(()) })
        }
        fn put_answer(&self, _: SharedAnswer, _: usize) -> BoxFuture<'_, Result<bool, String>> {
            Box::pin(async { Ok(true) })
        }
        fn take_answer<'a>(&'a self, _: &'a AnswerKey, _: i64) -> Answered<'a> {
            Box::pin(async { Ok(None) })
        }
    }

    fn row(id: &str, owner: &str, expires_at: i64) -> SharedSession {
        SharedSession {
            id: id.into(),
            owner: owner.into(),
            init: "{}".into(),
            expires_at,
        }
    }

    #[tokio::test]
    async fn a_shared_session_is_its_callers_alone_and_its_use_moves_its_expiry() {
        let memory = Arc::new(Memory::default());
        let idle = Duration::from_secs(600);
        let shared = Shared::new(memory.clone(), idle);
        let limits = SessionLimits {
            idle,
            ..SessionLimits::default()
        };
        let manager = BoundedSessions::new(Sessions::new(limits, true), Some(shared.clone()));
        let sam = Caller::new("usr-sam", "larkfield", "test");
        let soon = now() + 30;
        memory
            .rows
            .lock()
            .unwrap()
            .push(row("s1", "usr-sam@larkfield", soon));
        memory
            .rows
            .lock()
            .unwrap()
            .push(row("gone", "usr-sam@larkfield", now() - 1));

        // Sam's session, held by no replica yet: to be restored here; its expiry moves.
        let vetted = manager.vet(&shared, "s1", &sam).await.unwrap();
        assert_eq!(vetted.row.id, "s1");
        assert!(!vetted.here);
        let touched = memory.touched.lock().unwrap().clone();
        assert_eq!(touched.len(), 1);
        assert!(
            touched[0] >= now() + idle.as_secs() as i64 - 1,
            "{touched:?}"
        );

        // Another caller (another user, or Sam in another organization), an expired
        // session and an unknown one: all the same 404.
        let others = [
            ("s1", Caller::new("usr-omar", "larkfield", "test")),
            ("s1", Caller::new("usr-sam", "bramble", "test")),
            ("gone", sam.clone()),
            ("nope", sam.clone()),
        ];
        for (id, caller) in others {
            let refused = manager.vet(&shared, id, &caller).await.err().unwrap();
            assert_eq!(refused.status(), axum::http::StatusCode::NOT_FOUND, "{id}");
        }
    }

    #[test]
    fn a_server_request_waits_here_until_it_is_settled() {
        let shared = Shared::new(Arc::new(Memory::default()), Duration::from_secs(1));
        shared.asked("s1", "\"ab\"");
        assert!(shared.awaits("s1", "\"ab\""));
        assert!(!shared.awaits("s2", "\"ab\""), "another session's");
        assert!(!shared.awaits("s1", "\"cd\""));
        shared.settled("s1", "\"ab\"");
        assert!(!shared.awaits("s1", "\"ab\""));
    }
}
