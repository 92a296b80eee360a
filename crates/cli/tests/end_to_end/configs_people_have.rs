//! The servers files people already have: a project's `.mcp.json` found from a subfolder
//! (never above its repository), Claude Code's and Cursor's files read as they are (their
//! own keys unremarked), and a typo told with the key that was meant.

use std::path::Path;

use serde_json::json;

use crate::common::*;

/// A repository with a trusted `.mcp.json` at its root holding the support desk as `desk`.
fn repository(root: &Path) -> std::path::PathBuf {
    let repo = root.join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(repo.join("src/deep")).unwrap();
    write(
        &repo,
        ".mcp.json",
        &json!({"mcpServers": {"desk": builtin_server("support", json!({}))}}),
    );
    let trusted = run_in(&repo, &["mcp", "trust", "--yes"], &[]);
    assert_eq!(trusted.status, 0, "{}", trusted.stderr);
    repo
}

#[test]
fn a_projects_file_is_found_from_a_subfolder_and_never_above_its_repository() {
    let root = scratch_dir();
    let repo = repository(&root);
    let state = project_state(&repo);
    let env = [("XDG_STATE_HOME", state.to_str().unwrap())];
    let deep = repo.join("src/deep");
    let ran = run_in(&deep, &["tools", "--json"], &env);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(ran.stdout.contains("desk__get_ticket"), "{}", ran.stdout);
    assert!(
        ran.stderr
            .contains("using the servers file ../../.mcp.json"),
        "{}",
        ran.stderr
    );
    // `mcp add` from the subfolder writes the repository's file.
    let added = run_in(&deep, &["mcp", "add", "more", "--", "more-mcp"], &env);
    assert_eq!(added.status, 0, "{}", added.stderr);
    assert!(
        added.stdout.contains("in ../../.mcp.json (project)"),
        "{}",
        added.stdout
    );
    assert!(!deep.join(".mcp.json").exists());
    // A repository inside the folder that has the file does not use it.
    let inner = repo.join("vendor/other");
    std::fs::create_dir_all(inner.join(".git")).unwrap();
    let ran = run_in(&inner, &["tools", "--json"], &env);
    assert!(!ran.stdout.contains("desk__"), "{}", ran.stdout);
}

#[test]
fn claude_codes_file_is_read_as_it_is_and_said_so() {
    let home = scratch_dir();
    let claude = json!({
        "numStartups": 12,
        "projects": {"/somewhere": {"allowedTools": []}},
        "mcpServers": {"desk": builtin_server("support", json!({}))}
    });
    write(&home, ".claude.json", &claude);
    let folder = scratch_dir();
    let ran = run_in(
        &folder,
        &["tools", "--json"],
        &[("HOME", home.to_str().unwrap())],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.contains("desk__search_knowledge"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stderr
            .contains(".claude.json, Claude Code's, read only"),
        "{}",
        ran.stderr
    );
    assert!(!ran.stderr.contains("unknown key"), "{}", ran.stderr);
    // Cursor's file when Claude Code's has no servers yet.
    write(&home, ".claude.json", &json!({"numStartups": 1}));
    std::fs::create_dir_all(home.join(".cursor")).unwrap();
    write(
        &home.join(".cursor"),
        "mcp.json",
        &json!({"mcpServers": {"shop": builtin_server("orders", json!({}))}}),
    );
    let ran = run_in(
        &folder,
        &["mcp", "list"],
        &[("HOME", home.to_str().unwrap())],
    );
    assert!(
        ran.stdout.contains("mcp.json (Cursor's, read only)") && ran.stdout.contains("shop: "),
        "{}",
        ran.stdout
    );
}

#[test]
fn a_typo_in_a_key_is_told_with_the_key_that_was_meant() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "servers.json",
        &json!({"mcpServers": {"desk": {"command": "x", "arg": ["serve"],
                                        "alwaysAllow": ["get_ticket"]}},
                "gatehouse": {"alow": ["desk__get_ticket"]}}),
    );
    let ran = run(&["doctor", "--config", &config], &[]);
    for expected in [
        "unknown key \"arg\" is ignored (did you mean \"args\"?)",
        "unknown setting \"alow\" is ignored (did you mean \"allow\"?)",
        "\"allow\": [\"SERVER__TOOL\"",
    ] {
        assert!(ran.stdout.contains(expected), "{expected}\n{}", ran.stdout);
    }
}

#[test]
fn rules_that_name_no_tool_are_told_at_start_and_by_doctor_with_the_real_name() {
    let dir = tempfile::tempdir().unwrap();
    let config = servers_file(
        dir.path(),
        json!({"desk": builtin_server("support", json!({}))}),
        json!({"allow": ["desk__get_tiket", "get_ticket", "mcp__desk__search_knowledge",
                         "desk__get_ticket"],
               "rules": [{"tool": "dsk__*", "decision": "deny"}]}),
    );
    let ran = run(
        &[
            "tools",
            "--config",
            &config,
            "--tools",
            "desk__search_knowldge",
        ],
        &[],
    );
    for expected in [
        "allow[0] names desk__get_tiket, which no server offers (did you mean desk__get_ticket?)",
        "allow[1] names get_ticket, which no server offers (did you mean desk__get_ticket?)",
        "allow[2] names mcp__desk__search_knowledge, which no server offers (did you mean desk__search_knowledge?)",
        "rules[0] names dsk__*, which no server offers",
        "--tools names desk__search_knowldge, which no server offers (did you mean desk__search_knowledge?)",
    ] {
        assert!(ran.stderr.contains(expected), "{expected}\n{}", ran.stderr);
    }
    assert!(!ran.stderr.contains("allow[3]"), "{}", ran.stderr);
    let doctor = run(&["doctor", "--config", &config, "--json"], &[]);
    let report: serde_json::Value = serde_json::from_str(&doctor.stdout).unwrap();
    let policy: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["area"] == "policy")
        .filter_map(|c| c["fix"].as_str())
        .collect();
    assert_eq!(
        policy[..3],
        [
            "write desk__get_ticket in allow[0]",
            "write desk__get_ticket in allow[1]",
            "write desk__search_knowledge in allow[2]"
        ],
        "{}",
        doctor.stdout
    );
    assert_eq!(report["warnings"], 4, "{}", doctor.stdout);
}
