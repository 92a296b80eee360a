//! The built-in servers: these reference servers as the servers file a host uses when it
//! finds none, started from the servers binary beside the host's. The host library knows
//! nothing of them; the command line turns this file into its configuration.

use std::path::Path;

use serde_json::{Map, Value};

/// The variable a servers file names the calling user with (the host substitutes it).
pub const USER_VAR: &str = "GATEHOUSE_USER";
/// The variable a servers file names the caller's organization with.
pub const TENANT_VAR: &str = "GATEHOUSE_TENANT";

/// The reference servers built into the host's own binary, started as `EXE serve NAME`.
pub const BUILT_IN_SERVERS: &[&str] = &["support", "cmdb", "tickets", "orders"];

/// The read-only tools of the built-in servers: the default allow-list. `open_ticket`
/// is not on it: the person approves the call before the server asks its own question.
pub const BUILT_IN_ALLOW: &[&str] = &[
    "support__search_knowledge",
    "support__get_ticket",
    "cmdb__get_asset",
    "cmdb__find_assets",
    "tickets__list_tickets",
    "orders__get_order_status",
    "orders__export_report",
    "read_resource",
];

/// What the built-in servers read from the host's environment beyond the base environment every stdio server gets: the
/// tickets server's store, its sealing key and confirmation lifetime, the task store and
/// when a task's runner counts as stopped, and where data lives.
pub const BUILT_IN_PASS_ENV: &[&str] = &[
    "GATEHOUSE_TICKETS_DB",
    "GATEHOUSE_TICKETS_KEY",
    "GATEHOUSE_TICKETS_CONFIRM_TTL_MS",
    crate::tasks::ENV_DB,
    crate::tasks::ENV_STALE_MS,
    "XDG_DATA_HOME",
];

/// The reference servers' own binary, installed beside `gatehouse`.
pub const SERVERS_BINARY: &str = "gatehouse-servers";

/// How the built-in servers are started: `program ARGS… NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    /// The program to run.
    pub program: String,
    /// Its leading arguments, before the server's name.
    pub args: Vec<String>,
}

/// How to start a built-in server, given the host's binary: the small `gatehouse-servers`
/// beside it when it is there (a server process then maps only server code, about half the
/// memory), else the host binary's own `serve` command, which runs the same servers.
pub fn launcher(host_exe: &Path) -> Launcher {
    let servers =
        host_exe.with_file_name(format!("{SERVERS_BINARY}{}", std::env::consts::EXE_SUFFIX));
    if servers.is_file() {
        Launcher {
            program: servers.to_string_lossy().into_owned(),
            args: Vec::new(),
        }
    } else {
        Launcher {
            program: host_exe.to_string_lossy().into_owned(),
            args: vec!["serve".into()],
        }
    }
}

/// The servers file of the built-in servers, each started as `launcher NAME` (see
/// [`launcher`]), with their read-only tools allowed.
pub fn servers_file(launcher: &Launcher) -> Value {
    let mut doc = Map::new();
    let mut servers = Map::new();
    for name in BUILT_IN_SERVERS {
        let mut args = launcher.args.clone();
        args.push((*name).into());
        servers.insert(
            (*name).into(),
            serde_json::json!({
                "command": launcher.program,
                "args": args,
                "env": {
                    crate::common::ENV_USER: format!("${{{USER_VAR}}}"),
                    crate::common::ENV_TENANT: format!("${{{TENANT_VAR}}}"),
                },
                "passEnv": BUILT_IN_PASS_ENV,
            }),
        );
    }
    doc.insert("mcpServers".into(), Value::Object(servers));
    doc.insert(
        "gatehouse".into(),
        serde_json::json!({ "allow": BUILT_IN_ALLOW }),
    );
    Value::Object(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_file_carries_identity_into_env() {
        let launcher = launcher(Path::new("/nonexistent/gatehouse"));
        assert_eq!(launcher.program, "/nonexistent/gatehouse");
        assert_eq!(launcher.args, ["serve"]);
        let file = servers_file(&launcher);
        let support = &file["mcpServers"]["support"];
        assert_eq!(support["command"], "/nonexistent/gatehouse");
        assert_eq!(support["args"], serde_json::json!(["serve", "support"]));
        assert_eq!(support["env"]["MCP_USER"], "${GATEHOUSE_USER}");
        assert_eq!(support["env"]["MCP_TENANT"], "${GATEHOUSE_TENANT}");
        assert_eq!(
            file["gatehouse"]["allow"],
            serde_json::json!(BUILT_IN_ALLOW)
        );
    }

    #[test]
    fn built_in_servers_start_from_their_own_binary_when_it_is_installed() {
        let dir = std::env::temp_dir().join(format!("gatehouse-launcher-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let servers = dir.join(format!("{SERVERS_BINARY}{}", std::env::consts::EXE_SUFFIX));
        std::fs::write(&servers, b"").unwrap();
        let launcher = launcher(&dir.join("gatehouse"));
        assert_eq!(launcher.program, servers.to_string_lossy());
        assert!(launcher.args.is_empty());
        let file = servers_file(&launcher);
        let cmdb = &file["mcpServers"][BUILT_IN_SERVERS[1]];
        assert_eq!(cmdb["command"], servers.to_string_lossy().as_ref());
        assert_eq!(cmdb["args"], serde_json::json!([BUILT_IN_SERVERS[1]]));
        let _ = std::fs::remove_dir_all(dir);
    }
}
