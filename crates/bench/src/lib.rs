//! What the Gatehouse benchmark binaries share. `bench/run` drives them; each prints one
//! JSON object on stdout so the harness can put its numbers in the table.
//!
//! - `gh-callrate`: `tools/call` round trips through one stdio client, with rmcp's client
//!   (as Gatehouse connects) or through the whole host path (`Host::propose`).
//! - `gh-pipe-floor`: the transport's floor, a JSON line echoed over a pipe.
//! - `gh-gen-server`: a server of N generated tools, for the catalog-scale row.
//! - `gh-context`: bytes of tool definitions, raw from `tools/list` and as the model gets them.
//! - `gh-toolsearch`: top-1 and top-5 recall of tool search on the quality set ([`catalog`]).
#![warn(missing_docs)]
#![warn(clippy::too_many_lines)]

pub mod catalog;

use std::time::Duration;

use serde_json::{Value, json};

/// Latency figures for a list of round trips, in microseconds.
pub fn latency_stats(samples: &mut [Duration]) -> Value {
    samples.sort_unstable();
    let us = |d: Duration| (d.as_secs_f64() * 1e7).round() / 10.0;
    let n = samples.len();
    if n == 0 {
        return json!({"n": 0});
    }
    let at = |q: f64| samples[((n as f64 * q).ceil() as usize).clamp(1, n) - 1];
    let total: Duration = samples.iter().sum();
    json!({
        "n": n,
        "min_us": us(samples[0]),
        "p50_us": us(at(0.50)),
        "p90_us": us(at(0.90)),
        "p99_us": us(at(0.99)),
        "max_us": us(samples[n - 1]),
        "mean_us": us(total / n as u32),
    })
}

/// Put `key: value` pairs into a JSON object.
pub fn extend(mut base: Value, more: Value) -> Value {
    if let (Some(b), Value::Object(m)) = (base.as_object_mut(), more) {
        b.extend(m);
    }
    base
}

/// A tiny flag reader: `--name value` pairs and bare `--flag`s, then `--` and a command.
pub struct Flags {
    pairs: Vec<(String, Option<String>)>,
    /// Everything after `--`.
    pub rest: Vec<String>,
}

impl Flags {
    /// The flags of this process's command line.
    pub fn parse() -> Flags {
        let mut args = std::env::args().skip(1).peekable();
        let mut pairs = Vec::new();
        let mut rest = Vec::new();
        while let Some(a) = args.next() {
            if a == "--" {
                rest.extend(args.by_ref());
                break;
            }
            let value = match args.peek() {
                Some(v) if !v.starts_with("--") => args.next(),
                _ => None,
            };
            pairs.push((a.trim_start_matches("--").to_owned(), value));
        }
        Flags { pairs, rest }
    }

    /// The value of `--NAME VALUE`, if given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .and_then(|(_, v)| v.as_deref())
    }

    /// Whether `--NAME` was given.
    pub fn has(&self, name: &str) -> bool {
        self.pairs.iter().any(|(k, _)| k == name)
    }

    /// The number of `--NAME N`, or `default`; anything but a whole number is an error naming the flag.
    pub fn number(&self, name: &str, default: usize) -> anyhow::Result<usize> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| anyhow::anyhow!("--{name} {v:?} is not a whole number")),
        }
    }
}

/// The definition of generated tool `i` of a server, the same for the Rust generator
/// (`gh-gen-server`) and the Python one (`bench/reference/gen_server.py`, which reads
/// `gh-gen-server --dump`). Sized like a typical real tool: a two-sentence description,
/// four parameters with descriptions and constraints, annotations.
pub fn generated_tool(i: usize) -> Value {
    let topics = [
        "invoices",
        "shipments",
        "customers",
        "orders",
        "refunds",
        "products",
        "warehouses",
        "suppliers",
        "payments",
        "returns",
    ];
    let topic = topics[i % topics.len()];
    json!({
        "name": format!("find_{topic}_{i:03}"),
        "description": format!(
            "Find {topic} matching a text query in view {i}. Returns at most `limit` rows, newest first, each with its id and a short summary."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": 200, "description": format!("Words to look for in the {topic}.")},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10, "description": "How many rows to return."},
                "status": {"type": "string", "enum": ["open", "closed", "any"], "default": "any", "description": "Only rows with this status."},
                "since": {"type": "string", "pattern": "^\\d{4}-\\d{2}-\\d{2}$", "description": "Only rows on or after this date (YYYY-MM-DD)."}
            },
            "required": ["query"],
            "additionalProperties": false
        },
        "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
    })
}
