//! A call asked about on the approval page, round by round (2026-07-28): the first
//! round opens a confirmation on the page and answers with a URL question and a sealed
//! state naming it; each later round, after the client's `accept` (the person agreed to
//! open the page, nothing more), waits a while for the page's decision in the shared
//! store, then runs or refuses the call, or asks again with the same URL, a bounded
//! number of times. Whatever content the client sends with its answer is ignored.

use rmcp::{
    ErrorData,
    model::{
        CallToolResponse, ElicitRequest, ElicitResult, ElicitationAction, InputRequest,
        InputRequests, InputRequiredResult,
    },
};
use serde_json::json;

use super::Call;
use crate::answer::failed;
use crate::{
    confirm::{self, APPROVE_KEY, Sealed},
    page::{Decision, MAX_PAGE_ROUNDS, Page, ShownCall},
};
use gatehouse::{
    gate::Judged,
    person::{AnsweredBy, Approval},
    trace::Who,
};

impl Call<'_> {
    /// The first round of a call asked about on the page: a confirmation opened there,
    /// and the URL question. A page that cannot take it (the caller has too many
    /// waiting, the store is down) refuses the call, written down as nobody's no.
    pub(super) async fn ask_on_page(
        &self,
        page: &Page,
        judged: Judged,
        why: &str,
    ) -> Result<CallToolResponse, ErrorData> {
        let host = self.gw.host();
        let request = judged.proposed().request(why);
        let id = match page.open(&self.caller, &request).await {
            Ok(id) => id,
            Err(e) => {
                let _ = self.settle(&self.proposal(None), judged, None).await;
                return Ok(failed(format!(
                    "the call was not run: the approval page could not take it: {e}"
                )));
            }
        };
        self.asked(crate::ops::AskedIn::Page);
        host.trace().add(
            Who::Host,
            format!("asked {} on the approval page: {why}", self.caller),
            json!({"decision": "ask", "tool": self.call.name, "caller": self.caller}),
        );
        let sealed = Sealed::Page {
            nonce: confirm::nonce(),
            confirmation: id.clone(),
            rounds: 1,
        };
        Ok(self.page_question(page, &id, &ShownCall::from(&request), &sealed))
    }

    /// The URL question naming confirmation `id`, with `sealed` as the state.
    fn page_question(
        &self,
        page: &Page,
        id: &str,
        shown: &ShownCall,
        sealed: &Sealed,
    ) -> CallToolResponse {
        let state = self
            .gw
            .inner
            .confirmations
            .seal(sealed, &self.bound(&self.fingerprint()));
        let mut requests = InputRequests::new();
        let question = page.question(id, shown, false);
        requests.insert(
            APPROVE_KEY.into(),
            InputRequest::Elicitation(ElicitRequest::new(question)),
        );
        InputRequiredResult::new(Some(requests), Some(state)).into()
    }

    /// A later round: the page's decision, if the person opened it and made one.
    pub(super) async fn paged(
        &self,
        nonce: &str,
        confirmation: &str,
        rounds: usize,
    ) -> Result<CallToolResponse, ErrorData> {
        let place = "on the approval page";
        let no = |by| Approval::once(false, by);
        let Some(page) = self.gw.page() else {
            // A replica without the page cannot read its decisions: nobody's no.
            return self
                .answered(nonce, place, |_| no(AnsweredBy::Nobody))
                .await;
        };
        let action = self
            .responses
            .get(APPROVE_KEY)
            .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok())
            .map(|answer| answer.action);
        let approval = match action {
            Some(ElicitationAction::Accept) => {
                match page
                    .wait(confirmation, &self.caller, page.round_wait())
                    .await
                {
                    Ok(Decision::Approved) => Approval::once(true, AnsweredBy::Page),
                    Ok(Decision::Denied) => no(AnsweredBy::Page),
                    Ok(Decision::Undecided) if rounds < MAX_PAGE_ROUNDS => {
                        return self.ask_again(page, nonce, confirmation, rounds + 1).await;
                    }
                    Ok(Decision::Undecided) => no(AnsweredBy::Nobody),
                    // Not used up: the client may send this round again.
                    Err(e) => return Ok(failed(format!("the call was not run: {e}"))),
                }
            }
            Some(other) => confirm::not_accepted(&other),
            None => no(AnsweredBy::Nobody),
        };
        self.answered(nonce, place, move |_| approval).await
    }

    /// Nothing decided yet: the same URL asked again, one round more.
    async fn ask_again(
        &self,
        page: &Page,
        nonce: &str,
        confirmation: &str,
        rounds: usize,
    ) -> Result<CallToolResponse, ErrorData> {
        let Ok(Some((shown, _))) = page.pending(confirmation, &self.caller).await else {
            let no = |_| Approval::once(false, AnsweredBy::Nobody);
            return self.answered(nonce, "on the approval page", no).await;
        };
        let sealed = Sealed::Page {
            nonce: nonce.to_owned(),
            confirmation: confirmation.to_owned(),
            rounds,
        };
        Ok(self.page_question(page, confirmation, &shown, &sealed))
    }
}
