//! The host on Streamable HTTP: servers named by `url` and `headers` in a servers file (in
//! the shape Claude Desktop and .mcp.json use, with `${VAR}` substitution), and every way
//! reaching one can fail, named with the server and never showing the credentials.

use crate::common;

use std::{
    path::Path,
    time::{Duration, Instant},
};

use common::{
    process::{Process, Spawn},
    serve::{SAM_TOKEN, serve_http, tokens_file},
    *,
};
use serde_json::json;

/// `gatehouse serve NAME --http 127.0.0.1:0` with Sam's token, its tickets store in `dir`.
fn serve(name: &str, dir: &Path) -> Process {
    serve_http(name, &tokens_file(dir), &dir.join("tickets.db"))
}

/// A scratch folder and the support desk served over HTTP from it.
fn support_served() -> (tempfile::TempDir, Process) {
    let dir = tempfile::tempdir().unwrap();
    let server = serve("support", dir.path());
    (dir, server)
}

fn remote_config(dir: &Path, servers: serde_json::Value, allow: &[&str]) -> String {
    write(
        dir,
        "claude_desktop_config.json",
        &json!({"mcpServers": servers, "gatehouse": {"allow": allow}}),
    )
}

#[test]
fn the_support_desk_over_http_with_a_token_from_the_environment() {
    let (dir, server) = support_served();
    let config = remote_config(
        dir.path(),
        json!({"support": {"type": "http", "url": "${SUPPORT_URL}", "headers": {"Authorization": "Bearer ${SUPPORT_TOKEN}"}}}),
        &["support__search_knowledge", "support__get_ticket"],
    );
    let record = dir.path().join("run.jsonl");
    let ran = ask(
        "Draft a reply to ticket T-30002",
        &["--config", &config, "--record", record.to_str().unwrap()],
        &[("SUPPORT_URL", &server.url), ("SUPPORT_TOKEN", SAM_TOKEN)],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    ran.assert_answer("policy://larkfield/refunds-and-payments");
    assert_eq!(ran.step_data()[0]["protocol"], "2026-07-28");
    let recorded = std::fs::read_to_string(&record).unwrap();
    assert!(recorded.contains("tools/call"));
    for text in [&ran.stdout, &ran.stderr, &recorded] {
        assert!(!text.contains(SAM_TOKEN), "the token never shows");
    }
}

#[test]
fn the_seed_run_over_http_confirms_through_input_required() {
    let dir = tempfile::tempdir().unwrap();
    let cmdb = serve("cmdb", dir.path());
    let tickets = serve("tickets", dir.path());
    let auth = json!({"Authorization": format!("Bearer {SAM_TOKEN}")});
    let config = remote_config(
        dir.path(),
        json!({"cmdb": {"type": "http", "url": cmdb.url, "headers": auth},
               "tickets": {"type": "http", "url": tickets.url, "headers": auth}}),
        &["cmdb__get_asset"],
    );
    let ran = seed_run("priority=P1", &["--config", &config], &[]);
    let answer = ran.answer();
    assert!(
        answer.contains("Camille Michel") && answer.contains("I opened INC-4100 (P1)"),
        "{answer}\n{}",
        ran.stderr
    );
    assert_eq!(ran.tool_events()[1]["asked_user"], true);
}

#[test]
fn a_missing_variable_is_named_and_the_other_servers_work() {
    let (dir, server) = support_served();
    let config = remote_config(
        dir.path(),
        json!({"needs_token": {"type": "http", "url": server.url, "headers": {"Authorization": "Bearer ${GATEHOUSE_TEST_NOT_SET}"}},
               "support": {"type": "http", "url": server.url, "headers": {"Authorization": format!("Bearer {SAM_TOKEN}")}}}),
        &["support__search_knowledge"],
    );
    let ran = ask("What is the return window?", &["--config", &config], &[]);
    let steps = ran.step_texts().join("\n");
    assert!(steps.contains("server needs_token is not used: headers Authorization: variable GATEHOUSE_TEST_NOT_SET is not set"), "{steps}");
    assert!(ran.answer().contains("Returns policy"));
}

#[test]
fn unreachable_refused_and_wrong_endpoints_are_named() {
    let (dir, server) = support_served();
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let base = server.url.trim_end_matches("/mcp").to_owned();
    let config = remote_config(
        dir.path(),
        json!({
            "nobody": {"type": "http", "url": format!("http://127.0.0.1:{closed}/mcp")},
            "badtoken": {"type": "http", "url": server.url, "headers": {"Authorization": "Bearer not-a-real-token"}},
            "notoken": {"type": "http", "url": server.url},
            "wrongpath": {"type": "http", "url": format!("{base}/nope"), "headers": {"Authorization": format!("Bearer {SAM_TOKEN}")}}
        }),
        &[],
    );
    let ran = run(&["ask", "x", "--config", &config, "--json"], &[]);
    let steps = ran.step_texts().join("\n");
    assert!(
        steps.contains(&format!(
            "server unavailable: server nobody at http://127.0.0.1:{closed}/mcp: cannot connect"
        )),
        "{steps}"
    );
    assert!(
        steps.contains("server unavailable: server badtoken at") && steps.contains("(401)"),
        "{steps}"
    );
    assert!(
        steps.contains("server unavailable: server notoken at"),
        "{steps}"
    );
    assert!(
        steps.contains("server unavailable: server wrongpath at") && steps.contains("(404)"),
        "{steps}"
    );
    assert!(!ran.stdout.contains("not-a-real-token") && !ran.stderr.contains("not-a-real-token"));
}

#[test]
fn a_server_that_drops_mid_call_is_reported_and_the_turn_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = serve("testbed", dir.path());
    let config = remote_config(
        dir.path(),
        json!({"testbed": {"type": "http", "url": server.url, "headers": {"Authorization": format!("Bearer {SAM_TOKEN}")}}}),
        &["testbed__sleep"],
    );
    let model = playback(
        dir.path(),
        json!([{"tool_calls": [{"name": "testbed__sleep", "arguments": {"seconds": 30, "quiet": true}}]}, {"answer": "still here"}]),
    );
    let host = Spawn::new(
        gatehouse_command(&ask_args(&config, &model, &[]), &[]),
        "gatehouse ask",
    )
    .run();
    // The call is in flight once the server says it sleeps.
    server.wait_for_line(r#"{"event":"sleeping""#, process::LIMIT);
    server.stop();
    let started = Instant::now();
    let ran = host.wait(process::LIMIT);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the host did not wait for the dead server"
    );
    assert_eq!(ran.answer(), "still here", "{}", ran.stderr);
    let events = ran.tool_events();
    assert_eq!(events[0]["outcome"], "error", "{:?}", ran.step_texts());
}

#[test]
fn a_servers_file_in_the_usual_place_is_found_without_config() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let servers = json!({"mcpServers": {"desk": builtin_server("support", json!({}))},
                         "gatehouse": {"allow": ["desk__search_knowledge"]}});
    std::fs::write(project.join(".mcp.json"), servers.to_string()).unwrap();
    // A project's file is the person's once trusted, its allow-list only by name.
    let trusted = common::run_in(
        &project,
        &["mcp", "trust", "--yes", "--settings", "allow"],
        &[],
    );
    assert_eq!(trusted.status, 0, "{}", trusted.stderr);
    let state = common::project_state(&project);
    let out = gatehouse_command(
        &["ask", "What is the return window?", "--json"],
        &[("XDG_STATE_HOME", state.to_str().unwrap())],
    )
    .current_dir(&project)
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("using the servers file .mcp.json (found without --config)"),
        "{stderr}"
    );
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        run["steps"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("discovered 2 tools on desk")
    );
}
