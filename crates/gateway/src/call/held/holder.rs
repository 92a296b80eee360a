//! The replica that holds a call: the server's `tools/call` stays in flight here, its
//! question waiting, while the caller's next round (on this replica or another) writes
//! the answer in the store. The holder looks for it every [`HELD_POLL`] (at once when the
//! round reached this replica), hands it to the server, says it runs every
//! [`ALIVE_EVERY`] while the server works, and writes what the server did next: its next
//! question, or the call's end through the `afterCall` hook. A question unanswered for
//! [`HELD_TTL`], an answer taken back, or the gateway stopping cancels the call at the
//! server.

use std::sync::Arc;

use rmcp::model::{ElicitRequestParams, ElicitResult};
use serde_json::json;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use super::{
    ALIVE_EVERY, Asked, Ending, Gateway, HELD_POLL, HELD_TTL, MAX_QUESTION_BYTES, Outcome, Round,
    expiry, now_ms, shown,
};
use crate::store::Closed;
use gatehouse::{dispatch, person, text, trace::Who};

/// How waiting for an answer ended.
enum Waited {
    /// The caller's answer, for the server.
    Answer(ElicitResult),
    /// The server ended the call first.
    Ended(dispatch::Relayed),
    /// The call is given up: why.
    Gone(String),
}

/// How the server's work on an answer ended.
enum Next {
    /// It asks again: the question, and as the caller is shown it.
    Asks(Asked, ElicitRequestParams),
    /// The call ended.
    Ended(dispatch::Relayed),
}

/// One held call on the replica that runs it. Its methods take `&mut self` across their
/// waits: the round's future is `Send`, not `Sync`.
pub(super) struct Holder {
    gw: Gateway,
    id: String,
    ending: Ending,
    round: Round,
    questions: mpsc::Receiver<Asked>,
    stop: CancellationToken,
}

impl Holder {
    /// The call `id`, its round and the questions it asks, stopped by `stop`.
    pub(super) fn new(
        gw: Gateway,
        id: &str,
        ending: Ending,
        (round, questions): (Round, mpsc::Receiver<Asked>),
        stop: CancellationToken,
    ) -> Holder {
        Holder {
            gw,
            id: id.to_owned(),
            ending,
            round,
            questions,
            stop,
        }
    }

    /// Hold the call from its first question to its end, or until it is given up.
    pub(super) async fn run(mut self, first: Asked, wake: Arc<Notify>) {
        let (mut pending, mut number) = (first, 1);
        loop {
            match self.answer(number, &wake).await {
                Waited::Answer(answer) => {
                    let _ = pending.answer.send(answer);
                }
                // The server ended the call itself: its end follows this question, for
                // whoever answers it.
                Waited::Ended(relayed) => {
                    self.ended(number, number, relayed).await;
                    break;
                }
                Waited::Gone(why) => {
                    drop(pending);
                    self.give_up(&why).await;
                    break;
                }
            }
            match self.next(number).await {
                Next::Asks(asked, question) => {
                    let outcome = Outcome::Asks { question };
                    if !self.write(number, &outcome, number + 1).await {
                        drop(asked);
                        self.give_up("its next question could not be kept in the store")
                            .await;
                        break;
                    }
                    (pending, number) = (asked, number + 1);
                }
                Next::Ended(relayed) => {
                    self.ended(number, 0, relayed).await;
                    break;
                }
            }
        }
        self.gw.inner.held.forget(&self.id);
    }

    /// Wait for the answer to question `number` in the store: looked for every
    /// [`HELD_POLL`], or when `wake` says it came here.
    async fn answer(&mut self, number: usize, wake: &Notify) -> Waited {
        let deadline = tokio::time::Instant::now() + HELD_TTL;
        let closing = self.gw.inner.held.closing.clone();
        loop {
            tokio::select! {
                relayed = &mut self.round => return Waited::Ended(relayed),
                Some(extra) = self.questions.recv() => {
                    extra.decline(&self.gw, &self.ending, "it asked again before its question was answered");
                    continue;
                }
                _ = wake.notified() => {}
                _ = tokio::time::sleep(HELD_POLL) => {}
                _ = tokio::time::sleep_until(deadline) => {
                    let within = text::seconds(HELD_TTL);
                    return Waited::Gone(format!("no answer came within {within}"));
                }
                _ = closing.cancelled() => return Waited::Gone("the gateway is stopping".into()),
            }
            let store = &self.gw.inner.store;
            let wanted = i64::try_from(number).unwrap_or(i64::MAX);
            match store.held_row(&self.id, now_ms()).await {
                Ok(Some(row)) if row.asked == wanted => {
                    if row.answered == wanted
                        && row.taken == Some(false)
                        && let Ok(true) = store.held_take((&self.id, number), now_ms()).await
                    {
                        let answer = serde_json::from_str(&row.answer);
                        return Waited::Answer(answer.unwrap_or_else(|_| person::decline()));
                    }
                }
                Ok(_) => {
                    return Waited::Gone(
                        "its answer was taken back, or its record expired from the store".into(),
                    );
                }
                // The store is slow or away: looked at again next time.
                Err(_) => {}
            }
        }
    }

    /// While the server works on the answer to question `number`: its next question, or
    /// the call's end; the holder says it runs meanwhile.
    async fn next(&mut self, number: usize) -> Next {
        let max = self.gw.limits().max_input_rounds;
        let closing = self.gw.inner.held.closing.clone();
        let mut alive = tokio::time::interval(ALIVE_EVERY);
        loop {
            tokio::select! {
                relayed = &mut self.round => return Next::Ended(relayed),
                Some(asked) = self.questions.recv() => {
                    let why = if number >= max {
                        format!("it asked more than {max} questions in one call")
                    } else if let Some(question) = shown(&asked.params) {
                        return Next::Asks(asked, question);
                    } else {
                        format!("its question is larger than {MAX_QUESTION_BYTES} bytes")
                    };
                    asked.decline(&self.gw, &self.ending, &why);
                }
                _ = alive.tick() => {
                    let _ = self.gw.inner.store.held_alive(&self.id, now_ms()).await;
                }
                _ = closing.cancelled(), if !self.stop.is_cancelled() => self.stop.cancel(),
            }
        }
    }

    /// The call ended after question `number`: its end written for the round that
    /// answers it, the call then waiting on `asked` (0, or `number` when the server ended
    /// it before the answer came).
    async fn ended(&mut self, number: usize, asked: usize, relayed: dispatch::Relayed) {
        let outcome = self.ending.outcome(&self.gw, relayed).await;
        self.write(number, &outcome, asked).await;
    }

    /// Write what followed question `number`, the call then waiting on `asked`: whether
    /// the store kept it.
    async fn write(&mut self, number: usize, outcome: &Outcome, asked: usize) -> bool {
        let kept = outcome.kept();
        let store = &self.gw.inner.store;
        let written = store
            .held_outcome((&self.id, number), &kept, (asked, expiry(now_ms())))
            .await;
        self.gw.inner.held.wrote();
        matches!(written, Ok(true))
    }

    /// Give the call up: cancelled at the server (which is told), its record dropped.
    async fn give_up(&mut self, why: &str) {
        self.stop.cancel();
        let cancelling = 2 * dispatch::CANCEL_SEND_LIMIT;
        let _ = tokio::time::timeout(cancelling, &mut self.round).await;
        let caller = &self.ending.caller;
        let store = &self.gw.inner.store;
        let _ = store.held_close(&self.id, caller, Closed::GivenUp).await;
        self.gw.host().trace().add(
            Who::Host,
            format!(
                "cancelled {caller}'s held call of {}: {why}; {} was told",
                self.ending.call.name,
                self.ending.tool.origin.label()
            ),
            json!({"caller": caller, "tool": self.ending.call.name, "held": self.id}),
        );
    }
}
