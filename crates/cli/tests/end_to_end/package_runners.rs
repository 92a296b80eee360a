//! Servers people install the usual way, through the real binary: a first `npx -y` start
//! that downloads the package (from the npm registry, into an npm cache of the test's
//! own) is waited for and says it is still starting (however fast the download: the
//! notes' period is lowered to [`NOTE_EVERY_MS`]); a start stopped in the middle of its
//! download leaves no process behind, and the next start works or the broken cache is
//! named with the exact command that fixes it; a server's last words keep the line that
//! names the cause; a variable set in the shell but not passed is named with `passEnv`;
//! `mcp add --pass-env` writes it; doctor's "run it by hand" can be pasted into a shell.
//!
//! The npm tests need the npm registry: when it cannot be reached they fail, saying so.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

use crate::common::*;

/// The variable that sets the period of a slow start's notes.
pub(crate) const NOTE_EVERY_ENV: &str = gatehouse::connect::runner::NOTE_EVERY_ENV;

/// The npx server of these tests (small, a few dependencies, on npm's registry).
pub(crate) const PACKAGE: &str = "@modelcontextprotocol/server-memory@2026.8.31";

/// A servers file with the memory server through `npx -y`, its npm cache `cache`.
fn npx_config(dir: &Path, cache: &Path, settings: Value) -> String {
    let entry = json!({"command": "npx", "args": ["-y", PACKAGE],
        "env": {"npm_config_cache": cache.to_string_lossy(), "npm_config_update_notifier": "false"}});
    servers_file(dir, json!({"memory": entry}), settings)
}

/// `mcp list --json`'s one row, and the run.
pub(crate) fn listed(config: &str) -> (Value, Ran) {
    listed_with(config, &[])
}

/// As [`listed`], with these variables in the host's environment.
pub(crate) fn listed_with(config: &str, env: &[(&str, &str)]) -> (Value, Ran) {
    let ran = run(&["mcp", "list", "--config", config, "--json"], env);
    let rows: Value = serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", ran.stdout, ran.stderr));
    (rows[0].clone(), ran)
}

/// The period of the notes of a slow start in the first-start tests, in milliseconds
/// (`GATEHOUSE_STILL_STARTING_NOTE_MS`): shorter than any start through a runner (a
/// runtime started, a package resolved), so that a fast download is noted too.
pub(crate) const NOTE_EVERY_MS: &str = "200";

/// The lines of `stderr` that note `server`'s start through `runner` as still going, each
/// checked whole: "[host] SERVER: still starting after T s (RUNNER may be downloading
/// PACKAGE on a first start; allowed 180 s)".
pub(crate) fn still_starting_notes<'s>(
    stderr: &'s str,
    server: &str,
    runner: &str,
    package: &str,
) -> Vec<&'s str> {
    let head = format!("[host] {server}: still starting after ");
    let tail =
        format!(" s ({runner} may be downloading {package} on a first start; allowed 180 s)");
    let notes: Vec<&str> = stderr.lines().filter(|l| l.starts_with(&head)).collect();
    for note in &notes {
        let time = note.strip_prefix(&head).and_then(|r| r.strip_suffix(&tail));
        assert!(
            time.is_some_and(|t| t.parse::<f64>().is_ok()),
            "{note}\n{stderr}"
        );
    }
    notes
}

/// Processes of this user whose environment names `cache` (npx, npm, the server), once
/// those killed have gone (within a bound).
fn processes_using(cache: &Path) -> Vec<String> {
    processes_with("npm_config_cache", cache)
}

/// Processes of this user whose environment has `variable` set to `value`, once those
/// killed have gone (within a bound).
pub(crate) fn processes_with(variable: &str, value: &Path) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let found = processes_now(variable, value);
        if found.is_empty() || Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn processes_now(variable: &str, value: &Path) -> Vec<String> {
    let needle = format!("{variable}={}", value.display());
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        if environ
            .split(|b| *b == 0)
            .any(|var| var == needle.as_bytes())
        {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

fn assert_reached_the_registry(row: &Value, ran: &Ran) {
    let error = row["error"].as_str().unwrap_or("");
    assert!(
        ![
            "ENOTFOUND",
            "EAI_AGAIN",
            "ECONNREFUSED",
            "ETIMEDOUT",
            "network"
        ]
        .iter()
        .any(|e| error.contains(e)),
        "the npm registry cannot be reached from here, and this test needs it: {error}\n{}",
        ran.stderr
    );
}

#[test]
fn a_first_npx_start_is_waited_for_and_says_it_is_still_starting() {
    let dir = scratch_dir();
    let cache = dir.join("npm-cache");
    // connectTimeoutMs is far shorter than a download: only the first-start allowance
    // lets the first start through.
    let config = npx_config(&dir, &cache, json!({"connectTimeoutMs": 2000}));
    let (row, ran) = listed_with(&config, &[(NOTE_EVERY_ENV, NOTE_EVERY_MS)]);
    assert_reached_the_registry(&row, &ran);
    assert_eq!(row["state"], "connected", "{row:#}\n{}", ran.stderr);
    assert!(
        row["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("memory__read_graph")),
        "{row:#}"
    );
    let notes = still_starting_notes(&ran.stderr, "memory", "npx", PACKAGE);
    assert!(!notes.is_empty(), "{}", ran.stderr);
    // Once a period, not a flood.
    let (notes, ms) = (notes.len() as u64, row["ms"].as_u64().unwrap());
    let every: u64 = NOTE_EVERY_MS.parse().unwrap();
    assert!(notes <= ms / every + 1, "{notes} notes in {ms} ms");
    // The next start finds the package in the cache.
    let (again, ran) = listed(&config);
    assert_eq!(again["state"], "connected", "{again:#}\n{}", ran.stderr);
}

#[test]
fn a_start_stopped_mid_download_leaves_nothing_running_and_a_cache_that_works_or_is_named() {
    let dir = scratch_dir();
    let cache = dir.join("npm-cache");
    // The allowance extends connectTimeoutMs, never shortens it: both short here.
    let short = npx_config(
        &dir,
        &cache,
        json!({"firstStartTimeoutMs": 1500, "connectTimeoutMs": 1000}),
    );
    let (row, ran) = listed(&short);
    assert_reached_the_registry(&row, &ran);
    let error = row["error"].as_str().unwrap_or("");
    assert!(
        error.starts_with(
            "no answer within 1.5 s of starting through npx, which may still have been downloading the package"
        ),
        "{row:#}"
    );
    assert!(
        row["fix"]
            .as_str()
            .unwrap()
            .contains("raise firstStartTimeoutMs"),
        "{row:#}"
    );
    // The host waited for the group it stopped: npx and whatever it started are gone.
    assert_eq!(processes_using(&cache), Vec::<String>::new());
    // The next start, with the usual allowance: it works, or npm left its copy half
    // written and the failure names the folder to remove; removed, the start after works.
    let usual = npx_config(&dir, &cache, json!({}));
    let (row, ran) = listed(&usual);
    if row["state"] != "connected" {
        let fix = row["fix"].as_str().unwrap_or("");
        let folder = fix
            .split("`rm -rf ")
            .nth(1)
            .and_then(|rest| rest.split('`').next())
            .unwrap_or_else(|| panic!("the broken cache is not named: {row:#}\n{}", ran.stderr));
        assert!(
            folder.starts_with(&format!("{}/_npx/", cache.display())),
            "{folder}"
        );
        std::fs::remove_dir_all(folder).unwrap();
        let (row, ran) = listed(&usual);
        assert_eq!(row["state"], "connected", "{row:#}\n{}", ran.stderr);
    }
}

/// A stdio server that prints `text` on stderr and exits 1, as a python3 one-liner.
fn dying_with(text: &str) -> Value {
    let script = format!("import sys; sys.stderr.write({text:?}); sys.exit(1)");
    json!({"command": "python3", "args": ["-c", script]})
}

/// The fix doctor gives for `server`, and its detail.
pub(crate) fn doctor_says(config: &str, server: &str, env: &[(&str, &str)]) -> (String, String) {
    let ran = run(&["doctor", "--config", config, "--json"], env);
    let report: Value = serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", ran.stdout, ran.stderr));
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == server)
        .unwrap_or_else(|| panic!("no check of {server}: {report:#}"))
        .clone();
    (
        check["fix"].as_str().unwrap_or("").to_owned(),
        check["detail"].as_str().unwrap_or("").to_owned(),
    )
}

#[test]
fn npxs_broken_cache_is_named_from_the_servers_last_words_with_the_fix() {
    // npx's own words (Node 20) when its cache lost a package, with the whole stack after.
    let mut text = String::from(
        "node:internal/modules/esm/resolve:215\n  const resolvedOption = FSLegacyMainResolve(packageJsonUrlString, packageConfig.main, baseStringified);\n                         ^\n\nError: Cannot find package '/home/u/.npm/_npx/15b07286cbcc3329/node_modules/zod/index.js' imported from /home/u/.npm/_npx/15b07286cbcc3329/node_modules/@modelcontextprotocol/server-memory/dist/index.js\n",
    );
    for frame in 0..12 {
        text.push_str(&format!(
            "    at frame{frame} (node:internal/modules/esm/resolve:{frame}:26)\n"
        ));
    }
    text.push_str("  code: 'ERR_MODULE_NOT_FOUND'\n}\n\nNode.js v20.20.2\n");
    let dir = scratch_dir();
    let config = servers_file(&dir, json!({"memory": dying_with(&text)}), json!({}));
    let (fix, detail) = doctor_says(&config, "memory", &[]);
    assert!(
        detail.contains("Error: Cannot find package '/home/u/.npm/_npx/15b07286cbcc3329/node_modules/zod/index.js'"),
        "the line naming the cause was cut: {detail}"
    );
    assert!(
        fix.contains("`rm -rf /home/u/.npm/_npx/15b07286cbcc3329`"),
        "{fix}"
    );
    // mcp get says the same.
    let ran = run(&["mcp", "get", "memory", "--config", &config], &[]);
    assert!(
        ran.stdout
            .contains("fix: npx left the package half-installed in its cache"),
        "{}",
        ran.stdout
    );
}

#[test]
fn a_variable_set_in_the_shell_but_not_passed_is_named_with_pass_env() {
    let dir = scratch_dir();
    let config = servers_file(
        &dir,
        json!({"acme": dying_with("Error: ACME_API_KEY is not set\n")}),
        json!({}),
    );
    let (fix, _) = doctor_says(&config, "acme", &[("ACME_API_KEY", "k-123")]);
    assert_eq!(
        fix,
        format!(
            "ACME_API_KEY is set in your shell but not passed to this server: add `\"passEnv\": [\"ACME_API_KEY\"]` to acme in {config} (or `gatehouse mcp add … --pass-env ACME_API_KEY`)"
        )
    );
    // Not set where the host runs: no such hint, the usual one.
    let (fix, _) = doctor_says(&config, "acme", &[]);
    assert!(
        fix.starts_with("run it by hand to see why it stops: "),
        "{fix}"
    );
}

#[test]
fn mcp_add_writes_pass_env_and_env() {
    let dir = scratch_dir();
    let file = dir.join("servers.json");
    let file = file.to_str().unwrap();
    let ran = run(
        &[
            "mcp",
            "add",
            "--config",
            file,
            "acme",
            "--pass-env",
            "ACME_API_KEY",
            "--pass-env",
            "AWS_*",
            "--env",
            "MODE=fast",
            "--",
            "python3",
            "server.py",
        ],
        &[],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let written: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    assert_eq!(
        written["mcpServers"]["acme"],
        json!({"command": "python3", "args": ["server.py"], "env": {"MODE": "fast"},
               "passEnv": ["ACME_API_KEY", "AWS_*"], "sandbox": true})
    );
    let ran = run(
        &[
            "mcp",
            "add",
            "--config",
            file,
            "bad",
            "--pass-env",
            "A-B",
            "--",
            "x",
        ],
        &[],
    );
    assert_ne!(ran.status, 0);
    assert!(ran.stderr.contains("--pass-env \"A-B\""), "{}", ran.stderr);
}

#[test]
fn doctors_command_to_run_it_by_hand_can_be_pasted_into_a_shell() {
    let dir = scratch_dir();
    // A server in a folder with a space, with arguments holding spaces and quotes, that
    // says what it was given and stops.
    let folder = dir.join("my server");
    std::fs::create_dir_all(&folder).unwrap();
    let script = "import os, sys, json; print(json.dumps({'argv': sys.argv[1:], 'cwd': os.getcwd(), 'mode': os.environ.get('MODE'), 'leak': os.environ.get('GATEHOUSE_TEST_NOT_PASSED'), 'home': os.environ.get('HOME')}), file=sys.stderr); sys.exit(3)";
    let args = ["-c", script, "it's \"quoted\"", "two words", "$HOME"];
    let entry =
        json!({"command": "python3", "args": args, "cwd": folder, "env": {"MODE": "a b'c"}});
    let config = servers_file(&dir, json!({"byhand": entry}), json!({}));
    let env = [("GATEHOUSE_TEST_NOT_PASSED", "x")];
    let (fix, detail) = doctor_says(&config, "byhand", &env);
    let command = fix
        .strip_prefix("run it by hand to see why it stops: ")
        .unwrap_or_else(|| panic!("{fix}"));
    let pasted = std::process::Command::new("sh")
        .args(["-c", command])
        .env("GATEHOUSE_TEST_NOT_PASSED", "x")
        .output()
        .unwrap();
    assert_eq!(pasted.status.code(), Some(3), "{command}");
    let by_hand: Value =
        serde_json::from_slice(&pasted.stderr).unwrap_or_else(|e| panic!("{e}: {command}"));
    assert_eq!(
        by_hand,
        json!({"argv": &args[2..], "cwd": folder.canonicalize().unwrap(), "mode": "a b'c",
               "leak": null, "home": std::env::var("HOME").ok()})
    );
    // What the host's start said is what the pasted command says.
    assert!(detail.contains("\"mode\": \"a b'c\""), "{detail}");
}

/// The host's start (`tools`, `ask`, `chat`) gives a server that failed to start the same
/// fix as `doctor`: npx's broken cache with the folder to remove, a variable set in the
/// shell but not passed, and otherwise the command to run it by hand; the others start.
#[test]
fn the_hosts_start_says_what_doctor_says_about_a_server_that_failed_to_start() {
    let npx = "Error: Cannot find package '/home/u/.npm/_npx/15b07286cbcc3329/node_modules/zod/index.js' imported from /home/u/.npm/_npx/15b07286cbcc3329/node_modules/x/dist/index.js\n";
    let dir = scratch_dir();
    let exe = exe().to_string_lossy().into_owned();
    let config = servers_file(
        &dir,
        json!({
            "memory": dying_with(npx),
            "acme": dying_with("Error: ACME_API_KEY is not set\n"),
            "quitter": dying_with("something went wrong\n"),
            "testbed": {"command": exe, "args": ["serve", "testbed"]},
        }),
        json!({}),
    );
    let env = [("ACME_API_KEY", "k-123")];
    let fixes = [
        (
            "memory",
            "remove that copy with `rm -rf /home/u/.npm/_npx/15b07286cbcc3329`",
        ),
        (
            "acme",
            "ACME_API_KEY is set in your shell but not passed to this server: add `\"passEnv\": [\"ACME_API_KEY\"]`",
        ),
        ("quitter", "run it by hand to see why it stops: env -i "),
    ];
    let fix_line = |text: &str, server: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("[host] fix for {server}: ")))
            .unwrap_or_else(|| panic!("no fix for {server}:\n{text}"))
            .to_owned()
    };
    let tools = run(&["tools", "--config", &config], &env);
    assert_eq!(tools.status, 0, "{}", tools.stderr);
    assert!(tools.stdout.contains("testbed__echo"), "{}", tools.stdout);
    for (server, fix) in fixes {
        assert!(
            fix_line(&tools.stderr, server).contains(fix),
            "{}",
            tools.stderr
        );
        // What doctor says is what the start says.
        let (doctor, _) = doctor_says(&config, server, &env);
        assert!(
            fix_line(&tools.stderr, server).contains(&doctor),
            "{doctor}"
        );
    }
    let asked = run(&["ask", "x", "--config", &config, "--json"], &env);
    let steps = asked.steps_starting("host: fix for ");
    assert_eq!(steps.len(), 3, "{steps:?}");
    assert!(steps.iter().any(|s| s.contains(fixes[1].1)), "{steps:?}");
    let chat = run_with_stdin(&["chat", "--config", &config], &env, Some("/quit\n"));
    assert!(
        fix_line(&chat.stderr, "memory").contains(fixes[0].1),
        "{}",
        chat.stderr
    );
}
