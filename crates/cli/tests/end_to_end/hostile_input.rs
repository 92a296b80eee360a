//! The findings of the hostile-input review, one test each, through the real binary: a
//! model that proposes absurd names, questions the scripted model choked on, servers that
//! want the host's secrets, forms nobody answered, credentials in URLs, HTTP errors read
//! from their status, saved files, links from two servers, and what a person sees at a
//! real terminal (a pseudo-terminal).

use std::{
    io::{Read, Write},
    path::Path,
    time::Duration,
};

use serde_json::{Value, json};

use crate::common::*;

fn hostile(scenario: &str, env: Value) -> Value {
    let mut e = json!({"HOSTILE": scenario});
    if let (Some(m), Value::Object(more)) = (e.as_object_mut(), env) {
        m.extend(more);
    }
    builtin_server("hostile", e)
}

#[test]
fn a_proposed_name_of_5000_characters_gets_an_answer_at_once() {
    let name = "x".repeat(5_000);
    let model =
        play_model(json!([{"tool_calls": [{"name": name, "arguments": {}}]}, {"answer": "done"}]));
    let w = run_watched(
        &["ask", "x", "--model", &model, "--json"],
        &[],
        Duration::from_secs(60),
    );
    assert_eq!(w.ran.status, 0, "{}", w.ran.stderr);
    assert_eq!(w.ran.answer(), "done");
    let events = w.ran.tool_events();
    assert_eq!(events[0]["outcome"], "unknown_tool");
    // 4,000 characters, the bound; each of the two ellipses takes three bytes.
    assert!(events[0]["result_bytes"].as_u64().unwrap() <= 4_004);
}

#[test]
fn deeply_nested_arguments_leave_the_runs_json_readable() {
    // Found by fuzz_proposals: 125 nested arrays parse as a value, and the step that shows
    // them put them four levels deeper, past what a JSON reader such as serde_json takes.
    let deep = format!("{}{}", "[".repeat(125), "]".repeat(125));
    let model = play_model(json!([
        {"tool_calls": [{"name": "support__get_ticket", "arguments": deep}]},
        {"answer": "done"}
    ]));
    let ran = run(&["ask", "x", "--model", &model, "--json"], &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let out: Value = serde_json::from_str(&ran.stdout).expect("the run's JSON reads back");
    let shown = out["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["text"] == "wants support__get_ticket")
        .expect("the proposal's step");
    assert_eq!(
        shown["data"]["arguments"],
        json!(deep),
        "shown as the model's text"
    );
}

#[test]
fn a_result_bound_too_small_for_the_frame_is_refused_when_the_file_is_read() {
    let bed = Bed::new(json!({}), json!({"maxResultChars": 30}));
    let ran = bed.run(&["ask", "Draft a reply to ticket T-40003"]);
    assert_eq!(ran.status, 2);
    ran.assert_stderr("\"maxResultChars\" must be a whole number from 400 to 10000000, not 30");
}

#[test]
fn questions_whose_lowercase_is_longer_do_not_panic() {
    let ran = ask(
        "İİİİİİİ open a ticketé: brute force on jump-prod-02",
        &["--no"],
        &[],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(!ran.stderr.contains("panicked"));
    let steps = ran.step_texts().join("\n");
    assert!(
        steps.contains("model: wants tickets__open_ticket"),
        "{steps}"
    );
}

/// `ask --json --record DIR/run.jsonl` with this servers file and model: the run, and
/// what was recorded.
fn ask_recorded(dir: &Path, config: &str, model: &str, env: &[(&str, &str)]) -> (Ran, String) {
    let record = dir.join("run.jsonl");
    let record_arg = record.to_string_lossy().into_owned();
    let ran = run(
        &[
            "ask",
            "x",
            "--config",
            config,
            "--model",
            model,
            "--json",
            "--record",
            &record_arg,
        ],
        env,
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    (ran, std::fs::read_to_string(&record).unwrap())
}

/// The names of the variables a stdio server got, with this entry and host environment.
fn server_env(entry_extra: Value, host_env: &[(&str, &str)]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let mut entry = hostile("env", json!({}));
    if let (Some(m), Value::Object(more)) = (entry.as_object_mut(), entry_extra) {
        m.extend(more);
    }
    let config = servers_file(
        dir.path(),
        json!({"probe": entry}),
        json!({"allow": ["probe__env"]}),
    );
    let model = playback(
        dir.path(),
        json!([{"tool_calls": [{"name": "probe__env", "arguments": {}}]}, {"answer": "ok"}]),
    );
    let (_, recorded) = ask_recorded(dir.path(), &config, &model, host_env);
    let line = recorded
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["message"]["result"]["structuredContent"]["names"].is_array())
        .expect("the env result is recorded");
    line["message"]["result"]["structuredContent"]["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_server_gets_only_the_environment_its_entry_names() {
    let secrets = [
        ("OPENAI_API_KEY", "sk-test-not-for-servers"),
        ("GITHUB_TOKEN", "ghp_test_not_for_servers"),
        ("AWS_SECRET_ACCESS_KEY", "aws-test-not-for-servers"),
    ];
    let names = server_env(json!({}), &secrets);
    for (secret, _) in secrets {
        assert!(
            !names.iter().any(|n| n == secret),
            "{secret} leaked: {names:?}"
        );
    }
    for wanted in ["PATH", "HOME", "HOSTILE", "MCP_USER"] {
        assert!(
            names.iter().any(|n| n == wanted),
            "{wanted} missing: {names:?}"
        );
    }
    let names = server_env(json!({"passEnv": ["GITHUB_TOKEN", "AWS_*"]}), &secrets);
    assert!(names.iter().any(|n| n == "GITHUB_TOKEN"));
    assert!(names.iter().any(|n| n == "AWS_SECRET_ACCESS_KEY"));
    assert!(!names.iter().any(|n| n == "OPENAI_API_KEY"));
    let names = server_env(json!({"inheritEnv": true}), &secrets);
    assert!(names.iter().any(|n| n == "OPENAI_API_KEY"));
}

#[test]
fn a_server_that_echoes_its_credentials_has_them_redacted_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let token = "ghp_s3cret_token_0123456789";
    let config = servers_file(
        dir.path(),
        json!({"leaky": hostile("env", json!({"GITHUB_TOKEN": "${GITHUB_TOKEN}"}))}),
        json!({"allow": ["leaky__echo_env"]}),
    );
    let model = playback(
        dir.path(),
        json!([{"tool_calls": [{"name": "leaky__echo_env", "arguments": {"names": ["GITHUB_TOKEN"]}}]},
               {"answer": "ok"}]),
    );
    let (ran, recorded) = ask_recorded(dir.path(), &config, &model, &[("GITHUB_TOKEN", token)]);
    let record = dir.path().join("run.jsonl");
    for (what, text) in [
        ("stdout", ran.stdout.as_str()),
        ("stderr", ran.stderr.as_str()),
        ("the recording", recorded.as_str()),
    ] {
        assert!(!text.contains(token), "the token is in {what}");
    }
    assert!(recorded.contains("[redacted]"), "{recorded}");
    assert!(
        ran.stderr
            .contains("echoing {\"GITHUB_TOKEN\":\"[redacted]\"}")
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&record).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "a recording is the user's only");
    }
}

#[test]
fn a_server_named_host_works_like_any_other() {
    let bed = Bed::new(
        json!({"host": builtin_server("testbed", json!({}))}),
        json!({"allow": ["host__echo"]}),
    );
    let ran = bed.play(
        json!([{"tool_calls": [{"name": "host__echo", "arguments": {"text": "mine"}}]},
               {"answer": "ok"}]),
        &[],
    );
    let events = ran.tool_events();
    assert_eq!(events[0]["outcome"], "ok", "{}", ran.stderr);
    assert_eq!(events[0]["server"], "host");
}

/// Run `hostile forms`' tool with these options; the action the server was answered with.
fn form_answer(options: &[&str]) -> Value {
    let bed = Bed::new(
        json!({"notes": hostile("forms", json!({}))}),
        json!({"allow": ["notes__attack"]}),
    );
    let ran = bed.play(
        json!([{"tool_calls": [{"name": "notes__attack", "arguments": {}}]}, {"answer": "ok"}]),
        options,
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    ran.steps()
        .iter()
        .find(|s| s["who"] == "person")
        .map(|s| s["data"].clone())
        .expect("an answer step")
}

#[test]
fn a_form_nobody_answered_is_declined_and_answers_fill_only_their_forms() {
    let nobody = form_answer(&[]);
    assert_eq!(nobody["action"], "decline", "{nobody}");
    assert_eq!(nobody["answered"], "by default: nobody could answer");
    assert_eq!(form_answer(&["--no"])["action"], "decline");
    // An answer meant for another server's form does not fill this one.
    let other = form_answer(&["--answer", "tickets:note=P1"]);
    assert_eq!(other["action"], "decline", "{other}");
    let unrelated = form_answer(&["--answer", "priority=P1"]);
    assert_eq!(unrelated["action"], "decline", "{unrelated}");
    let mine = form_answer(&["--answer", "notes:note=see the logs"]);
    assert_eq!(mine["action"], "accept", "{mine}");
    assert_eq!(mine["content"], json!({"note": "see the logs"}));
}

#[test]
fn a_url_with_credentials_is_shown_without_them() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "servers.json",
        &json!({"mcpServers": {
            "desk": {"type": "http", "url": "http://user:hunter2hunter2@127.0.0.1:9/mcp?api_key=${DESK_KEY}"},
            "bad": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer tök-secret-value"}}
        }}),
    );
    let ran = run(
        &["ask", "x", "--config", &config, "--json"],
        &[("DESK_KEY", "desk-api-key-123456")],
    );
    for secret in ["desk-api-key-123456", "hunter2hunter2", "tök-secret-value"] {
        assert!(
            !ran.stdout.contains(secret) && !ran.stderr.contains(secret),
            "{secret} was shown:\n{}\n{}",
            ran.stdout,
            ran.stderr
        );
    }
    let steps = ran.step_texts().join("\n");
    assert!(
        steps.contains("http://[redacted]@127.0.0.1:9/mcp?api_key=[redacted]"),
        "{steps}"
    );
    assert!(
        steps.contains(
            "server bad is not used: header Authorization has a value that is not valid in HTTP"
        ),
        "{steps}"
    );
}

/// Answer every HTTP request on `listener` with `response`, for at most `count` requests.
fn answer_http(listener: std::net::TcpListener, response: &'static str, count: usize) {
    std::thread::spawn(move || {
        for stream in listener.incoming().take(count) {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut buf = [0u8; 65536];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(response.as_bytes());
        }
    });
}

/// A listener on a loopback port whose number holds `digits`.
fn listener_with(digits: &str) -> std::net::TcpListener {
    (1024..65535u16)
        .filter(|p| p.to_string().contains(digits))
        .find_map(|p| std::net::TcpListener::bind(("127.0.0.1", p)).ok())
        .expect("a free port")
}

fn http_failure(response: &'static str, port_digits: &str) -> String {
    let listener = listener_with(port_digits);
    let port = listener.local_addr().unwrap().port();
    answer_http(listener, response, 20);
    unavailable(&format!("http://127.0.0.1:{port}/mcp"))
}

#[test]
fn http_errors_are_told_by_their_status_not_by_the_url() {
    let five = http_failure(
        "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 4\r\nconnection: close\r\n\r\noops",
        "401",
    );
    assert!(
        five.contains("the server failed to answer (HTTP 500)"),
        "{five}"
    );
    let redirect = http_failure(
        "HTTP/1.1 307 Temporary Redirect\r\nlocation: http://example.com/mcp\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        "404",
    );
    assert!(redirect.contains("redirect (307)"), "{redirect}");
    let refused = {
        let port = listener_with("403").local_addr().unwrap().port();
        let dir = tempfile::tempdir().unwrap();
        let config = write(
            dir.path(),
            "servers.json",
            &json!({"mcpServers": {"remote": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp")}}}),
        );
        let ran = run(&["ask", "x", "--config", &config, "--json"], &[]);
        ran.step_texts().join("\n")
    };
    assert!(refused.contains("connection refused"), "{refused}");
}

/// Why `gatehouse ask` could not use the server at `url`: its "server unavailable" step.
fn unavailable(url: &str) -> String {
    let bed = Bed::new(
        json!({"remote": {"type": "http", "url": url}}),
        json!({"connectTimeoutMs": 5000}),
    );
    let ran = bed.run(&["ask", "x", "--json"]);
    ran.step_texts()
        .into_iter()
        .find(|s| s.contains("server unavailable"))
        .unwrap_or_else(|| ran.step_texts().join("\n"))
}

/// A connection that fails is said as it failed, never as "connection refused": an https
/// URL at a plain-HTTP server, a certificate no authority of this machine vouches for
/// (a real TLS server, openssl's `s_server`), a connection closed before any answer.
#[test]
fn a_failed_connection_is_told_as_it_failed() {
    let plain = listener_with("7");
    let port = plain.local_addr().unwrap().port();
    answer_http(plain, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n", 20);
    let not_tls = unavailable(&format!("https://127.0.0.1:{port}/mcp"));
    assert!(
        not_tls.contains("the server did not answer in TLS"),
        "{not_tls}"
    );
    assert!(!not_tls.contains("refused"), "{not_tls}");

    let dir = tempfile::tempdir().unwrap();
    // Made with the machine's openssl, which fails loudly if it is missing.
    let certs = crate::common::postgres::certificates(dir.path(), "localhost");
    let (server, port) = crate::common::ports::on_a_free_port("openssl s_server", |port| {
        let mut cmd = std::process::Command::new("openssl");
        cmd.args(["s_server", "-www", "-accept", &format!("127.0.0.1:{port}")])
            .arg("-cert")
            .arg(&certs.cert)
            .arg("-key")
            .arg(&certs.key);
        let mut server =
            process::Spawn::new(cmd, "openssl s_server").watched(process::Stream::Stdout);
        server.wait_for_line_or_taken("ACCEPT", process::LIMIT)?;
        Ok((server, port))
    });
    let untrusted = unavailable(&format!("https://localhost:{port}/mcp"));
    assert!(
        untrusted.contains("the server's TLS certificate is not accepted"),
        "{untrusted}"
    );
    assert!(untrusted.contains("UnknownIssuer"), "{untrusted}");
    drop(server);

    // Accepted, then closed with the request unread: the socket is reset.
    let closing = listener_with("8");
    let port = closing.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in closing.incoming().take(20) {
            let Ok(mut stream) = stream else { continue };
            let mut first = [0u8; 1];
            let _ = stream.read(&mut first);
        }
    });
    let reset = unavailable(&format!("http://127.0.0.1:{port}/mcp"));
    assert!(
        reset.contains("closed or reset before the server answered"),
        "{reset}"
    );
}

/// A chat of `turns` questions, each fetching the testbed's image; the saved files.
fn saved_images(dir: &Path, turns: usize) -> Vec<std::path::PathBuf> {
    let saved = dir.join("saved");
    let config = servers_file(
        dir,
        json!({"testbed": builtin_server("testbed", json!({}))}),
        json!({"allow": ["testbed__content"], "saveDir": saved}),
    );
    let decisions: Vec<Value> = (0..turns)
        .flat_map(|_| {
            [
                json!({"tool_calls": [{"name": "testbed__content", "arguments": {"kind": "image"}}]}),
                json!({"answer": "saved"}),
            ]
        })
        .collect();
    let model = playback(dir, json!(decisions));
    let input = "one\ntwo\n/quit\n";
    let ran = run_with_stdin(
        &["chat", "--config", &config, "--model", &model],
        &[],
        Some(input),
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let mut files: Vec<_> = std::fs::read_dir(&saved)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

#[test]
fn saved_results_are_private_and_a_later_turn_keeps_the_earlier_files() {
    let dir = tempfile::tempdir().unwrap();
    let files = saved_images(dir.path(), 2);
    assert_eq!(files.len(), 2, "{files:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert!(files.iter().all(|f| mode(f) == 0o600));
        assert_eq!(mode(&dir.path().join("saved")), 0o700);
    }
}

#[test]
fn the_same_uri_from_two_servers_is_read_from_the_one_named() {
    let bed = Bed::new(
        json!({"a": builtin_server("orders", json!({})), "b": builtin_server("orders", json!({}))}),
        json!({"allow": ["a__get_order_status", "b__get_order_status", "read_resource"]}),
    );
    let ran = bed.play(
        json!([
            {"tool_calls": [
                {"name": "a__get_order_status", "arguments": {"order_id": "A-1002"}},
                {"name": "b__get_order_status", "arguments": {"order_id": "A-1002"}}
            ]},
            {"tool_calls": [{"name": "read_resource", "arguments": {"uri": "orders://A-1002"}}]},
            {"tool_calls": [{"name": "read_resource", "arguments": {"uri": "orders://A-1002", "server": "b"}}]},
            {"answer": "read"}
        ]),
        &[],
    );
    let steps = ran.step_texts().join("\n");
    assert!(
        steps.contains("refused: orders://A-1002 was linked by a and b: say which with \"server\""),
        "{steps}"
    );
    let read = ran
        .step_data()
        .into_iter()
        .find(|d| d["uri"] == "orders://A-1002" && d.get("ms").is_some())
        .expect("the second read ran");
    assert_eq!(read["server"], "b");
}

/// Ask for a ticket for jump-prod-02 with this summary (`gatehouse ask … OPTIONS…`) at a
/// pseudo-terminal, answering `answers` (prompt, answer) in order; everything the terminal
/// showed.
fn ticket_at_terminal(summary: &str, options: &[&str], answers: &[(&str, &str)]) -> String {
    let question = format!("who owns jump-prod-02? Open a ticket for it: {summary}");
    let script = repo_root().join("tests/peers/pty_run.py");
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(script).arg("60");
    for (prompt, answer) in answers {
        cmd.arg(format!("{prompt}={answer}"));
    }
    // The host's own colours are the only escapes it may write; these tests look for any
    // other, so they run without colour.
    cmd.arg("--")
        .arg(exe())
        .args(["ask", question.as_str()])
        .args(options);
    cmd.env("GATEHOUSE_TICKETS_DB", scratch_dir().join("tickets.db"))
        .env("XDG_CONFIG_HOME", scratch_dir())
        .env("NO_COLOR", "1")
        .env_remove("GATEHOUSE_CONFIG");
    let out = cmd.output().expect("python3 runs the pseudo-terminal");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn with_json_at_a_terminal_the_person_sees_the_call_before_the_question() {
    let screen = ticket_at_terminal("disk full", &["--json"], &[("Run it? [y/N]", "n")]);
    let call = screen
        .find("tickets__open_ticket on tickets wants to run with")
        .unwrap_or_else(|| panic!("the call is not shown:\n{screen}"));
    let question = screen.find("Run it? [y/N]").unwrap();
    assert!(call < question, "{screen}");
    assert!(screen.contains("jump-prod-02") && screen.contains("disk full"));
}

#[test]
fn a_ticket_summary_cannot_repaint_the_confirmation_at_the_terminal() {
    let screen = ticket_at_terminal(
        "all fine\u{1b}[2J\u{1b}[H\u{9b}Approve: yes",
        &["--yes"],
        &[("Accept? [y/N]", "n")],
    );
    assert!(
        screen.contains("[tickets asks] Open an incident ticket for jump-prod-02?"),
        "{screen}"
    );
    assert!(
        screen.contains("all fine\\u{1b}[2J\\u{1b}[H\\u{9b}Approve: yes"),
        "{screen}"
    );
    assert!(
        !has_terminal_controls(&screen.replace('\r', "")),
        "{screen:?}"
    );
}
