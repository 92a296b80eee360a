//! `gh-gateload`: many MCP callers at once against `gatehouse gateway --http`, each with a
//! bearer token of its own, speaking 2026-07-28 (stateless `POST`s, `_meta` on each).
//!
//!     gh-gateload --write-tokens FILE --callers N
//!     gh-gateload --urls URL[,URL…] --callers N (--calls TOTAL | --rate R --seconds S)
//!                 [--mix allowed=80,refused=5,asked=5,list=5,read=5] [--pids PID,…]
//!
//! The first form writes the tokens file the gateway is started with (`--tokens FILE`):
//! caller i is `usr-load-NNNN` of `larkfield`, its token `gh-load-NNNN`. The second runs the
//! load and prints one JSON object. Each operation is one of a realistic mix on the support
//! desk, whose servers file (the one `bench/load_row.py` writes) decides by the ticket asked
//! for:
//!
//! - `allowed`: `support__get_ticket` of an ordinary ticket, which a rule allows;
//! - `refused`: of a `T-9…` ticket, which a rule denies (the answer is a tool error);
//! - `asked`: of `T-30001`, which a rule asks the person about: round 1 on the caller's
//!   replica answers `input_required`, round 2 (the person's yes) goes to the next replica
//!   in `--urls`, which opens the sealed state from the shared store;
//! - `list`: `tools/list`; `read`: `resources/read` of a policy document.
//!
//! Closed loop (`--calls`): each caller sends its next operation when the last one is
//! answered. Open loop (`--rate`): operation k is due at `start + k / rate` whoever is
//! free, and its latency counts from when it was due, so a slow answer is not hidden by
//! the requests it delayed (no coordinated omission). In flight at once is bounded by
//! [`MAX_IN_FLIGHT`]: an operation due past it is counted `shed`, never queued.
//!
//! Every answer is checked against what its kind expects; anything else is `unexpected`
//! and its first few are printed on stderr. `--pids` are the gateways' processes, whose
//! resident memory is read before the callers connect, once each has made one call and
//! holds its connection (`connected_kb`: memory per connected caller), and after the run.

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use futures::StreamExt;
use gatehouse_bench::{Flags, latency_stats};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Most operations in flight at once in the open loop; one due past it is shed.
const MAX_IN_FLIGHT: usize = 4_096;
/// How long one HTTP request may take before it counts as an error.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How many callers make their first call at once, before the run.
const WARM_AT_ONCE: usize = 16;
/// Most unexpected answers printed on stderr.
const MAX_SHOWN: usize = 5;
/// The revision spoken.
const PROTOCOL: &str = "2026-07-28";
/// Most callers one run may have.
const MAX_CALLERS: usize = 100_000;
/// The support desk's tool every call names, found in the list as the gateway names it
/// (`support__get_ticket`, or `get_ticket` with the server's own names).
const TOOL: &str = "get_ticket";

/// What one operation is, and so what its answer must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Allowed,
    Refused,
    Asked,
    List,
    Read,
}

impl Kind {
    const ALL: [Kind; 5] = [
        Kind::Allowed,
        Kind::Refused,
        Kind::Asked,
        Kind::List,
        Kind::Read,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Allowed => "allowed",
            Kind::Refused => "refused",
            Kind::Asked => "asked",
            Kind::List => "list",
            Kind::Read => "read",
        }
    }

    /// Is it a `tools/call`, and so a decision of the gateway's (a ledger line)?
    fn decides(self) -> bool {
        matches!(self, Kind::Allowed | Kind::Refused | Kind::Asked)
    }
}

/// The mix: each kind's share, spread evenly over the operations' sequence.
struct Mix {
    /// One entry per share point, in an order that interleaves the kinds.
    wheel: Vec<Kind>,
}

impl Mix {
    fn parse(text: &str) -> anyhow::Result<Mix> {
        let mut weights = Vec::new();
        for part in text.split(',').filter(|p| !p.is_empty()) {
            let (name, n) = part
                .split_once('=')
                .ok_or_else(|| anyhow::anyhow!("--mix {part:?}: expected KIND=WEIGHT"))?;
            let kind = Kind::ALL
                .into_iter()
                .find(|k| k.name() == name)
                .ok_or_else(|| {
                    anyhow::anyhow!("--mix: no kind {name:?} (allowed, refused, asked, list, read)")
                })?;
            let n: usize = n
                .parse()
                .ok()
                .filter(|n| *n <= 1_000)
                .ok_or_else(|| anyhow::anyhow!("--mix {part:?}: a weight is 0 to 1000"))?;
            weights.push((kind, n));
        }
        let total: usize = weights.iter().map(|(_, n)| n).sum();
        if total == 0 {
            anyhow::bail!("--mix {text:?} has no operation");
        }
        // Smooth weighted round robin: each kind comes as evenly spaced as its share allows.
        let mut credit = vec![0i64; weights.len()];
        let mut wheel = Vec::with_capacity(total);
        for _ in 0..total {
            for (c, (_, n)) in credit.iter_mut().zip(&weights) {
                *c += *n as i64;
            }
            let best = (0..weights.len()).max_by_key(|&i| (credit[i], -(i as i64)));
            let best = best.expect("at least one kind");
            credit[best] -= total as i64;
            wheel.push(weights[best].0);
        }
        Ok(Mix { wheel })
    }

    fn kind(&self, k: usize) -> Kind {
        self.wheel[k % self.wheel.len()]
    }
}

fn token(i: usize) -> String {
    format!("gh-load-{i:04}")
}

fn write_tokens(path: &str, callers: usize) -> anyhow::Result<()> {
    let holders: Vec<Value> = (0..callers)
        .map(|i| {
            let digest = Sha256::digest(token(i).as_bytes());
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            json!({"user": format!("usr-load-{i:04}"), "tenant": "larkfield", "sha256": hex})
        })
        .collect();
    std::fs::write(path, serde_json::to_vec_pretty(&holders)?)?;
    Ok(())
}

/// One caller: its token, its own connections, its replica.
struct Caller {
    http: reqwest::Client,
    token: String,
    url: usize,
}

/// What the run needs to send an operation.
struct Plan {
    urls: Vec<String>,
    callers: Vec<Caller>,
    mix: Mix,
    /// The tool's name as the gateway offers it, found before the run.
    tool: String,
    /// A policy document's URI, found before the run (none when the gateway passes no
    /// resources on: with more than one server, or with prefixed names).
    resource: Option<String>,
    ids: AtomicUsize,
}

/// What one operation came to.
enum Outcome {
    Expected,
    Unexpected(String),
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "gh-gateload", "version": "0.1.0"},
    })
}

impl Plan {
    /// One JSON-RPC request; its answer's message (JSON, or the first SSE `data:` that is
    /// an answer).
    async fn post(
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
    async fn run(&self, k: usize, c: usize) -> (Kind, Outcome) {
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

    async fn send(&self, kind: Kind, who: &Caller) -> Result<(), String> {
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
struct Tally {
    times: BTreeMap<Kind, Vec<Duration>>,
    unexpected: usize,
    shown: Vec<String>,
    shed: usize,
}

impl Tally {
    fn add(&mut self, kind: Kind, outcome: Outcome, took: Duration) {
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

fn rss_kb(pid: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no VmRSS for {pid}"))
}

fn rss_all(pids: &[String]) -> anyhow::Result<Vec<u64>> {
    pids.iter().map(|p| rss_kb(p)).collect()
}

async fn load(flags: &Flags) -> anyhow::Result<Value> {
    let urls: Vec<String> = flags
        .get("urls")
        .ok_or_else(|| anyhow::anyhow!("give --urls URL[,URL…]"))?
        .split(',')
        .map(str::to_owned)
        .collect();
    let n = flags.number("callers", 16)?;
    if n == 0 || n > MAX_CALLERS {
        anyhow::bail!("--callers is 1 to {MAX_CALLERS}");
    }
    let mix = Mix::parse(
        flags
            .get("mix")
            .unwrap_or("allowed=80,refused=5,asked=5,list=5,read=5"),
    )?;
    let pids: Vec<String> = flags
        .get("pids")
        .map(|p| p.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    let callers = (0..n)
        .map(|i| {
            Ok(Caller {
                http: reqwest::Client::builder()
                    .http1_only()
                    .timeout(REQUEST_TIMEOUT)
                    .build()?,
                token: token(i),
                url: i % urls.len(),
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut plan = Plan {
        urls,
        callers,
        mix,
        tool: String::new(),
        resource: None,
        ids: AtomicUsize::new(1),
    };
    let first = &plan.callers[0];
    let tools = plan.post(first, 0, "tools/list", None, json!({})).await;
    let tools = tools.map_err(anyhow::Error::msg)?;
    plan.tool = tools["result"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .find(|n| {
            n.strip_suffix(TOOL)
                .is_some_and(|p| p.is_empty() || p.ends_with("__"))
        })
        .ok_or_else(|| anyhow::anyhow!("the gateway offers no {TOOL}: {tools}"))?
        .to_owned();
    let listed = plan.post(first, 0, "resources/list", None, json!({})).await;
    let listed = listed.map_err(anyhow::Error::msg)?;
    plan.resource = listed["result"]["resources"][0]["uri"]
        .as_str()
        .map(str::to_owned);
    if plan.resource.is_none() && plan.mix.wheel.contains(&Kind::Read) {
        anyhow::bail!(
            "the gateway passes no resource on (it does with one server and its own names, \"gatewayNames\": \"unprefixed\"): leave read out of --mix"
        );
    }
    let plan = Arc::new(plan);
    let before = rss_all(&pids)?;
    // Each caller connects and is known (one allowed call) before anything is timed.
    // A few at a time, so that what the gateway holds afterwards is the callers'
    // connections and state, not what a burst of them all at once left in its allocator.
    let warm: Vec<_> = futures::stream::iter(0..n)
        .map(|c| {
            let plan = plan.clone();
            async move { plan.send(Kind::Allowed, &plan.callers[c]).await }
        })
        .buffer_unordered(WARM_AT_ONCE)
        .collect()
        .await;
    if let Some(Err(e)) = warm.into_iter().find(Result::is_err) {
        anyhow::bail!("a caller's first call failed: {e}");
    }
    let connected = rss_all(&pids)?;
    let tally = Arc::new(Mutex::new(Tally::default()));
    let started = Instant::now();
    let (mode, sent) = if let Some(rate) = flags.get("rate") {
        let rate: f64 = rate
            .parse()
            .ok()
            .filter(|r: &f64| r.is_finite() && *r > 0.0 && *r <= 1e6)
            .ok_or_else(|| anyhow::anyhow!("--rate {rate:?}: operations per second, up to 1e6"))?;
        let seconds = flags.number("seconds", 10)?;
        (
            json!({"open_loop_rate": rate, "seconds": seconds}),
            open_loop(&plan, &tally, rate, seconds).await,
        )
    } else {
        let calls = flags.number("calls", 10_000)?;
        (
            json!({"closed_loop_calls": calls}),
            closed_loop(&plan, &tally, calls).await,
        )
    };
    let wall = started.elapsed();
    let after = rss_all(&pids)?;
    let mut tally = std::mem::take(&mut *tally.lock().expect("no panic holding it"));
    for e in &tally.shown {
        eprintln!("gh-gateload: unexpected: {e}");
    }
    let secs = wall.as_secs_f64();
    let decisions: usize = Kind::ALL
        .iter()
        .filter(|k| k.decides())
        .map(|k| tally.times.get(k).map_or(0, Vec::len))
        .sum();
    let mut all: Vec<Duration> = tally.times.values().flatten().copied().collect();
    let mut calls: Vec<Duration> = Kind::ALL
        .iter()
        .filter(|k| k.decides() && **k != Kind::Asked)
        .flat_map(|k| tally.times.get(k).into_iter().flatten().copied())
        .collect();
    let kinds: serde_json::Map<String, Value> = tally
        .times
        .iter_mut()
        .map(|(k, t)| (k.name().to_owned(), latency_stats(t)))
        .collect();
    let memory: Vec<Value> = (0..pids.len())
        .map(
            |i| json!({"before_kb": before[i], "connected_kb": connected[i], "after_kb": after[i]}),
        )
        .collect();
    Ok(json!({
        "mode": mode,
        "callers": n,
        "replicas": plan.urls.len(),
        "seconds": (secs * 1000.0).round() / 1000.0,
        "operations": sent,
        "decisions": decisions,
        "decisions_per_s": (decisions as f64 / secs).round(),
        "operations_per_s": (sent as f64 / secs).round(),
        "unexpected": tally.unexpected,
        "shed": tally.shed,
        "latency": p999(&mut all),
        "call_latency": p999(&mut calls),
        "kinds": kinds,
        "memory": memory,
    }))
}

/// Latency figures with the 99.9th percentile beside the rest.
fn p999(samples: &mut [Duration]) -> Value {
    let mut stats = latency_stats(samples);
    if let Some(n) = (!samples.is_empty()).then_some(samples.len()) {
        let at = samples[((n as f64 * 0.999).ceil() as usize).clamp(1, n) - 1];
        stats["p999_us"] = json!((at.as_secs_f64() * 1e7).round() / 10.0);
    }
    stats
}

/// Each caller sends its next operation when its last is answered, until `calls` are sent.
async fn closed_loop(plan: &Arc<Plan>, tally: &Arc<Mutex<Tally>>, calls: usize) -> usize {
    let next = Arc::new(AtomicUsize::new(0));
    let workers = (0..plan.callers.len()).map(|c| {
        let (plan, tally, next) = (plan.clone(), tally.clone(), next.clone());
        tokio::spawn(async move {
            loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= calls {
                    break;
                }
                let start = Instant::now();
                let (kind, outcome) = plan.run(k, c).await;
                let took = start.elapsed();
                tally
                    .lock()
                    .expect("no panic holding it")
                    .add(kind, outcome, took);
            }
        })
    });
    futures::future::join_all(workers).await;
    calls
}

/// Operation k is due at `start + k / rate`, sent by caller `k mod callers` whether or not
/// that caller is busy; its time counts from when it was due.
async fn open_loop(
    plan: &Arc<Plan>,
    tally: &Arc<Mutex<Tally>>,
    rate: f64,
    seconds: usize,
) -> usize {
    let total = (rate * seconds as f64).round() as usize;
    let start = tokio::time::Instant::now();
    let in_flight = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for k in 0..total {
        let due = start + Duration::from_secs_f64(k as f64 / rate);
        tokio::time::sleep_until(due).await;
        if in_flight.load(Ordering::Relaxed) >= MAX_IN_FLIGHT {
            tally.lock().expect("no panic holding it").shed += 1;
            continue;
        }
        in_flight.fetch_add(1, Ordering::Relaxed);
        let (plan, tally, in_flight) = (plan.clone(), tally.clone(), in_flight.clone());
        let c = k % plan.callers.len();
        tasks.spawn(async move {
            let (kind, outcome) = plan.run(k, c).await;
            let took = due.elapsed();
            in_flight.fetch_sub(1, Ordering::Relaxed);
            tally
                .lock()
                .expect("no panic holding it")
                .add(kind, outcome, took);
        });
        // Reap the finished, so the set holds only what is in flight.
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    total
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let flags = Flags::parse();
    if let Some(path) = flags.get("write-tokens") {
        return write_tokens(path, flags.number("callers", 64)?.clamp(1, MAX_CALLERS));
    }
    let out = load(&flags).await?;
    println!("{out}");
    Ok(())
}
