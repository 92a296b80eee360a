//! Criterion benchmarks of where an argument came from (issue 30), side by side with the
//! decision it adds to, in one run:
//!
//!     cargo bench -p gatehouse-bench --bench flows
//!
//! - `flows/decide, no flows`: `policy::decide` on a call of three arguments (the
//!   reference: the catalog check, the parse, the schema, the allow-list).
//! - `flows/decide, 100 results of 4,000 characters`: the same decision with the session's
//!   context traced: 100 untrusted results of 4,000 characters each, a question, and a
//!   consequential tool, so every value is looked for and the rule of two is judged.
//! - `flows/add one result of 4,000 characters`: what entering one result costs (its
//!   normalisation), paid once per result.
//! - `flows/definitions of 100 tools, already entered`: what offering the same definitions
//!   again costs (each one's digest, looked up and found), paid per model call in a host
//!   and per `tools/call` in a gateway.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use gatehouse::{
    approvals::Remembered,
    catalog::Catalog,
    config::{FlowSettings, ServerName, Settings},
    flow::{Flows, Origin, Trust},
    model::ToolCall,
    policy,
};
use rmcp::model::Tool;
use serde_json::json;

fn result_text(step: u64) -> String {
    let mut text = String::new();
    let mut i = 0;
    while text.len() < 4_000 {
        text.push_str(&format!(
            "Ticket T-{step}{i:03} from customer{i}@example.com about order LK-{step}{i:04}: \
             the parcel was late. "
        ));
        i += 1;
    }
    text.truncate(4_000);
    text
}

fn session() -> Flows {
    let flows = Flows::default();
    flows.add(
        Origin::Question { turn: 1 },
        Trust::Person,
        "Open a ticket for jump-prod-02: brute force then a login from 203.0.113.77",
    );
    for step in 0..100 {
        let origin = Origin::Result {
            server: "support".into(),
            tool: "support__get_ticket".into(),
            turn: 1,
            step,
        };
        flows.add(origin, Trust::Untrusted, &result_text(step));
    }
    flows
}

fn flow_benches(c: &mut Criterion) {
    let tool: Tool = serde_json::from_value(json!({"name": "open_ticket",
        "inputSchema": {"type": "object", "properties": {
            "host": {"type": "string"}, "summary": {"type": "string"}, "contact": {"type": "string"}}}}))
    .expect("a tool");
    let catalog = Catalog::build(vec![(ServerName::parse("tickets").unwrap(), vec![tool])]);
    let settings = Settings {
        allow: vec!["tickets__open_ticket".into()],
        flows: FlowSettings::parse(&json!({"consequential": ["tickets__*"]})).expect("flows"),
        ..Settings::default()
    };
    let call = ToolCall {
        id: "call_1".into(),
        name: "tickets__open_ticket".into(),
        arguments: json!({"host": "jump-prod-02",
            "summary": "Customer customer7@example.com reports order LK-990007 late, see T-99007",
            "contact": "customer7@example.com"})
        .to_string(),
    };
    let flows = session();
    let remembered = Remembered::default();
    let mut g = c.benchmark_group("flows");
    g.bench_function("decide, no flows", |b| {
        b.iter(|| black_box(policy::decide(black_box(&call), &catalog, &settings)))
    });
    g.bench_function("decide, 100 results of 4,000 characters", |b| {
        b.iter(|| {
            black_box(policy::decide_flowing(
                black_box(&call),
                &catalog,
                &settings,
                &remembered,
                Some(&flows),
            ))
        })
    });
    let text = result_text(7);
    g.bench_function("add one result of 4,000 characters", |b| {
        b.iter(|| {
            let f = Flows::default();
            f.add(Origin::Host, Trust::Trusted, black_box(&text));
            black_box(f)
        })
    });
    let definitions: Vec<String> = (0..100)
        .map(|i| format!("crm__tool_{i}: {}", &result_text(i)[..400]))
        .collect();
    let offered = Flows::default();
    let origin = Origin::Definitions {
        server: "crm".into(),
    };
    for d in &definitions {
        offered.add_once(origin.clone(), Trust::Untrusted, d);
    }
    g.bench_function("definitions of 100 tools, already entered", |b| {
        b.iter(|| {
            for d in &definitions {
                offered.add_once(origin.clone(), Trust::Untrusted, black_box(d));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, flow_benches);
criterion_main!(benches);
