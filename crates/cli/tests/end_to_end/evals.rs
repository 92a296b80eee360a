//! `gatehouse eval SUITE`: the seeds' own suite (`evals/seeds.yaml`) passes on the built-in
//! servers and model, each attempt in a world of its own (the same ticket is INC-4100 on
//! every repetition); a check that does not hold fails its task and says why, and the
//! threshold sets the exit status; a variant's rules are graded beside the baseline with
//! the difference said to be chance or not; a `world` command reads the run's JSON; a
//! suite with a mistake is refused naming the task and the key.

use serde_json::{Value, json};

use crate::common::*;

/// `gatehouse eval SUITE --json` and more: the run, and its report when it printed one.
fn eval(suite: &str, extra: &[&str]) -> (Ran, Value) {
    let mut args = vec!["eval", suite, "--json"];
    args.extend_from_slice(extra);
    let ran = run(&args, &[]);
    let report = serde_json::from_str(&ran.stdout).unwrap_or(Value::Null);
    (ran, report)
}

/// A suite file of `tasks` (and more top-level keys) in a fresh folder; its path.
fn suite(dir: &std::path::Path, doc: Value) -> String {
    write(dir, "suite.json", &doc)
}

/// The report's pass counts per task, under the variant at `v`.
fn passes(report: &Value, v: usize) -> Vec<(String, u64, u64)> {
    report["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let rate = &t["variants"][v]["pass"];
            (
                t["task"].as_str().unwrap().to_owned(),
                rate["passed"].as_u64().unwrap(),
                rate["runs"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_seeds_suite_passes_on_the_built_in_servers_each_run_in_a_world_of_its_own() {
    let seeds = repo_root().join("evals/seeds.yaml");
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("junit.xml");
    let (ran, report) = eval(
        seeds.to_str().unwrap(),
        &["--repeat", "2", "--junit", junit.to_str().unwrap()],
    );
    assert_eq!(ran.status, 0, "{}\n{}", ran.stdout, ran.stderr);
    let seen = passes(&report, 0);
    assert_eq!(seen.len(), 11, "{seen:?}");
    assert!(seen.iter().all(|(_, p, n)| *p == 2 && *n == 2), "{seen:?}");
    // Both runs of the P1 task opened INC-4100, the only ticket of their world.
    assert!(seen.iter().any(|(t, _, _)| t == "inc-4100-p1"));
    let total = &report["totals"][0]["figures"];
    assert_eq!(total["pass"]["passed"], 22);
    assert!(total["model_calls"].as_f64().unwrap() >= 2.0, "{total}");
    assert!(total["definition_bytes_per_call"].as_f64().unwrap() > 1000.0);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<testcase ").count(), 11, "{xml}");
    assert!(xml.contains("failures=\"0\""), "{xml}");
    assert!(!xml.contains("<failure"), "{xml}");
}

#[test]
fn a_check_that_does_not_hold_fails_its_task_says_why_and_the_threshold_sets_the_status() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = json!([
        {"id": "draft", "question": "Draft a reply to ticket T-30002",
         "checks": [{"answerContains": "Hi Hugo"},
                    {"answerContains": "a sentence no draft has"},
                    {"notCalled": "support__get_ticket"},
                    {"world": {"command": "sh", "args": ["-c", "exit 3"]}}]},
        {"id": "window", "question": "What is the return window?", "user": "usr-omar",
         "checks": [{"answerContains": "policy://larkfield/returns-policy"}]}
    ]);
    let path = suite(
        dir.path(),
        json!({"name": "mixed", "threshold": 0.9, "tasks": tasks}),
    );
    let md = dir.path().join("report.md");
    let (ran, report) = eval(&path, &["--markdown", md.to_str().unwrap()]);
    assert_eq!(ran.status, 1, "the threshold is missed: {}", ran.stderr);
    assert_eq!(
        passes(&report, 0),
        [("draft".into(), 0, 1), ("window".into(), 1, 1)]
    );
    let failures: Vec<String> = report["failed"][0]["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f[1].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(failures.len(), 3, "{failures:?}");
    assert!(failures[0].contains("does not contain \"a sentence no draft has\""));
    assert_eq!(failures[1], "support__get_ticket was called 1 time(s)");
    assert!(
        failures[2].contains("failed (exit status: 3)"),
        "{failures:?}"
    );
    let markdown = std::fs::read_to_string(&md).unwrap();
    assert!(markdown.contains("| baseline | 1/2 50%"), "{markdown}");
    // The same suite without a threshold reports the failures and exits 0.
    let path = suite(dir.path(), json!({"tasks": tasks}));
    let (ran, _) = eval(&path, &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    // And on the terminal's table, the failure is named with its check.
    let ran = run(&["eval", &path, "-q"], &[]);
    assert!(
        ran.stdout
            .contains("FAIL draft (baseline, run 1), check 1: the answer does not contain"),
        "{}",
        ran.stdout
    );
}

#[test]
fn a_confirmed_round_sent_again_is_graded_by_what_the_server_made_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let question =
        "who owns jump-prod-02? Open a ticket for it: brute force then a login from 203.0.113.77";
    // Each expectation is the opposite of what the tickets server does, so each check
    // must fail and say what the server answered.
    let tasks = json!([
        {"id": "opened", "question": question,
         "answers": {"approve": "yes", "forms": {"priority": "P1"}},
         "checks": [{"world": {"resend": "tickets__open_ticket", "isError": true}},
                    {"world": {"resend": "tickets__open_ticket",
                               "inputResponses": {"confirm": {"action": "decline"}}}},
                    {"world": {"call": "tickets__list_tickets",
                               "where": [{"pointer": "/result/total", "equals": 1}]}}]},
        {"id": "nothing-asked", "question": "Draft a reply to ticket T-30002",
         "checks": [{"world": {"resend": "tickets__open_ticket", "isError": true}}]}
    ]);
    let path = suite(dir.path(), json!({"tasks": tasks}));
    let (ran, report) = eval(&path, &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let failures: Vec<(u64, String)> = report["failed"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|a| a["failures"].as_array().unwrap().clone())
        .map(|f| (f[0].as_u64().unwrap(), f[1].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(failures.len(), 3, "{failures:?}");
    // The same answer again gets the ticket it opened back; it opens no second one (the
    // list still holds one ticket: check 2 passed).
    assert_eq!(failures[0].0, 0);
    assert!(
        failures[0]
            .1
            .starts_with("tickets__open_ticket's answered round, sent again, succeeded:")
            && failures[0].1.contains("INC-4100"),
        "{failures:?}"
    );
    // Another answer with the used state is refused.
    assert_eq!(failures[1].0, 1);
    assert!(
        failures[1]
            .1
            .contains("failed: this confirmation was already used"),
        "{failures:?}"
    );
    // A run that never answered the server sent no round to send again.
    assert_eq!(
        failures[2],
        (
            0,
            "the run sent no round of tickets__open_ticket that carried the server's requestState"
                .into()
        )
    );
    // A resend takes no arguments: they are the recorded round's.
    let bad = json!({"tasks": [{"id": "x", "question": "q",
        "checks": [{"world": {"resend": "tickets__open_ticket", "arguments": {}}}]}]});
    let (ran, _) = eval(&suite(dir.path(), bad), &[]);
    assert_eq!(ran.status, 2);
    assert!(ran.stderr.contains("\"arguments\""), "{}", ran.stderr);
}

#[test]
fn a_variants_rules_are_graded_beside_the_baseline_and_the_difference_is_told_from_chance() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = json!([
        {"id": "draft", "question": "Draft a reply to ticket T-30002",
         "checks": [{"answerContains": "Hi Hugo"},
                    {"decision": "support__get_ticket", "is": "run"}]}
    ]);
    let variants = json!([
        {"name": "baseline"},
        {"name": "ask-first",
         "rules": [{"tool": "support__get_ticket", "decision": "ask", "reason": "tickets hold names"}]}
    ]);
    let path = suite(
        dir.path(),
        json!({"tasks": tasks, "variants": variants, "repeat": 5}),
    );
    let (ran, report) = eval(&path, &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert_eq!(report["variants"], json!(["baseline", "ask-first"]));
    assert_eq!(passes(&report, 0), [("draft".into(), 5, 5)]);
    assert_eq!(passes(&report, 1), [("draft".into(), 0, 5)]);
    let against = &report["totals"][1]["against_first"];
    assert_eq!(against["difference"], -1.0);
    assert_eq!(against["telling"], true, "{against}");
    // The ledger asked, by the variant's rule, and nobody said yes (the task gives no
    // answer): the call never ran.
    let failed = report["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 5);
    let ledger = &failed[0]["run"]["ledger"];
    let asked: Vec<&Value> = ledger
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["tool"] == "support__get_ticket")
        .collect();
    assert_eq!(asked.len(), 1, "{ledger}");
    assert_eq!(asked[0]["decision"], "asked");
    assert_eq!(asked[0]["rule"], "rules[0]");
    assert_eq!(asked[0]["answer"], "no");
    // One run each: 1 of 1 against 0 of 1 cannot be told from chance.
    let (_, report) = eval(&path, &["--repeat", "1"]);
    assert_eq!(report["totals"][1]["against_first"]["telling"], false);
}

#[test]
fn a_world_command_reads_the_runs_json_on_stdin() {
    let dir = tempfile::tempdir().unwrap();
    // The run, and the attempt's own folder, where its servers kept their state (the
    // built-in tickets server's store is there).
    let script = "import json, os, sys\ni = json.load(sys.stdin)\nr = i['run']\n\
        calls = [c['tool'] for c in r['calls']]\n\
        kept = os.path.isdir(i['dir']) and 'ledger.jsonl' in os.listdir(i['dir'])\n\
        sys.exit(0 if kept and calls == ['orders__get_order_status'] and r['answers'][0].startswith('Order A-1002') else 1)\n";
    let check = |code: &str| json!({"world": {"command": "python3", "args": ["-c", code]}});
    let tasks = json!([
        {"id": "maya", "question": "When will A-1002 arrive?", "checks": [check(script)]},
        {"id": "maya-wrong", "question": "When will A-1002 arrive?",
         "checks": [check(&script.replace("orders__get_order_status", "orders__cancel_order"))]}
    ]);
    let path = suite(dir.path(), json!({"tasks": tasks}));
    let (ran, report) = eval(&path, &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert_eq!(
        passes(&report, 0),
        [("maya".into(), 1, 1), ("maya-wrong".into(), 0, 1)]
    );
}

#[test]
fn a_suite_with_a_mistake_is_refused_naming_the_task_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            json!({"tasks": [{"id": "a", "question": "q", "chekcs": []}]}),
            "task \"a\" (tasks[0]): unknown key \"chekcs\" (did you mean \"checks\"?)",
        ),
        (
            json!({"tasks": [{"id": "a", "question": "q", "checks": [{"answerHas": "x"}]}]}),
            "task \"a\" (tasks[0]): \"checks\"[0]: no kind of check",
        ),
        (
            json!({"tasks": [{"id": "a", "question": "q",
                              "checks": [{"called": "x", "where": [{"pointer": "/a"}]}]}]}),
            "task \"a\" (tasks[0]): \"checks\"[0]: \"where\"[0]: condition on /a has no test",
        ),
        (
            json!({"repeat": 0, "tasks": [{"id": "a", "question": "q", "checks": [{"calls": 1}]}]}),
            "the suite's \"repeat\" must be a whole number from 1 to 1000",
        ),
        (
            json!({"tasks": [{"id": "a", "question": "q", "checks": [{"calls": 1}]},
                             {"id": "a", "question": "r", "checks": [{"calls": 1}]}]}),
            "task \"a\" (tasks[1]): the id is used twice",
        ),
        (
            json!({"variants": [{"name": "v", "descripton": {}}],
                   "tasks": [{"id": "a", "question": "q", "checks": [{"calls": 1}]}]}),
            "variant \"v\" (variants[0]): unknown key \"descripton\" (did you mean \"descriptions\"?)",
        ),
    ];
    for (doc, said) in cases {
        let path = suite(dir.path(), doc);
        let ran = run(&["eval", &path], &[]);
        assert_eq!(ran.status, 2, "{}", ran.stderr);
        assert!(ran.stderr.contains(said), "{said}\n{}", ran.stderr);
        assert!(ran.stdout.is_empty(), "{}", ran.stdout);
    }
    // A model endpoint that cannot be reached stops the run before any attempt.
    let dead = json!({"model": "openai:m",
                      "tasks": [{"id": "a", "question": "q", "checks": [{"calls": 1}]}]});
    let path = suite(dir.path(), dead);
    let ran = run(
        &["eval", &path],
        &[
            ("OPENAI_BASE_URL", "http://127.0.0.1:1/v1"),
            ("OPENAI_API_KEY", ""),
        ],
    );
    assert_eq!(ran.status, 2, "{}", ran.stderr);
    assert!(ran.stderr.contains("model openai:m: "), "{}", ran.stderr);
    assert!(ran.stdout.is_empty(), "{}", ran.stdout);
    // YAML is read as JSON is, its own mistakes said with the line.
    let yaml = dir.path().join("suite.yaml");
    std::fs::write(&yaml, "tasks:\n  - id: a\n    question: [unclosed\n").unwrap();
    let ran = run(&["eval", yaml.to_str().unwrap()], &[]);
    assert_eq!(ran.status, 2, "{}", ran.stderr);
    assert!(ran.stderr.contains("not YAML"), "{}", ran.stderr);
}

#[test]
fn a_description_variant_wins_with_a_model_that_reads_descriptions() {
    // A model whose only guide is the descriptions it is given: with the servers' own, the
    // order-status tool shares the most words with the question (and the host refuses the
    // question as an order id); with the variant's description, the search does.
    let reader = crate::fake_model::start_reader();
    let dir = tempfile::tempdir().unwrap();
    let doc = json!({
        "model": "openai:reader",
        "user": "usr-omar",
        "repeat": 5,
        "tasks": [{"id": "send-back", "question": "How long have customers to send items back?",
                   "checks": [{"called": "support__search_knowledge", "times": 1},
                              {"answerContains": "policy://larkfield/"}]}],
        "variants": [
            {"name": "servers-own"},
            {"name": "plain-words", "descriptions": {"support__search_knowledge":
                "Search policies: how long customers have to send items back, refunds, shipping."}}
        ]
    });
    let path = suite(dir.path(), doc);
    let ran = run(
        &["eval", &path, "--json"],
        &[("OPENAI_BASE_URL", &reader.base), ("OPENAI_API_KEY", "")],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let report: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(passes(&report, 0), [("send-back".into(), 0, 5)]);
    assert_eq!(passes(&report, 1), [("send-back".into(), 5, 5)]);
    let against = &report["totals"][1]["against_first"];
    assert_eq!(against["telling"], true, "{against}");
    // The reader reports its tokens: two model calls of 110 under the variant.
    assert_eq!(report["totals"][1]["figures"]["tokens"], 220.0);
    let wrong = &report["failed"][0]["run"]["calls"][0];
    assert_eq!(wrong["tool"], "orders__get_order_status", "{wrong}");
    assert_eq!(wrong["outcome"], "refused", "{wrong}");
    assert_eq!(report["totals"][1]["figures"]["model_calls"], 2.0);
}

#[test]
fn the_seeds_suite_replays_from_its_recordings_with_no_server_able_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let recordings = dir.path().join("recordings");
    let seeds = repo_root().join("evals/seeds.yaml");
    let (ran, _) = eval(
        seeds.to_str().unwrap(),
        &["--record", recordings.to_str().unwrap()],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let recorded = std::fs::read_dir(&recordings)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "jsonl")
        })
        .count();
    assert_eq!(recorded, 11, "one recording per task");
    let beside: Value =
        serde_json::from_str(&std::fs::read_to_string(recordings.join("report.json")).unwrap())
            .unwrap();
    assert_eq!(
        beside["suite"], "seeds",
        "the report is kept beside its recordings"
    );
    // The same suite on the built-in servers file with a program that does not exist:
    // played back, every task still passes (the INC-4100 form's two rounds included).
    let nowhere =
        gatehouse_servers::built_in::launcher(std::path::Path::new("/nonexistent/gatehouse"));
    let file = write(
        dir.path(),
        "unstartable.json",
        &gatehouse_servers::built_in::servers_file(&nowhere),
    );
    let text = std::fs::read_to_string(&seeds).unwrap();
    let suite = dir.path().join("seeds.yaml");
    std::fs::write(&suite, format!("servers: {file}\n{text}")).unwrap();
    let (ran, report) = eval(suite.to_str().unwrap(), &[]);
    assert_eq!(
        ran.status, 1,
        "without the recordings nothing starts: {}",
        ran.stderr
    );
    let (ran, report_replayed) = eval(
        suite.to_str().unwrap(),
        &["--replay", recordings.to_str().unwrap()],
    );
    assert_eq!(ran.status, 0, "{}\n{}", ran.stdout, ran.stderr);
    let seen = passes(&report_replayed, 0);
    assert!(seen.iter().all(|(_, p, n)| *p == 1 && *n == 1), "{seen:?}");
    assert_eq!(report["totals"][0]["figures"]["pass"]["passed"], 0);
    // A question the recording does not hold: the error names it and the nearest. The
    // recording is named relative to the servers file, which is read from another folder.
    let servers = json!({"mcpServers": {"support": {"replay": "recordings/t-30002-draft--baseline--1.jsonl"}},
                         "gatehouse": {"allow": ["support__get_ticket", "support__search_knowledge"]}});
    let config = write(dir.path(), "replayed.json", &servers);
    let elsewhere = tempfile::tempdir().unwrap();
    let ran = run_in(
        elsewhere.path(),
        &[
            "ask",
            "Draft a reply to ticket T-30001",
            "--config",
            &config,
        ],
        &[],
    );
    assert!(
        ran.stdout.contains(
            "the recording holds no tools/call {\"arguments\":{\"ticket_id\":\"T-30001\"},\"name\":\"get_ticket\"}; \
             the nearest recorded request is tools/call {\"arguments\":{\"ticket_id\":\"T-30002\"},\"name\":\"get_ticket\"}"
        ),
        "{}",
        ran.stdout
    );
}

#[test]
fn the_reference_suite_is_made_from_the_servers_data_and_its_variants_are_told_apart() {
    // evals/reference.yaml is what evals/make_reference.py makes of crates/servers/data.
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("evals");
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::copy(
        repo_root().join("evals/make_reference.py"),
        copy.join("make_reference.py"),
    )
    .unwrap();
    std::os::unix::fs::symlink(repo_root().join("crates"), dir.path().join("crates")).unwrap();
    let made = std::process::Command::new("python3")
        .arg(copy.join("make_reference.py"))
        .status()
        .expect("python3 runs the generator");
    assert!(made.success());
    let shipped = std::fs::read_to_string(repo_root().join("evals/reference.yaml")).unwrap();
    assert_eq!(
        std::fs::read_to_string(copy.join("reference.yaml")).unwrap(),
        shipped
    );
    let suite = repo_root().join("evals/reference.yaml");
    let (ran, report) = eval(suite.to_str().unwrap(), &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let rates: Vec<(u64, bool)> = report["totals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let told = t["against_first"]["telling"].as_bool().unwrap_or(true);
            (t["figures"]["pass"]["passed"].as_u64().unwrap(), told)
        })
        .collect();
    // Every task passes on the baseline; asking before a ticket is read fails the twenty
    // ticket tasks (nobody answers), one model call fails every task that needs a second.
    assert_eq!(rates, [(50, true), (30, true), (20, true)]);
}

#[test]
fn a_suite_recorded_against_server_everything_replays_without_it() {
    use crate::interop_peers::{node, npm_server};
    let dir = tempfile::tempdir().unwrap();
    let decisions = json!([
        {"tool_calls": [{"name": "everything__echo", "arguments": {"message": "from the suite"}}]},
        {"tool_calls": [{"name": "everything__get-sum", "arguments": {"a": 2, "b": 3}}]},
        {"answer": "done"}
    ]);
    let model = playback(dir.path(), decisions);
    let live = servers_file(
        dir.path(),
        json!({"everything": stdio_server(&node(), &[&npm_server("everything")])}),
        json!({"allow": ["everything__echo", "everything__get-sum"], "toolTimeoutMs": 60000}),
    );
    let suite_for = |servers: &str, name: &str| {
        let doc = json!({"servers": servers, "model": model, "repeat": 2, "tasks": [
            {"id": "echo-and-sum", "question": "echo, then add",
             "checks": [{"called": "everything__echo",
                         "where": [{"pointer": "/message", "equals": "from the suite"}]},
                        {"called": "everything__get-sum", "times": 1},
                        {"world": {"call": "everything__get-sum", "arguments": {"a": 20, "b": 22},
                                   "contains": "42"}}]}]});
        write(dir.path(), name, &doc)
    };
    let recordings = dir.path().join("recordings");
    let (ran, report) = eval(
        &suite_for(&live, "live.json"),
        &["--record", recordings.to_str().unwrap()],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert_eq!(
        passes(&report, 0),
        [("echo-and-sum".into(), 2, 2)],
        "{report:#}"
    );
    // The same entry with a program that does not exist: only the recordings answer.
    let gone = servers_file(
        dir.path(),
        json!({"everything": stdio_server("/nonexistent/node", &[&npm_server("everything")])}),
        json!({"allow": ["everything__echo", "everything__get-sum"], "toolTimeoutMs": 60000}),
    );
    let suite = suite_for(&gone, "replayed.json");
    let (ran, report) = eval(&suite, &["--replay", recordings.to_str().unwrap()]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert_eq!(
        passes(&report, 0),
        [("echo-and-sum".into(), 2, 2)],
        "{report:#}"
    );
}

#[test]
fn a_call_the_server_ran_as_a_task_replays_from_its_recording() {
    // The orders server runs export_report as a task: the call, then tasks/get until it
    // completes. Played back, the polls are answered in the recorded order, the last again.
    let dir = tempfile::tempdir().unwrap();
    let model = playback(
        dir.path(),
        json!([{"tool_calls": [{"name": "orders__export_report", "arguments": {"rows": 20000}}]},
               {"answer": "exported"}]),
    );
    let recording = dir.path().join("task.jsonl");
    let ask = |config: &str| {
        run(
            &[
                "ask",
                "export",
                "--config",
                config,
                "--model",
                &model,
                "--json",
                "--record",
                recording.to_str().unwrap(),
            ],
            &[("HOST_TASK_WAIT", "60")],
        )
    };
    let live = ask("builtin");
    assert_eq!(live.status, 0, "{}", live.stderr);
    let kept = dir.path().join("kept.jsonl");
    std::fs::rename(&recording, &kept).unwrap();
    let servers = json!({"mcpServers": {"orders": {"replay": kept}},
                         "gatehouse": {"allow": ["orders__export_report"]}});
    let config = write(dir.path(), "replayed.json", &servers);
    let replayed = ask(&config);
    assert_eq!(replayed.status, 0, "{}", replayed.stderr);
    let steps = |ran: &Ran| -> Vec<String> {
        let run: Value = serde_json::from_str(&ran.stdout).unwrap();
        run["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["text"].as_str().unwrap_or("").to_owned())
            .filter(|t| t.contains("completed") || t.starts_with("runs the call as task"))
            .collect()
    };
    let (live_steps, replayed_steps) = (steps(&live), steps(&replayed));
    assert!(
        live_steps
            .iter()
            .any(|s| s.contains("completed: 20000 of 20000 rows")),
        "{live_steps:?}"
    );
    assert_eq!(replayed_steps, live_steps);
}

#[test]
fn the_shipped_server_everything_recording_replays_with_no_node_and_no_npm() {
    // evals/everything/recordings was made against server-everything 2026.8.31 through
    // npx; played back with a PATH that finds neither node nor npx, the suite passes.
    let root = repo_root();
    let suite = root.join("evals/everything/suite.yaml");
    let recordings = root.join("evals/everything/recordings");
    let ran = run(
        &[
            "eval",
            suite.to_str().unwrap(),
            "--json",
            "--replay",
            recordings.to_str().unwrap(),
        ],
        &[("PATH", "/nonexistent")],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let report: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(
        passes(&report, 0),
        [("echo-and-sum".into(), 1, 1)],
        "{report:#}"
    );
    // Without the recordings, the same suite cannot even start its server.
    let ran = run(
        &["eval", suite.to_str().unwrap(), "--json"],
        &[("PATH", "/nonexistent")],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let report: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(
        passes(&report, 0),
        [("echo-and-sum".into(), 0, 1)],
        "{report:#}"
    );
}

#[test]
fn an_older_servers_own_question_replays_and_another_answer_is_told() {
    // The Python SDK's 2025-11-25 server asks with elicitation/create inside pick_color.
    use crate::{
        interop_foreign_servers::{Peer, serve},
        interop_peers::Transport,
    };
    let dir = tempfile::tempdir().unwrap();
    let legacy = serve(Peer::Legacy, Transport::Stdio, None);
    let model = playback(
        dir.path(),
        json!([{"tool_calls": [{"name": "legacy__pick_color", "arguments": {}}]},
               {"answer": "picked"}]),
    );
    let recording = dir.path().join("legacy.jsonl");
    let settings = json!({"allow": ["legacy__pick_color"], "toolTimeoutMs": 60000});
    let live = servers_file(
        dir.path(),
        json!({"legacy": legacy.entry}),
        settings.clone(),
    );
    let ran = run(
        &[
            "ask",
            "pick",
            "-v",
            "--config",
            &live,
            "--model",
            &model,
            "--answer",
            "color=blue",
            "--record",
            recording.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.contains("the user picked blue"),
        "{}",
        ran.stdout
    );
    let replayed = servers_file(
        dir.path(),
        json!({"legacy": {"replay": recording}}),
        settings,
    );
    let again = |color: &str| {
        run(
            &[
                "ask",
                "pick",
                "-v",
                "--config",
                &replayed,
                "--model",
                &model,
                "--answer",
                &format!("color={color}"),
            ],
            &[],
        )
    };
    let same = again("blue");
    assert!(
        same.stdout.contains("the user picked blue"),
        "{}",
        same.stdout
    );
    assert!(
        same.stdout.contains("legacy asks: Which color?"),
        "{}",
        same.stdout
    );
    let other = again("red");
    assert!(
        other
            .stdout
            .contains("answered the server's elicitation/create otherwise than the recording"),
        "{}",
        other.stdout
    );
    assert!(
        !other.stdout.contains("the user picked"),
        "{}",
        other.stdout
    );
}

#[test]
fn a_suite_that_names_no_model_runs_the_servers_files_as_ask_would() {
    let dir = tempfile::tempdir().unwrap();
    let model = playback(
        dir.path(),
        json!([{"answer": "the servers file's model answered"}]),
    );
    let servers =
        gatehouse_servers::built_in::servers_file(&gatehouse_servers::built_in::launcher(&exe()));
    let mut servers = servers;
    servers["gatehouse"]["model"] = json!(model);
    let file = write(dir.path(), "servers.json", &servers);
    let doc = json!({"servers": file, "tasks": [{"id": "t", "question": "anything",
        "checks": [{"answerContains": "the servers file's model answered"}]}]});
    let (ran, report) = eval(&suite(dir.path(), doc), &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert_eq!(passes(&report, 0), [("t".into(), 1, 1)], "{report:#}");
}
