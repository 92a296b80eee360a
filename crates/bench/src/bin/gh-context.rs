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
//! Then it asks the README's question (`--question TEXT` for another) with the scripted
//! model and records the bytes of definitions each model call carried: every definition
//! while they fit the tool budget, `search_tools` and what it found past it.
//!
//!     gh-context --catalog-memory N
//!     gh-context --catalog-memory-quality
//!
//! Where a large catalog's memory and build time go: the process's anonymous RSS after
//! parsing N generated tool definitions (row 6's) or the quality set's 1,000 (mostly
//! distinct schemas), after `Catalog::build` (each distinct schema compiled once to check
//! it, none kept), after `model_tools()`, and what compiling and keeping every schema at
//! build time (the host before) adds.
#![warn(clippy::too_many_lines)]

use gatehouse::config::ServerName;
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

/// `name` as a server's name (the benchmarks' names are all valid ones).
fn named(name: &str) -> anyhow::Result<ServerName> {
    ServerName::parse(name).map_err(|e| anyhow::anyhow!("server {name:?}: {e}"))
}

/// The generated catalog of row 6: `n` tools, 50 to a server.
fn generated_listings(n: usize) -> anyhow::Result<Vec<(ServerName, Vec<rmcp::model::Tool>)>> {
    (0..n.div_ceil(50))
        .map(|s| {
            let tools = (s * 50..((s + 1) * 50).min(n))
                .map(|i| serde_json::from_value(gatehouse_bench::generated_tool(i)))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((named(&format!("s{s:02}"))?, tools))
        })
        .collect()
}

/// The tool-search quality catalog (bench/catalog): 1,000 mostly distinct schemas.
fn quality_listings() -> anyhow::Result<Vec<(ServerName, Vec<rmcp::model::Tool>)>> {
    let servers =
        gatehouse_bench::catalog::quality_catalog(&gatehouse_bench::catalog::repo_root())?;
    servers
        .into_iter()
        .map(|(name, tools)| {
            let tools = tools
                .into_iter()
                .map(serde_json::from_value)
                .collect::<Result<Vec<_>, _>>()?;
            Ok((named(&name)?, tools))
        })
        .collect()
}

/// Where a large catalog's memory goes, and the time to build it, with schemas compiled
/// on first use (the host now: each distinct schema compiled once to check it, then
/// dropped) against every schema compiled and kept when the catalog is built (the host
/// before), in one process.
fn catalog_memory(
    start: u64,
    listings: Vec<(ServerName, Vec<rmcp::model::Tool>)>,
) -> anyhow::Result<Value> {
    use gatehouse::schema;
    let ms = |t: Instant| (t.elapsed().as_secs_f64() * 10_000.0).round() / 10.0;
    let parsed = anon_kb();
    let t = Instant::now();
    let catalog = gatehouse::catalog::Catalog::build(listings.clone());
    let build_ms = ms(t);
    let built = anon_kb();
    let specs = catalog.model_tools();
    let offered = anon_kb();
    // The host before: every input and output schema compiled and kept at build.
    let t = Instant::now();
    let mut eager = Vec::new();
    for (_, tools) in &listings {
        for tool in tools {
            eager.push(schema::compile_input(&tool.input_schema).ok());
            if let Some(output) = &tool.output_schema {
                eager.push(schema::compile_output(output).ok());
            }
        }
    }
    let eager_ms = ms(t);
    let eager_kb = anon_kb().saturating_sub(offered);
    let compiled = eager.iter().flatten().count();
    drop(eager);
    Ok(json!({
        "tools": catalog.len(),
        "parsed_definitions_kb": parsed.saturating_sub(start),
        "catalog_build_kb": built.saturating_sub(parsed),
        "catalog_build_ms": build_ms,
        "model_tools_kb": offered.saturating_sub(built),
        "model_tools": specs.len(),
        "eager_compiled_schemas": compiled,
        "eager_compiled_kb": eager_kb,
        "eager_compile_ms": eager_ms,
    }))
}

/// Wraps a model to record the bytes of tool definitions each of its calls carried, as
/// an OpenAI-compatible request writes them.
struct Recording {
    inner: Box<dyn gatehouse::model::Model>,
    calls: Arc<Mutex<Vec<(usize, usize)>>>,
}

impl gatehouse::model::Model for Recording {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn decide<'a>(
        &'a mut self,
        messages: &'a [gatehouse::model::Message],
        tools: &'a [gatehouse::catalog::ToolSpec],
    ) -> futures::future::BoxFuture<
        'a,
        Result<gatehouse::model::Decision, gatehouse::model::ModelError>,
    > {
        self.calls
            .lock()
            .unwrap()
            .push((tools.len(), request_bytes(tools)));
        self.inner.decide(messages, tools)
    }
}

/// The bytes of `tools` in a chat-completions request.
fn request_bytes(tools: &[gatehouse::catalog::ToolSpec]) -> usize {
    let request: Vec<Value> = tools
        .iter()
        .map(|s| {
            let mut function =
                json!({"name": s.name, "description": s.description, "parameters": s.parameters});
            if s.strict {
                function["strict"] = json!(true);
            }
            json!({"type": "function", "function": function})
        })
        .collect();
    Value::Array(request).to_string().len()
}

/// The servers file `--config` names, or the built-in servers of `--built-in EXE`.
fn config_of(flags: &Flags) -> anyhow::Result<Config> {
    let identity = Identity::default();
    match (flags.get("config"), flags.get("built-in")) {
        (Some(path), _) => Ok(Config::load(std::path::Path::new(path), &identity)?),
        (None, Some(exe)) => {
            use gatehouse_servers::built_in;
            let launcher = built_in::launcher(std::path::Path::new(exe));
            Ok(Config::from_value(
                built_in::servers_file(&launcher),
                "built-in servers",
                &identity,
            )?)
        }
        _ => anyhow::bail!("give --config FILE or --built-in GATEHOUSE_EXE"),
    }
}

/// What the model is offered, and whether each tool's parameters are its `inputSchema`
/// as its server listed it: the specs, whether all are identical, how many were checked,
/// and the host's own tools (no server listed them).
fn offered(
    host: &Host,
    lists: &Lists,
) -> (Vec<gatehouse::catalog::ToolSpec>, bool, usize, Vec<String>) {
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
}

/// Each server's `tools/list` as it came: its tools, its bytes on the wire and its
/// definitions' bytes, by server name; and the sums (wire, definitions, tools).
fn listed(lists: &Lists) -> (Vec<Value>, usize, usize, usize) {
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
    (servers, wire, raw_defs, tools)
}

/// Start the host on `config`, ask `question` through the scripted model, and say what
/// the tool definitions cost on the wire and in each model call.
async fn measure(config: &Config, question: &str) -> anyhow::Result<Value> {
    let lists = Arc::new(Lists::default());
    let person = Arc::new(Terminal::new(FixedAnswers::default()));
    let start = Instant::now();
    let host = Host::start(config, person, Trace::new(lists.clone())).await;
    let ready_ms = start.elapsed().as_secs_f64() * 1000.0;
    let (specs, identical, checked, host_tools) = offered(&host, &lists);
    // One question, as a model call after model call carries the definitions.
    let calls = Arc::new(Mutex::new(Vec::new()));
    let mut model = Recording {
        inner: Box::new(gatehouse::model::scripted::Scripted),
        calls: calls.clone(),
    };
    let (answer, _) = host.ask(&mut model, &mut Vec::new(), question).await;
    host.shutdown().await;
    let calls = calls.lock().unwrap().clone();
    let per_call: Vec<Value> = calls
        .iter()
        .map(|(n, b)| json!({"tools": n, "bytes": b}))
        .collect();
    let max_call = calls.iter().map(|(_, b)| *b).max().unwrap_or(0);
    // As the model's request carries them (names, descriptions, parameters).
    let request: Vec<Value> = specs
        .iter()
        .map(|s| {
            json!({"type": "function", "function": {
                "name": s.name, "description": s.description, "parameters": s.parameters}})
        })
        .collect();
    let model_bytes = Value::Array(request).to_string().len();
    let plain_bytes = serde_json::to_string(&specs)?.len();
    let (servers, wire, raw_defs, tools) = listed(&lists);
    Ok(json!({
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
        "question": question,
        "answer_start": answer.chars().take(60).collect::<String>(),
        "per_call": per_call,
        "max_call_bytes": max_call,
        "max_call_tokens": tokens(max_call),
        "parameters_checked": checked,
        "parameters_identical_to_input_schema": identical,
    }))
}

fn main() -> anyhow::Result<()> {
    let flags = Flags::parse();
    if flags.has("catalog-memory") {
        let n = flags.number("catalog-memory", 1_000)?;
        let start = anon_kb();
        println!("{}", catalog_memory(start, generated_listings(n)?)?);
        return Ok(());
    }
    if flags.has("catalog-memory-quality") {
        let start = anon_kb();
        println!("{}", catalog_memory(start, quality_listings()?)?);
        return Ok(());
    }
    let config = config_of(&flags)?;
    let question = flags
        .get("question")
        .unwrap_or("Draft a reply to ticket T-30002");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let out = runtime.block_on(measure(&config, question))?;
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    println!("{out}");
    Ok(())
}
