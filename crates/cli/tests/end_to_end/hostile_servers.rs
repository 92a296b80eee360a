//! The host against a server that attacks it (`gatehouse serve hostile`): for each attack
//! the real binary exits on its own within its time limits, never panics, prints exactly
//! one JSON object for `--json`, lets nothing act on the terminal, and keeps its memory
//! bounded ([`MAX_HOST_PEAK_KIB`]).

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::*;

/// The most memory the host may take under any attack, in KiB. Measured peaks are far
/// below (the note on issue 13 has them); the 16 MiB a message may have is the largest
/// single thing the host ever holds.
const MAX_HOST_PEAK_KIB: u64 = 200 * 1024;
/// The longest any attack may keep the host running.
const WALL_LIMIT: Duration = Duration::from_secs(60);

/// Run one question against the hostile server in `scenario`, the model calling `calls`
/// (tool, arguments) in one decision, then answering.
fn attack(scenario: &str, calls: &[(&str, Value)]) -> Watched {
    attack_with(scenario, calls, json!({}))
}

/// The scenario's `attack` tool called once.
fn attack_once(scenario: &str) -> Watched {
    attack(scenario, &[("attack", json!({}))])
}

/// As [`attack_once`], under more `settings`.
fn attack_under(scenario: &str, settings: Value) -> Watched {
    attack_with(scenario, &[("attack", json!({}))], settings)
}

/// The hostile tasks server's `tools`, each called once with no arguments, under
/// `settings`.
fn attack_tasks(tools: &[&str], settings: Value) -> Watched {
    let calls: Vec<(&str, Value)> = tools.iter().map(|t| (*t, json!({}))).collect();
    attack_with("tasks", &calls, settings)
}

/// A servers file with the hostile server in `scenario` and `gatehouse` settings.
fn hostile_config(dir: &std::path::Path, scenario: &str, gatehouse: Value) -> String {
    servers_file(
        dir,
        json!({"hostile": builtin_server("hostile", json!({"HOSTILE": scenario}))}),
        gatehouse,
    )
}

fn attack_with(scenario: &str, calls: &[(&str, Value)], settings: Value) -> Watched {
    let dir = tempfile::tempdir().unwrap();
    let mut gatehouse = json!({
        "allow": calls.iter().map(|(t, _)| format!("hostile__{t}")).collect::<Vec<_>>(),
        "toolTimeoutMs": 3000, "toolMaxTimeoutMs": 6000, "connectTimeoutMs": 5000
    });
    if let (Some(g), Value::Object(more)) = (gatehouse.as_object_mut(), settings) {
        g.extend(more);
    }
    let config = hostile_config(dir.path(), scenario, gatehouse);
    let tool_calls: Vec<Value> = calls
        .iter()
        .map(|(t, a)| json!({"name": format!("hostile__{t}"), "arguments": a}))
        .collect();
    let model = playback(
        dir.path(),
        json!([{"tool_calls": tool_calls}, {"answer": "the model's last word"}]),
    );
    let watched = run_watched(
        &["ask", "x", "--config", &config, "--model", &model, "--json"],
        &[],
        WALL_LIMIT,
    );
    held(scenario, &watched);
    watched
}

/// What must hold whatever the attack.
fn held(scenario: &str, w: &Watched) {
    let ran = &w.ran;
    assert!(
        !ran.stderr.contains("panicked"),
        "{scenario}: the host panicked:\n{}",
        tail(&ran.stderr)
    );
    assert_eq!(ran.status, 0, "{scenario}: {}", tail(&ran.stderr));
    let run = ran.json();
    assert!(run.is_object(), "{scenario}: stdout is one JSON object");
    assert!(
        !has_terminal_controls(&ran.stdout) && !has_terminal_controls(&ran.stderr),
        "{scenario}: something a server wrote would act on the terminal"
    );
    assert!(
        w.peak_kib < MAX_HOST_PEAK_KIB,
        "{scenario}: the host peaked at {} KiB",
        w.peak_kib
    );
    eprintln!(
        "hostile {scenario}: host peak {} KiB, {:.2} s",
        w.peak_kib,
        w.elapsed.as_secs_f64()
    );
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

fn steps(w: &Watched) -> String {
    w.ran.step_texts().join("\n")
}

/// The run's steps hold `part`.
fn says(w: &Watched, part: &str) {
    assert!(steps(w).contains(part), "{part}: {}", steps(w));
}

/// The first step of the run that starts with `prefix`.
fn step_starting(w: &Watched, prefix: &str) -> String {
    let texts = w.ran.step_texts();
    match texts.iter().find(|t| t.starts_with(prefix)) {
        Some(step) => step.clone(),
        None => panic!("no step starts with {prefix:?}: {texts:#?}"),
    }
}

/// One test per scenario: its `attack` tool called once, and the steps hold the words.
macro_rules! says_once {
    ($($name:ident: $scenario:literal => $part:literal,)*) => {
        $(
            #[test]
            fn $name() {
                says(&attack_once($scenario), $part);
            }
        )*
    };
}

// The scenarios whose one call the steps must describe in these words.
says_once! {
    garbage_lines_around_the_answers_are_ignored: "garbage" => "server: result: ",
    a_server_that_never_answers_is_timed_out: "silent" => "timed out after 3",
    a_server_that_dies_mid_answer_is_reported: "die" => "closed during the call",
    questions_for_ever_stop_at_the_round_cap: "ask-forever" => "asked for input more than 10 times",
}

#[test]
fn a_line_past_the_message_bound_fails_the_call_at_once() {
    let w = attack_under(
        "huge-line",
        json!({"toolTimeoutMs": 30000, "toolMaxTimeoutMs": 30000}),
    );
    let text = steps(&w);
    assert!(
        text.contains(
            "the server sent a message longer than 16 MiB; the host closed the connection"
        ),
        "{text}"
    );
    // Not the 30 s time limit: the host stopped reading at 16 MiB.
    assert!(w.elapsed < Duration::from_secs(20), "{:?}", w.elapsed);
}

#[test]
fn a_12_mb_result_reaches_the_model_bounded() {
    let w = attack_once("big-result");
    let data = w.ran.step_data();
    let result = data
        .iter()
        .find(|d| d.get("clipped").is_some())
        .expect("a result step");
    assert_eq!(result["clipped"], true);
    let events = w.ran.tool_events();
    assert!(events[0]["result_bytes"].as_u64().unwrap() <= 4_000);
}

#[test]
fn a_flood_of_notifications_is_bounded_and_the_answer_still_arrives() {
    let w = attack_under("notification-flood", json!({"toolMaxTimeoutMs": 60000}));
    let texts = w.ran.step_texts();
    assert!(texts.iter().any(|s| s.starts_with("server: result: ")));
    let progress = texts.iter().filter(|s| s.contains("progress")).count();
    assert!(progress <= 200, "{progress} progress steps kept");
}

#[test]
fn progress_that_never_rises_keeps_no_call_alive() {
    // Every 20 ms the same value, or a smaller one, for a minute: taken as signs of life,
    // each would push the 1 s limit on until the 60 s maximum.
    let w = attack_under(
        "stuck-progress",
        json!({"toolTimeoutMs": 1000, "toolMaxTimeoutMs": 60000}),
    );
    let events = w.ran.tool_events();
    assert_eq!(events[0]["outcome"], "timeout", "{}", steps(&w));
    let ms = events[0]["ms"].as_f64().unwrap();
    assert!(ms < 30_000.0, "the call was kept alive for {ms} ms");
    let progress = w
        .ran
        .step_texts()
        .into_iter()
        .filter(|s| s.starts_with("server: progress"))
        .count();
    assert_eq!(progress, 1, "{}", steps(&w));
}

#[test]
fn a_flood_of_server_requests_never_reaches_past_the_person_s_bounds() {
    // 6,000 requests answered or declined take about 1 s alone and over 3 s beside the
    // other tests (a fresh CI run timed out at the usual 3 s): the bound is not the timer.
    let w = attack_under(
        "request-flood",
        json!({"toolTimeoutMs": 30000, "toolMaxTimeoutMs": 60000}),
    );
    let texts = w.ran.step_texts();
    assert!(texts.iter().any(|s| s.starts_with("server: result: ")));
    let asked = texts.iter().filter(|s| s.contains(" asks: ")).count();
    assert!(asked <= 10, "{asked} questions reached the person");
    assert!(
        texts.iter().any(|s| s.contains("declined without asking")),
        "{}",
        texts.join("\n")
    );
}

#[test]
fn schema_bombs_are_left_out_or_checked_without_harm() {
    let w = attack(
        "schema-bombs",
        &[
            ("cycle", json!({"x": {"y": 1}})),
            ("self", json!({"next": {"next": {"next": {}}}})),
            ("deep", json!({"a": {"a": {}}})),
        ],
    );
    let text = steps(&w);
    assert!(
        text.contains("hostile's tool \"remote\" is left out"),
        "{text}"
    );
    assert!(
        text.contains("hostile's tool \"huge\" is left out"),
        "{text}"
    );
    assert_eq!(
        w.ran
            .step_texts()
            .iter()
            .filter(|s| s.starts_with("server: result: "))
            .count(),
        3,
        "{text}"
    );
}

#[test]
fn a_tool_list_nested_past_any_parser_leaves_the_server_out_in_time() {
    let w = attack_with("deep-10000", &[], json!({"connectTimeoutMs": 2000}));
    assert!(
        steps(&w)
            .contains("server unavailable: server hostile: tools/list got no answer within 2.0 s"),
        "{}",
        steps(&w)
    );
}

#[test]
fn paging_that_never_ends_is_cut() {
    let w = attack("paging-loop", &[]);
    says(&w, "did not end after 100 pages");
}

#[test]
fn escape_sequences_everywhere_are_shown_not_acted_on() {
    let w = attack(
        "escapes",
        &[
            ("report", json!({})),
            ("fail", json!({})),
            ("ask", json!({})),
        ],
    );
    let text = steps(&w);
    assert!(
        text.contains("is left out: its name holds a control character (U+001B)"),
        "{text}"
    );
    assert!(text.contains("hostile asks: Approve? \\u{1b}[2J"), "{text}");
    assert!(
        w.ran.stderr.contains("report: \\u{1b}[2J"),
        "{}",
        tail(&w.ran.stderr)
    );
    assert!(text.contains("tool error: failed: \\u{1b}[2J"), "{text}");
}

#[test]
fn a_decoy_cannot_take_the_real_tools_name() {
    let w = attack("decoys", &[("search_knowledge", json!({}))]);
    let events = w.ran.tool_events();
    assert_eq!(events[0]["outcome"], "ok");
    let dir = tempfile::tempdir().unwrap();
    let config = hostile_config(dir.path(), "decoys", json!({}));
    let names = run(&["tools", "--json", "--config", &config], &[]);
    let rows: Vec<Value> = serde_json::from_str(&names.stdout).unwrap();
    let real = rows
        .iter()
        .find(|r| r["name"] == "hostile__search_knowledge")
        .unwrap();
    assert_eq!(real["description"], "Search the knowledge base.");
}

#[test]
fn answers_with_the_wrong_id_are_dropped_and_noted() {
    let w = attack_once("wrong-ids");
    let text = steps(&w);
    assert!(
        text.contains("dropped an answer from hostile with id \""),
        "{text}"
    );
    assert!(text.contains("with id null"), "{text}");
    assert!(text.contains("with id 987654"), "{text}");
    let result = w
        .ran
        .step_data()
        .into_iter()
        .find(|d| d.get("clipped").is_some());
    assert!(result.is_some(), "the real answer was taken: {text}");
}

#[test]
fn an_answer_under_a_string_id_is_not_the_answer() {
    let w = attack_once("wrong-id-only");
    let text = steps(&w);
    assert!(text.contains("timed out after 3"), "{text}");
}

#[test]
fn a_flood_on_stderr_is_relayed_in_bounded_lines() {
    let w = attack_once("stderr-flood");
    let longest = w
        .ran
        .stderr
        .lines()
        .filter(|l| l.starts_with("[hostile stderr]"))
        .map(str::len)
        .max()
        .unwrap_or(0);
    assert!(longest < 9 * 1024, "a relayed line of {longest} bytes");
    assert!(w.ran.stderr.contains("more bytes)"));
}

// ---------------------------------------------------------------------------------------
// Tasks gone wrong (`HOSTILE=tasks`, one tool each, and `task-unasked`).
// ---------------------------------------------------------------------------------------

/// The hostile server's `event` records of one kind, from its stderr.
fn events(w: &Watched, event: &str) -> Vec<Value> {
    w.ran
        .server_logs("hostile")
        .into_iter()
        .filter(|r| r["event"] == event)
        .collect()
}

#[test]
fn a_task_the_host_did_not_ask_for_is_refused() {
    let w = attack_once("task-unasked");
    says(
        &w,
        "host: the call failed: the server answered with a task, which this host did not ask for",
    );
    assert!(events(&w, "task_polled").is_empty(), "never polled");
}

#[test]
fn a_task_that_never_ends_goes_on_in_the_background_after_the_turns_wait() {
    let w = attack_tasks(&["never_ends"], json!({"taskWaitMs": 1500}));
    says(
        &w,
        "host: task hostile-task-1 goes on in the background after 1.5 s",
    );
    assert_eq!(w.ran.outcomes(), ["background"]);
    assert!(w.elapsed < Duration::from_secs(15), "{:?}", w.elapsed);
}

#[test]
fn a_status_that_goes_back_and_asks_again_never_asks_the_person_twice() {
    let w = attack_tasks(&["backwards"], json!({"taskWaitMs": 20000}));
    let texts = w.ran.step_texts();
    let asked = texts
        .iter()
        .filter(|t| t.as_str() == "server: hostile asks: Go on?")
        .count();
    assert_eq!(asked, 1, "{texts:#?}");
    assert_eq!(events(&w, "task_update").len(), 1, "one answer for one key");
    says(&w, "server: task hostile-task-1: completed");
}

#[test]
fn a_flood_of_status_notifications_is_ignored_and_memory_stays_bounded() {
    let w = attack_tasks(&["flood"], json!({"taskWaitMs": 60000}));
    says(&w, "server: task hostile-task-1: completed");
    assert_eq!(w.ran.outcomes(), ["ok"]);
}

#[test]
fn a_poll_interval_of_zero_is_slowed_to_the_floor_and_one_of_a_year_cut_to_the_ceiling() {
    let w = attack_tasks(&["poll_zero", "poll_year"], json!({"taskWaitMs": 60000}));
    assert_eq!(w.ran.outcomes(), ["ok", "ok"]);
    let polls = |tool: &str| -> Vec<u64> {
        events(&w, "task_polled")
            .iter()
            .filter(|e| e["tool"] == tool)
            .map(|e| e["ms"].as_u64().unwrap())
            .collect()
    };
    let zero = polls("poll_zero");
    // Two seconds of "poll me every 0 ms": about one poll per 100 ms, no more.
    assert!(
        zero.len() <= 2_000 / 100 + 3,
        "{} polls: {zero:?}",
        zero.len()
    );
    assert!(zero.windows(2).all(|p| p[1] - p[0] >= 90), "{zero:?}");
    let year = polls("poll_year");
    // "Once a year": polled within the host's 5 s ceiling all the same.
    assert!(!year.is_empty() && year[0] <= 5_500, "{year:?}");
}

#[test]
fn a_malformed_task_or_an_answer_about_another_task_ends_the_call_and_cancels_it() {
    let w = attack_tasks(
        &["malformed_create", "malformed_status", "other_id", "bad_id"],
        json!({}),
    );
    assert_eq!(w.ran.outcomes(), ["error", "error", "error", "error"]);
    says(
        &w,
        "the server answered with something that is not a tool's result",
    );
    says(
        &w,
        "hostile answered tasks/get with something that is not a task (a malformed task, or a status the extension does not have)",
    );
    says(
        &w,
        "hostile answered tasks/get for hostile-task-3 with another task (someone-elses-task)",
    );
    says(&w, "hostile answered with a task whose id is not usable");
    let cancelled: Vec<String> = events(&w, "task_cancelled")
        .iter()
        .map(|e| e["tool"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(cancelled, ["malformed_status", "other_id"]);
}

#[test]
fn escapes_and_a_megabyte_in_a_status_message_are_made_visible_and_cut() {
    let w = attack_tasks(&["escapes"], json!({"taskWaitMs": 20000}));
    let status = step_starting(&w, "server: task hostile-task-1: working: ");
    assert!(status.contains("\\u{1b}[2J"), "{status}");
    assert!(
        status.chars().count() < 400,
        "cut short: {} chars",
        status.chars().count()
    );
}

#[test]
fn a_question_inside_a_task_goes_to_the_person_and_a_sampling_request_is_refused() {
    let w = attack_tasks(&["question", "sampling"], json!({"taskWaitMs": 20000}));
    says(&w, "server: hostile asks: Approve the export? \\u{1b}[2J");
    says(&w, "person: answered decline");
    says(
        &w,
        "host: the call failed: hostile asked to use the host's model (sampling), which this host does not offer",
    );
    assert_eq!(w.ran.outcomes(), ["ok", "error"]);
    let updates = events(&w, "task_update");
    assert_eq!(
        updates.len(),
        1,
        "only the person's decline was sent: {updates:?}"
    );
    let cancelled: Vec<Value> = events(&w, "task_cancelled");
    assert_eq!(cancelled.len(), 1);
    assert_eq!(cancelled[0]["tool"], "sampling");
}

#[test]
fn a_server_slower_to_start_than_the_probe_is_connected_not_broken() {
    // Past rmcp's 10 s wait for `server/discover`, the host sends `initialize` on the same
    // connection; the server then answers both, the probe first. That late answer is not
    // the handshake's (it was "uncorrelated error response: expected id 1, …").
    let dir = tempfile::tempdir().unwrap();
    let config = hostile_config(dir.path(), "slow-start", json!({"connectTimeoutMs": 60000}));
    let ran = run_bounded(&["tools", "--config", &config, "--json"], &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.contains("hostile__attack"),
        "{}\n{}",
        ran.stdout,
        ran.stderr
    );
    assert!(!ran.stderr.contains("uncorrelated"), "{}", ran.stderr);
}
