//! What a run needs to send an operation (`Plan`: the replicas, the callers, the mix, the
//! tool and resource found before the run), how each is sent and its answer checked, and
//! what the run measured (`Tally`).

use std::{
    collections::BTreeMap,
    sync::atomic::{AtomicUsize, Ordering},
    time::Duration,
};

use serde_json::{Value, json};

use crate::{
    MAX_SHOWN, PROTOCOL,
    operation::{Kind, Mix, Outcome},
};

/// One caller: its token, its own connections, its replica.
pub(crate) struct Caller {
    pub(crate) http: reqwest::Client,
    pub(crate) token: String,
    pub(crate) url: usize,
}

/// What the run needs to send an operation.
pub(crate) struct Plan {
    pub(crate) urls: Vec<String>,
    pub(crate) callers: Vec<Caller>,
    pub(crate) mix: Mix,
    /// The tool's name as the gateway offers it, found before the run.
    pub(crate) tool: String,
    /// A policy document's URI, found before the run (none when the gateway passes no
    /// resources on: with more than one server, or with prefixed names).
    pub(crate) resource: Option<String>,
    ids: AtomicUsize,
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "gh-gateload", "version": "0.1.0"},
    })
}

impl Plan {
    /// A plan whose tool and resource are still to be found.
    pub(crate) fn new(urls: Vec<String>, callers: Vec<Caller>, mix: Mix) -> Plan {
        Plan {
            urls,
            callers,
            mix,
            tool: String::new(),
            resource: None,
            ids: AtomicUsize::new(1),
        }
    }

    /// One JSON-RPC request; its answer's message (JSON, or the first SSE `data:` that is
    /// an answer).
    pub(crate) async fn post(
        &self,
        who: &Caller,
        url: usize,
        method: &str,
        name: Option<&str>,
        mut params: Value,
    ) -> Result<Value, String> {
        params["_meta"] = meta();
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut req = who
            .http
            .post(&self.urls[url])
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", PROTOCOL)
            .header("Mcp-Method", method)
            .bearer_auth(&who.token)
            .body(body.to_string());
        if let Some(name) = name {
            req = req.header("Mcp-Name", name);
        }
        let answer = req
            .send()
            .await
            .map_err(|e| format!("{method}: {}", chain(&e)))?;
        let status = answer.status();
        let text = answer.text().await.map_err(|e| format!("{method}: {e}"))?;
        let message = std::iter::once(text.as_str())
            .chain(text.lines().filter_map(|l| l.strip_prefix("data:")))
            .filter_map(|t| serde_json::from_str::<Value>(t.trim()).ok())
            .find(|m| m.get("result").is_some() || m.get("error").is_some());
        match message {
            Some(m) if status.is_success() => Ok(m),
            _ => Err(format!("{method}: HTTP {status}: {}", shown(&text))),
        }
    }

    fn ticket_call(&self, ticket: &str) -> Value {
        json!({"name": self.tool, "arguments": {"ticket_id": ticket}})
    }

    /// Run operation `k` as caller `c`.
    pub(crate) async fn run(&self, k: usize, c: usize) -> (Kind, Outcome) {
        let kind = self.mix.kind(k);
        let who = &self.callers[c];
        let outcome = match self.send(kind, who).await {
            Ok(()) => Outcome::Expected,
            Err(e) => Outcome::Unexpected(e),
        };
        (kind, outcome)
    }

    /// `tools/call` of the ticket tool with `call` (its name and arguments, and a later
    /// round's state and answers), as `who` on replica `url`: its result.
    async fn call(&self, who: &Caller, url: usize, call: Value) -> Result<Value, String> {
        let answer = self.post(who, url, "tools/call", Some(&self.tool), call);
        result(answer.await?)
    }

    pub(crate) async fn send(&self, kind: Kind, who: &Caller) -> Result<(), String> {
        let ran = |r: &Value| r["isError"] != json!(true) && complete(r);
        match kind {
            Kind::Allowed => {
                let r = self.call(who, who.url, self.ticket_call("T-30002")).await?;
                if !ran(&r) {
                    return Err(format!("allowed call not run: {}", shown(&r)));
                }
            }
            Kind::Refused => {
                let r = self.call(who, who.url, self.ticket_call("T-90001")).await?;
                if r["isError"] != json!(true) {
                    return Err(format!("denied call not refused: {}", shown(&r)));
                }
            }
            Kind::Asked => {
                let mut call = self.ticket_call("T-30001");
                let asked = self.call(who, who.url, call.clone()).await?;
                let Some(state) = asked.get("requestState").filter(|_| !complete(&asked)) else {
                    return Err(format!("asked call did not ask: {}", shown(&asked)));
                };
                call["requestState"] = state.clone();
                call["inputResponses"] = json!({
                    "gatehouse.approve": {"action": "accept", "content": {"approve": true}}
                });
                let other = (who.url + 1) % self.urls.len();
                let r = self.call(who, other, call).await?;
                if !ran(&r) {
                    return Err(format!("approved call not run: {}", shown(&r)));
                }
            }
            Kind::List => {
                let r = result(
                    self.post(who, who.url, "tools/list", None, json!({}))
                        .await?,
                )?;
                if r["tools"].as_array().is_none_or(Vec::is_empty) {
                    return Err(format!("no tools listed: {}", shown(&r)));
                }
            }
            Kind::Read => {
                let uri = self.resource.as_deref().ok_or("no resource to read")?;
                let params = json!({"uri": uri});
                let r = result(
                    self.post(who, who.url, "resources/read", Some(uri), params)
                        .await?,
                )?;
                if r["contents"].as_array().is_none_or(Vec::is_empty) {
                    return Err(format!("nothing read: {}", shown(&r)));
                }
            }
        }
        Ok(())
    }
}

/// An error and its causes, as one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text = format!("{text}: {c}");
        cause = c.source();
    }
    text
}

/// Most characters of an answer quoted in an error.
const MAX_SHOWN_CHARS: usize = 300;

/// An answer as an error quotes it: its first characters, control characters escaped
/// (it goes to a terminal).
fn shown(answer: &dyn std::fmt::Display) -> String {
    let text = answer.to_string();
    let head: String = text.chars().take(MAX_SHOWN_CHARS).collect();
    head.escape_debug().to_string()
}

/// A JSON-RPC answer's result, or its error as text.
fn result(message: Value) -> Result<Value, String> {
    match message.get("result") {
        Some(r) => Ok(r.clone()),
        None => Err(format!("an error: {}", shown(&message["error"]))),
    }
}

/// Is a result the call's end (not a question for the person)?
fn complete(r: &Value) -> bool {
    r.get("resultType").and_then(Value::as_str) != Some("input_required")
}

/// What the run measured, by kind.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) times: BTreeMap<Kind, Vec<Duration>>,
    pub(crate) unexpected: usize,
    pub(crate) shown: Vec<String>,
    pub(crate) shed: usize,
}

impl Tally {
    pub(crate) fn add(&mut self, kind: Kind, outcome: Outcome, took: Duration) {
        match outcome {
            Outcome::Expected => self.times.entry(kind).or_default().push(took),
            Outcome::Unexpected(e) => {
                self.unexpected += 1;
                if self.shown.len() < MAX_SHOWN {
                    self.shown.push(format!("{}: {e}", kind.name()));
                }
            }
        }
    }
}
