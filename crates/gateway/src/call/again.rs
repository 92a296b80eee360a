//! A later round of a call, with a state this gateway (or another replica) sealed: the
//! gateway's own form answered, the approval page's decision, a server's question
//! relayed to the caller's client, or a held call's question. Whatever the state says,
//! the round is judged again by the gate before anything is sent (the catalog with its
//! hidden tools, the rules as they are now, a ledger line of its own), with the arguments
//! the round's own request carries: the state's seal is bound to their digest, and the
//! state carries none.

use rmcp::{
    ErrorData,
    model::{CallToolResponse, ElicitResult, JsonObject},
};
use serde_json::json;

use super::Call;
use crate::answer::failed;
use crate::confirm::{self, APPROVE_KEY, Approver, Sealed};
use crate::error::Error;
use gatehouse::{
    catalog::CatalogTool,
    dispatch::Answered,
    gate::{Admission, Judged},
    person::{AnsweredBy, Approval},
    rules::Via,
    trace::Who,
};

/// What a round is told when the policy wants a person on the approval page and the
/// call was approved anywhere else (in the client's form).
const NOT_ON_THE_PAGE: &str = "the call was not run: the policy asks a person on the \
    approval page before this call, and it was answered in the client instead";

/// What a round is told when the policy asks the person about a call nobody approved
/// when it began (the policy changed since).
const ASKS_NOW: &str = "the call was not run: the policy now asks the person about this \
    call, which nobody approved when it began; call the tool again to be asked";

impl Call<'_> {
    /// A later round, with a state this gateway (or another replica) sealed.
    pub(super) async fn again(&self, state: &str) -> Result<CallToolResponse, ErrorData> {
        let host = self.gw.host();
        let fingerprint = self.fingerprint();
        let sealed = self
            .gw
            .inner
            .confirmations
            .open(state, &self.bound(&fingerprint))
            .map_err(|e| {
                host.trace().add(
                    Who::Host,
                    format!("refused a requestState for {}: {e}", self.call.name),
                    json!({"caller": self.caller}),
                );
                ErrorData::from(Error::StaleState)
            })?;
        match sealed {
            Sealed::Approve { nonce } => self.confirmed(&nonce).await,
            Sealed::Page {
                nonce,
                confirmation,
                rounds,
            } => self.paged(&nonce, &confirmation, rounds).await,
            Sealed::Relay {
                nonce,
                server_state,
                rounds,
                approved,
            } => {
                let (tool, arguments) = match self.judged_again(&nonce, approved).await {
                    Ok(admitted) => admitted,
                    Err(refused) => return Ok(refused),
                };
                let answered = Answered {
                    responses: self.responses.clone(),
                    state: server_state,
                };
                self.send(tool, arguments, Some(answered), rounds).await
            }
            Sealed::Held {
                nonce,
                call,
                question,
                approved,
            } => self.held_next(&call, question, (&nonce, approved)).await,
        }
    }

    /// A round that goes on with a call begun earlier (a server's question answered),
    /// judged again as a first round is: refused as the policy refuses it now, with its
    /// ledger line; where the policy asks, run only if the person approved the call when
    /// it began (`approved`), which the line says again. The state's `nonce` is used up
    /// with the line, on any replica: a state sent again is refused, nothing sent. The
    /// tool and the arguments to send (the round's own, as the `beforeCall` hook leaves
    /// them), or the refusal.
    pub(super) async fn judged_again(
        &self,
        nonce: &str,
        approved: Option<Approver>,
    ) -> Result<(CatalogTool, JsonObject), CallToolResponse> {
        let p = self.proposal(Some(nonce));
        let judged = match self.judge(&p).await {
            Ok(judged) => judged,
            Err(Admission::Refused { text, .. }) => return Err(failed(text)),
            // The host's own tools are refused before any round.
            Err(Admission::Send { .. }) => {
                return Err(failed(format!("unknown tool: {}", self.call.name)));
            }
        };
        let page_only = self.page_only(&judged);
        let approval = match (judged.asks(), approved) {
            (None, _) => None,
            (Some(_), Some(approver)) if approver == Approver::Person || !page_only => {
                let _ = self.approved.set(approver);
                Some(approver.approval())
            }
            (Some(_), Some(_)) => {
                let _ = self.settle(&p, judged, None).await;
                return Err(failed(NOT_ON_THE_PAGE.into()));
            }
            (Some(_), None) => {
                let _ = self.settle(&p, judged, None).await;
                return Err(failed(ASKS_NOW.into()));
            }
        };
        match self.settle(&p, judged, approval).await {
            Admission::Send {
                tool, arguments, ..
            } => Ok((*tool, arguments)),
            Admission::Refused { text, .. } => Err(failed(text)),
        }
    }

    /// The person's answer to the gateway's form, settled as [`Call::answered`] does.
    async fn confirmed(&self, nonce: &str) -> Result<CallToolResponse, ErrorData> {
        let answer = self
            .responses
            .get(APPROVE_KEY)
            .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok());
        self.answered(nonce, "in their client", |may_remember| match &answer {
            Some(a) => confirm::read_answer(a, may_remember),
            None => Approval::once(false, AnsweredBy::Nobody),
        })
        .await
    }

    /// The person's answer (`approval`, given whether it may be remembered): the call
    /// decided again (the policy may have changed), then settled with it; the
    /// confirmation is used up with its ledger line. A yes is carried by the call's
    /// later rounds.
    pub(super) async fn answered(
        &self,
        nonce: &str,
        place: &str,
        approval: impl FnOnce(bool) -> Approval,
    ) -> Result<CallToolResponse, ErrorData> {
        let host = self.gw.host();
        let p = self.proposal(Some(nonce));
        let judged = match self.judge(&p).await {
            Ok(judged) => judged,
            Err(refused) => return self.admitted(refused).await,
        };
        let remember = host.settings().approvals.remember_from_client;
        let approval = judged
            .asks()
            .map(|_| approval(judged.proposed().may_remember && remember));
        let not_on_the_page =
            self.page_only(&judged) && approval.is_some_and(|a| a.yes && a.by != AnsweredBy::Page);
        // A yes the policy does not take from there is written down as the no it is.
        let approval = match not_on_the_page {
            true => Some(Approval::once(false, AnsweredBy::Client)),
            false => approval,
        };
        if let Some(approval) = approval {
            let said = match (approval.yes, approval.dismissed) {
                (true, _) => "said yes",
                (false, true) => "dismissed the question without answering",
                (false, false) => "said no",
            };
            host.trace().add(
                Who::Person,
                format!("{} {said} {place}", self.caller),
                json!({"tool": self.call.name, "caller": self.caller}),
            );
            if let (true, Some(approver)) = (approval.yes, Approver::of(approval.by)) {
                let _ = self.approved.set(approver);
            }
        }
        let admitted = self.settle(&p, judged, approval).await;
        if not_on_the_page && matches!(admitted, Admission::Refused { .. }) {
            return Ok(failed(NOT_ON_THE_PAGE.into()));
        }
        self.admitted(admitted).await
    }

    /// Must the ask of `judged` be answered by a person on the approval page (its rule's
    /// `via`, else the `approvals` setting's)?
    pub(super) fn page_only(&self, judged: &Judged) -> bool {
        let settings = self.gw.host().settings();
        let index = judged
            .rule()
            .strip_prefix("rules[")
            .and_then(|r| r.strip_suffix(']'))
            .and_then(|i| i.parse().ok());
        settings.approvals.via_for(&settings.rules, index) == Via::Page
    }
}
