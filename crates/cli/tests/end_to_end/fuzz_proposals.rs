//! The proposal path fuzzed through the real binary: proptest writes playback files of
//! random decisions (real and invented tool names, arguments that are valid, invalid,
//! oversized, deeply nested or not JSON at all, with escape sequences), and each run must
//! end by itself, without a panic, with one JSON object on stdout and nothing on the
//! terminal a peer could act through.
//!
//! Each case is one run of the binary with many decisions, so a few dozen cases cover
//! thousands of proposals. `GATEHOUSE_FUZZ_CASES` sets how many (default
//! [`DEFAULT_CASES`]); CI runs the default, a bounded time.

use std::time::Duration;

use proptest::{prelude::*, test_runner::Config};
use serde_json::{Value, json};

use crate::common::*;

/// Cases (binary runs) when `GATEHOUSE_FUZZ_CASES` is not set.
const DEFAULT_CASES: u32 = 64;
/// Most decisions in one run (each up to three calls).
const MAX_DECISIONS: usize = 40;

fn cases() -> u32 {
    std::env::var("GATEHOUSE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

/// A tool name as a model might write it: a real one, a near miss, or anything.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "support__get_ticket", "support__search_knowledge", "cmdb__get_asset",
            "cmdb__find_assets", "tickets__list_tickets", "tickets__open_ticket",
            "orders__get_order_status", "orders__export_report", "testbed__echo",
            "testbed__repeat", "testbed__content", "testbed__bad_output", "testbed__ghost_rpc",
            "testbed__ghost_result", "read_resource",
        ]).prop_map(str::to_owned),
        1 => "[a-z_]{0,12}__[a-z_.]{0,12}",
        1 => any::<String>(),
        1 => "x{100,5000}",
    ]
}

/// A JSON value of some depth, strings with escapes among them.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        any::<String>().prop_map(Value::from),
        Just(json!("\u{1b}[2J\u{9b}31m\u{202e}")),
        Just(json!("T-30002")),
        Just(json!("jump-prod-02")),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,10}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Arguments as a model might write them: an object, another JSON value, text that is
/// not JSON, a huge or a deeply nested value.
fn arguments() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => prop::collection::btree_map(
            prop::sample::select(vec!["ticket_id", "query", "limit", "hostname", "host",
                                      "summary", "order_id", "rows", "text", "times", "kind", "uri"]),
            value(), 0..4)
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
        1 => value(),
        1 => any::<String>().prop_map(Value::String),
        1 => (1usize..20_000).prop_map(|n| json!({"query": "q".repeat(n)})),
        1 => (100usize..3_000).prop_map(|n| Value::String(format!("{}{}", "[".repeat(n), "]".repeat(n)))),
    ]
}

fn decision() -> impl Strategy<Value = Value> {
    prop_oneof![
        5 => prop::collection::vec((name(), arguments()), 1..4).prop_map(|calls| json!({
            "tool_calls": calls.into_iter().map(|(n, a)| json!({"name": n, "arguments": a})).collect::<Vec<_>>()
        })),
        1 => any::<String>().prop_map(|a| json!({"answer": a})),
    ]
}

#[test]
fn random_proposals_never_break_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let servers: serde_json::Map<String, Value> =
        ["support", "cmdb", "tickets", "orders", "testbed"]
            .iter()
            .map(|n| ((*n).to_owned(), builtin_server(n, json!({}))))
            .collect();
    let config = servers_file(
        dir.path(),
        json!(servers),
        json!({"maxSteps": MAX_DECISIONS + 1, "toolTimeoutMs": 5000}),
    );
    let mut runner = proptest::test_runner::TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = prop::collection::vec(decision(), 1..MAX_DECISIONS);
    let proposals = std::sync::atomic::AtomicUsize::new(0);
    runner
        .run(&strategy, |decisions| {
            let n: usize = decisions
                .iter()
                .map(|d| d["tool_calls"].as_array().map_or(0, Vec::len))
                .sum();
            proposals.fetch_add(n, std::sync::atomic::Ordering::SeqCst);
            let model = playback(dir.path(), json!(decisions));
            let w = run_watched(
                &[
                    "ask", "x", "--config", &config, "--model", &model, "--json", "--yes",
                ],
                &[],
                Duration::from_secs(120),
            );
            let ran = &w.ran;
            prop_assert!(!ran.stderr.contains("panicked"), "{}", ran.stderr);
            prop_assert_eq!(ran.status, 0, "{}", ran.stderr);
            prop_assert!(serde_json::from_str::<Value>(&ran.stdout).is_ok_and(|v| v.is_object()));
            prop_assert!(
                !has_terminal_controls(&ran.stdout) && !has_terminal_controls(&ran.stderr)
            );
            Ok(())
        })
        .unwrap();
    eprintln!(
        "fuzz: {} runs, {} proposals",
        cases(),
        proposals.into_inner()
    );
}
