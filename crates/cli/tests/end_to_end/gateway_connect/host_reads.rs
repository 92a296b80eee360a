//! The host on a home whose Claude Code is connected: a command that finds
//! `~/.claude.json` without `--config` reads the gateway's servers file instead of starting
//! the gateway as its one server (every call gated twice, tools named `gatehouse__…`),
//! says so, and names the servers connect left in Claude Code's file; after disconnect it
//! reads Claude Code's own servers again. A gateway's file that cannot be read is refused
//! with the reason, and Claude Code's file read as it is.

use serde_json::{Value, json};

use super::Home;
use crate::common::{Ran, exe};
use crate::gateway::ledger_lines;

/// The allowed tool, and the ticket it reads.
const ALLOWED: &str = "support__get_ticket";
const TICKET: &str = r#"{"ticket_id": "T-30002"}"#;

/// Claude Code's `~/.claude.json`: the support desk (carried by connect), and an SSE
/// server connect leaves where it is.
fn claude_json(home: &Home) -> std::path::PathBuf {
    let support = json!({"type": "stdio", "command": exe(), "args": ["serve", "support"],
                         "env": {"MCP_USER": "usr-sam", "MCP_TENANT": "larkfield"}});
    let doc = json!({"numStartups": 3, "hasCompletedOnboarding": true,
                     "mcpServers": {"support": support,
                                    "legacy": {"type": "sse", "url": "http://127.0.0.1:1/sse"}}});
    home.write(".claude.json", &serde_json::to_string_pretty(&doc).unwrap())
}

/// The line on stderr that says which servers file is used.
fn using_line(ran: &Ran) -> &str {
    ran.stderr
        .lines()
        .find(|l| l.contains("using the servers file"))
        .unwrap_or_else(|| panic!("no `using the servers file` line:\n{}", ran.stderr))
}

/// `gatehouse tools` in `home`: it lists the support desk's tools under their own names,
/// none through a second gateway (`gatehouse__…`).
fn tools_listed_by_their_own_names(home: &Home) -> Ran {
    let tools = home.gatehouse(&["tools"]);
    assert_eq!(tools.status, 0, "{}\n{}", tools.stdout, tools.stderr);
    assert!(tools.stdout.contains(ALLOWED), "{}", tools.stdout);
    assert!(!tools.stdout.contains("gatehouse__"), "{}", tools.stdout);
    tools
}

#[test]
fn after_connect_the_host_reads_the_gateways_servers_file_and_after_disconnect_claudes_again() {
    let home = Home::new();
    let file = claude_json(&home);
    let ran = home.gatehouse(&["gateway", "connect", "claude-code"]);
    assert_eq!(ran.status, 0, "{}\n{}", ran.stdout, ran.stderr);
    // The person's rules go in the servers file connect wrote.
    let servers_file = home.servers_file("claude-code");
    let mut servers: Value =
        serde_json::from_str(&std::fs::read_to_string(&servers_file).unwrap()).unwrap();
    let ledger_file = home.path().join("ledger.jsonl");
    servers["gatehouse"] = json!({"allow": [ALLOWED], "ledger": {"path": ledger_file}});
    std::fs::write(&servers_file, servers.to_string()).unwrap();

    let tools = tools_listed_by_their_own_names(&home);
    let canonical = std::fs::canonicalize(&servers_file).unwrap();
    assert_eq!(
        using_line(&tools),
        format!(
            "gatehouse: Claude Code's servers are behind Gatehouse's gateway (gatehouse gateway connect): using the servers file {} (found without --config)",
            canonical.display()
        )
    );
    assert!(
        tools.stderr.contains(&format!(
            "gatehouse: legacy in {} is not started by the host: Claude Code starts it itself, beside the gateway\n",
            file.display()
        )),
        "{}",
        tools.stderr
    );

    let call = home.gatehouse(&["call", ALLOWED, TICKET]);
    assert_eq!(call.status, 0, "{}\n{}", call.stdout, call.stderr);
    let printed: Value = serde_json::from_str(&call.stdout).expect("the result, as JSON");
    assert_eq!(printed["customer_name"], "Hugo", "{}", call.stdout);
    let lines = ledger_lines(&ledger_file);
    assert_eq!(lines.len(), 1, "one gate, one ledger line: {lines:#?}");
    assert_eq!(lines[0]["tool"], ALLOWED, "{}", lines[0]);
    assert_eq!(lines[0]["decision"], "run", "{}", lines[0]);

    let ran = home.gatehouse(&["gateway", "disconnect", "claude-code"]);
    assert_eq!(ran.status, 0, "{}\n{}", ran.stdout, ran.stderr);
    let tools = tools_listed_by_their_own_names(&home);
    assert_eq!(
        using_line(&tools),
        format!(
            "gatehouse: using the servers file {}, Claude Code's, read only (found without --config)",
            file.display()
        )
    );
    assert!(
        !tools.stderr.contains("not started by the host"),
        "{}",
        tools.stderr
    );
}

#[test]
fn a_gateways_servers_file_that_cannot_be_read_is_refused_and_claudes_file_read_as_it_is() {
    let home = Home::new();
    let missing = home.path().join(".config/gatehouse/clients/gone.json");
    let gateway = json!({"type": "stdio", "command": exe(),
                         "args": ["gateway", "--config", missing]});
    let file = home.write(
        ".claude.json",
        &json!({"mcpServers": {"gatehouse": gateway}}).to_string(),
    );
    let tools = home.gatehouse(&["tools"]);
    let line = using_line(&tools);
    assert!(
        line.starts_with(&format!(
            "gatehouse: {} starts Gatehouse's gateway over {}, which is not read instead: it cannot be opened: ",
            file.display(),
            missing.display()
        )),
        "{line}"
    );
    assert!(
        line.ends_with(&format!(
            "; using the servers file {}, Claude Code's, read only (found without --config)",
            file.display()
        )),
        "{line}"
    );
}
