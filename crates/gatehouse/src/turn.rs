//! One question: ask the model, decide on each proposed call, call, read the result, and
//! ask the model again, until it answers or the step limit is reached.
//!
//! A [`Turn`] is made per question and holds what is that question's own: its trace id,
//! its calls, the resource URIs its results linked to. Calls in one decision run one after
//! the other, in the model's order, each through every check on its own; each answer goes
//! back with its call's id. One proposal reads as four stages: decide (the [`crate::gate`]:
//! policy, hook, person, ledger), send ([`crate::dispatch`]), the `afterCall` hook, shape
//! ([`crate::result`]).
//! What each model call is offered, and the host's `search_tools` and `read_result`, are
//! in `offered`; a call the person makes themselves, with no model, in `by_person`.

mod as_tasks;
mod by_person;
mod flowing;
mod offered;
#[cfg(test)]
mod tests;

pub use by_person::Called;
use by_person::Proposer;

use std::{collections::HashMap, time::Instant};

use rmcp::model::{JsonObject, RequestMetaObject};
use serde_json::{Value, json};

use crate::{
    catalog::{self, CatalogTool, HOST_LABEL, Origin, offer::Offer},
    connect::Connection,
    dispatch::{self, CallLimits},
    gate::{self, Admission},
    host::Host,
    model::{Message, Model, ToolCall, Usage},
    result::{self, ForModel, Kept, Shaped, Shaper, shape::round_ms},
    tasks::records,
    telemetry,
    trace::{ApprovedBy, Outcome, ToolEvent, Who, random_hex},
};

/// What one question keeps between its calls. Set aside and resumed by a caller that makes
/// calls of its own between questions (the lab's manual panel).
#[derive(Debug, Clone)]
pub struct TurnState {
    /// The question's trace: every call carries it, and the servers log it.
    trace_id: String,
    /// The question's number in the session.
    number: u64,
    /// Calls proposed so far (the `step` of each record).
    calls: u64,
    /// Resource URIs this turn's results mentioned, and the servers that mentioned each
    /// (in order): the only ones `read_resource` may read, from those servers only.
    links: HashMap<String, Vec<String>>,
    /// What the model calls of this question are offered (set when it is asked).
    offer: Option<Offer>,
    /// This turn's cut results, whole, for `read_result`.
    kept: Kept,
    /// The random tag around this turn's untrusted results (`flows.spotlight`).
    spotlight: String,
}

impl TurnState {
    /// A fresh state for question `number`.
    fn new(number: u64) -> TurnState {
        TurnState {
            trace_id: random_hex(16),
            number,
            calls: 0,
            links: HashMap::new(),
            offer: None,
            kept: Kept::default(),
            spotlight: random_hex(8),
        }
    }
}

/// One question of a host's session.
pub struct Turn<'h> {
    host: &'h Host,
    state: TurnState,
    /// The span of [`Turn::ask`] while it runs: the parent of its calls' spans.
    span: Option<telemetry::Span>,
}

/// How one proposed call ended, for the `host.tool_call` record.
struct Ended {
    shown: ForModel,
    outcome: Outcome,
    server: String,
    /// Who let it go to its server, when it was sent.
    approved_by: Option<ApprovedBy>,
    /// Did the server ask the person anything during the call?
    server_asked: bool,
    /// The task the server ran it as, if it did.
    task_id: Option<String>,
}

impl Ended {
    /// The end of a call that no task ran and nobody was asked about: the host's own
    /// tools, a resource read, a refusal.
    fn plain(shown: ForModel, outcome: Outcome, server: &str) -> Ended {
        Ended {
            shown,
            outcome,
            server: server.to_owned(),
            approved_by: None,
            server_asked: false,
            task_id: None,
        }
    }
}

impl Host {
    /// A new turn: a question, with a trace of its own.
    pub fn turn(&self) -> Turn<'_> {
        Turn {
            host: self,
            state: TurnState::new(self.next_turn()),
            span: None,
        }
    }

    /// Go on with a turn set aside (the lab's manual panel keeps one between its calls).
    pub fn resume(&self, state: TurnState) -> Turn<'_> {
        Turn {
            host: self,
            state,
            span: None,
        }
    }

    /// One question in a new turn: at most `maxSteps` model calls. The conversation is
    /// extended in place, so a chat keeps its history across turns.
    pub async fn ask(
        &self,
        model: &mut dyn Model,
        conversation: &mut Vec<Message>,
        question: &str,
    ) -> (String, Usage) {
        self.turn().ask(model, conversation, question).await
    }
}

impl Turn<'_> {
    /// This turn's trace id.
    pub fn trace_id(&self) -> &str {
        &self.state.trace_id
    }

    /// Set the turn aside, to resume it later with [`Host::resume`].
    pub fn into_state(self) -> TurnState {
        self.state
    }

    /// The loop: at most `maxSteps` model calls. The conversation is extended in place.
    /// One span (`invoke_agent`) covers it, with the tokens the model reported.
    pub async fn ask(
        &mut self,
        model: &mut dyn Model,
        conversation: &mut Vec<Message>,
        question: &str,
    ) -> (String, Usage) {
        self.span = Some(telemetry::Span::turn(&self.state.trace_id, &model.name()));
        let (answer, usage) = self.ask_steps(model, conversation, question).await;
        // Tokens as the model reported them; a model that reported none has no count.
        if let Some(span) = self.span.take()
            && usage.prompt_tokens + usage.completion_tokens > 0
        {
            span.set("gen_ai.usage.input_tokens", to_i64(usage.prompt_tokens));
            let output = to_i64(usage.completion_tokens);
            span.set("gen_ai.usage.output_tokens", output);
        }
        (answer, usage)
    }

    async fn ask_steps(
        &mut self,
        model: &mut dyn Model,
        conversation: &mut Vec<Message>,
        question: &str,
    ) -> (String, Usage) {
        let (host, trace) = (self.host, self.host.trace());
        if conversation.is_empty()
            && let Some(prompt) = &host.settings().system_prompt
        {
            conversation.push(Message::System(prompt.clone()));
        }
        self.report_ended_tasks(conversation).await;
        let prompt = host.settings().system_prompt.as_deref();
        flowing::question(host, self.state.number, prompt, question);
        conversation.push(Message::User(question.into()));
        host.refresh_catalog(self.state.number > 1).await;
        self.begin_offer(&model.name());
        let mut usage = Usage::default();
        let limit = host.settings().max_model_calls;
        for _ in 0..limit {
            // A server may have announced a new list during the last call.
            host.refresh_catalog(false).await;
            let tools = self.offered();
            flowing::definitions(host, &tools);
            let decision = match model.decide(conversation, &tools).await {
                Ok(d) => d,
                Err(e) => {
                    trace.add(
                        Who::Model,
                        format!("failed: {e}"),
                        json!({"error": e.to_string()}),
                    );
                    return (format!("The model could not answer: {e}"), usage);
                }
            };
            if let Some(u) = &decision.usage {
                usage.add(u);
            }
            if decision.tool_calls.is_empty() {
                let answer = decision.text.unwrap_or_default();
                trace.add(Who::Model, "final answer", json!({}));
                conversation.push(Message::Assistant {
                    text: Some(answer.clone()),
                    tool_calls: vec![],
                });
                return (answer, usage);
            }
            conversation.push(Message::Assistant {
                text: decision.text.clone(),
                tool_calls: decision.tool_calls.clone(),
            });
            for call in &decision.tool_calls {
                let shown = self.propose(call).await;
                conversation.push(Message::Tool {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    content: shown.text,
                    media: shown.media,
                });
            }
        }
        trace.add(
            Who::Host,
            format!("stopped: reached the step limit ({limit})"),
            json!({"max_steps": limit}),
        );
        let answer =
            format!("I stopped after {limit} steps without an answer; ask a narrower question.");
        (answer, usage)
    }

    /// One proposed call, from proposal to what the model reads: decide, ask, send, shape.
    /// Every call, refused or run, is one step of the turn's trace and one
    /// `host.tool_call` record.
    pub async fn propose(&mut self, call: &ToolCall) -> ForModel {
        self.proposed_by(call, Proposer::Model).await.shown
    }

    /// [`Turn::propose`] for a call proposed by `by`: the model, or the person themselves
    /// (named so in the trace and the ledger line). What it came to, and how it ended.
    async fn proposed_by(&mut self, call: &ToolCall, by: Proposer) -> Called {
        self.state.calls += 1;
        let no = self.state.calls;
        let start = Instant::now();
        let arguments = crate::trace::shown_arguments(&call.arguments);
        self.host.trace().add(
            by.who(),
            format!("{} {}", by.verb(), call.name),
            json!({"arguments": arguments}),
        );
        let restored = self.restored(call);
        let call = restored.as_ref().unwrap_or(call);
        let host = self.host;
        let proposal = gate::Proposal {
            call,
            session: host.session_id(),
            trace_id: &self.state.trace_id,
            step: no,
            caller: by.caller(),
            confirmation: None,
            // The person's own call is theirs whatever the context holds.
            flows: by.is_model().then(|| host.flows()),
        };
        let admitted = host
            .gate()
            .admit(
                &proposal,
                host.live(),
                host.settings(),
                host.person(),
                host.trace(),
            )
            .await;
        let ended = match admitted {
            Admission::Refused {
                text,
                outcome,
                server,
            } => self.ended(call, &text, outcome, &server),
            Admission::Send {
                tool,
                arguments,
                approved_by,
            } => Ended {
                approved_by: Some(approved_by),
                ..self.send(call, *tool, arguments, no, by).await
            },
        };
        // Asked whether to run it (a no ends as declined), or asked by the server.
        // A result of a call the model proposed and that was sent enters its context.
        let mut ended = ended;
        if by.is_model() && ended.approved_by.is_some() {
            self.entered(&call.name, &ended.server, no, &mut ended.shown);
        }
        let asked_user = ended.server_asked
            || ended.outcome == Outcome::Declined
            || ended.approved_by.is_some_and(ApprovedBy::asked);
        let arg_keys = arguments
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        self.host.trace().tool_event(&ToolEvent {
            session_id: self.host.session_id().to_owned(),
            trace_id: self.state.trace_id.clone(),
            step: no,
            server: ended.server,
            tool: call.name.clone(),
            arg_keys,
            outcome: ended.outcome,
            asked_user,
            approved_by: ended.approved_by,
            server_asked: ended.server_asked,
            ms: round_ms(start.elapsed()),
            result_bytes: ended.shown.text.len(),
            task_id: ended.task_id,
        });
        Called {
            shown: ended.shown,
            outcome: ended.outcome,
        }
    }

    /// Send and shape: the call on its server (or the host's own tool), its end turned
    /// into what the model reads. A cut result of the model's is kept for `read_result`;
    /// the person's call ends with its turn, so its note says to ask for less.
    async fn send(
        &mut self,
        call: &ToolCall,
        tool: CatalogTool,
        arguments: JsonObject,
        no: u64,
        by: Proposer,
    ) -> Ended {
        let Origin::Server(server) = &tool.origin else {
            return match tool.name.as_str() {
                catalog::SEARCH_TOOLS => self.search_tools(call, &arguments),
                catalog::READ_RESULT => self.read_result(call, &arguments),
                _ => self.read_resource(call, &arguments, no).await,
            };
        };
        self.offer_called(&tool);
        let Some(conn) = self.host.connection(server) else {
            let text = "the tool's server is no longer connected";
            return self.ended(call, text, Outcome::Error, server);
        };
        let span = self.span(conn, Some(&tool.tool.name), None);
        let to_send = dispatch::Call {
            conn,
            wire_name: &tool.tool.name,
            arguments: arguments.clone(),
            meta: Some(self.trace_meta(no, &span)),
            relay: None,
        };
        let stopper = self.host.stopper();
        let stop = stopper.begin();
        let started_ms = records::now_ms();
        let watch = dispatch::Watch {
            person: self.host.person(),
            trace: self.host.trace(),
            stop: &stop,
        };
        let done = dispatch::call_tool(to_send, self.limits(), watch).await;
        stopper.finish();
        span.ended(&done.end, |r| r.is_error == Some(true));
        drop(span);
        let proposal = gate::Proposal {
            call,
            session: self.host.session_id(),
            trace_id: &self.state.trace_id,
            step: no,
            caller: by.caller(),
            confirmation: None,
            flows: None,
        };
        let gate = self.host.gate();
        let end = gate
            .after_call(&proposal, &tool, &arguments, done.end, self.host.trace())
            .await;
        if let Some(seen) = &done.task {
            self.keep_task(call, &tool, no, started_ms, seen, &end);
        }
        let stem = self.stem(no);
        let shaper = match by {
            Proposer::Model => self.keeping_shaper(no),
            Proposer::Person => self.shaper(),
        };
        let Shaped {
            shown,
            outcome,
            links,
            whole,
        } = shaper.call(&call.name, &tool, end, round_ms(done.elapsed), &stem);
        self.remember(links, server);
        if let Some(whole) = whole {
            self.keep(offered::result_id(no), whole);
        }
        Ended {
            shown,
            outcome,
            server: server.to_string(),
            approved_by: None,
            server_asked: done.asked_user,
            task_id: done.task.map(|seen| seen.id),
        }
    }

    /// The host's own `read_resource`: only a URI this turn's results linked to, from a
    /// server that linked it, through the same time limit and Stop as any call.
    async fn read_resource(&mut self, call: &ToolCall, arguments: &JsonObject, no: u64) -> Ended {
        let uri = arguments
            .get("uri")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let asked = arguments.get("server").and_then(Value::as_str);
        let server = match self.linked_server(uri, asked) {
            Ok(server) => server,
            Err((why, decision)) => {
                self.host.trace().add(
                    Who::Host,
                    format!("refused: {why}"),
                    json!({"decision": decision, "uri": uri}),
                );
                return self.ended(call, &why, Outcome::Refused, HOST_LABEL);
            }
        };
        let Some(conn) = self.host.connection(&server) else {
            let text = "the resource's server is no longer connected";
            return self.ended(call, text, Outcome::Error, &server);
        };
        let stopper = self.host.stopper();
        let stop = stopper.begin();
        let span = self.span(conn, None, Some(uri));
        let meta = Some(self.trace_meta(no, &span));
        let trace = self.host.trace();
        let done = dispatch::read_resource(conn, uri, meta, self.limits(), trace, &stop).await;
        stopper.finish();
        span.ended(&done.end, |_| false);
        drop(span);
        let shaped = self.keeping_shaper(no).read(
            &call.name,
            &server,
            uri,
            done.end,
            round_ms(done.elapsed),
            &self.stem(no),
        );
        if let Some(whole) = shaped.whole {
            self.keep(offered::result_id(no), whole);
        }
        Ended::plain(shaped.shown, shaped.outcome, &server)
    }

    /// The server `read_resource` reads `uri` from: the one that linked it, or the one
    /// named when several did. The refusal and its decision word otherwise.
    fn linked_server(
        &self,
        uri: &str,
        asked: Option<&str>,
    ) -> Result<String, (String, &'static str)> {
        let linked_by = self.state.links.get(uri).cloned().unwrap_or_default();
        match (linked_by.as_slice(), asked) {
            ([], _) => Err((
                format!(
                    "{uri} did not appear in this turn's results; only linked resources can be read"
                ),
                "not_linked",
            )),
            (_, Some(asked)) if !linked_by.iter().any(|s| s == asked) => Err((
                format!(
                    "{uri} was linked by {}, not by {asked}",
                    linked_by.join(" and ")
                ),
                "not_linked",
            )),
            (_, Some(asked)) => Ok(asked.to_owned()),
            ([only], None) => Ok(only.clone()),
            (several, None) => Err((
                format!(
                    "{uri} was linked by {}: say which with \"server\"",
                    several.join(" and ")
                ),
                "ambiguous",
            )),
        }
    }

    /// Remember the resource URIs a result mentioned, so `read_resource` may follow them.
    /// The same URI from two servers names two resources: each is kept with its servers.
    fn remember(&mut self, links: Vec<String>, server: &str) {
        for uri in links {
            let links = &mut self.state.links;
            if links.len() >= result::MAX_LINKED_URIS && !links.contains_key(&uri) {
                break;
            }
            let servers = links.entry(uri).or_default();
            if !servers.iter().any(|s| s == server) {
                servers.push(server.to_owned());
            }
        }
    }

    /// The span of a request to `conn`'s server (a tool call, or a resource read), in
    /// this turn's trace, under the turn's span while [`Turn::ask`] runs.
    fn span(&self, conn: &Connection, tool: Option<&str>, uri: Option<&str>) -> telemetry::Span {
        let request = telemetry::Request {
            method: if tool.is_some() {
                "tools/call"
            } else {
                "resources/read"
            },
            tool,
            prompt: None,
            resource_uri: uri,
            protocol: Some(conn.protocol.as_str()),
            network: &conn.network,
        };
        telemetry::Span::client(&request, &self.state.trace_id, self.span.as_ref())
    }

    /// The `_meta` a call carries so servers can join their logs to the host's: a W3C
    /// `traceparent` (this turn's trace, the call's `span`) and the host's call number and
    /// session.
    fn trace_meta(&self, no: u64, span: &telemetry::Span) -> RequestMetaObject {
        use gatehouse_contract as contract;
        let mut meta = RequestMetaObject::new();
        meta.set_traceparent(span.traceparent());
        meta.insert(
            contract::TRACE_META_KEY.into(),
            json!({contract::SESSION_FIELD: self.host.session_id(), contract::STEP_FIELD: no}),
        );
        meta
    }

    fn limits(&self) -> CallLimits {
        CallLimits::of(self.host.settings())
    }

    fn shaper(&self) -> Shaper<'_> {
        let settings = self.host.settings();
        Shaper {
            trace: self.host.trace(),
            max_chars: settings.max_result_chars,
            media_for_model: settings.model_accepts_media,
            save_dir: self.host.save_dir(),
            keep_as: None,
        }
    }

    /// The shaper of call `no`, which keeps a cut result for `read_result`.
    fn keeping_shaper(&self, no: u64) -> Shaper<'_> {
        Shaper {
            keep_as: Some(offered::result_id(no)),
            ..self.shaper()
        }
    }

    /// How files saved from call `no` are named: by turn and call, so a later turn never
    /// overwrites an earlier one's.
    fn stem(&self, no: u64) -> String {
        format!("turn{}-step{no}", self.state.number)
    }

    /// A call that ended before anything came back: the model reads `error`.
    fn ended(&self, call: &ToolCall, error: &str, outcome: Outcome, server: &str) -> Ended {
        Ended::plain(self.shaper().error(&call.name, error), outcome, server)
    }
}

/// A count as a span attribute's integer.
fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
