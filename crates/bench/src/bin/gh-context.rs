//! `gh-context`: what tool definitions cost in the model's context, per model call.
//!
//!     gh-context --built-in GATEHOUSE_EXE     the built-in servers (support, cmdb, tickets)
//!     gh-context --config FILE                any servers file
//!
//! Starts the host of the `gatehouse` library on the servers, records every `tools/list`
//! answer as it came over the wire, and compares it with `catalog.model_tools()` as a
//! chat-completions request carries it (`{"type":"function","function":{name,
//! description,parameters}}`, exactly as the OpenAI-compatible model sends it). It also
//! checks that every tool's parameters are its `inputSchema`, unchanged: no constraint the
//! model needs is lost. Prints one JSON object.
//!
//!     gh-context --catalog-memory N
//!
//! Where a large catalog's memory goes: the process's anonymous RSS after parsing N
//! generated tool definitions, after `Catalog::build` (which compiles every schema), and
//! after `model_tools()`.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Instant,
};

use gatehouse::{
    config::{Config, Identity},
    host::Host,
    person::{FixedAnswers, Terminal},
    trace::{Direction, Observer, Step, Trace, WireEvent},
};
use gatehouse_bench::Flags;
use serde_json::{Value, json};

/// Keeps the `tools/list` answers of every server.
#[derive(Default)]
struct Lists {
    /// (server, id) of each `tools/list` request sent.
    asked: Mutex<Vec<(String, String)>>,
    /// server → (answers' bytes on the wire, the tools arrays' bytes, tool count).
    answers: Mutex<HashMap<String, (usize, usize, usize)>>,
}

impl Observer for Lists {
    fn step(&self, _step: &Step) {}
    fn server_stderr(&self, _server: &str, _line: &str) {}
    fn wants_wire(&self) -> bool {
        true
    }
    fn wire(&self, event: &WireEvent) {
        let id = event.id.as_ref().map(Value::to_string).unwrap_or_default();
        let key = (event.server.clone(), id);
        match event.direction {
            Direction::ToServer if event.method.as_deref() == Some("tools/list") => {
                self.asked.lock().unwrap().push(key);
            }
            Direction::FromServer if event.kind == gatehouse::trace::MessageKind::Result => {
                let mut asked = self.asked.lock().unwrap();
                if let Some(i) = asked.iter().position(|k| *k == key) {
                    asked.remove(i);
                    let tools = &event.message["result"]["tools"];
                    let n = tools.as_array().map_or(0, Vec::len);
                    let mut answers = self.answers.lock().unwrap();
                    let entry = answers.entry(event.server.clone()).or_default();
                    entry.0 += event.bytes;
                    entry.1 += tools.to_string().len();
                    entry.2 += n;
                }
            }
            _ => {}
        }
    }
}

fn tokens(bytes: usize) -> usize {
    bytes.div_ceil(4)
}

/// This process's anonymous resident memory, in KiB.
fn anon_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn catalog_memory(n: usize) -> anyhow::Result<Value> {
    let start = anon_kb();
    let listings: Vec<(String, Vec<rmcp::model::Tool>)> = (0..n.div_ceil(50))
        .map(|s| {
            let tools = (s * 50..((s + 1) * 50).min(n))
                .map(|i| serde_json::from_value(gatehouse_bench::generated_tool(i)))
                .collect::<Result<Vec<_>, _>>()?;
            Ok::<_, serde_json::Error>((format!("s{s:02}"), tools))
        })
        .collect::<Result<_, _>>()?;
    let parsed = anon_kb();
    let catalog = gatehouse::catalog::Catalog::build(listings);
    let built = anon_kb();
    let specs = catalog.model_tools();
    let offered = anon_kb();
    Ok(json!({
        "tools": catalog.len(),
        "parsed_definitions_kb": parsed.saturating_sub(start),
        "catalog_build_kb": built.saturating_sub(parsed),
        "model_tools_kb": offered.saturating_sub(built),
        "model_tools": specs.len(),
    }))
}

fn main() -> anyhow::Result<()> {
    let flags = Flags::parse();
    if flags.has("catalog-memory") {
        println!(
            "{}",
            catalog_memory(flags.number("catalog-memory", 1_000)?)?
        );
        return Ok(());
    }
    let identity = Identity::default();
    let config = match (flags.get("config"), flags.get("built-in")) {
        (Some(path), _) => Config::load(std::path::Path::new(path), &identity)?,
        (None, Some(exe)) => {
            use gatehouse_servers::built_in;
            let launcher = built_in::launcher(std::path::Path::new(exe));
            Config::from_value(
                built_in::servers_file(&launcher),
                "built-in servers",
                &identity,
            )?
        }
        _ => anyhow::bail!("give --config FILE or --built-in GATEHOUSE_EXE"),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let out = runtime.block_on(async {
        let lists = Arc::new(Lists::default());
        let person = Arc::new(Terminal::new(FixedAnswers::default()));
        let start = Instant::now();
        let host = Host::start(&config, person, Trace::new(lists.clone())).await;
        let ready_ms = start.elapsed().as_secs_f64() * 1000.0;
        let (specs, identical, checked, host_tools) = {
            let catalog = host.catalog();
            let specs = catalog.model_tools();
            let by_name: HashMap<&str, &rmcp::model::JsonObject> = specs
                .iter()
                .map(|s| (s.name.as_str(), &*s.parameters))
                .collect();
            let (mut identical, mut checked, mut host_tools) = (true, 0, Vec::new());
            for t in catalog.tools() {
                let Some(params) = by_name.get(t.name.as_str()) else {
                    continue;
                };
                if lists.answers.lock().unwrap().contains_key(t.origin.label()) {
                    checked += 1;
                    identical &= **params == *t.tool.input_schema;
                } else {
                    host_tools.push(t.name.clone());
                }
            }
            (specs, identical, checked, host_tools)
        };
        host.shutdown().await;
        let request: Vec<Value> = specs
            .iter()
            .map(|s| {
                json!({"type": "function", "function": {
                    "name": s.name, "description": s.description, "parameters": s.parameters}})
            })
            .collect();
        let model_bytes = Value::Array(request).to_string().len();
        let plain_bytes = serde_json::to_string(&specs)?.len();
        let answers = lists.answers.lock().unwrap().clone();
        let mut servers: Vec<Value> = answers
            .iter()
            .map(|(name, (wire, defs, n))| {
                json!({"server": name, "tools": n, "wire_bytes": wire, "raw_defs_bytes": defs})
            })
            .collect();
        servers.sort_by(|a, b| a["server"].as_str().cmp(&b["server"].as_str()));
        let raw_defs: usize = answers.values().map(|a| a.1).sum();
        let wire: usize = answers.values().map(|a| a.0).sum();
        let tools: usize = answers.values().map(|a| a.2).sum();
        Ok::<_, anyhow::Error>(json!({
            "servers": servers,
            "tools": tools,
            "ready_ms": ready_ms,
            "raw_wire_bytes": wire,
            "raw_defs_bytes": raw_defs,
            "raw_defs_tokens": tokens(raw_defs),
            "model_tools": specs.len(),
            "host_tools": host_tools,
            "model_bytes": model_bytes,
            "model_tokens": tokens(model_bytes),
            "model_plain_bytes": plain_bytes,
            "parameters_checked": checked,
            "parameters_identical_to_input_schema": identical,
        }))
    })?;
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    println!("{out}");
    Ok(())
}
