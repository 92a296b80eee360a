//! The real Claude Code (`@anthropic-ai/claude-code`, installed by
//! `scripts/install-test-peers.sh claude_code`) behind `gatehouse gateway`, wired with its
//! own flags (`claude -p … --mcp-config FILE --strict-mcp-config`) over stdio and HTTP,
//! its model the scripted Anthropic endpoint on loopback (`common::anthropic`), in a
//! scratch HOME with nothing to reach but 127.0.0.1.
//!
//! - An allowed call: the scripted model asks for `support__get_ticket`, Claude Code calls
//!   it through the gateway, the ticket's text comes back in the model's next request, and
//!   the gateway's ledger records the call.
//! - A call the policy asks about (`tickets__open_ticket`): the gateway's approval form
//!   reaches Claude Code, which shows it through its `Elicitation` hook in `-p` mode
//!   (`tests/peers/claude_elicitation_hook.py` keeps the form and answers it as the person
//!   at the dialog would); accepted, the call runs (and the tickets server's own question
//!   is asked the same way); declined, it does not. Without a hook, `-p` answers every
//!   form `cancel` by itself, and the gateway writes that down as the client's no.
//! - At a terminal (`tests/peers/tui_run.py`), the gateway's form is Claude Code's dialog,
//!   with the gateway's words; ticked and accepted, the call runs.
//! - Wired by `gatehouse gateway connect claude-code` instead: Claude Code's own server
//!   moved behind the gateway, called through it.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use serde_json::{Value, json};

use crate::common::{
    Ran,
    anthropic::{ANSWER_PREFIX, Endpoint},
    exe, gatehouse_command, in_fresh_world,
    process::{LIMIT, Spawn},
    serve::SAM_TOKEN,
    write,
};
use crate::gateway::{Gw, assert_approved_in_the_client, ledger_lines, reference_server};
use crate::interop_peers::{Transport, json_lines, require, script};

/// The gateway's entry in Claude Code's MCP configuration.
const ENTRY: &str = "gatehouse";
/// The longest one `claude -p` run may take (it starts the gateway, which starts its
/// servers, and makes a few model requests); past it the process group is killed.
const CLAUDE_LIMIT: Duration = Duration::from_secs(120);
/// The model API key Claude Code is given (the scripted endpoint takes any).
const API_KEY: &str = "dummy";
/// The terminal Claude Code is shown at: columns and rows.
const TERMINAL: (u16, u16) = (140, 40);
/// How many of the last lines of Claude Code's debug log a failure shows.
const DEBUG_TAIL_LINES: usize = 80;
/// The allowed call, and the ticket it reads.
const ALLOWED: &str = "support__get_ticket";
const TICKET_SUBJECT: &str = "Charged twice for order LK-182074";
/// The call the policy asks about, and the rule's reason.
const ASKED: &str = "tickets__open_ticket";
const REASON: &str = "a ticket pages the on-call engineer";
/// The reason of the rule that asks before a ticket is read, at the terminal.
const READ_REASON: &str = "tickets hold customers' payment details";

/// Claude Code's name for a tool of the gateway.
fn claude_name(tool: &str) -> String {
    format!("mcp__{ENTRY}__{tool}")
}

/// The installed `claude` binary, or a failure that says how to install it.
fn claude() -> String {
    require("claude-code/node_modules/.bin/claude", "claude_code")
}

/// The gateway's servers file: the support desk and the tickets server, each with its own
/// credentials; `support__get_ticket` allowed, `tickets__open_ticket` asked about.
fn servers(dir: &Path) -> String {
    let rules = json!([
        {"tool": ALLOWED, "decision": "allow"},
        {"tool": ASKED, "decision": "ask", "reason": REASON}
    ]);
    servers_with(dir, rules)
}

/// The same servers with a rule that asks before a ticket is read.
fn servers_asking_to_read(dir: &Path) -> String {
    servers_with(
        dir,
        json!([{"tool": ALLOWED, "decision": "ask", "reason": READ_REASON}]),
    )
}

fn servers_with(dir: &Path, rules: Value) -> String {
    let server = |name: &str| reference_server(dir, name);
    write(
        dir,
        "servers.json",
        &json!({
            "mcpServers": {"support": server("support"), "tickets": server("tickets")},
            "gatehouse": {
                "rules": rules,
                "ledger": {"path": dir.join("ledger.jsonl"), "arguments": true}
            }
        }),
    )
}

/// How the person at Claude Code answers a form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Person {
    /// The `Elicitation` hook accepts every form, filled in.
    Accepts,
    /// The hook declines every form.
    Declines,
    /// No hook: Claude Code in `-p` mode is left to itself.
    Absent,
}

/// One `claude -p` run against a gateway: what it printed, the forms its hook was given,
/// and the scripted model's record (printed when the test fails).
struct Session {
    /// The test's folder, where every file of the session goes.
    dir: PathBuf,
    model: Endpoint,
    home: PathBuf,
    /// `--mcp-config FILE --strict-mcp-config`, or none: the servers of Claude Code's own
    /// file in its HOME.
    mcp_config: Option<String>,
    ledger: PathBuf,
}

impl Session {
    /// A session in `dir` whose model calls `tool` (the gateway's name) with `input`, and
    /// whose gateway keeps its ledger at `ledger`.
    fn new(dir: &Path, tool: &str, input: Value, ledger: PathBuf) -> Session {
        let home = dir.join("home");
        std::fs::create_dir_all(&home).unwrap();
        Session {
            dir: dir.to_owned(),
            model: Endpoint::start(&claude_name(tool), input),
            home,
            mcp_config: None,
            ledger,
        }
    }

    /// A session wired to `gw` with Claude Code's flags: the gateway started by Claude
    /// Code over stdio as the local user, or reached over HTTP with Sam's bearer token.
    fn behind(gw: &Gw, tool: &str, input: Value) -> Session {
        let mut session = Session::new(gw.path(), tool, input, gw.ledger.clone());
        let entry = match gw.url() {
            None => json!({
                "type": "stdio", "command": exe(),
                "args": ["gateway", "--config", gw.config, "--state", gw.state],
                "env": {"MCP_USER": "usr-sam", "MCP_TENANT": "larkfield"}
            }),
            Some(url) => json!({
                "type": "http", "url": url,
                "headers": {"Authorization": format!("Bearer {SAM_TOKEN}")}
            }),
        };
        let config = json!({"mcpServers": {ENTRY: entry}});
        session.mcp_config = Some(write(gw.path(), "claude-mcp.json", &config));
        session
    }

    /// The environment of every program the session runs (Claude Code and `gatehouse`):
    /// the scratch HOME and XDG folders, so that the gateway finds what `gatehouse gateway
    /// connect` wrote.
    fn env(&self) -> Vec<(&'static str, String)> {
        let path = |p: PathBuf| p.to_string_lossy().into_owned();
        vec![
            ("HOME", path(self.home.clone())),
            ("XDG_CONFIG_HOME", path(self.dir.join("xdg-config"))),
            ("XDG_STATE_HOME", path(self.dir.join("xdg-state"))),
        ]
    }

    /// `gatehouse ARGS` in the session's environment, within [`LIMIT`].
    fn gatehouse(&self, args: &[&str]) -> Ran {
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        Spawn::new(gatehouse_command(args, &env), format!("gatehouse {args:?}"))
            .run()
            .wait(LIMIT)
    }

    /// Claude Code's settings for the run: the `Elicitation` hook, unless nobody answers.
    fn settings(&self, person: Person) -> String {
        let answer = match person {
            Person::Accepts => "accept",
            Person::Declines => "decline",
            Person::Absent => return write(self.dir.as_path(), "claude-settings.json", &json!({})),
        };
        let command = format!(
            "python3 '{}' '{}' {answer}",
            script("claude_elicitation_hook.py"),
            self.forms_log().display()
        );
        let hook = json!({"matcher": "", "hooks": [{"type": "command", "command": command}]});
        write(
            self.dir.as_path(),
            "claude-settings.json",
            &json!({"hooks": {"Elicitation": [hook]}}),
        )
    }

    fn forms_log(&self) -> PathBuf {
        self.dir.as_path().join("claude-forms.jsonl")
    }

    /// The forms the hook was given so far.
    fn forms(&self) -> Vec<Value> {
        json_lines(&self.forms_log())
    }

    /// Claude Code, or `launcher` running it (its words, then `--` and Claude Code's), in
    /// the session's environment and nothing else of the test's but PATH, with Claude
    /// Code's arguments: `first`, then those of a session whose gateway's tool `allowed`
    /// is in Claude Code's own permissions: the gateway (by flags, or from Claude Code's
    /// own file), the person's hook, the debug log.
    fn command(
        &self,
        launcher: &[String],
        first: &[&str],
        allowed: &str,
        person: Person,
    ) -> Command {
        let mut cmd = match launcher {
            [program, args @ ..] => {
                let mut cmd = Command::new(program);
                cmd.args(args).arg("--").arg(claude());
                cmd
            }
            [] => Command::new(claude()),
        };
        cmd.args(first);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .current_dir(&self.home);
        let base = self.model.base.clone();
        let session_env = self.env();
        let mut env: Vec<(&str, &str)> =
            session_env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        env.extend([
            ("ANTHROPIC_BASE_URL", base.as_str()),
            ("ANTHROPIC_API_KEY", API_KEY),
            ("DISABLE_AUTOUPDATER", "1"),
            ("DISABLE_TELEMETRY", "1"),
            ("DISABLE_ERROR_REPORTING", "1"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("ENABLE_TOOL_SEARCH", "false"),
        ]);
        let mut cmd = in_fresh_world(cmd, &env);
        let debug = self.debug_log();
        cmd.args(["--debug-file", debug.to_str().unwrap()]);
        if let Some(config) = &self.mcp_config {
            cmd.args(["--mcp-config", config, "--strict-mcp-config"]);
        }
        cmd.args(["--settings", &self.settings(person)])
            .args(["--allowedTools", &claude_name(allowed)]);
        cmd
    }

    /// `claude -p PROMPT`, the person as said; it must exit 0 within [`CLAUDE_LIMIT`].
    fn run(&self, prompt: &str, allowed: &str, person: Person) -> Ran {
        let first = ["-p", prompt, "--output-format", "json"];
        let cmd = self.command(&[], &first, allowed, person);
        let ran = Spawn::new(cmd, format!("claude -p {prompt:?}"))
            .group()
            .run()
            .wait(CLAUDE_LIMIT);
        assert_eq!(ran.status, 0, "{}", self.said(&ran));
        ran
    }

    /// Claude Code at a terminal (`tests/peers/tui_run.py`, [`TERMINAL`] columns and
    /// rows), a person at it pressing keys as `steps` say (each: the text to wait for,
    /// the keys), as a person's Claude Code would be: onboarded, its folder trusted, the
    /// key taken. Stopped once every step is done, within [`CLAUDE_LIMIT`]: what the
    /// screen showed.
    fn at_terminal(&self, allowed: &str, steps: &[(&str, &str)]) -> Ran {
        let home = self.home.to_string_lossy().into_owned();
        let state = json!({
            "hasCompletedOnboarding": true, "theme": "dark",
            "projects": {home: {"hasTrustDialogAccepted": true}},
            "customApiKeyResponses": {"approved": [API_KEY], "rejected": []}
        });
        write(&self.home, ".claude.json", &state);
        let (columns, rows) = TERMINAL;
        let mut launcher = vec![
            "python3".to_owned(),
            script("tui_run.py"),
            CLAUDE_LIMIT.as_secs().to_string(),
            columns.to_string(),
            rows.to_string(),
        ];
        launcher.extend(steps.iter().map(|(wait, keys)| format!("{wait}=>{keys}")));
        let mut cmd = self.command(&launcher, &[], allowed, Person::Absent);
        cmd.env("TERM", "xterm-256color");
        Spawn::new(cmd, "claude at a terminal")
            .group()
            .run()
            .wait(CLAUDE_LIMIT + LIMIT)
    }

    /// Where Claude Code writes its debug log (`--debug-file`).
    fn debug_log(&self) -> PathBuf {
        self.dir.as_path().join("claude-debug.log")
    }

    /// What Claude Code printed, the end of its debug log, and what its model was asked,
    /// for a failure's message.
    fn said(&self, ran: &Ran) -> String {
        let debug = std::fs::read_to_string(self.debug_log()).unwrap_or_default();
        let lines: Vec<&str> = debug.lines().collect();
        let tail = lines[lines.len().saturating_sub(DEBUG_TAIL_LINES)..].join("\n");
        format!(
            "claude stdout:\n{}\nclaude stderr:\n{}\nthe end of its debug log:\n{tail}\n\
             the scripted model's requests:\n{}",
            ran.stdout,
            ran.stderr,
            self.model.summary()
        )
    }

    /// The text of the tool's result, as the model's next request carried it (the one
    /// request that carried a result).
    fn result_seen(&self, ran: &Ran) -> String {
        let carried = self.model.with_results();
        assert_eq!(carried.len(), 1, "{}", self.said(ran));
        carried[0].result_texts().join("\n")
    }

    /// Claude Code's final answer (`--output-format json`'s `result`).
    fn answer(&self, ran: &Ran) -> String {
        let printed: Value = serde_json::from_str(ran.stdout.trim())
            .unwrap_or_else(|e| panic!("no JSON result ({e}): {}", self.said(ran)));
        printed["result"].as_str().unwrap_or_default().to_owned()
    }

    /// The ledger's lines deciding on `tool`.
    fn ledger_of(&self, tool: &str) -> Vec<Value> {
        let mut lines = ledger_lines(&self.ledger);
        lines.retain(|l| l["tool"] == tool);
        lines
    }
}

/// The allowed call: Claude Code's own permission given, it runs, its result goes back to
/// the model and into Claude Code's answer, and the gateway's ledger has its line.
fn an_allowed_call_runs_and_its_result_reaches_the_model(t: Transport) {
    let gw = Gw::with_config(t, servers);
    let session = Session::behind(&gw, ALLOWED, json!({"ticket_id": "T-30002"}));
    let ran = session.run("Summarize ticket T-30002", ALLOWED, Person::Absent);
    assert_eq!(session.model.tool_uses().len(), 1, "{}", session.said(&ran));
    let result = session.result_seen(&ran);
    assert!(result.contains(TICKET_SUBJECT), "{}", session.said(&ran));
    let answer = session.answer(&ran);
    assert!(
        answer.starts_with(ANSWER_PREFIX) && answer.contains(TICKET_SUBJECT),
        "{}",
        session.said(&ran)
    );
    let lines = session.ledger_of(ALLOWED);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert_eq!(lines[0]["decision"], "run", "{}", lines[0]);
    assert_eq!(lines[0]["caller"], "usr-sam@larkfield", "{}", lines[0]);
    assert_eq!(
        lines[0]["arguments"]["ticket_id"], "T-30002",
        "{}",
        lines[0]
    );
}

#[test]
fn an_allowed_call_runs_and_its_result_reaches_the_model_over_stdio() {
    an_allowed_call_runs_and_its_result_reaches_the_model(Transport::Stdio);
}

#[test]
fn an_allowed_call_runs_and_its_result_reaches_the_model_over_http() {
    an_allowed_call_runs_and_its_result_reaches_the_model(Transport::Http);
}

/// The arguments of the ticket the asked call opens.
fn ticket() -> Value {
    json!({"host": "jump-prod-02", "summary": "brute force then a login from 203.0.113.77"})
}

/// The call the policy asks about, the person accepting: the gateway's form reaches Claude
/// Code with the gateway's words, then the tickets server's own question; the ticket is
/// opened with the priority chosen, and each round is a ledger line approved in the client.
fn the_gateways_form_reaches_claude_code_and_accepting_runs_the_call(t: Transport) {
    let gw = Gw::with_config(t, servers);
    let session = Session::behind(&gw, ASKED, ticket());
    let ran = session.run("Open a ticket for jump-prod-02", ASKED, Person::Accepts);
    let forms = session.forms();
    assert_eq!(forms.len(), 2, "{forms:#?}\n{}", session.said(&ran));
    let (approval, priority) = (&forms[0], &forms[1]);
    assert_eq!(approval["mcp_server_name"], ENTRY, "{approval}");
    assert_eq!(approval["mode"], "form", "{approval}");
    let message = approval["message"].as_str().unwrap_or_default();
    for part in [ASKED, "Why you are asked", REASON, "jump-prod-02"] {
        assert!(
            message.contains(part),
            "{part:?} not in the form: {approval}"
        );
    }
    let fields = &approval["requested_schema"]["properties"];
    assert_eq!(fields["approve"]["type"], "boolean", "{approval}");
    assert!(
        priority["requested_schema"]["properties"]["priority"].is_object(),
        "the tickets server's own question: {priority}"
    );
    let result = session.result_seen(&ran);
    for part in ["jump-prod-02", r#""priority":"P1""#, r#""status":"open""#] {
        assert!(result.contains(part), "{part}: {}", session.said(&ran));
    }
    let lines = session.ledger_of(ASKED);
    assert_eq!(lines.len(), forms.len(), "a line per round: {lines:#?}");
    for line in &lines {
        assert_approved_in_the_client(line, "usr-sam@larkfield");
        // Claude Code speaks 2026-07-28 with the gateway: each yes used up a state the
        // gateway sealed in its `input_required`.
        assert!(line["confirmation"].is_string(), "{line}");
    }
}

#[test]
fn the_gateways_form_reaches_claude_code_and_accepting_runs_the_call_over_stdio() {
    the_gateways_form_reaches_claude_code_and_accepting_runs_the_call(Transport::Stdio);
}

#[test]
fn the_gateways_form_reaches_claude_code_and_accepting_runs_the_call_over_http() {
    the_gateways_form_reaches_claude_code_and_accepting_runs_the_call(Transport::Http);
}

/// The call the policy asks about, the form declined (by the person, or by `claude -p`
/// itself when nothing can answer it): the call does not run, the model is told so, and
/// the ledger has the client's no.
fn a_declined_form_runs_nothing(person: Person) {
    let gw = Gw::with_config(Transport::Stdio, servers);
    let session = Session::behind(&gw, ASKED, ticket());
    let ran = session.run("Open a ticket for jump-prod-02", ASKED, person);
    let forms = session.forms().len();
    assert_eq!(
        forms,
        usize::from(person == Person::Declines),
        "{}",
        session.said(&ran)
    );
    // A decline is the person's no; `-p` without a hook cancels the form, which the
    // gateway tells apart: the question dismissed without an answer.
    let (said, dismissed) = match person {
        Person::Declines => ("declined this call", json!(null)),
        _ => ("dismissed the question without answering", json!(true)),
    };
    let result = session.result_seen(&ran);
    assert!(
        result.starts_with("(error)") && result.contains(said),
        "{}",
        session.said(&ran)
    );
    let lines = session.ledger_of(ASKED);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    let line = &lines[0];
    assert_eq!(line["decision"], "asked", "{line}");
    assert_eq!(
        (&line["answer"], &line["by"], &line["dismissed"]),
        (&json!("no"), &json!("client"), &dismissed),
        "{line}"
    );
}

#[test]
fn declining_the_gateways_form_in_claude_code_runs_nothing() {
    a_declined_form_runs_nothing(Person::Declines);
}

#[test]
fn claude_p_without_a_hook_dismisses_the_form_and_nothing_runs() {
    a_declined_form_runs_nothing(Person::Absent);
}

/// `gatehouse gateway connect claude-code` on Claude Code's own file: the support desk,
/// its server, moves behind the gateway; with the person's rule in the servers file connect
/// wrote, Claude Code (no `--mcp-config`) calls it through the gateway, and the ledger has
/// the call.
#[test]
fn after_gateway_connect_claude_code_calls_its_own_server_through_the_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let session = Session::new(dir.path(), ALLOWED, json!({"ticket_id": "T-30002"}), ledger);
    let support = reference_server(dir.path(), "support");
    let own = json!({"mcpServers": {"support": support}});
    write(&session.home, ".claude.json", &own);
    let connected = session.gatehouse(&["gateway", "connect", "claude-code"]);
    assert_eq!(
        connected.status, 0,
        "{}\n{}",
        connected.stdout, connected.stderr
    );
    let file = dir
        .path()
        .join("xdg-config/gatehouse/clients/claude-code.json");
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{} ({e}): {}", file.display(), connected.stdout));
    let mut servers: Value = serde_json::from_str(&text).unwrap();
    servers["gatehouse"] = json!({
        "rules": [{"tool": ALLOWED, "decision": "allow"}],
        "ledger": {"path": session.ledger, "arguments": true}
    });
    std::fs::write(&file, servers.to_string()).unwrap();

    let ran = session.run("Summarize ticket T-30002", ALLOWED, Person::Absent);
    let result = session.result_seen(&ran);
    assert!(result.contains(TICKET_SUBJECT), "{}", session.said(&ran));
    let lines = session.ledger_of(ALLOWED);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert_eq!(lines[0]["decision"], "run", "{}", lines[0]);
}

/// Claude Code at a terminal: the gateway's form is its dialog, with the gateway's words
/// (the call, why the person is asked); the person ticks `Run this call` and accepts, the
/// call runs, its result reaches the model, and the ledger has the client's yes.
#[test]
fn at_a_terminal_the_gateways_form_is_claude_codes_dialog_and_accepting_runs_the_call() {
    let gw = Gw::with_config(Transport::Stdio, servers_asking_to_read);
    let session = Session::behind(&gw, ALLOWED, json!({"ticket_id": "T-30002"}));
    // At a terminal the first prompt goes before the servers are connected: the person
    // waits for `/mcp` to show the gateway's tools, closes it, then asks.
    let steps = [
        ("for agents", "/mcp\\r"),
        ("4 tools", "\\x1b"),
        ("for agents", "Summarize ticket T-30002\\r"),
        ("Space to toggle", " "),
        ("☒", "\\x1b[B"),
        ("Accept", "\\r"),
        (ANSWER_PREFIX.trim_end(), ""),
    ];
    let ran = session.at_terminal(ALLOWED, &steps);
    let screen = &ran.stdout;
    assert_eq!(
        ran.status,
        0,
        "the steps were not all done: {}",
        session.said(&ran)
    );
    let asked = format!(
        "Run {ALLOWED} on support? Why you are asked: rules[0] says ask the person: {READ_REASON}"
    );
    for part in [
        "gatehouse",
        "requests your input",
        &asked,
        "Run this call",
        "Decline",
    ] {
        assert!(
            screen.contains(part),
            "{part:?} not on the screen: {}",
            session.said(&ran)
        );
    }
    let result = session.result_seen(&ran);
    assert!(result.contains(TICKET_SUBJECT), "{}", session.said(&ran));
    let lines = session.ledger_of(ALLOWED);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert_approved_in_the_client(&lines[0], "usr-sam@larkfield");
}
