//! The person behind the caller's own client: how they can be asked (a form, the
//! approval page through a URL question, or not at all, from what the client declared),
//! and, for clients on older revisions, asking them in the middle of the call with
//! `elicitation/create` ([`ClientPerson`]).

use rmcp::{
    RoleServer,
    model::{ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest},
    service::{Peer, RequestContext},
};

use super::{
    confirm,
    page::{self, Decision, Page, ShownCall},
};
use crate::caller::CallerName;
use gatehouse::person::{AnsweredBy, Approval, ApprovalRequest, Person};

/// What a client that declared no elicitation at all is told.
pub const NO_FORM: &str = "the policy asks the person before this call, and this client cannot show them a form; the call was not run";
/// What a client is told when the policy wants the person on the approval page and the
/// client cannot be sent there.
pub const PAGE_ONLY: &str = "the policy asks a person on the approval page before this call, never the client; this client cannot be sent there (it takes no URL questions), or this gateway has no approval page; the call was not run";
/// What a client that takes only URL questions is told when no page is set up.
pub const NO_PAGE: &str = "the policy asks the person before this call; this client cannot show a form (it takes only URL questions) and this gateway has no approval page (--approval-page); the call was not run";

/// How the person can be asked about a call, from the client's declared capabilities.
#[derive(Clone)]
pub enum Asking {
    /// In a form inside the client (`elicitation.form`, or `elicitation: {}`).
    Form,
    /// On the approval page, through a URL question (`elicitation.url` without form).
    Page(Page),
    /// Not at all: why.
    Not(&'static str),
}

impl Asking {
    /// For the client of `context`, with the gateway's page if one is set up. A form is
    /// preferred where the client shows one: it is one step, in the client itself.
    pub fn of(context: &RequestContext<RoleServer>, page: Option<&Page>) -> Asking {
        let declared = context.client_capabilities().and_then(|c| c.elicitation);
        match declared {
            Some(e) if e.form.is_some() || e.url.is_none() => Asking::Form,
            Some(_) => match page {
                Some(page) => Asking::Page(page.clone()),
                None => Asking::Not(NO_PAGE),
            },
            None => Asking::Not(NO_FORM),
        }
    }

    /// For a call the policy wants approved on the page only (`via: page`): the page for
    /// a client that takes URL questions, else nobody.
    pub fn page_only(context: &RequestContext<RoleServer>, page: Option<&Page>) -> Asking {
        let declared = context.client_capabilities().and_then(|c| c.elicitation);
        match (declared.and_then(|e| e.url), page) {
            (Some(_), Some(page)) => Asking::Page(page.clone()),
            _ => Asking::Not(PAGE_ONLY),
        }
    }

    /// Can the client show a form (a server's own questions are forms)?
    pub fn form(&self) -> bool {
        matches!(self, Asking::Form)
    }
}

/// The person, through the caller's own client, for clients on older revisions: the
/// gateway's approval form and a server's questions, each as `elicitation/create` to
/// that client, waited for at most [`confirm::CONFIRMATION_TTL`]; or a URL question to
/// the approval page, whose decision is then waited for at most
/// [`page::MAX_PAGE_ROUNDS`] round waits (as long as a 2026-07-28 client may take).
pub struct ClientPerson {
    peer: Peer<RoleServer>,
    asking: Asking,
    caller: CallerName,
}

impl ClientPerson {
    /// The person behind `context`'s client, asked as `asking` says.
    pub fn of(
        context: &RequestContext<RoleServer>,
        asking: Asking,
        caller: &CallerName,
    ) -> ClientPerson {
        ClientPerson {
            peer: context.peer.clone(),
            asking,
            caller: caller.to_owned(),
        }
    }

    async fn ask(&self, question: ElicitRequestParams) -> Option<ElicitResult> {
        let asked = self.peer.create_elicitation(question);
        match tokio::time::timeout(confirm::CONFIRMATION_TTL, asked).await {
            Ok(Ok(answer)) => Some(answer),
            _ => None,
        }
    }

    /// Ask on the page: the client's `accept` only says the person opened it; the
    /// decision is the page's, read from the store.
    async fn on_page(&self, page: &Page, request: &ApprovalRequest) -> Approval {
        let no = |by| Approval::once(false, by);
        let Ok(id) = page.open(&self.caller, request).await else {
            return no(AnsweredBy::Nobody);
        };
        let question = page.question(&id, &ShownCall::from(request), true);
        match self.ask(question).await.map(|a| a.action) {
            Some(ElicitationAction::Accept) => {}
            Some(other) => return confirm::not_accepted(&other),
            None => return no(AnsweredBy::Nobody),
        }
        let wait = page.round_wait() * page::MAX_PAGE_ROUNDS as u32;
        match page.wait(&id, &self.caller, wait).await {
            Ok(Decision::Approved) => Approval::once(true, AnsweredBy::Page),
            Ok(Decision::Denied) => no(AnsweredBy::Page),
            Ok(Decision::Undecided) | Err(_) => no(AnsweredBy::Nobody),
        }
    }
}

impl ClientPerson {
    /// One question of a server asked of the client as a request of its own, waited for
    /// at most [`confirm::CONFIRMATION_TTL`]: its answer as the next round carries it.
    /// What the client did not declare was refused before (`relay::undeclared`).
    pub(super) async fn relay(&self, request: &InputRequest) -> Option<serde_json::Value> {
        let ttl = confirm::CONFIRMATION_TTL;
        match request {
            InputRequest::Elicitation(form) if self.asking.form() => {
                serde_json::to_value(self.ask(form.params.clone()).await?).ok()
            }
            #[allow(deprecated)] // sampling and roots are what the older revisions have
            InputRequest::CreateMessage(sample) => {
                let asked = self.peer.create_message(sample.params.clone());
                let answer = tokio::time::timeout(ttl, asked).await.ok()?.ok()?;
                serde_json::to_value(answer).ok()
            }
            #[allow(deprecated)]
            InputRequest::ListRoots(_) => {
                let answer = tokio::time::timeout(ttl, self.peer.list_roots())
                    .await
                    .ok()?
                    .ok()?;
                serde_json::to_value(answer).ok()
            }
            // A form for a client that shows none, or a kind of question newer than this
            // gateway: nobody here can pass it on.
            _ => None,
        }
    }
}

impl Person for ClientPerson {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> futures::future::BoxFuture<'a, Approval> {
        Box::pin(async move {
            match &self.asking {
                Asking::Form => match self.ask(confirm::approval_form(request)).await {
                    Some(answer) => confirm::read_answer(&answer, request.may_remember),
                    None => Approval::once(false, AnsweredBy::Nobody),
                },
                Asking::Page(page) => self.on_page(page, request).await,
                Asking::Not(_) => Approval::once(false, AnsweredBy::Nobody),
            }
        })
    }

    fn elicit<'a>(
        &'a self,
        _server: &'a str,
        request: &'a ElicitRequestParams,
    ) -> futures::future::BoxFuture<'a, (ElicitResult, AnsweredBy)> {
        Box::pin(async move {
            if !self.asking.form() {
                return (gatehouse::person::decline(), AnsweredBy::Nobody);
            }
            match self.ask(request.clone()).await {
                Some(answer) => (answer, AnsweredBy::Client),
                None => (gatehouse::person::decline(), AnsweredBy::Nobody),
            }
        })
    }
}
