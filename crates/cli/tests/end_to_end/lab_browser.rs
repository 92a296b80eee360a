//! The lab in a real browser: starts `gatehouse lab --port 0` (the real binary, real
//! servers), then runs `node tests/browser/lab.mjs <url>`, which drives Debian's Chromium
//! with playwright-core as a person would (see that script for every check), and
//! `tests/browser/lab_eval.mjs` on a lab showing an eval (`--eval DIR`). Screenshots land
//! in `target/lab-screenshots/` and `target/lab-eval-screenshots/`.
//!
//! Node, Chromium and playwright-core are required: without them this test fails and says
//! how to install them (`scripts/install-test-peers.sh`). It never skips.

use crate::common;

use std::{path::Path, process::Command, time::Instant};

use common::{
    browser::{SCRIPT_LIMIT, chromium, require_peers, screenshots},
    process::Spawn,
    repo_root, seed_run,
};
use serde_json::json;

/// A servers file: the three reference servers and the testbed (for a slow call, and a
/// call that goes on as a task).
fn servers_file(dir: &Path) -> String {
    let exe = common::exe().to_string_lossy().into_owned();
    let config = json!({
        "mcpServers": {
            "support": common::builtin_server("support", json!({})),
            "cmdb": common::builtin_server("cmdb", json!({})),
            "tickets": common::builtin_server("tickets", json!({})),
            "testbed": {"command": exe, "args": ["serve", "testbed"]},
        },
        "gatehouse": {
            // echo is refused some arguments: the manual panel's blurb says so.
            "rules": [{"tool": "testbed__echo", "decision": "deny", "reason": "never a secret",
                       "when": {"pointer": "/text", "glob": "secret*"}}],
            // open_ticket is never on the allow-list: the person approves it.
            "allow": ["support__search_knowledge", "support__get_ticket", "cmdb__get_asset",
                      "cmdb__find_assets", "tickets__list_tickets", "testbed__sleep",
                      "testbed__task_job"],
            // Long enough that only the Stop button can end the 30 s sleep early.
            "toolTimeoutMs": 60000,
            // A 1 s task_job goes on in the background, and the next turn reports its end.
            "taskWaitMs": 300,
            "tasksFile": dir.join("tasks.db")
        }
    });
    common::write(dir, "servers.json", &config)
}

#[test]
fn the_lab_works_in_a_real_browser() {
    let root = repo_root();
    require_peers(&root);
    let dir = common::scratch_dir();
    let config = servers_file(&dir);

    // A run recorded with --record, for the explorer to open.
    let recording = dir.join("ticket-run.jsonl");
    let record = ["--record", recording.to_str().unwrap(), "--config", &config];
    let ran = seed_run("priority=P1", &record, &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);

    let lab = common::serve::lab(&["--config", &config]);

    let shots = screenshots(&root, "lab-screenshots");
    let started = Instant::now();
    let mut script = Command::new("node");
    script
        .arg(root.join("tests/browser/lab.mjs"))
        .arg(&lab.url)
        .arg(&recording)
        .arg(&shots)
        .current_dir(&root)
        .env("CHROMIUM", chromium());
    let ran = Spawn::new(script, "the browser script")
        .run()
        .wait(SCRIPT_LIMIT);
    drop(lab);

    let out = ran.stdout;
    println!("{out}");
    eprintln!("{}", ran.stderr);
    assert_eq!(
        ran.status,
        0,
        "the browser script failed; screenshots in {}",
        shots.display()
    );
    assert!(out.contains("all checks passed"));
    println!(
        "browser checks took {:.1} s; screenshots in {}",
        started.elapsed().as_secs_f64(),
        shots.display()
    );
}

/// An eval's report in the lab's Eval tab, and a failed check's run opened in the explorer.
#[test]
fn the_lab_shows_an_eval_and_opens_a_failed_checks_run_in_the_explorer() {
    let root = repo_root();
    require_peers(&root);
    let dir = tempfile::tempdir().unwrap();
    let suite = json!({"name": "lab-eval", "tasks": [
        {"id": "draft", "question": "Draft a reply to ticket T-30002",
         "checks": [{"answerContains": "Hi Hugo"}]},
        {"id": "order", "question": "When will A-1002 arrive?",
         "checks": [{"answerContains": "a sentence no answer has"}]}],
        "variants": [{"name": "baseline"}, {"name": "one-call", "maxSteps": 1}]});
    let suite = common::write(dir.path(), "suite.json", &suite);
    let recordings = dir.path().join("recordings");
    let ran = common::run(
        &[
            "eval",
            &suite,
            "-q",
            "--record",
            recordings.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let lab = common::serve::lab(&[
        "--config",
        "builtin",
        "--eval",
        recordings.to_str().unwrap(),
    ]);
    let shots = screenshots(&root, "lab-eval-screenshots");
    let args = [lab.url.as_str(), "order", shots.to_str().unwrap()];
    let ran = common::browser::run_script(&root, "lab_eval.mjs", &args);
    drop(lab);
    assert_eq!(ran.status, 0, "screenshots in {}", shots.display());
    assert!(ran.stdout.contains("all checks passed"));
}
