//! Criterion benchmarks of the person's policy, written down: what a decision costs with
//! 100 rules, and what one ledger line costs (durably: locked, written, synced).
//!
//!     cargo bench -p gatehouse-bench --bench written_policy
//!
//! - `rules/decide, 100 rules, …`: `policy::decide` on a `support__get_ticket` call (the
//!   catalog check, the argument parse and schema check, then the rules): 100 rules whose
//!   patterns all match the name, each with a condition (glob, regex, range, inside) that
//!   does not hold, the allow rule last; and 100 rules whose patterns match other tools.
//! - `rules/parse 100 rules`: reading and compiling them, as the servers file is read.
//! - `ledger/append`: one decision appended to a ledger in the target folder (on disk, not
//!   a memory file system), `fdatasync` included, with its head file.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use gatehouse::{
    catalog::Catalog,
    config::{ServerName, Settings},
    ledger::{Entry, Ledger},
    model::ToolCall,
    policy,
    rules::Rules,
};
use rmcp::model::Tool;
use serde_json::{Value, json};

const GET_TICKET: &str = include_str!("../../servers/tools/support.get_ticket.json");

/// 100 rules: 99 whose tool pattern matches `support__get_ticket` (when `matching`) with a
/// condition that does not hold, then the allow rule that decides.
fn hundred_rules(matching: bool) -> Value {
    let tests = [
        json!({"pointer": "/ticket_id", "glob": "X-*"}),
        json!({"pointer": "/ticket_id", "regex": "^T-9\\d{4}$"}),
        json!({"pointer": "/ticket_id", "minLength": 20}),
        json!({"pointer": "/ticket_id", "inside": "/srv/project"}),
    ];
    let mut rules: Vec<Value> = (0..99)
        .map(|i| {
            let tool = if matching { ["support__*", "*__get_*", "support__get_ticket"][i % 3].to_string() } else { format!("server{i}__*") };
            let decision = ["ask", "deny", "allow"][i % 3];
            json!({"tool": tool, "decision": decision, "when": tests[i % 4], "reason": "a rule of the benchmark"})
        })
        .collect();
    rules.push(json!({"tool": "support__get_ticket", "decision": "allow"}));
    Value::Array(rules)
}

fn policy_benches(c: &mut Criterion) {
    let tool: Tool = serde_json::from_str(GET_TICKET).expect("a valid tool definition");
    let catalog = Catalog::build(vec![(ServerName::parse("support").unwrap(), vec![tool])]);
    let call = ToolCall {
        id: "call_1".into(),
        name: "support__get_ticket".into(),
        arguments: r#"{"ticket_id":"T-30002"}"#.into(),
    };
    let mut g = c.benchmark_group("rules");
    for (label, matching) in [
        ("patterns that match", true),
        ("patterns of other tools", false),
    ] {
        let settings = Settings {
            rules: Rules::parse(&hundred_rules(matching)).expect("valid rules"),
            ..Settings::default()
        };
        assert!(matches!(
            policy::decide(&call, &catalog, &settings),
            policy::Verdict::Run { .. }
        ));
        g.bench_function(format!("decide, 100 rules, {label}"), |b| {
            b.iter(|| {
                matches!(
                    policy::decide(black_box(&call), &catalog, &settings),
                    policy::Verdict::Run { .. }
                )
            })
        });
    }
    let none = Settings {
        allow: vec!["support__get_ticket".into()],
        ..Settings::default()
    };
    g.bench_function("decide, no rules (allow-list)", |b| {
        b.iter(|| {
            matches!(
                policy::decide(black_box(&call), &catalog, &none),
                policy::Verdict::Run { .. }
            )
        })
    });
    let text = hundred_rules(true);
    g.bench_function("parse 100 rules", |b| {
        b.iter(|| Rules::parse(black_box(&text)).is_ok())
    });
    g.finish();
}

fn ledger_benches(c: &mut Criterion) {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("ledger-bench");
    let _ = std::fs::remove_dir_all(&dir);
    let ledger = Ledger::new(dir.join("ledger.jsonl"));
    let entry = Entry {
        session: "0af7651916cd43dd8448eb211c80319c".into(),
        trace_id: "4bf92f3577b34da6a3ce929d0e0e4736".into(),
        step: 1,
        server: "support".into(),
        tool: "support__get_ticket".into(),
        arguments_sha256: gatehouse::digest::sha256_hex(br#"{"ticket_id":"T-30002"}"#),
        fingerprint: Some(gatehouse::digest::sha256_hex(b"definition")),
        decision: gatehouse::ledger::Decision::Run,
        rule: Some("rules[99]".into()),
        ..Entry::default()
    };
    let mut g = c.benchmark_group("ledger");
    g.bench_function("append (locked, written, synced)", |b| {
        b.iter(|| ledger.append(black_box(&entry)).expect("appended").seq)
    });
    g.finish();
    let verified = gatehouse::ledger::verify(ledger.path()).expect("the chain holds");
    assert!(verified.lines > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(3));
    targets = policy_benches, ledger_benches
}
criterion_main!(benches);
