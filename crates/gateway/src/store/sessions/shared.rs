//! The HTTP face's older clients' sessions (`gatehouse_http::shared`) kept in this store,
//! so that the gateway's replicas behind a balancer serve each other's sessions: the HTTP
//! layer asks, [`super`] keeps, and this says one in the other's words. A session's owner
//! is the caller as the gateway names it everywhere else ([`CallerName`]); the HTTP layer
//! keeps it as opaque text, and the name it hands back is the one this gave it.

use futures::future::BoxFuture;
use gatehouse_http::{
    Caller,
    shared::{AnswerKey, Answered, SharedAnswer, SharedSession, SharedSessions},
};

use super::{AnswerRow, SessionRow};
use crate::{Store, caller::CallerName, store::StoreError};

impl SharedSessions for Store {
    fn owner(&self, caller: &Caller) -> String {
        crate::caller::name(caller).to_string()
    }

    fn open(&self, s: SharedSession, max: usize) -> BoxFuture<'_, Result<bool, String>> {
        let row = SessionRow {
            id: s.id,
            caller: CallerName::kept(s.owner),
            init: s.init,
            expires_at: s.expires_at,
        };
        Box::pin(async move { self.mcp_session_open(row, now(), max).await.map_err(said) })
    }

    fn find<'a>(
        &'a self,
        id: &'a str,
        now: i64,
    ) -> BoxFuture<'a, Result<Option<SharedSession>, String>> {
        Box::pin(async move {
            let row = self.mcp_session_row(id, now).await.map_err(said)?;
            Ok(row.map(|r| SharedSession {
                id: r.id,
                owner: r.caller.to_string(),
                init: r.init,
                expires_at: r.expires_at,
            }))
        })
    }

    fn touch<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<(), String>> {
        let owner = CallerName::kept(owner.to_owned());
        Box::pin(async move {
            self.mcp_session_touch(id, &owner, expires_at)
                .await
                .map_err(said)
        })
    }

    fn end<'a>(&'a self, id: &'a str, owner: &'a str) -> BoxFuture<'a, Result<(), String>> {
        let owner = CallerName::kept(owner.to_owned());
        Box::pin(async move { self.mcp_session_end(id, &owner).await.map_err(said) })
    }

    fn put_answer(&self, a: SharedAnswer, max: usize) -> BoxFuture<'_, Result<bool, String>> {
        let row = AnswerRow {
            id: AnswerRow::key(&a.key.session, &a.key.request),
            caller: CallerName::kept(a.key.owner),
            body: a.body,
            expires_at: a.expires_at,
        };
        let session = a.key.session;
        Box::pin(async move {
            self.answer_put(&session, row, now(), max)
                .await
                .map_err(said)
        })
    }

    fn take_answer<'a>(&'a self, key: &'a AnswerKey, now: i64) -> Answered<'a> {
        let id = AnswerRow::key(&key.session, &key.request);
        let owner = CallerName::kept(key.owner.clone());
        Box::pin(async move { self.answer_take(&id, &owner, now).await.map_err(said) })
    }
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// A store error as the HTTP layer takes it: words for its log and its 503.
fn said(e: StoreError) -> String {
    e.to_string()
}
