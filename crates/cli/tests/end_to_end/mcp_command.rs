//! `gatehouse mcp add|remove|list|get` through the real binary: the file people already
//! have, changed as they asked and in nothing else; what cannot work refused with the
//! reason; secrets kept as references; each server's state after a quick connect.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::*;

/// The `mcpServers` file of `dir`, parsed.
fn project_file(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join(".mcp.json")).unwrap()).unwrap()
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn an_add_keeps_the_files_other_keys_their_order_and_its_permissions() {
    let dir = scratch_dir();
    let text = "{\n\t\"$schema\": \"https://example.com/mcp.schema.json\",\n\t\"mcpServers\": {\n\t\t\"zeta\": {\"command\": \"zeta-mcp\", \"args\": [\"--port\", \"7\"], \"disabled\": true},\n\t\t\"alpha\": {\"url\": \"https://alpha.example.com/mcp\"}\n\t},\n\t\"gatehouse\": {\"allow\": [\"alpha__read\"], \"maxSteps\": 4},\n\t\"editor\": {\"theme\": \"dark\"}\n}\n";
    std::fs::write(dir.join(".mcp.json"), text).unwrap();
    std::fs::set_permissions(
        dir.join(".mcp.json"),
        std::os::unix::fs::PermissionsExt::from_mode(0o640),
    )
    .unwrap();
    let before = project_file(&dir);
    let ran = run_in(
        &dir,
        &["mcp", "add", "beta", "--", "beta-mcp", "--verbose"],
        &[],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert_eq!(
        ran.stdout.lines().next().unwrap_or_default(),
        "Added stdio server beta in .mcp.json (project)"
    );
    let after = project_file(&dir);
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(&after),
        ["$schema", "mcpServers", "gatehouse", "editor"]
    );
    assert_eq!(keys(&after["mcpServers"]), ["zeta", "alpha", "beta"]);
    for key in ["$schema", "gatehouse", "editor"] {
        assert_eq!(after[key], before[key], "{key}");
    }
    for server in ["zeta", "alpha"] {
        assert_eq!(after["mcpServers"][server], before["mcpServers"][server]);
    }
    assert_eq!(
        after["mcpServers"]["beta"],
        json!({"command": "beta-mcp", "args": ["--verbose"], "sandbox": true})
    );
    let written = std::fs::read_to_string(dir.join(".mcp.json")).unwrap();
    assert!(written.starts_with("{\n\t\"$schema\""), "{written}");
    assert_eq!(mode(&dir.join(".mcp.json")), 0o640);
    // Removing keeps the others where they were.
    let ran = run_in(&dir, &["mcp", "remove", "zeta"], &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert_eq!(keys(&project_file(&dir)["mcpServers"]), ["alpha", "beta"]);
    assert_eq!(project_file(&dir)["editor"], before["editor"]);
}

#[test]
fn a_name_already_there_is_refused_unless_replaced_in_its_place() {
    let dir = scratch_dir();
    for name in ["one", "two"] {
        assert_eq!(
            run_in(&dir, &["mcp", "add", name, "--", "old"], &[]).status,
            0
        );
    }
    let ran = run_in(&dir, &["mcp", "add", "one", "--", "new"], &[]);
    assert_eq!(ran.status, 2);
    ran.assert_stderr("has a server named one already");
    ran.assert_stderr("--replace");
    assert_eq!(project_file(&dir)["mcpServers"]["one"]["command"], "old");
    let ran = run_in(&dir, &["mcp", "add", "one", "--replace", "--", "new"], &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.starts_with("Replaced stdio server one"),
        "{}",
        ran.stdout
    );
    let file = project_file(&dir);
    assert_eq!(file["mcpServers"]["one"]["command"], "new");
    let names: Vec<&String> = file["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["one", "two"]);
}

#[test]
fn secrets_given_as_references_stay_references_and_plain_ones_are_hidden() {
    let dir = scratch_dir();
    // The variables are set, so a value that was expanded would show.
    let env = [
        ("DESK_TOKEN", "expanded-if-wrong"),
        ("TOOL_TOKEN", "expanded-if-wrong"),
    ];
    let desk = "--transport http desk https://desk.example.com/mcp";
    let tool = "tool -e API_KEY=sk-plain-secret -e TOKEN=${TOOL_TOKEN} -- tool-mcp";
    let mut warned = String::new();
    for (words, header) in [
        (desk, Some("Authorization: Bearer ${DESK_TOKEN}")),
        (tool, None),
    ] {
        let mut args: Vec<&str> = ["mcp", "add"].into_iter().chain(words.split(' ')).collect();
        args.extend(header.map(|h| ["--header", h]).into_iter().flatten());
        let ran = run_in(&dir, &args, &env);
        assert_eq!(ran.status, 0, "{}", ran.stderr);
        warned.push_str(&ran.stderr);
    }
    let plain = "variable API_KEY is stored in the file as plain text";
    assert!(warned.contains(plain), "{warned}");
    let text = std::fs::read_to_string(dir.join(".mcp.json")).unwrap();
    assert!(!text.contains("expanded-if-wrong"), "{text}");
    let file = project_file(&dir);
    assert_eq!(
        file["mcpServers"]["desk"],
        json!({"type": "http", "url": "https://desk.example.com/mcp",
               "headers": {"Authorization": "Bearer ${DESK_TOKEN}"}})
    );
    assert_eq!(file["mcpServers"]["tool"]["env"]["TOKEN"], "${TOOL_TOKEN}");
    assert_eq!(mode(&dir.join(".mcp.json")), 0o600, "a new file is private");
    let got = run_in(&dir, &["mcp", "get", "tool", "--json"], &[]);
    assert_eq!(got.status, 0, "{}", got.stderr);
    let got: Value = serde_json::from_str(&got.stdout).unwrap();
    assert_eq!(
        got["entry"]["env"],
        json!({"API_KEY": "[redacted]", "TOKEN": "${TOOL_TOKEN}"})
    );
    assert_eq!(got["state"], "failed");
    let shown = run_in(
        &dir,
        &["mcp", "get", "desk"],
        &[("DESK_TOKEN", "t0ken-value")],
    );
    assert!(
        shown
            .stdout
            .contains("headers: Authorization: Bearer ${DESK_TOKEN}"),
        "{}",
        shown.stdout
    );
    assert!(!shown.stdout.contains("t0ken-value") && !shown.stdout.contains("sk-plain"));
}

#[test]
fn what_could_not_work_is_refused_with_the_reason_and_nothing_is_written() {
    let dir = scratch_dir();
    for (args, why) in [
        (vec!["", "--", "x"], "a server needs a name"),
        (
            vec!["a__b", "--", "x"],
            "must not hold \"__\" or end with \"_\"",
        ),
        (
            vec!["tickets_", "--", "x"],
            "must not hold \"__\" or end with \"_\"",
        ),
        (
            vec!["my server", "--", "x"],
            "only letters, digits, - and _",
        ),
        (
            vec!["--transport", "http", "web", "ftp://example.com/mcp"],
            "must start with http:// or https://",
        ),
        (
            vec!["--transport", "http", "web", "https://"],
            "is not valid",
        ),
        (
            vec!["--transport", "http", "web", "https://a/mcp", "extra"],
            "takes one URL",
        ),
        (
            vec!["--transport", "http", "web", "https://a/mcp", "-e", "K=V"],
            "--env is for stdio servers",
        ),
        (
            vec!["web", "-H", "Authorization: x", "--", "x"],
            "--header is for http servers",
        ),
        (vec!["web", "-e", "NOEQUALS", "--", "x"], "is not KEY=VALUE"),
        (vec!["web", "-e", "K=${unclosed", "--", "x"], "unclosed"),
        (
            vec![
                "--transport",
                "http",
                "web",
                "https://a/mcp",
                "-H",
                "Bad Name: v",
            ],
            "not a valid HTTP header name",
        ),
    ] {
        let mut all = vec!["mcp", "add"];
        all.extend(args.iter().copied());
        let ran = run_in(&dir, &all, &[]);
        assert_eq!(ran.status, 2, "{args:?}: {}", ran.stderr);
        assert!(ran.stderr.contains(why), "{args:?}: {}", ran.stderr);
        assert!(!dir.join(".mcp.json").exists(), "{args:?} wrote the file");
    }
    std::fs::write(dir.join(".mcp.json"), "{\"mcpServers\": {,}}").unwrap();
    let ran = run_in(&dir, &["mcp", "add", "x", "--", "x"], &[]);
    assert_eq!(ran.status, 2);
    ran.assert_stderr("is not valid JSON");
    ran.assert_stderr("line 1");
    assert_eq!(
        std::fs::read_to_string(dir.join(".mcp.json")).unwrap(),
        "{\"mcpServers\": {,}}"
    );
}

#[test]
fn the_user_scope_writes_the_users_own_file_read_beside_a_project_file() {
    let dir = scratch_dir();
    let config_home = scratch_dir();
    let env = [("XDG_CONFIG_HOME", config_home.to_str().unwrap())];
    let ran = run_in(
        &dir,
        &["mcp", "add", "--scope", "user", "mine", "--", "mine-mcp"],
        &env,
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let user_file = config_home.join("gatehouse/servers.json");
    assert!(
        ran.stdout
            .contains(&format!("in {} (user)", user_file.display())),
        "{}",
        ran.stdout
    );
    assert_eq!(mode(&user_file), 0o600);
    assert_eq!(mode(user_file.parent().unwrap()), 0o700);
    assert!(!dir.join(".mcp.json").exists());
    assert_eq!(
        run_in(&dir, &["mcp", "add", "here", "--", "here-mcp"], &env).status,
        0
    );
    let ran = run_in(
        &dir,
        &["mcp", "add", "--scope", "user", "more", "--", "more-mcp"],
        &env,
    );
    // A project's file is read beside the person's own, never instead of it.
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(!ran.stderr.contains("reads"), "{}", ran.stderr);
    let listed = run_in(&dir, &["mcp", "list", "--scope", "user", "--json"], &env);
    let names: Vec<String> = expect::names_listed(&listed.stdout);
    assert_eq!(names, ["mine", "more"]);
    let both = run_in(&dir, &["mcp", "list", "--json"], &env);
    assert_eq!(expect::names_listed(&both.stdout), ["mine", "more", "here"]);
    // A file named by $GATEHOUSE_CONFIG is read alone: the note says so.
    let other = write(&dir, "other.json", &json!({"mcpServers": {}}));
    let shadowed = run_in(
        &dir,
        &["mcp", "add", "--scope", "user", "most", "--", "most-mcp"],
        &[env[0], ("GATEHOUSE_CONFIG", &other)],
    );
    assert!(
        shadowed
            .stderr
            .contains(&format!("the host reads {other} first")),
        "{}",
        shadowed.stderr
    );
}

#[test]
fn list_shows_each_servers_state_after_a_quick_connect() {
    let dir = scratch_dir();
    let exe = exe();
    let exe = exe.to_str().unwrap();
    for args in [
        vec![
            "support",
            "-e",
            "MCP_USER=${GATEHOUSE_USER}",
            "-e",
            "MCP_TENANT=${GATEHOUSE_TENANT}",
            "--",
            exe,
            "serve",
            "support",
        ],
        vec!["gone", "--", "/nonexistent/gatehouse-test-server"],
        vec![
            "quits",
            "--",
            "sh",
            "-c",
            "echo cannot open the database >&2; exit 3",
        ],
        vec![
            "--transport",
            "http",
            "desk",
            "http://127.0.0.1:1/mcp",
            "-H",
            "Authorization: Bearer ${DESK_TOKEN}",
        ],
    ] {
        let mut all = vec!["mcp", "add"];
        all.extend(args);
        let ran = run_in(&dir, &all, &[]);
        assert_eq!(ran.status, 0, "{}", ran.stderr);
    }
    let ran = run_in(&dir, &["mcp", "list"], &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let out = &ran.stdout;
    assert!(out.starts_with("Servers in .mcp.json (project):"), "{out}");
    let line = |name: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("  {name}: ")))
            .unwrap_or_else(|| panic!("no line for {name}:\n{out}"))
            .to_owned()
    };
    assert!(
        line("support").contains("(stdio) - connected: 2 tools, protocol 2026-07-28, "),
        "{out}"
    );
    assert!(
        line("gone")
            .contains("failed: cannot start `/nonexistent/gatehouse-test-server`: no such command"),
        "{out}"
    );
    assert!(line("quits").contains("cannot open the database"), "{out}");
    assert!(
        line("desk").contains("variable DESK_TOKEN is not set"),
        "{out}"
    );
    assert!(out.contains("    fix: "), "{out}");
    let ran = run_in(&dir, &["mcp", "list", "--json"], &[("DESK_TOKEN", "abc")]);
    let rows: Value = serde_json::from_str(&ran.stdout).unwrap();
    let desk = &rows[3];
    assert_eq!(desk["name"], "desk");
    assert_eq!(desk["state"], "failed");
    let error = desk["error"].as_str().unwrap_or_default();
    assert!(error.contains("connection refused"), "{desk}");
    let support = &rows[0];
    assert_eq!(
        support["tools"],
        json!(["support__search_knowledge", "support__get_ticket"])
    );
    assert_eq!(support["protocol"], "2026-07-28");
}

/// `mcp get NAME` starts NAME alone: the file's other server, which writes its name to a
/// file at each start as NAME does, is never started.
#[test]
fn get_starts_only_the_server_it_shows() {
    let dir = scratch_dir();
    let starts = dir.join("starts");
    let exe = exe();
    let counted = |name: &str| {
        json!({"command": "/bin/sh",
               "args": ["-c", "echo \"$2\" >> \"$1\" && exec \"$0\" serve testbed", exe, starts, name]})
    };
    let config = servers_file(
        &dir,
        json!({"shown": counted("shown"), "other": counted("other")}),
        json!({}),
    );
    let ran = run(&["mcp", "get", "shown", "--config", &config], &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.contains("  state: connected: "),
        "{}",
        ran.stdout
    );
    let started = std::fs::read_to_string(&starts).unwrap_or_default();
    assert_eq!(started, "shown\n", "{}", ran.stdout);
}
