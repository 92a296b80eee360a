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
#![warn(clippy::too_many_lines)]

mod operation;
mod plan;

use std::{
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

use operation::{Kind, Mix};
use plan::{Caller, Plan, Tally};

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

/// The load `flags` ask for, run: one JSON object of what it measured.
async fn load(flags: &Flags) -> anyhow::Result<Value> {
    let pids: Vec<String> = flags
        .get("pids")
        .map(|p| p.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    let plan = Arc::new(plan_of(flags).await?);
    let before = rss_all(&pids)?;
    warm_up(&plan).await?;
    let connected = rss_all(&pids)?;
    let tally = Arc::new(Mutex::new(Tally::default()));
    let started = Instant::now();
    let (mode, sent) = run(flags, &plan, &tally).await?;
    let wall = started.elapsed();
    let after = rss_all(&pids)?;
    let tally = std::mem::take(&mut *tally.lock().expect("no panic holding it"));
    for e in &tally.shown {
        eprintln!("gh-gateload: unexpected: {e}");
    }
    let memory: Vec<Value> = (0..pids.len())
        .map(
            |i| json!({"before_kb": before[i], "connected_kb": connected[i], "after_kb": after[i]}),
        )
        .collect();
    let mut out = json!({
        "mode": mode,
        "callers": plan.callers.len(),
        "replicas": plan.urls.len(),
    });
    if let (Some(out), Value::Object(measured)) = (out.as_object_mut(), report(tally, wall, sent)) {
        out.extend(measured);
        out.insert("memory".into(), json!(memory));
    }
    Ok(out)
}

/// The replicas, the callers and the mix the flags name, and the tool and resource the
/// gateway offers, found before the run.
async fn plan_of(flags: &Flags) -> anyhow::Result<Plan> {
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
    let mut plan = Plan::new(urls, callers, mix);
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
    Ok(plan)
}

/// Each caller connects and is known (one allowed call) before anything is timed. A few at
/// a time, so that what the gateway holds afterwards is the callers' connections and
/// state, not what a burst of them all at once left in its allocator.
async fn warm_up(plan: &Arc<Plan>) -> anyhow::Result<()> {
    let warm: Vec<_> = futures::stream::iter(0..plan.callers.len())
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
    Ok(())
}

/// The run itself, open loop (`--rate`) or closed (`--calls`): how it ran, and how many
/// operations were sent.
async fn run(
    flags: &Flags,
    plan: &Arc<Plan>,
    tally: &Arc<Mutex<Tally>>,
) -> anyhow::Result<(Value, usize)> {
    if let Some(rate) = flags.get("rate") {
        let rate: f64 = rate
            .parse()
            .ok()
            .filter(|r: &f64| r.is_finite() && *r > 0.0 && *r <= 1e6)
            .ok_or_else(|| anyhow::anyhow!("--rate {rate:?}: operations per second, up to 1e6"))?;
        let seconds = flags.number("seconds", 10)?;
        let sent = open_loop(plan, tally, rate, seconds).await;
        return Ok((json!({"open_loop_rate": rate, "seconds": seconds}), sent));
    }
    let calls = flags.number("calls", 10_000)?;
    let sent = closed_loop(plan, tally, calls).await;
    Ok((json!({"closed_loop_calls": calls}), sent))
}

/// What the run measured: throughput, decisions, latencies overall, of calls, by kind.
fn report(mut tally: Tally, wall: Duration, sent: usize) -> Value {
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
    json!({
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
    })
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
