//! `gh-callrate`: `tools/call` round trips through one stdio client.
//!
//!     gh-callrate --mode rmcp [--calls N] [--warmup W] [--concurrency C] [--tool NAME] -- SERVER ARGS...
//!     gh-callrate --mode host --config FILE [--calls N] [--warmup W]
//!
//! `rmcp`: rmcp's client, connected as Gatehouse connects (`Auto`, preferring 2026-07-28,
//! falling back to 2025-11-25), calls `get_ticket {"ticket_id": "T-30002"}` with
//! `call_tool_once`, from C concurrent callers sharing the one client. The server's stderr
//! is discarded; `--tool support__get_ticket` calls it through `gatehouse gateway`. `host`: the whole host path for each call, `Host::propose` of the
//! `gatehouse` library (policy, schema check, dispatch with its time limit, result shaping
//! and bounding, the trace), on the servers file's `support` server; one caller, as the
//! host runs calls. Prints one JSON object: calls per second and latency percentiles.
//! `--runtime current` runs the client on a current-thread runtime instead of the
//! multi-threaded one `gatehouse` uses (for the profile's what-if).
#![warn(clippy::too_many_lines)]

/// The same allocator, set up the same way, as the `gatehouse` binary whose client this
/// measures.
#[path = "../../../cli/src/allocator.rs"]
mod allocator;

use std::{
    process::Stdio,
    sync::Arc,
    time::{Duration, Instant},
};

use gatehouse::{
    config::{Config, Identity},
    host::Host,
    model::ToolCall,
    person::{FixedAnswers, Terminal},
    trace::{Quiet, Trace},
};
use gatehouse_bench::{Flags, extend, latency_stats};
use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt,
    model::{
        CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, Implementation,
        ProtocolVersion,
    },
    transport::TokioChildProcess,
};
use serde_json::{Value, json};

const TICKET: &str = "T-30002";

struct BenchClient;

impl ClientHandler for BenchClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("gh-callrate", "0.1.0"),
        )
    }
}

fn arguments() -> rmcp::model::JsonObject {
    json!({ "ticket_id": TICKET })
        .as_object()
        .cloned()
        .unwrap_or_default()
}

async fn rmcp_mode(flags: &Flags) -> anyhow::Result<Value> {
    let (calls, warmup) = (flags.number("calls", 2_000)?, flags.number("warmup", 200)?);
    let concurrency = flags.number("concurrency", 1)?.max(1);
    let (program, args) = flags
        .rest
        .split_first()
        .ok_or_else(|| anyhow::anyhow!("give the server command after --"))?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args).kill_on_drop(true);
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()?;
    let mode = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    };
    let client = Arc::new(BenchClient.serve_with_lifecycle(transport, mode).await?);
    let protocol = client
        .peer_info()
        .map(|i| i.protocol_version.to_string())
        .unwrap_or_default();
    // `--tool support__get_ticket` when the server is a gateway in front of support.
    let tool = flags.get("tool").unwrap_or("get_ticket").to_owned();
    let params = CallToolRequestParams::new(tool).with_arguments(arguments());
    // The first answer is checked, so a broken server is never timed.
    match client.call_tool_once(params.clone()).await? {
        CallToolResponse::Complete(r) if r.is_error != Some(true) => {
            let text = serde_json::to_string(&r.structured_content)?;
            anyhow::ensure!(text.contains("Hugo"), "unexpected answer: {text}");
        }
        other => anyhow::bail!("get_ticket did not succeed: {other:?}"),
    }
    for _ in 0..warmup {
        client.call_tool_once(params.clone()).await?;
    }
    let per_caller = calls.div_ceil(concurrency);
    let start = Instant::now();
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            let (client, params) = (client.clone(), params.clone());
            tokio::spawn(async move {
                let mut samples = Vec::with_capacity(per_caller);
                for _ in 0..per_caller {
                    let t = Instant::now();
                    client.call_tool_once(params.clone()).await?;
                    samples.push(t.elapsed());
                }
                Ok::<_, anyhow::Error>(samples)
            })
        })
        .collect();
    let mut samples: Vec<Duration> = Vec::new();
    for task in tasks {
        samples.extend(task.await??);
    }
    let wall = start.elapsed().as_secs_f64();
    if let Ok(client) = Arc::try_unwrap(client) {
        let mut client = client;
        let _ = client.close_with_timeout(Duration::from_secs(2)).await;
    }
    Ok(extend(
        json!({
            "mode": "rmcp",
            "protocol": protocol,
            "concurrency": concurrency,
            "calls": samples.len(),
            "wall_s": wall,
            "calls_per_s": samples.len() as f64 / wall,
        }),
        latency_stats(&mut samples),
    ))
}

async fn host_mode(flags: &Flags) -> anyhow::Result<Value> {
    let (calls, warmup) = (flags.number("calls", 2_000)?, flags.number("warmup", 200)?);
    let path = flags
        .get("config")
        .ok_or_else(|| anyhow::anyhow!("--mode host needs --config FILE"))?;
    let identity = Identity::default();
    let config = Config::load(std::path::Path::new(path), &identity)?;
    let person = Arc::new(Terminal::new(FixedAnswers::default()));
    let host = Host::start(&config, person, Trace::new(Arc::new(Quiet))).await;
    let call = ToolCall {
        id: "call_1".into(),
        name: "support__get_ticket".into(),
        arguments: json!({ "ticket_id": TICKET }).to_string(),
    };
    // One long turn, as a benchmark's calls are one question's.
    let mut turn = host.turn();
    let first = turn.propose(&call).await;
    anyhow::ensure!(
        first.text.contains("Hugo"),
        "the host did not run the call: {}",
        first.text
    );
    for i in 0..warmup {
        turn.propose(&call).await;
        if i % 256 == 0 {
            host.trace().take();
        }
    }
    let mut samples = Vec::with_capacity(calls);
    let start = Instant::now();
    for i in 0..calls {
        let t = Instant::now();
        let shown = turn.propose(&call).await;
        samples.push(t.elapsed());
        debug_assert!(shown.text.contains("Hugo"));
        if i % 256 == 0 {
            // The trace keeps every step of a turn; a benchmark's "turn" is long.
            host.trace().take();
        }
    }
    let wall = start.elapsed().as_secs_f64();
    drop(turn);
    host.shutdown().await;
    Ok(extend(
        json!({
            "mode": "host",
            "concurrency": 1,
            "calls": samples.len(),
            "wall_s": wall,
            "calls_per_s": samples.len() as f64 / wall,
        }),
        latency_stats(&mut samples),
    ))
}

fn main() -> anyhow::Result<()> {
    let flags = Flags::parse();
    // By default the same runtime as the `gatehouse` command: multi-threaded, one worker
    // per core. `--runtime current`: one thread, for the profile's what-if.
    let runtime = match flags.get("runtime").unwrap_or("multi") {
        "multi" => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?,
        "current" => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
        other => anyhow::bail!("unknown --runtime {other:?} (multi or current)"),
    };
    // On a worker, as `gatehouse` runs its commands (see its `on_thread_pool`).
    let work = runtime.spawn(async move {
        match flags.get("mode").unwrap_or("rmcp") {
            "rmcp" => rmcp_mode(&flags).await,
            "host" => host_mode(&flags).await,
            other => anyhow::bail!("unknown --mode {other:?} (rmcp or host)"),
        }
    });
    let out = runtime
        .block_on(work)
        .map_err(|e| anyhow::anyhow!("the benchmark's task failed: {e}"))??;
    runtime.shutdown_timeout(Duration::from_millis(500));
    println!("{out}");
    Ok(())
}
