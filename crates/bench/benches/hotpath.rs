//! Criterion micro-benchmarks of the host's hot path, through the `gatehouse` library's
//! public API: what the host adds to every proposed call, apart from the transport.
//!
//!     cargo bench -p gatehouse-bench
//!
//! - `policy/*`: `policy::decide` on an allowed call, and on each refusal (unknown tool,
//!   arguments too large, not JSON); it includes the argument size check, the JSON parse and
//!   the input-schema check.
//! - `schema/*`: compiling a tool's input schema, and checking arguments against it.
//! - `result/*`: shaping a result for the model (`success`), small and cut to the bound,
//!   and a long error (`failure`).
//! - `catalog/*`: namespacing 1,000 tool names, building a catalog of 20 servers × 50
//!   tools (with every schema compiled), and the 1,000 tools as the model gets them.
//! - `person/form_fields`: reading a server's form.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use gatehouse::{
    catalog::{self, Catalog},
    config::{ServerName, Settings},
    model::ToolCall,
    person, policy, result, schema,
};
use gatehouse_bench::generated_tool;
use rmcp::model::Tool;
use serde_json::{Value, json};

const GET_TICKET: &str = include_str!("../../servers/tools/support.get_ticket.json");
const SEARCH: &str = include_str!("../../servers/tools/support.search_knowledge.json");

fn tool(text: &str) -> Tool {
    serde_json::from_str(text).expect("a valid tool definition")
}

fn support_catalog() -> Catalog {
    Catalog::build(vec![(
        ServerName::parse("support").expect("a server's name"),
        vec![tool(SEARCH), tool(GET_TICKET)],
    )])
}

fn call(name: &str, arguments: String) -> ToolCall {
    ToolCall {
        id: "call_1".into(),
        name: name.into(),
        arguments,
    }
}

/// The get_ticket result for T-30002, as the support server returns it.
fn ticket() -> Value {
    json!({
        "ticket_id": "T-30002", "customer_name": "Hugo",
        "subject": "Charged twice for order LK-182074",
        "body": "My card was charged two times for order LK-182074, 449.00 dollars each time. Please refund one of the payments.",
        "team": "billing", "priority": 1, "status": "open", "created_at": "2026-09-25 08:20:19+00",
        "last_messages": [{"author": "agent", "body": "Could you send the receipt or a screenshot of the payment? Then I can check it with our payments team.", "created_at": "2026-09-25 19:59:19+00"}]
    })
}

fn thousand_tools() -> Vec<(ServerName, Vec<Tool>)> {
    (0..20)
        .map(|s| {
            let tools = (0..50)
                .map(|i| serde_json::from_value(generated_tool(s * 50 + i)).expect("valid"))
                .collect();
            let name = ServerName::parse(&format!("server-{s:02}")).expect("a server's name");
            (name, tools)
        })
        .collect()
}

fn policy_benches(c: &mut Criterion) {
    let catalog = support_catalog();
    let settings = Settings {
        allow: vec![
            "support__get_ticket".into(),
            "support__search_knowledge".into(),
        ],
        ..Settings::default()
    };
    let allowed = call("support__get_ticket", r#"{"ticket_id":"T-30002"}"#.into());
    let search = call(
        "support__search_knowledge",
        r#"{"query":"Charged twice for order LK-182074","limit":3}"#.into(),
    );
    let invalid = call("support__get_ticket", r#"{"ticket_id":"30002"}"#.into());
    let unknown = call("support__nope", "{}".into());
    let large = call(
        "support__get_ticket",
        format!(r#"{{"ticket_id":"{}"}}"#, "x".repeat(50_000)),
    );
    let not_json = call("support__get_ticket", "{ticket_id: T-30002".into());
    let mut g = c.benchmark_group("policy");
    for (name, proposal) in [
        ("decide/run get_ticket", &allowed),
        ("decide/run search_knowledge", &search),
        ("decide/refuse schema mismatch", &invalid),
        ("decide/refuse unknown tool", &unknown),
        ("decide/refuse 50 kB arguments", &large),
        ("decide/refuse not JSON", &not_json),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| black_box(policy::decide(black_box(proposal), &catalog, &settings)).is_run())
        });
    }
    g.finish();
}

/// `Verdict` has no `is_run`; this keeps the benchmarks' closures short.
trait IsRun {
    fn is_run(&self) -> bool;
}

impl IsRun for policy::Verdict<'_> {
    fn is_run(&self) -> bool {
        matches!(self, policy::Verdict::Run { .. })
    }
}

fn schema_benches(c: &mut Criterion) {
    let t = tool(SEARCH);
    let compiled = schema::compile_input(&t.input_schema).expect("compiles");
    let good = json!({"query": "Charged twice for order LK-182074", "limit": 3});
    let bad = json!({"query": "ab", "limit": 9, "extra": true});
    let mut g = c.benchmark_group("schema");
    g.bench_function("compile search_knowledge input", |b| {
        b.iter(|| schema::compile_input(black_box(&t.input_schema)).is_ok())
    });
    g.bench_function("check valid arguments", |b| {
        b.iter(|| schema::problems(&compiled, black_box(&good)).len())
    });
    g.bench_function("check invalid arguments", |b| {
        b.iter(|| schema::problems(&compiled, black_box(&bad)).len())
    });
    g.finish();
}

fn result_benches(c: &mut Criterion) {
    let small = ticket();
    let big = json!({"rows": (0..2_000).map(|i| json!({"id": i, "text": "x\"y é".repeat(5)})).collect::<Vec<_>>()});
    let long_error = "e".repeat(10_000);
    let mut g = c.benchmark_group("result");
    g.bench_function("success/ticket (524 chars)", |b| {
        b.iter(|| result::success("support__get_ticket", black_box(&small), 4_000).chars)
    });
    g.bench_function("success/100 kB cut to 4,000", |b| {
        b.iter(|| result::success("t", black_box(&big), 4_000).chars)
    });
    g.bench_function("failure/10 kB error cut to 4,000", |b| {
        b.iter(|| result::failure("t", black_box(&long_error), 4_000).chars)
    });
    g.finish();
}

fn catalog_benches(c: &mut Criterion) {
    let listings = thousand_tools();
    let names: Vec<(String, String)> = listings
        .iter()
        .flat_map(|(s, tools)| {
            tools
                .iter()
                .map(move |t| (s.to_string(), t.name.to_string()))
        })
        .collect();
    let built = Catalog::build(listings.clone());
    assert_eq!(built.len(), 1_000);
    let mut g = c.benchmark_group("catalog");
    g.bench_function("namespaced/1,000 names", |b| {
        b.iter(|| {
            names
                .iter()
                .map(|(s, t)| catalog::namespaced(s, t).len())
                .sum::<usize>()
        })
    });
    g.bench_function("build/20 servers x 50 tools", |b| {
        b.iter_batched(
            || listings.clone(),
            |l| Catalog::build(l).len(),
            BatchSize::LargeInput,
        )
    });
    g.bench_function("model_tools/1,000 tools", |b| {
        b.iter(|| built.model_tools().len())
    });
    g.bench_function("model_tools/1,000 tools as request JSON", |b| {
        b.iter(|| serde_json::to_string(&built.model_tools()).map(|s| s.len()))
    });
    g.finish();
}

fn person_benches(c: &mut Criterion) {
    let form = json!({"type": "object", "properties": {
        "priority": {"type": "string", "enum": ["P1", "P2", "P3"], "description": "P1 = drop everything, P3 = next business day"},
        "note": {"type": "string", "maxLength": 200},
        "notify": {"type": "boolean", "default": true}
    }, "required": ["priority"]});
    c.bench_function("person/form_fields", |b| {
        b.iter(|| person::form_fields(black_box(&form)).len())
    });
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = policy_benches, schema_benches, result_benches, catalog_benches, person_benches
}
criterion_main!(benches);
