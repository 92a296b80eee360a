//! The first five minutes of a new user, through the real binary: a model endpoint that
//! has no model list, a server added to a fresh project and asked, and an installed copy
//! of the two binaries that still finds its servers.

use crate::common::*;
use crate::fake_model::{self, Models};

#[test]
fn an_endpoint_without_a_model_list_is_not_refused_at_start() {
    for models in [
        Models::Status(405),
        Models::Status(501),
        Models::List(vec!["m"]),
    ] {
        let status = match &models {
            Models::Status(code) => *code,
            Models::List(_) => 200,
        };
        let endpoint = fake_model::start(models, "Hello from the model.");
        let ran = run(
            &["ask", "Say hello", "--model", "openai:m", "--json"],
            &[("OPENAI_BASE_URL", &endpoint.base), ("OPENAI_API_KEY", "")],
        );
        assert_eq!(ran.status, 0, "{status}: {}", ran.stderr);
        assert_eq!(ran.answer(), "Hello from the model.");
    }
    // An endpoint that fails its list for another reason is still reported at once.
    let endpoint = fake_model::start(Models::Status(500), "unused");
    let ran = run(
        &["ask", "Say hello", "--model", "openai:m"],
        &[("OPENAI_BASE_URL", &endpoint.base), ("OPENAI_API_KEY", "")],
    );
    assert_eq!(ran.status, 2, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("answered GET /models with 500"),
        "{}",
        ran.stderr
    );
}

#[test]
fn a_server_added_to_a_fresh_project_is_listed_and_asked() {
    let project = scratch_dir();
    let exe = exe();
    let added = run_in(
        &project,
        &[
            "mcp",
            "add",
            "support",
            "--env",
            "MCP_USER=${GATEHOUSE_USER}",
            "--env",
            "MCP_TENANT=${GATEHOUSE_TENANT}",
            "--",
            exe.to_str().unwrap(),
            "serve",
            "support",
        ],
        &[],
    );
    assert_eq!(added.status, 0, "{}", added.stderr);
    assert_eq!(
        added.stdout.trim(),
        "Added stdio server support in .mcp.json (project)"
    );
    let listed = run_in(&project, &["mcp", "list"], &[]);
    assert_eq!(listed.status, 0, "{}", listed.stderr);
    assert!(
        listed.stdout.contains("support: ")
            && listed
                .stdout
                .contains("connected: 2 tools, protocol 2026-07-28"),
        "{}",
        listed.stdout
    );
    // The host finds the project's file by itself, and only its one server is used.
    let asked = run_in(
        &project,
        &["ask", "Draft a reply to ticket T-30002", "--yes", "--json"],
        &[],
    );
    assert_eq!(asked.status, 0, "{}", asked.stderr);
    assert!(
        asked.stderr.contains("using the servers file .mcp.json"),
        "{}",
        asked.stderr
    );
    let steps = asked.step_texts();
    let discovered = steps.iter().filter(|s| s.starts_with("host: discovered"));
    assert_eq!(
        discovered.collect::<Vec<_>>(),
        ["host: discovered 2 tools on support: search_knowledge, get_ticket"]
    );
    assert!(
        asked
            .answer()
            .contains("policy://larkfield/refunds-and-payments"),
        "{}",
        asked.answer()
    );
}
