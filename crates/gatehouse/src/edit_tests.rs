//! `edit` as a person uses it: names, entries, and a file kept as it was.

use super::*;
use serde_json::json;

fn stdio(env: &[(&str, &str)]) -> NewServer {
    NewServer::Stdio {
        command: "npx".into(),
        args: vec!["-y".into(), "@acme/mcp".into()],
        env: env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        pass_env: vec![],
        sandbox: None,
    }
}

#[test]
fn names_that_read_two_ways_or_not_at_all_are_refused() {
    for good in ["support", "my-server", "a1", "x_y"] {
        assert_eq!(name_problem(good), None, "{good}");
    }
    for (bad, why) in [
        ("", "needs a name"),
        ("a__b", "\"__\""),
        ("tickets_", "end with"),
        ("-x", "start with"),
        ("has space", "only letters"),
        ("dé", "only letters"),
    ] {
        let problem = name_problem(bad).unwrap_or_default();
        assert!(problem.contains(why), "{bad}: {problem}");
    }
    assert!(name_problem(&"a".repeat(MAX_ADDED_NAME_CHARS + 1)).is_some());
}

#[test]
fn references_are_stored_as_written_and_plain_secrets_are_warned_about() {
    let (entry, warnings) = stdio(&[("API_KEY", "${ACME_KEY}"), ("REGION", "eu")])
        .entry()
        .unwrap();
    assert_eq!(
        entry,
        json!({"command": "npx", "args": ["-y", "@acme/mcp"],
               "env": {"API_KEY": "${ACME_KEY}", "REGION": "eu"}})
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    let (_, warnings) = stdio(&[("API_KEY", "sk-123")]).entry().unwrap();
    assert!(warnings[0].contains("plain text"), "{warnings:?}");
    let http = NewServer::Http {
        url: "https://desk.example.com/mcp".into(),
        headers: vec![("Authorization".into(), "Bearer ${DESK_TOKEN}".into())],
    };
    let (entry, warnings) = http.entry().unwrap();
    assert_eq!(
        entry,
        json!({"type": "http", "url": "https://desk.example.com/mcp",
               "headers": {"Authorization": "Bearer ${DESK_TOKEN}"}})
    );
    assert!(warnings.is_empty());
}

#[test]
fn what_would_not_load_is_refused_before_it_is_written() {
    let url = |u: &str| NewServer::Http {
        url: u.into(),
        headers: vec![],
    };
    for (server, why) in [
        (url("ftp://x/mcp"), "must start with http:// or https://"),
        (url("http://"), "not valid"),
        (url("https://x/${UNCLOSED"), "unclosed"),
        (stdio(&[("1BAD", "x")]), "not a variable name"),
        (stdio(&[("OK", "${not a name}")]), "is not a variable name"),
        (stdio(&[("OK", "line\nbreak")]), "control character"),
        (
            NewServer::Http {
                url: "https://x/mcp".into(),
                headers: vec![("Bad Name".into(), "v".into())],
            },
            "not a valid HTTP header name",
        ),
        (
            NewServer::Stdio {
                command: " ".into(),
                args: vec![],
                env: vec![],
                pass_env: vec![],
                sandbox: None,
            },
            "needs a command",
        ),
        (
            NewServer::Stdio {
                command: "srv".into(),
                args: vec![],
                env: vec![],
                pass_env: vec!["API KEY".into()],
                sandbox: None,
            },
            "--pass-env \"API KEY\": give a variable's name",
        ),
    ] {
        let err = server.entry().unwrap_err();
        assert!(err.contains(why), "{server:?}: {err}");
    }
    assert!(url("https://${DESK_HOST}/mcp").entry().is_ok());
    assert_eq!(
        parse_header("Authorization: Bearer x").unwrap().1,
        "Bearer x"
    );
    assert!(parse_env("NOVALUE").is_err());
}

#[test]
fn an_add_keeps_the_file_as_it_was_and_a_name_once() {
    let dir = std::env::temp_dir().join(format!("gatehouse-edit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(".mcp.json");
    let original = "{\n    \"$schema\": \"x\",\n    \"mcpServers\": {\n        \"b\": {\"command\": \"b\"},\n        \"a\": {\"command\": \"a\"}\n    },\n    \"gatehouse\": {\"allow\": [\"b__t\"], \"maxSteps\": 3},\n    \"zeta\": 1\n}\n";
    std::fs::write(&path, original).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    }
    let mut file = ServersFile::open(&path).unwrap();
    let (entry, _) = stdio(&[]).entry().unwrap();
    assert_eq!(file.add("c", entry.clone(), false), Ok(Added::New));
    let again = file.add("a", entry.clone(), false).unwrap_err();
    assert!(again.contains("--replace"), "{again}");
    assert_eq!(
        file.add("a", json!({"command": "a2"}), true),
        Ok(Added::Replaced)
    );
    file.save().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["$schema", "mcpServers", "gatehouse", "zeta"]);
    let servers: Vec<&String> = doc["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(servers, ["b", "a", "c"]);
    assert_eq!(doc["mcpServers"]["a"]["command"], "a2");
    assert_eq!(doc["gatehouse"], json!({"allow": ["b__t"], "maxSteps": 3}));
    assert!(text.starts_with("{\n    \"$schema\""), "{text}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
    }
    let mut file = ServersFile::open(&path).unwrap();
    file.remove("b").unwrap();
    assert!(file.remove("b").unwrap_err().contains("it has a, c"));
    file.save().unwrap();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let servers: Vec<&String> = doc["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(servers, ["a", "c"]);
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_new_file_is_private_and_a_link_is_written_through() {
    let dir = std::env::temp_dir().join(format!("gatehouse-edit-new-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("gatehouse/servers.json");
    let mut file = ServersFile::open(&path).unwrap();
    assert!(!file.existed());
    file.add("s", json!({"command": "s"}), false).unwrap();
    file.save().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&std::fs::read_to_string(&path).unwrap()).unwrap(),
        json!({"mcpServers": {"s": {"command": "s"}}})
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        let link = dir.join("link.json");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let mut through = ServersFile::open(&link).unwrap();
        through.add("t", json!({"command": "t"}), false).unwrap();
        through.save().unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(std::fs::read_to_string(&path).unwrap().contains("\"t\""));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pass_env_names_are_written_as_passenv_once_each() {
    let server = NewServer::Stdio {
        command: "srv".into(),
        args: vec![],
        env: vec![],
        pass_env: vec!["API_KEY".into(), "AWS_*".into(), "API_KEY".into()],
        sandbox: None,
    };
    let (entry, warnings) = server.entry().unwrap();
    assert_eq!(entry["passEnv"], json!(["API_KEY", "AWS_*"]));
    assert!(warnings.is_empty());
    assert!(stdio(&[]).entry().unwrap().0.get("passEnv").is_none());
}

#[test]
fn a_sandbox_is_written_as_given_once_it_reads_as_the_host_will_read_it() {
    let with = |sandbox: serde_json::Value| NewServer::Stdio {
        command: "npx".into(),
        args: vec!["-y".into(), "@modelcontextprotocol/server-memory".into()],
        env: vec![],
        pass_env: vec![],
        sandbox: Some(sandbox),
    };
    let (entry, _) = with(json!(true)).entry().unwrap();
    assert_eq!(entry["sandbox"], json!(true));
    let shape = json!({"write": ["~/notes"], "network": "on"});
    let (entry, _) = with(shape.clone()).entry().unwrap();
    assert_eq!(entry["sandbox"], shape, "kept as written, ~ and all");
    let e = with(json!({"write": ["notes"]})).entry().unwrap_err();
    assert!(e.contains("is not an absolute path"), "{e}");
    assert!(stdio(&[]).entry().unwrap().0.get("sandbox").is_none());
}
