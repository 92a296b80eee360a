//! A held call's next round, on whichever replica it reached: the caller's answer written
//! in the store once (a state is used once), the holder woken if it is this replica, and
//! what the server did next read back when the holder writes it. The holder is taken for
//! gone when it does not take the answer within [`HOLDER_SILENT`] (the answer is then
//! taken back, so it can never reach the server later), or stops saying it runs for as
//! long once it did; either way the round is refused saying that the call may or may not
//! have run, never left waiting.

use std::time::Instant;

use rmcp::{
    ErrorData,
    model::{
        CallToolResponse, ElicitRequest, ElicitRequestParams, ElicitResult, InputRequest,
        InputRequests, InputRequiredResult,
    },
};
use serde_json::json;

use super::{
    super::Call, HELD_POLL, HELD_TTL, HOLDER_SILENT, MAX_ANSWER_BYTES, Outcome, QUESTION_KEY,
    now_ms,
};
use crate::answer::failed;
use crate::{
    confirm::{self, Approver, Sealed},
    store::Closed,
};
use gatehouse::{person, text, trace::Who};

/// What a round is told when its call is no longer held.
const GONE: &str = "this call is no longer held: its question expired, it was cancelled, or \
    the gateway replica holding it gave it up. The server had started the call and asked \
    its question, so the call may or may not have run (what it did before asking stays \
    done); call the tool again to start afresh";

impl Call<'_> {
    /// The server's question `question` of the held call `id`, as the caller's next
    /// round: `input_required` with the form, and a state naming the call and question.
    pub(in crate::call) fn ask_held(
        &self,
        id: &str,
        question: usize,
        form: ElicitRequestParams,
    ) -> CallToolResponse {
        let sealed = Sealed::Held {
            nonce: confirm::nonce(),
            call: id.to_owned(),
            question,
            approved: self.approved.get().copied(),
        };
        let confirmations = &self.gw.inner.confirmations;
        let state = confirmations.seal(&sealed, &self.bound(&self.fingerprint()));
        let mut requests = InputRequests::new();
        requests.insert(
            QUESTION_KEY.into(),
            InputRequest::Elicitation(ElicitRequest::new(form)),
        );
        InputRequiredResult::new(Some(requests), Some(state)).into()
    }

    /// The caller's answer to `question` of the held call `id`, carried to the replica
    /// that holds it: what the server did next. The round is judged again first (as
    /// [`Call::judged_again`] says); refused, the held call is given up (its holder
    /// cancels it at the server) and the answer never reaches it.
    pub(in crate::call) async fn held_next(
        &self,
        id: &str,
        question: usize,
        (nonce, approved): (&str, Option<Approver>),
    ) -> Result<CallToolResponse, ErrorData> {
        let (gw, store) = (self.gw, &self.gw.inner.store);
        if let Err(refused) = self.judged_again(nonce, approved).await {
            let _ = store.held_close(id, &self.caller, Closed::GivenUp).await;
            gw.inner.held.wake(id);
            return Ok(refused);
        }
        let answer = self.held_answer();
        let kept = serde_json::to_string(&answer).unwrap_or_default();
        let here = gw.inner.held.holds(id);
        match store
            .held_answer((id, question), &self.caller, &kept, now_ms())
            .await
        {
            Ok(true) => {}
            Ok(false) => return Ok(failed(self.not_carried(id, question).await)),
            Err(e) => {
                return Ok(failed(format!(
                    "the answer could not be carried to the held call ({e}); it was not \
                     delivered, and this round's state is used: the call waits until its \
                     question expires, then is cancelled; call the tool again"
                )));
            }
        }
        let action = serde_json::to_value(&answer.action).unwrap_or_default();
        let place = if here { "here" } else { "on another replica" };
        gw.host().trace().add(
            Who::Person,
            format!(
                "{} answered {} in their client ({}), for the call held {place}",
                self.caller,
                self.call.name,
                action.as_str().unwrap_or("?")
            ),
            json!({"caller": self.caller, "tool": self.call.name, "held": id}),
        );
        gw.inner.held.wake(id);
        let outcome = match self.outcome_of(id, question).await {
            Ok(outcome) => outcome,
            Err(why) => return Ok(failed(why)),
        };
        if !matches!(outcome, Outcome::Asks { .. }) {
            // Read once: the end is dropped (it expires anyway if this fails).
            let _ = store.held_close(id, &self.caller, Closed::Read).await;
        }
        match outcome {
            Outcome::Asks { question: form } => Ok(self.ask_held(id, question + 1, form)),
            Outcome::Ended { result } => Ok(result.into()),
            Outcome::Failed { error } => Err(error),
        }
    }

    /// The caller's answer as the server gets it: missing, unreadable or larger than
    /// [`MAX_ANSWER_BYTES`] is their decline.
    fn held_answer(&self) -> ElicitResult {
        let given = self
            .responses
            .get(QUESTION_KEY)
            .filter(|v| serde_json::to_vec(v).is_ok_and(|bytes| bytes.len() <= MAX_ANSWER_BYTES));
        given
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_else(person::decline)
    }

    /// Why the answer to `question` of `id` was not written.
    async fn not_carried(&self, id: &str, question: usize) -> String {
        let found = self.gw.inner.store.held_row(id, now_ms()).await;
        let asked = i64::try_from(question).unwrap_or(i64::MAX);
        match found {
            Ok(Some(row)) if row.caller == self.caller && row.answered >= asked => {
                "this question was answered already: its requestState is used once".into()
            }
            Ok(_) => GONE.into(),
            Err(e) => format!("the held call cannot be reached in the state store: {e}"),
        }
    }

    /// Wait for what followed the answer to `question`: the holder's outcome, or why none
    /// will come.
    async fn outcome_of(&self, id: &str, question: usize) -> Result<Outcome, String> {
        let (store, held) = (&self.gw.inner.store, &self.gw.inner.held);
        let wanted = i64::try_from(question).unwrap_or(i64::MAX);
        let (began, mut moved) = (Instant::now(), Instant::now());
        let (mut alive, mut taken) = (None, false);
        while began.elapsed() < HELD_TTL {
            tokio::select! {
                _ = held.written.notified() => {}
                _ = tokio::time::sleep(HELD_POLL) => {}
                // The caller gave up on this round: the call goes on to its end, unread.
                _ = self.context.ct.cancelled() => return Err("the round was cancelled".into()),
            }
            let row = match store.held_row(id, now_ms()).await {
                Ok(Some(row)) => row,
                Ok(None) => return Err(GONE.into()),
                Err(_) if moved.elapsed() < HOLDER_SILENT => continue,
                Err(e) => return Err(format!("the state store cannot be read ({e}); {MAYBE}")),
            };
            if row.outcome_of == wanted && !row.outcome.is_empty() {
                return serde_json::from_str(&row.outcome)
                    .map_err(|e| format!("the held call's outcome cannot be read ({e}); {MAYBE}"));
            }
            if alive != Some(row.alive) {
                (alive, moved) = (Some(row.alive), Instant::now());
            }
            taken |= row.taken == Some(true);
            if moved.elapsed() < HOLDER_SILENT {
                continue;
            }
            let silent = text::seconds(HOLDER_SILENT);
            if !taken {
                match store.held_withdraw((id, question)).await {
                    Ok(true) => {
                        return Err(format!(
                            "the gateway replica holding this call did not take the answer \
                             within {silent}: it has stopped, or cannot reach the state store. \
                             The answer was not delivered. The server had started the call and \
                             asked its question, so the call may or may not have run (what it \
                             did before asking stays done); call the tool again to start afresh"
                        ));
                    }
                    Ok(false) => taken = true,
                    Err(e) => {
                        return Err(format!("the state store cannot be written ({e}); {MAYBE}"));
                    }
                }
                continue;
            }
            return Err(format!(
                "the gateway replica holding this call took the answer, then went silent for \
                 {silent}: it has stopped, or cannot reach the state store; {MAYBE}"
            ));
        }
        Err(format!(
            "nothing followed the answer within {}; {MAYBE}",
            text::seconds(HELD_TTL)
        ))
    }
}

/// What the round is told when it cannot know what became of the call.
const MAYBE: &str = "the answer may have reached the server, so the call may or may not have \
    run";
