//! One caller's `tools/call` through the gateway, round by round. A client on revision
//! 2026-07-28 is asked in a later request (`input_required`, answered on any replica:
//! [`Gate::judge`](gatehouse::gate::Gate::judge) then
//! [`Gate::settle`](gatehouse::gate::Gate::settle)); an older client is asked in the middle
//! of its call with `elicitation/create` ([`ClientPerson`]), between the same two halves.
//! A client that takes only URL questions is sent to the approval page (`call/paged.rs`)
//! if one is set up; one that cannot be asked is refused, and the ledger says nobody
//! answered. Either way the answer comes only from the form or the page the gateway
//! asked with, and a server's own questions go to the same client (an older server's
//! mid-call question to a 2026-07-28 client with the call held: `call/held.rs`).

use crate::caller::CallerName;
use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ElicitRequest, InputRequest,
        InputRequests, InputRequiredResult, InputResponses, JsonObject, ProtocolVersion,
    },
    service::RequestContext,
};
use serde_json::json;
use std::sync::Arc;

mod again;
pub(super) mod held;
mod paged;
#[cfg(test)]
mod tests;

use super::{
    Gateway,
    client::{Asking, ClientPerson},
    confirm::{self, APPROVE_KEY, Approver, Bound, Sealed},
    ops::AskedIn,
    relay::{ToCaller, can_ask, declared, takes_tasks, undeclared},
    tasks::Started,
};
use crate::answer::{failed, finished};
use gatehouse::{
    catalog::{CatalogTool, Origin},
    connect::Connection,
    dispatch::{self, Answered, CallEnd, Relayed},
    flow::Flows,
    gate::{Admission, Judged, Proposal},
    model::ToolCall,
    person::{self, Person},
    telemetry,
    trace::Who,
};

/// One `tools/call` request as the gateway received it.
pub(crate) struct Call<'a> {
    gw: &'a Gateway,
    context: &'a RequestContext<RoleServer>,
    caller: CallerName,
    call: ToolCall,
    arguments: JsonObject,
    state: Option<String>,
    responses: InputResponses,
    /// A first round (no state of the gateway's): answers the client sent with it are
    /// the server's to read, never the gateway's.
    first_round: bool,
    modern: bool,
    asking: Asking,
    step: u64,
    trace_id: String,
    /// Who approved this call, once the person (through whoever) said yes in a round of
    /// its own or an earlier one: carried in the states of its later rounds.
    approved: std::sync::OnceLock<Approver>,
    /// What the gateway relayed to the caller, which its arguments are traced against.
    flows: Arc<Flows>,
    /// This request's span (`gateway/mod.rs` ends it with the answer).
    span: &'a telemetry::Span,
}

impl<'a> Call<'a> {
    pub(crate) fn new(
        gw: &'a Gateway,
        request: CallToolRequestParams,
        context: &'a RequestContext<RoleServer>,
        span: &'a telemetry::Span,
    ) -> Call<'a> {
        let arguments = request.arguments.unwrap_or_default();
        let step = gw.next_step();
        // The span's trace: the client's, when its request carries one (W3C `traceparent`
        // in `_meta`), so the ledger's line and the server's record join it; else one of
        // the call's own.
        let trace_id = span.trace_id().to_owned();
        // The catalog's name of the tool the client named; an unknown name is kept, for
        // the gate to refuse and the ledger to show.
        let name = gw
            .names()
            .catalog_name(&gw.host().catalog(), &request.name)
            .unwrap_or_else(|| request.name.to_string());
        let caller = gw.inner.callers.of(context);
        Call {
            gw,
            context,
            flows: gw.flows_of(&caller),
            caller,
            call: ToolCall {
                id: format!("gw-{step}"),
                name,
                arguments: serde_json::to_string(&arguments).unwrap_or_default(),
            },
            arguments,
            first_round: request.request_state.is_none(),
            state: request.request_state,
            responses: request.input_responses.unwrap_or_default(),
            modern: context
                .protocol_version()
                .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str()),
            asking: Asking::of(context, gw.page()),
            step,
            trace_id,
            approved: std::sync::OnceLock::new(),
            span,
        }
    }

    /// The call, from this round to its end or to the next question.
    pub(crate) async fn run(mut self) -> Result<CallToolResponse, ErrorData> {
        let host_own = self
            .gw
            .host()
            .catalog()
            .get(&self.call.name)
            .is_some_and(|t| t.origin == Origin::Host);
        if host_own {
            return Ok(failed(format!("unknown tool: {}", self.call.name)));
        }
        match self.state.take() {
            None => self.first().await,
            Some(state) => self.again(&state).await,
        }
    }

    /// The span of the call behind, on `conn`'s server: a child of this request's.
    fn span_behind(&self, conn: &Connection, wire_name: &str) -> telemetry::Span {
        let request = telemetry::Request {
            method: "tools/call",
            tool: Some(wire_name),
            prompt: None,
            resource_uri: None,
            protocol: Some(conn.protocol.as_str()),
            network: &conn.network,
        };
        telemetry::Span::client(&request, &self.trace_id, Some(self.span))
    }

    /// The `_meta` the call behind carries: the session's log level (older revisions),
    /// the trace (a W3C `traceparent`: this call's trace, the span `behind`) and the
    /// gateway's step, as a host's calls carry them, so the server's records join the
    /// ledger's line.
    fn server_meta(
        &self,
        progress: &ToCaller,
        behind: &telemetry::Span,
    ) -> Option<rmcp::model::RequestMetaObject> {
        use gatehouse_contract as contract;
        let mut meta = progress.meta().unwrap_or_default();
        meta.set_traceparent(behind.traceparent());
        meta.insert(
            contract::TRACE_META_KEY.into(),
            json!({contract::SESSION_FIELD: "gateway", contract::STEP_FIELD: self.step}),
        );
        Some(meta)
    }

    /// The person behind this call's client, for older revisions' questions.
    fn person(&self) -> ClientPerson {
        ClientPerson::of(self.context, self.asking.clone(), &self.caller)
    }

    fn proposal<'p>(&'p self, confirmation: Option<&'p str>) -> Proposal<'p> {
        Proposal {
            call: &self.call,
            session: "gateway",
            trace_id: &self.trace_id,
            step: self.step,
            caller: Some(&self.caller),
            confirmation,
            // What the gateway relayed to the caller; the caller's own words are unseen.
            flows: Some(&self.flows),
        }
    }

    /// What a state of this call is bound to: the caller, the tool as called, the
    /// arguments as sent, and the tool's definition now.
    fn bound<'b>(&'b self, fingerprint: &'b str) -> Bound<'b> {
        Bound {
            caller: &self.caller,
            tool: &self.call.name,
            arguments: &self.arguments,
            fingerprint,
        }
    }

    /// The gate's first half for this proposal; a refusal is counted in the metrics.
    async fn judge(&self, p: &Proposal<'_>) -> Result<Judged, Admission> {
        let host = self.gw.host();
        let judged = (host.gate())
            .judge(p, host.live(), host.settings(), host.trace())
            .await;
        if let Err(refused) = &judged {
            let verdict = self.gw.inner.meter.admitted(refused);
            self.span.set("gatehouse.decision", verdict);
        }
        judged
    }

    /// The person is asked about this call, in their client or on the page: counted in
    /// the metrics, said on the span.
    fn asked(&self, asked_in: AskedIn) {
        self.gw.inner.meter.asked(asked_in);
        self.span.set("gatehouse.decision", "asked");
    }

    /// The gate's second half, with the person's answer if any (its ledger line written);
    /// counted in the metrics.
    async fn settle(
        &self,
        p: &Proposal<'_>,
        judged: Judged,
        answer: Option<person::Approval>,
    ) -> Admission {
        let host = self.gw.host();
        let admission = (host.gate())
            .settle(p, judged, answer, host.live(), host.trace())
            .await;
        let verdict = self.gw.inner.meter.admitted(&admission);
        self.span.set("gatehouse.decision", verdict);
        admission
    }

    fn fingerprint(&self) -> String {
        let catalog = self.gw.host().catalog();
        catalog
            .get(&self.call.name)
            .map(|t| t.definition_digest().to_owned())
            .unwrap_or_default()
    }

    /// A first round: decided, and on 2026-07-28 a question for the person answered in
    /// the next round; on older revisions asked now.
    async fn first(&self) -> Result<CallToolResponse, ErrorData> {
        let host = self.gw.host();
        let (settings, trace) = (host.settings(), host.trace());
        let p = self.proposal(None);
        let judged = match self.judge(&p).await {
            Ok(judged) => judged,
            Err(refused) => return self.admitted(refused).await,
        };
        let Some(why) = judged.asks() else {
            let admitted = self.settle(&p, judged, None).await;
            return self.admitted(admitted).await;
        };
        // Where the policy wants a person on the page, the client's form is never offered.
        let asking = match self.page_only(&judged) {
            true => Asking::page_only(self.context, self.gw.page()),
            false => self.asking.clone(),
        };
        if let Asking::Not(why) = asking {
            // Neither a form nor the page can reach the person: written down as nobody's no.
            let _ = self.settle(&p, judged, None).await;
            return Ok(failed(why.into()));
        }
        let mut proposed = judged.proposed();
        proposed.may_remember &= settings.approvals.remember_from_client;
        if !self.modern {
            // Older revisions: asked now, inside this call, as the host asks its person.
            let person = ClientPerson::of(self.context, asking, &self.caller);
            let approval = person::approve_call(&person, trace, &proposed, why).await;
            if let (true, Some(approver)) = (approval.yes, Approver::of(approval.by)) {
                let _ = self.approved.set(approver);
            }
            let admitted = self.settle(&p, judged, Some(approval)).await;
            return self.admitted(admitted).await;
        }
        if let Asking::Page(page) = &asking {
            let why = why.to_owned();
            return self.ask_on_page(page, judged, &why).await;
        }
        trace.add(
            Who::Host,
            format!("asked {} in their client: {why}", self.caller),
            json!({"decision": "ask", "tool": self.call.name, "caller": self.caller}),
        );
        let form = confirm::approval_form(&proposed.request(why));
        let state = self
            .gw
            .inner
            .confirmations
            .approve(&self.bound(&self.fingerprint()));
        let mut requests = InputRequests::new();
        requests.insert(
            APPROVE_KEY.into(),
            InputRequest::Elicitation(ElicitRequest::new(form)),
        );
        self.asked(AskedIn::Client);
        Ok(InputRequiredResult::new(Some(requests), Some(state)).into())
    }

    async fn admitted(&self, admitted: Admission) -> Result<CallToolResponse, ErrorData> {
        match admitted {
            Admission::Refused { text, .. } => Ok(failed(text)),
            Admission::Send {
                tool, arguments, ..
            } => {
                // A stateless server may take answers sent without a question (SEP-2322):
                // a first round's are passed on as they came. A later round's answers
                // are the gateway's form, never sent on.
                let unsolicited =
                    (self.first_round && !self.responses.is_empty()).then(|| Answered {
                        responses: self.responses.clone(),
                        state: None,
                    });
                self.send(*tool, arguments, unsolicited, 0).await
            }
        }
    }

    /// Send an admitted call (or its next round) to its server: its end, after the
    /// `afterCall` hook, or the server's questions for the caller's client.
    async fn send(
        &self,
        tool: CatalogTool,
        arguments: JsonObject,
        answered: Option<Answered>,
        rounds: usize,
    ) -> Result<CallToolResponse, ErrorData> {
        let host = self.gw.host();
        let Some(conn) = tool.origin.server().and_then(|s| host.connection(s)) else {
            return Ok(failed("the tool's server is not connected".into()));
        };
        // The call behind is made anew on the servers file's connection: nothing of the
        // client's request (its headers, its token, its `_meta`) is passed on but the
        // trace it belongs to, under a span of the gateway's.
        let progress = ToCaller::of(self.context, self.gw.session_log_level());
        let behind = self.span_behind(conn, &tool.tool.name);
        let meta = self.server_meta(&progress, &behind);
        let caps = declared(self.context, conn);
        if self.modern {
            let sending = held::Sending {
                server: conn.name.to_string(),
                wire_name: tool.tool.name.to_string(),
                arguments: arguments.clone(),
                meta,
                relay: dispatch::Relay::default(),
                answered,
            };
            return self
                .send_modern(tool, sending, rounds, progress, caps, &behind)
                .await;
        }
        // An older client is asked inside its call: it answers the server's questions
        // that no round carries (a task's, an older server's).
        let person = Arc::new(self.person()) as Arc<dyn Person>;
        let tasks = takes_tasks(self.context);
        let to_send = dispatch::Call {
            conn,
            wire_name: &tool.tool.name,
            arguments: arguments.clone(),
            meta,
            relay: Some(progress.relay(caps, tasks, Some(person), None)),
        };
        let ended = self.rounds_for_older(to_send, self.gw.limits()).await;
        progress.finish().await;
        match ended {
            Ok(end) => {
                behind.ended(&end, |r| r.is_error == Some(true));
                let p = self.proposal(None);
                shaped(self.gw, &p, &tool, &arguments, end)
                    .await
                    .map(Into::into)
            }
            Err(refused) => Ok(refused),
        }
    }

    /// A 2026-07-28 caller's round: the server's end, its questions relayed, its task
    /// handed on; or, when an older server asks in the middle of the call, the call held
    /// on this replica and the question relayed as a round of the gateway's own
    /// (`call/held.rs`).
    async fn send_modern(
        &self,
        tool: CatalogTool,
        mut sending: held::Sending,
        rounds: usize,
        progress: ToCaller,
        caps: rmcp::model::ClientCapabilities,
        behind: &telemetry::Span,
    ) -> Result<CallToolResponse, ErrorData> {
        let (person, questions) = held::HeldPerson::new();
        // A question only a form can answer is held for a client that shows one; for any
        // other it is declined, as nobody's.
        let (person, time) = match can_ask(self.context) {
            true => (Some(person.clone() as Arc<dyn Person>), Some(person.time())),
            false => (None, None),
        };
        sending.relay = progress.relay(caps, takes_tasks(self.context), person, time);
        let arguments = sending.arguments.clone();
        let stop = tokio_util::sync::CancellationToken::new();
        let round = self.gw.round(sending, stop.clone());
        let asking = held::Asking {
            questions,
            ending: self.ending(&tool, &arguments),
        };
        let relayed = match self.gw.drive(round, stop, asking, &self.context.ct).await {
            // Progress after the question has no request to reach the caller by.
            held::First::Held { id, question } => return Ok(self.ask_held(&id, 1, question)),
            held::First::Relayed(relayed) => relayed,
        };
        progress.finish().await;
        let end = match relayed {
            Relayed::Ended(done) => {
                behind.ended(&done.end, |r| r.is_error == Some(true));
                done.end
            }
            Relayed::Asks(asked) => return Ok(self.relay(asked, &tool, rounds + 1)),
            Relayed::Task(created) => {
                let started = Started {
                    caller: &self.caller,
                    tool: &tool,
                    arguments: &arguments,
                    trace_id: &self.trace_id,
                    step: self.step,
                };
                return Ok(self.gw.hand_task(started, *created, self.context).await);
            }
        };
        let p = self.proposal(None);
        shaped(self.gw, &p, &tool, &arguments, end)
            .await
            .map(Into::into)
    }

    /// What this call's end goes through if it is held.
    fn ending(&self, tool: &CatalogTool, arguments: &JsonObject) -> held::Ending {
        held::Ending {
            call: self.call.clone(),
            trace_id: self.trace_id.clone(),
            step: self.step,
            caller: self.caller.clone(),
            tool: tool.clone(),
            arguments: arguments.clone(),
        }
    }

    /// An older client's call, round by round: each question of the server (a form,
    /// sampling, roots) asked of the client inside the call as a request of its own, and
    /// the answers sent back in the next round. The gateway answers none itself.
    async fn rounds_for_older(
        &self,
        call: dispatch::Call<'_>,
        limits: dispatch::CallLimits,
    ) -> Result<CallEnd, CallToolResponse> {
        let (trace, stop) = (self.gw.host().trace(), &self.context.ct);
        let server = call.conn.name.clone();
        let person = self.person();
        let mut answered = None;
        for _ in 0..=limits.max_input_rounds {
            let round = dispatch::Call {
                conn: call.conn,
                wire_name: call.wire_name,
                arguments: call.arguments.clone(),
                meta: call.meta.clone(),
                relay: call.relay.clone(),
            };
            let asked = match dispatch::call_tool_round(round, answered, limits, trace, stop).await
            {
                Relayed::Ended(done) => return Ok(done.end),
                Relayed::Asks(asked) => asked,
                // An older client declares no tasks, so none is handed back to it.
                Relayed::Task(_) => {
                    return Err(failed(format!(
                        "{server} handed back a task this client cannot take"
                    )));
                }
            };
            if let Some(why) = undeclared(self.context, &asked) {
                return Err(failed(format!(
                    "{server} asks {why}, which this client did not declare"
                )));
            }
            let mut responses = InputResponses::new();
            for (key, request) in asked.input_requests.iter().flatten() {
                match person.relay(request).await {
                    Some(answer) => responses.insert(key.clone(), answer),
                    None => {
                        return Err(failed(format!(
                            "{server} asked the client for input ({key}) and no answer came"
                        )));
                    }
                };
            }
            answered = Some(Answered {
                responses,
                state: asked.request_state,
            });
        }
        Err(failed(format!(
            "{server} asked for input more than {} times",
            limits.max_input_rounds
        )))
    }

    /// A server's questions, passed to the caller's client with the server's state
    /// sealed inside the gateway's: only questions for the person are relayed.
    fn relay(
        &self,
        asked: InputRequiredResult,
        tool: &CatalogTool,
        rounds: usize,
    ) -> CallToolResponse {
        let server = tool.origin.label();
        let max = self.gw.limits().max_input_rounds;
        if rounds > max {
            return failed(format!("{server} asked for input more than {max} times"));
        }
        if let Some(why) = undeclared(self.context, &asked) {
            return failed(format!(
                "{server} asks {why}, which this client did not declare"
            ));
        }
        let sealed = Sealed::Relay {
            nonce: confirm::nonce(),
            server_state: asked.request_state,
            rounds,
            approved: self.approved.get().copied(),
        };
        let state = self
            .gw
            .inner
            .confirmations
            .seal(&sealed, &self.bound(&self.fingerprint()));
        InputRequiredResult::new(asked.input_requests, Some(state)).into()
    }
}

/// A call's end as its caller reads it: through the `afterCall` hook, into the caller's
/// flows, then [`finished`].
pub(super) async fn shaped(
    gw: &Gateway,
    p: &Proposal<'_>,
    tool: &CatalogTool,
    arguments: &JsonObject,
    end: CallEnd,
) -> Result<CallToolResult, ErrorData> {
    let (gate, trace) = (gw.host().gate(), gw.host().trace());
    let end = gate.after_call(p, tool, arguments, end, trace).await;
    if let Some(caller) = p.caller {
        gw.relayed(caller, tool, p.step, &end);
    }
    finished(end)
}
