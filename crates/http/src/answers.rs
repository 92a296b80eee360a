//! A client's answer to a server's request, on whichever replica it lands.
//!
//! An older client's call stays on the replica it was POSTed to, whose server may ask the
//! client something inside it (`elicitation/create` on the call's stream); the client
//! POSTs its answer, and a round-robin balancer may send that POST to another replica.
//! So, with a shared store: every request a session's server sends gets a fresh random id
//! on the wire ([`Routed`]: ids of separate replicas' copies of one session never meet,
//! and none can be guessed), and a replica that receives an answer to a request it is not
//! waiting for keeps it in the store ([`relay`]: at most [`MAX_ANSWER_BYTES`], at most
//! [`MAX_ANSWERS_PER_SESSION`] waiting, dropped after [`ANSWER_TTL`]), bound to the
//! session and its caller. The waiting replica looks for it every [`ANSWER_POLL`] until it
//! is answered, the session ends, or [`super::REQUEST_TIMEOUT`] (no call outlives it)
//! passes. Polling, not PostgreSQL's LISTEN/NOTIFY: one way for both stores, a bounded
//! cost (one indexed read per waiting request per interval), and no second connection.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    body::Bytes,
    http::StatusCode,
    response::{IntoResponse, Response},
};
use rmcp::{
    RoleServer,
    model::{ClientJsonRpcMessage, RequestId, ServerJsonRpcMessage, ServerNotification},
    transport::{
        Transport,
        streamable_http_server::session::{SessionManager, local::LocalSessionManager},
    },
};
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::{
    refusal::Refusal,
    shared::{AnswerKey, Shared, SharedAnswer, bounded, note, now},
};

/// How often a replica looks in the store for the answer to a request it waits for.
pub const ANSWER_POLL: Duration = Duration::from_millis(200);
/// The largest answer carried between replicas (413 beyond it).
pub const MAX_ANSWER_BYTES: usize = 256 * 1024;
/// Most answers waiting in the store for one session (429 beyond it).
pub const MAX_ANSWERS_PER_SESSION: usize = 16;
/// How long an answer nobody took is kept.
pub const ANSWER_TTL: Duration = Duration::from_secs(60);

type LocalTransport = <LocalSessionManager as SessionManager>::Transport;

/// One session's transport: rmcp's local one, and with a shared store the relaying of
/// its server requests' answers.
pub struct Routed {
    inner: LocalTransport,
    relay: Option<Relaying>,
}

struct Relaying {
    shared: Arc<Shared>,
    session: String,
    owner: String,
    /// The wire id of each request in flight, and the id the server gave it.
    asked: Arc<Mutex<HashMap<String, RequestId>>>,
    found: mpsc::Sender<ClientJsonRpcMessage>,
    answers: mpsc::Receiver<ClientJsonRpcMessage>,
    /// Stops the session's pollers when the transport goes.
    _ended: DropGuard,
    ended: CancellationToken,
}

impl Routed {
    /// `inner`, for session `session` of `owner`, relaying answers through `shared` if
    /// there is one.
    pub(super) fn new(
        inner: LocalTransport,
        session: &str,
        owner: String,
        shared: Option<Arc<Shared>>,
    ) -> Routed {
        let relay = shared.map(|shared| {
            let (found, answers) = mpsc::channel(MAX_ANSWERS_PER_SESSION);
            let ended = CancellationToken::new();
            Relaying {
                shared,
                session: session.to_owned(),
                owner,
                asked: Arc::default(),
                found,
                answers,
                _ended: ended.clone().drop_guard(),
                ended,
            }
        });
        Routed { inner, relay }
    }
}

/// A request id as the store keys it: its JSON.
fn key(id: &RequestId) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

impl Relaying {
    /// Give the outgoing request a fresh wire id and wait for its answer in the store too.
    fn outgoing(&self, message: &mut ServerJsonRpcMessage) {
        match message {
            ServerJsonRpcMessage::Request(request) => {
                let mut bytes = [0u8; 16];
                rand::fill(&mut bytes);
                let wire: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                let wire_id = RequestId::String(wire.clone().into());
                let ours = std::mem::replace(&mut request.id, wire_id.clone());
                self.lock().insert(wire.clone(), ours);
                self.shared.asked(&self.session, &key(&wire_id));
                tokio::spawn(self.poll(wire_id));
            }
            // A request the server gives up on is cancelled under its wire id.
            ServerJsonRpcMessage::Notification(n) => {
                if let ServerNotification::CancelledNotification(c) = &mut n.notification
                    && let Some(id) = &mut c.params.request_id
                    && let Some(wire) = self.wire_of(id)
                {
                    *id = RequestId::String(wire.into());
                }
            }
            _ => {}
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, RequestId>> {
        self.asked.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wire_of(&self, ours: &RequestId) -> Option<String> {
        self.lock()
            .iter()
            .find(|(_, id)| *id == ours)
            .map(|(wire, _)| wire.clone())
    }

    /// An incoming answer under its server's own id again (others as they came).
    fn incoming(&self, mut message: ClientJsonRpcMessage) -> ClientJsonRpcMessage {
        let id = match &mut message {
            ClientJsonRpcMessage::Response(r) => &mut r.id,
            ClientJsonRpcMessage::Error(e) => match &mut e.id {
                Some(id) => id,
                None => return message,
            },
            _ => return message,
        };
        let RequestId::String(wire) = &*id else {
            return message;
        };
        let wire = wire.to_string();
        // One not waiting (answered already the other way) goes on as it came: the
        // server drops an answer to no request of its own.
        let ours = self.lock().remove(&wire);
        if let Some(ours) = ours {
            self.shared
                .settled(&self.session, &key(&RequestId::String(wire.into())));
            *id = ours;
        }
        message
    }

    /// Look for the answer to `wire` in the store until it comes (here or there), the
    /// session ends, or no call could still wait for it.
    fn poll(&self, wire: RequestId) -> impl Future<Output = ()> + Send + 'static {
        let (shared, session, owner) = (
            self.shared.clone(),
            self.session.clone(),
            self.owner.clone(),
        );
        let (found, ended, asked) = (self.found.clone(), self.ended.clone(), self.asked.clone());
        let request = key(&wire);
        let answer = AnswerKey {
            session: session.clone(),
            request: request.clone(),
            owner,
        };
        async move {
            let deadline = tokio::time::Instant::now() + super::REQUEST_TIMEOUT;
            let RequestId::String(wire) = wire else {
                return;
            };
            let asked_still = || {
                let held = asked.lock().unwrap_or_else(|e| e.into_inner());
                held.contains_key(&*wire)
            };
            let mut found_it = false;
            loop {
                tokio::select! {
                    _ = ended.cancelled() => break,
                    _ = tokio::time::sleep(ANSWER_POLL) => {}
                }
                // Answered here meanwhile, or no call can wait for it any more.
                if !asked_still() || tokio::time::Instant::now() >= deadline {
                    break;
                }
                match bounded(shared.book.take_answer(&answer, now())).await {
                    Ok(Some(body)) => {
                        match serde_json::from_str::<ClientJsonRpcMessage>(&body) {
                            Ok(answer) => found_it = found.send(answer).await.is_ok(),
                            Err(e) => note("http_answer_unreadable", &e.to_string()),
                        }
                        break;
                    }
                    Ok(None) => {}
                    Err(e) => note("http_answer_poll_failed", &e),
                }
            }
            if !found_it {
                // Given up: nothing here waits for it any more (an answer found goes
                // through `incoming`, which needs its entry).
                asked
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&*wire);
            }
            shared.settled(&session, &request);
        }
    }
}

impl Transport<RoleServer> for Routed {
    type Error = <LocalTransport as Transport<RoleServer>>::Error;

    fn send(
        &mut self,
        mut item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let Some(relay) = &self.relay {
            relay.outgoing(&mut item);
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        let Routed { inner, relay } = self;
        let Some(relay) = relay else {
            return inner.receive().await;
        };
        let message = tokio::select! {
            message = inner.receive() => message?,
            Some(answer) = relay.answers.recv() => {
                crate::log::line(serde_json::json!({
                    "ts": crate::log::timestamp(), "event": "http_answer_taken_from_store",
                }));
                answer
            }
        };
        Some(relay.incoming(message))
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

/// A POSTed answer (`id`, as JSON) to a request this replica is not waiting for: kept in
/// the store for the replica that is, bound to the session and its owner. 202 when kept.
pub(super) async fn relay(
    shared: &Shared,
    session: &str,
    owner: &str,
    request: String,
    body: &Bytes,
) -> Response {
    if body.len() > MAX_ANSWER_BYTES {
        return Refusal::AnswerTooLarge {
            limit: MAX_ANSWER_BYTES,
        }
        .into();
    }
    let key = AnswerKey {
        session: session.to_owned(),
        request,
        owner: owner.to_owned(),
    };
    let answer = SharedAnswer {
        key,
        body: String::from_utf8_lossy(body).into_owned(),
        expires_at: now() + ANSWER_TTL.as_secs() as i64,
    };
    match bounded(shared.book.put_answer(answer, MAX_ANSWERS_PER_SESSION)).await {
        Ok(true) => {
            crate::log::line(serde_json::json!({
                "ts": crate::log::timestamp(), "event": "http_answer_kept_for_another_replica",
            }));
            StatusCode::ACCEPTED.into_response()
        }
        Ok(false) => Refusal::TooManyAnswers {
            limit: MAX_ANSWERS_PER_SESSION,
        }
        .into(),
        Err(e) => super::shared::unavailable(&e),
    }
}
