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
        added.stdout.lines().next(),
        Some("Added stdio server support in .mcp.json (project)")
    );
    // A new project's server is boxed: the real servers people add run in one.
    assert!(
        added.stdout.contains("It runs in a box (network off)"),
        "{}",
        added.stdout
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

/// Put the built binary `exe` into `dir`, as `cargo install` would (a hard link where it
/// can, else a copy).
fn install(exe: &std::path::Path, dir: &std::path::Path) -> std::path::PathBuf {
    let to = dir.join(exe.file_name().unwrap());
    if std::fs::hard_link(exe, &to).is_err() {
        std::fs::copy(exe, &to).unwrap();
    }
    to
}

/// `PROGRAM ARGS` with nothing of this environment but a home: no PATH, no variables.
fn bare(program: &std::path::Path, args: &[&str], home: &std::path::Path) -> Ran {
    let out = std::process::Command::new(program)
        .args(args)
        .env_clear()
        .env("HOME", home)
        .current_dir(home)
        .output()
        .unwrap();
    Ran::from(out)
}

#[test]
fn an_installed_pair_of_binaries_finds_its_servers_with_no_path() {
    let bin = scratch_dir();
    let gatehouse = install(&exe(), &bin);
    let servers = install(
        std::path::Path::new(env!("CARGO_BIN_EXE_gatehouse-servers")),
        &bin,
    );
    // On the PATH through a link, as a person's ~/.local/bin often has it.
    let links = scratch_dir();
    std::os::unix::fs::symlink(&gatehouse, links.join("gatehouse")).unwrap();
    let home = scratch_dir();
    let ask = ["ask", "Draft a reply to ticket T-30002", "--json"];
    for program in [gatehouse.clone(), links.join("gatehouse")] {
        let ran = bare(&program, &ask, &home);
        assert_eq!(ran.status, 0, "{program:?}: {}", ran.stderr);
        assert!(
            ran.answer()
                .contains("policy://larkfield/refunds-and-payments")
        );
        let doctor = bare(&program, &["doctor", "--json"], &home);
        let report: serde_json::Value = serde_json::from_str(&doctor.stdout).unwrap();
        let support = expect::item_with(&report["checks"], "name", "support").unwrap();
        let started = format!("started {} support;", servers.display());
        assert!(
            support["detail"].as_str().unwrap().starts_with(&started),
            "{support}"
        );
    }
    // Without the servers binary, the host's own `serve` runs the same servers.
    std::fs::remove_file(&servers).unwrap();
    let ran = bare(&gatehouse, &ask, &home);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let doctor = bare(&gatehouse, &["doctor", "--json"], &home);
    let started = format!("started {} serve support;", gatehouse.display());
    assert!(doctor.stdout.contains(&started), "{}", doctor.stdout);
}
