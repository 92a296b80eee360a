//! A call held on the replica that runs it while its 2026-07-28 caller answers a
//! server's question that no round of the caller's carries: an older server's
//! `elicitation/create` in the middle of the call, while that call is the one in flight
//! on the server's connection (`connect::handler`).
//!
//! The caller's `tools/call` is answered with `input_required`: the server's form (made
//! visible, its message clipped, at most [`MAX_QUESTION_BYTES`]) under [`QUESTION_KEY`],
//! and a sealed state naming the held call and the question ([`Sealed::Held`], bound to
//! the caller, the tool, the arguments and the definition like the gateway's other
//! states). The server's `tools/call` stays in flight here, its `elicitation/create`
//! waiting (at most [`HELD_TTL`] per question, then the call is cancelled and the server
//! told). The caller's next round may reach any replica: the answer goes to the holding
//! replica through the shared store, and what the server does next (its result, its
//! error, or its next question) comes back the same way (`store/held.rs`; `held/holder.rs`
//! on the holding replica, `held/next.rs` on the replica the round reached). Through the
//! store even when both are one replica: one way, the local wait cut short by a wake-up.
//!
//! The gateway answers none of the server's questions: `decline` and `cancel` go to the
//! server as they came, a missing or unreadable answer is the caller's decline, and the
//! policy's decision (made once, before the first round) is not asked again: an answer
//! is the person's answer to the server, and sends nothing new to it.
//!
//! [`Sealed::Held`]: crate::confirm::Sealed::Held

mod holder;
mod next;

use std::{
    collections::HashMap,
    pin::Pin,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::future::BoxFuture;
use rmcp::{
    ErrorData,
    model::{
        CallToolResult, ElicitRequestParams, ElicitResult, ElicitationAction, JsonObject,
        RequestMetaObject,
    },
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::{
    super::{Gateway, Unreachable},
    shaped,
};
use crate::{
    caller::CallerName,
    confirm::CONFIRMATION_TTL,
    store::{CLOCK_MARGIN, HeldRow, STORE_TIMEOUT},
    tasks::{MAX_ANSWER_BYTES as MAX_TASK_ANSWER_BYTES, MAX_KEPT_BYTES},
};
use gatehouse::{
    catalog::CatalogTool,
    dispatch::{self, Answered, CallEnd, Dispatched, Relayed},
    gate::Proposal,
    model::ToolCall,
    person::{self, AnsweredBy, Approval, ApprovalRequest, Person, PersonTime},
    text,
    trace::{Who, random_hex},
};

use holder::Holder;

/// Most calls one replica holds at once; past it a server's question is declined (the
/// server decides what then).
pub const MAX_HELD: usize = 64;
/// Most calls one caller has held at once, across replicas (the store counts them); past
/// it likewise.
pub const MAX_HELD_PER_CALLER: usize = 8;
/// How long a held call waits for the answer to each question: the sealed state's own
/// life. Then the call is cancelled, and the server told.
pub const HELD_TTL: Duration = CONFIRMATION_TTL;
/// How often the holder looks in the store for an answer, and a replica waiting for what
/// followed it looks for that.
pub const HELD_POLL: Duration = Duration::from_millis(200);
/// How long a replica waiting on the holder lets it go without a sign (taking the answer,
/// then saying it runs) before taking it for gone: twice the store's own time limit, so
/// one slow write is not taken for a death.
pub const HOLDER_SILENT: Duration = Duration::from_secs(2 * STORE_TIMEOUT.as_secs());
/// How often the holder says it runs while the server works on an answer.
pub const ALIVE_EVERY: Duration = Duration::from_secs(1);
/// The largest question relayed (its JSON); a larger one is declined.
pub const MAX_QUESTION_BYTES: usize = 64 * 1024;
/// Most characters of a question's message shown; the rest is cut.
pub const MAX_QUESTION_MESSAGE_CHARS: usize = 4_000;
/// The largest answer carried to the server (its JSON); a larger one is the caller's
/// decline.
pub const MAX_ANSWER_BYTES: usize = MAX_TASK_ANSWER_BYTES;
/// The largest end carried back to the caller's round (its JSON); a larger result is a
/// tool error that says so.
pub const MAX_OUTCOME_BYTES: usize = MAX_KEPT_BYTES;
/// The key of the server's question among the gateway's `inputRequests`.
pub const QUESTION_KEY: &str = "gatehouse.question";

/// A server's question on its way to its call's driver, and where the answer goes (its
/// request waits on the other end).
pub(crate) struct Asked {
    params: ElicitRequestParams,
    answer: oneshot::Sender<ElicitResult>,
}

impl Asked {
    /// Declined without asking anyone, and said why.
    fn decline(self, gw: &Gateway, ending: &Ending, why: &str) {
        let _ = self.answer.send(person::decline());
        gw.host().trace().add(
            Who::Host,
            format!(
                "{} asked {} a question in the middle of {}; declined without asking: {why}",
                ending.tool.origin.label(),
                ending.caller,
                ending.call.name
            ),
            json!({"caller": ending.caller, "tool": ending.call.name, "decision": "declined"}),
        );
    }
}

/// The caller, for a server's question that a 2026-07-28 client can be asked only in its
/// next round: the question goes to the call's driver, and the server's request waits
/// for the answer, its time left out of the round's limit.
pub(crate) struct HeldPerson {
    questions: mpsc::Sender<Asked>,
    time: PersonTime,
}

impl HeldPerson {
    /// The person, and where their call's driver reads the questions.
    pub(super) fn new() -> (Arc<HeldPerson>, mpsc::Receiver<Asked>) {
        // One question at a time: another asked before it is taken is declined.
        let (questions, rx) = mpsc::channel(1);
        let time = PersonTime::default();
        (Arc::new(HeldPerson { questions, time }), rx)
    }

    /// Their time answering, which the round leaves out of its limit.
    pub(super) fn time(&self) -> PersonTime {
        self.time.clone()
    }
}

impl Person for HeldPerson {
    /// Never asked: the policy asks through a round of the gateway's own.
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        let nobody: &'static Unreachable = &Unreachable;
        nobody.approve(request)
    }

    fn elicit<'a>(
        &'a self,
        _server: &'a str,
        request: &'a ElicitRequestParams,
    ) -> person::Answered<'a> {
        Box::pin(async move {
            let (answer, rx) = oneshot::channel();
            let asked = Asked {
                params: request.clone(),
                answer,
            };
            if self.questions.try_send(asked).is_err() {
                return (person::decline(), AnsweredBy::Nobody);
            }
            let _busy = self.time.busy();
            // The driver or the holder answers, or drops it: the call ended, or was given
            // up (the server gets `cancel`).
            match rx.await {
                Ok(answer) => (answer, AnsweredBy::Client),
                Err(_) => (
                    ElicitResult::new(ElicitationAction::Cancel),
                    AnsweredBy::Nobody,
                ),
            }
        })
    }
}

/// What followed an answer (or, for the first question, the call's start), as the store
/// carries it to the caller's next round.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub(crate) enum Outcome {
    /// The server asks again.
    Asks {
        /// Its question, as the caller is shown it.
        question: ElicitRequestParams,
    },
    /// The call ended: its result, as the caller reads it.
    Ended {
        /// Through the `afterCall` hook and shaped.
        result: CallToolResult,
    },
    /// The call ended with the server's JSON-RPC error, made visible.
    Failed {
        /// The error.
        error: ErrorData,
    },
}

impl Outcome {
    /// As the store keeps it: at most [`MAX_OUTCOME_BYTES`], a larger result kept as a
    /// tool error that says so.
    fn kept(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        if json.len() <= MAX_OUTCOME_BYTES {
            return json;
        }
        let too_large = format!(
            "the call's result is larger than the {MAX_OUTCOME_BYTES} bytes a held call \
             carries between replicas; it was dropped"
        );
        let result = CallToolResult::error(vec![rmcp::model::ContentBlock::text(too_large)]);
        serde_json::to_string(&Outcome::Ended { result }).unwrap_or_default()
    }
}

/// What a held call's end goes through, as the request that started it would have: the
/// `afterCall` hook, then the gateway's shaping.
pub(crate) struct Ending {
    /// The call as the client made it (the ledger's and the hook's).
    pub call: ToolCall,
    /// The call's trace id.
    pub trace_id: String,
    /// The call's step on this replica.
    pub step: u64,
    /// Who calls (`user@tenant`).
    pub caller: CallerName,
    /// The tool called.
    pub tool: CatalogTool,
    /// The admitted arguments.
    pub arguments: JsonObject,
}

impl Ending {
    /// The end of a held call's round, as its caller reads it.
    async fn outcome(&self, gw: &Gateway, relayed: Relayed) -> Outcome {
        let server = self.tool.origin.label();
        let end = match relayed {
            Relayed::Ended(done) => done.end,
            // Neither comes from the older servers that ask mid-call.
            Relayed::Asks(_) => CallEnd::Failed(format!(
                "{server} answered with input_required after its question; a held call \
                 cannot pass that on"
            )),
            Relayed::Task(_) => CallEnd::Failed(format!(
                "{server} answered with a task after its question; a held call cannot pass \
                 that on"
            )),
        };
        let p = Proposal {
            call: &self.call,
            session: "gateway",
            trace_id: &self.trace_id,
            step: self.step,
            caller: Some(&self.caller),
            confirmation: None,
            flows: None,
        };
        match shaped(gw, &p, &self.tool, &self.arguments, end).await {
            Ok(result) => Outcome::Ended { result },
            Err(error) => Outcome::Failed { error },
        }
    }
}

/// The calls one replica holds: a wake-up for each one's holder, one for the rounds
/// waiting here on what followed an answer, and the gateway's stop.
#[derive(Default)]
pub(crate) struct Held {
    calls: Mutex<HashMap<String, Arc<Notify>>>,
    /// An outcome was written here. A round that misses it (it was reading the store)
    /// looks again after [`HELD_POLL`].
    written: Notify,
    closing: CancellationToken,
}

impl Held {
    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Notify>>> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Room for the call `id` here, and its wake-up: `None` when [`MAX_HELD`] are held.
    fn admit(&self, id: &str) -> Option<Arc<Notify>> {
        let mut calls = self.calls();
        if calls.len() >= MAX_HELD {
            return None;
        }
        let wake = Arc::new(Notify::new());
        calls.insert(id.to_owned(), wake.clone());
        Some(wake)
    }

    fn forget(&self, id: &str) {
        self.calls().remove(id);
    }

    /// Is the call `id` held here?
    fn holds(&self, id: &str) -> bool {
        self.calls().contains_key(id)
    }

    /// An answer for `id` is in the store: its holder, if here, looks now.
    fn wake(&self, id: &str) {
        if let Some(wake) = self.calls().get(id) {
            wake.notify_one();
        }
    }

    /// An outcome was written here: the rounds waiting here look now.
    fn wrote(&self) {
        self.written.notify_waiters();
    }

    /// The gateway stops: every held call is cancelled (its server told) and given up,
    /// waited for at most the time that takes.
    pub(crate) async fn close(&self) {
        self.closing.cancel();
        let limit = 2 * dispatch::CANCEL_SEND_LIMIT + STORE_TIMEOUT;
        let deadline = tokio::time::Instant::now() + limit;
        while !self.calls().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A round of a call passed on for a 2026-07-28 caller, owned, so that it can outlive the
/// request that began it when the call is held.
pub(super) type Round = Pin<Box<dyn Future<Output = Relayed> + Send>>;

/// What a call's round is sent with.
pub(super) struct Sending {
    /// The server's name in the servers file (its connection's).
    pub server: String,
    /// The tool's own name, as the server lists it.
    pub wire_name: String,
    /// The admitted arguments.
    pub arguments: JsonObject,
    /// The request `_meta` the caller's log level asks for.
    pub meta: Option<RequestMetaObject>,
    /// What the caller brings (capabilities, progress, the person and their time).
    pub relay: dispatch::Relay,
    /// The answers to the server's questions of the round before, if any.
    pub answered: Option<Answered>,
}

/// How the request that began a round ends.
pub(super) enum First {
    /// As any round's: the call's end, the server's questions, its task.
    Relayed(Relayed),
    /// The server asked mid-call: the call is held here (`id`), and this is its question.
    Held {
        /// The held call's id.
        id: String,
        /// Its question, as the caller is shown it.
        question: ElicitRequestParams,
    },
}

/// The call a round belongs to: where the server's questions come, and what its end goes
/// through.
pub(super) struct Asking {
    /// Where the server's questions come.
    pub questions: mpsc::Receiver<Asked>,
    /// What the end goes through if the call is held.
    pub ending: Ending,
}

impl Gateway {
    /// One round of `sending`, stopped by `stop`; its server's connection found inside.
    pub(super) fn round(&self, sending: Sending, stop: CancellationToken) -> Round {
        let (gw, limits) = (self.clone(), self.limits());
        Box::pin(async move {
            let host = gw.host();
            let Some(conn) = host.connection(&sending.server) else {
                return Relayed::Ended(Dispatched {
                    end: CallEnd::Failed("the tool's server is not connected".into()),
                    asked_user: false,
                    rounds: 0,
                    elapsed: Duration::ZERO,
                    task: None,
                });
            };
            let call = dispatch::Call {
                conn,
                wire_name: &sending.wire_name,
                arguments: sending.arguments,
                meta: sending.meta,
                relay: Some(sending.relay),
            };
            dispatch::call_tool_round(call, sending.answered, limits, host.trace(), &stop).await
        })
    }

    /// Drive a round for the request that began it (`cancelled` stops it): its end, or,
    /// when the server asks mid-call, the call held here and the question.
    pub(super) async fn drive(
        &self,
        mut round: Round,
        stop: CancellationToken,
        asking: Asking,
        cancelled: &CancellationToken,
    ) -> First {
        let Asking {
            mut questions,
            ending,
        } = asking;
        loop {
            let asked = tokio::select! {
                relayed = &mut round => return First::Relayed(relayed),
                Some(asked) = questions.recv() => Some(asked),
                _ = cancelled.cancelled(), if !stop.is_cancelled() => None,
            };
            let Some(asked) = asked else {
                stop.cancel();
                continue;
            };
            match self.admit_held(&ending, &asked.params).await {
                Ok((id, wake, question)) => {
                    let holder = Holder::new(self.clone(), &id, ending, (round, questions), stop);
                    tokio::spawn(holder.run(asked, wake));
                    return First::Held { id, question };
                }
                Err(why) => asked.decline(self, &ending, &why),
            }
        }
    }

    /// Room to hold the call for a question: its id, its wake-up and the question as the
    /// caller is shown it; or why not.
    async fn admit_held(
        &self,
        ending: &Ending,
        params: &ElicitRequestParams,
    ) -> Result<(String, Arc<Notify>, ElicitRequestParams), String> {
        let question = shown(params)
            .ok_or_else(|| format!("its question is larger than {MAX_QUESTION_BYTES} bytes"))?;
        let id = random_hex(16);
        let held = &self.inner.held;
        let wake = held
            .admit(&id)
            .ok_or_else(|| format!("this gateway holds {MAX_HELD} calls already"))?;
        let now = now_ms();
        let row = HeldRow::first(id.clone(), ending.caller.clone(), now, expiry(now));
        let why = match self
            .inner
            .store
            .held_open(&row, now, MAX_HELD_PER_CALLER)
            .await
        {
            Ok(true) => {
                self.host().trace().add(
                    Who::Host,
                    format!(
                        "{} asked {} a question in the middle of {}: the call is held here \
                         for their answer, asked in their client",
                        ending.tool.origin.label(),
                        ending.caller,
                        ending.call.name
                    ),
                    json!({"caller": ending.caller, "tool": ending.call.name, "held": id}),
                );
                return Ok((id, wake, question));
            }
            Ok(false) => format!("{MAX_HELD_PER_CALLER} calls of the caller's are held already"),
            Err(e) => format!("the state store cannot keep it: {e}"),
        };
        held.forget(&id);
        Err(why)
    }
}

/// A server's question as its caller is shown it: every string made visible, the message
/// clipped, the server's `_meta` left out; `None` when it is larger than
/// [`MAX_QUESTION_BYTES`] or not a question this gateway knows.
fn shown(question: &ElicitRequestParams) -> Option<ElicitRequestParams> {
    let mut value = serde_json::to_value(question).ok()?;
    let fields = value.as_object_mut()?;
    fields.remove("_meta");
    if let Some(Value::String(message)) = fields.get_mut("message") {
        *message = text::clip(message, MAX_QUESTION_MESSAGE_CHARS).into_owned();
    }
    text::visible_json(&mut value);
    if serde_json::to_vec(&value).ok()?.len() > MAX_QUESTION_BYTES {
        return None;
    }
    serde_json::from_value(value).ok()
}

/// Now, in milliseconds since the Unix epoch, as the store's held rows count time.
fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// When a held call's row, written `now`, is dropped: when its question can no longer be
/// answered (the state's life), with room for replicas' clocks to disagree.
fn expiry(now: i64) -> i64 {
    let kept = HELD_TTL + CLOCK_MARGIN;
    now.saturating_add(i64::try_from(kept.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests;
