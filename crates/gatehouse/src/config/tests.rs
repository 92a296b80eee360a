//! The servers file read as a person writes it, and every way it can be wrong.

use super::variables::Variables;
use super::*;

fn id() -> Identity {
    Identity {
        user: "usr-omar".into(),
        tenant: "larkfield".into(),
    }
}

#[test]
fn syntax_errors_name_line_and_column() {
    let err = Config::parse("{\n  \"mcpServers\": {,}\n}", "x.json", &id()).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("line 2"), "{text}");
    assert!(text.contains("column"), "{text}");
}

#[test]
fn one_broken_entry_keeps_the_others() {
    let c = Config::parse(
        r#"{"mcpServers": {"good": {"command": "x"}, "bad": {"args": []}},
            "gatehouse": {"maxSteps": 3, "colour": "blue"}}"#,
        "f",
        &id(),
    )
    .unwrap();
    assert_eq!(c.servers.len(), 1);
    assert_eq!(c.broken[0].0, "bad");
    assert!(c.broken[0].1.contains("command"));
    assert_eq!(c.settings.max_model_calls, 3);
    assert!(c.warnings.iter().any(|w| w.contains("colour")));
}

#[test]
fn claude_desktop_files_with_http_servers_and_variables() {
    // SAFETY: tests in this module do not read this variable concurrently.
    unsafe { std::env::set_var("GATEHOUSE_TEST_TOKEN", "s3cret") };
    let c = Config::parse(
        r#"{"mcpServers": {
            "remote": {"type": "http", "url": "http://127.0.0.1:${GATEHOUSE_TEST_PORT:-8931}/mcp",
                       "headers": {"Authorization": "Bearer ${GATEHOUSE_TEST_TOKEN}"}},
            "bare": {"url": "https://example.com/mcp"},
            "old": {"type": "sse", "url": "http://x/sse"},
            "missing": {"type": "http", "url": "http://x/mcp", "headers": {"Authorization": "Bearer ${GATEHOUSE_TEST_UNSET_TOKEN}"}},
            "local": {"command": "x", "cwd": "/tmp"}
        }}"#,
        "claude_desktop_config.json",
        &id(),
    )
    .unwrap();
    let Transport::Http { url, headers } = &c.servers[0].transport else {
        panic!("http")
    };
    assert_eq!(url, "http://127.0.0.1:8931/mcp");
    assert_eq!(headers["Authorization"], "Bearer s3cret");
    assert!(
        !format!("{:?}", c.servers[0]).contains("s3cret"),
        "secrets stay out of debug output"
    );
    assert!(matches!(c.servers[1].transport, Transport::Http { .. }));
    assert!(matches!(
        &c.servers[2].transport,
        Transport::Stdio { cwd: Some(_), .. }
    ));
    let broken: Vec<&str> = c.broken.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(broken, vec!["old", "missing"]);
    assert!(c.broken[0].1.contains("not supported"));
    assert!(c.broken[1].1.contains("GATEHOUSE_TEST_UNSET_TOKEN"));
    assert!(!c.broken[1].1.contains("s3cret"));
}

#[test]
fn variables_expand_with_defaults_and_fail_by_name() {
    let v = Variables::new(&id());
    assert_eq!(v.expand("${GATEHOUSE_USER}@x").unwrap(), "usr-omar@x");
    assert_eq!(
        v.expand("${GATEHOUSE_SURELY_UNSET_VAR:-fallback}").unwrap(),
        "fallback"
    );
    let err = v.expand("${GATEHOUSE_SURELY_UNSET_VAR}").unwrap_err();
    assert!(err.contains("GATEHOUSE_SURELY_UNSET_VAR"));
    assert!(v.expand("${bad name}").is_err());
}

#[test]
fn bounds_out_of_range_are_errors_naming_the_key_and_range() {
    for (key, value) in [
        ("maxResultChars", "30"),
        ("maxResultChars", "0"),
        ("maxResultChars", "-5"),
        ("maxResultChars", "4000.5"),
        ("maxResultChars", "\"4000\""),
        ("maxArgumentChars", "0"),
        ("maxSteps", "1000000"),
        ("toolTimeoutMs", "-1"),
        ("maxInputRounds", "0"),
    ] {
        let text = format!(r#"{{"mcpServers": {{}}, "gatehouse": {{"{key}": {value}}}}}"#);
        let err = Config::parse(&text, "f.json", &id())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("\"{key}\" must be a whole number from")),
            "{err}"
        );
        assert!(err.contains(&format!("not {value}")), "{err}");
    }
    let ok = Config::parse(
        r#"{"mcpServers": {}, "gatehouse": {"maxResultChars": 400, "maxSteps": 1000}}"#,
        "f.json",
        &id(),
    )
    .unwrap();
    assert_eq!(ok.settings.max_result_chars, 400);
}

use proptest::prelude::*;

/// One piece of a value in a servers file, and what it expands to.
fn piece() -> impl Strategy<Value = (String, String)> {
    prop_oneof![
        "[^$]{0,12}".prop_map(|t| (t.clone(), t)),
        Just(("${GATEHOUSE_USER}".to_string(), "usr-omar".to_string())),
        Just((
            "${GATEHOUSE_TENANT:-x}".to_string(),
            "larkfield".to_string()
        )),
        "[a-z ]{0,8}".prop_map(|d| (format!("${{GATEHOUSE_SURELY_UNSET_VAR:-{d}}}"), d)),
    ]
}

proptest! {
    /// Any text gives an expansion or an error, never a panic; text made of literals
    /// and variables expands to exactly what they stand for.
    #[test]
    fn variables_expand_exactly(pieces in prop::collection::vec(piece(), 0..8), junk in any::<String>()) {
        let v = Variables::new(&id());
        let text: String = pieces.iter().map(|(t, _)| t.as_str()).collect();
        let want: String = pieces.iter().map(|(_, e)| e.as_str()).collect();
        prop_assert_eq!(v.expand(&text).unwrap(), want);
        let _ = v.expand(&junk);
    }
}

#[test]
fn a_server_gets_only_the_base_environment_and_what_its_entry_names() {
    let host: Vec<(std::ffi::OsString, std::ffi::OsString)> = [
        ("PATH", "/bin"),
        ("HOME", "/home/sam"),
        ("LC_ALL", "C"),
        ("OPENAI_API_KEY", "sk-secret"),
        ("GITHUB_TOKEN", "ghp_secret"),
        ("AWS_SECRET_ACCESS_KEY", "aws"),
        ("AWS_REGION", "eu-west-1"),
    ]
    .iter()
    .map(|(k, v)| ((*k).into(), (*v).into()))
    .collect();
    let names = |pass: &EnvPass| -> Vec<String> {
        pass.select(host.clone())
            .into_iter()
            .map(|(k, _)| k.into_string().unwrap())
            .collect()
    };
    assert_eq!(names(&EnvPass::default()), ["PATH", "HOME", "LC_ALL"]);
    let some = EnvPass {
        names: vec!["GITHUB_TOKEN".into(), "AWS_*".into()],
        all: false,
    };
    assert_eq!(
        names(&some),
        [
            "PATH",
            "HOME",
            "LC_ALL",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_REGION"
        ]
    );
    let all = EnvPass {
        names: vec![],
        all: true,
    };
    assert_eq!(names(&all).len(), host.len());
    let c = Config::parse(
        r#"{"mcpServers": {"a": {"command": "x", "passEnv": ["GITHUB_TOKEN", "AWS_*"]},
                           "b": {"command": "x", "inheritEnv": true},
                           "c": {"command": "x", "passEnv": ["A*B"]},
                           "d": {"command": "x", "passEnv": "ALL"}}}"#,
        "f",
        &id(),
    )
    .unwrap();
    let Transport::Stdio { pass, .. } = &c.servers[0].transport else {
        panic!("stdio")
    };
    assert_eq!(pass, &some);
    let Transport::Stdio { pass, .. } = &c.servers[1].transport else {
        panic!("stdio")
    };
    assert!(pass.all);
    assert_eq!(c.broken.len(), 2, "{:?}", c.broken);
    assert!(c.broken[0].1.contains("passEnv"));
}

#[test]
fn every_place_the_host_writes_is_named_by_its_setting() {
    let c = Config::parse(
        r#"{"mcpServers": {}, "gatehouse": {"saveDir": "out", "logFile": "logs/host.log", "tasksFile": "t.db"}}"#,
        "f",
        &id(),
    )
    .unwrap();
    let written = c.settings.written_paths();
    let named: Vec<(&str, &str, PathKind)> = written
        .iter()
        .map(|w| (w.setting, w.path.to_str().unwrap(), w.kind))
        .collect();
    assert_eq!(
        named,
        [
            ("saveDir", "out", PathKind::Folder),
            ("logFile", "logs/host.log", PathKind::File),
            ("tasksFile", "t.db", PathKind::File)
        ]
    );
    assert!(Settings::default().written_paths().is_empty());
    let err = Config::parse(
        r#"{"mcpServers": {}, "gatehouse": {"logFile": ""}}"#,
        "f",
        &id(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("\"logFile\" must be a path"), "{err}");
}

#[test]
fn the_policy_settings_are_read_and_their_bounds_checked() {
    let read = |gatehouse: &str| {
        let text = format!(r#"{{"mcpServers": {{}}, "gatehouse": {gatehouse}}}"#);
        Config::parse(&text, "f", &id()).map(|c| c.settings)
    };
    let s = read(
        r#"{"rules": [{"tool": "a__*", "decision": "deny"}],
            "ledger": {"path": "/tmp/l.jsonl", "arguments": true},
            "hooks": {"beforeCall": {"command": "check", "args": ["-v"], "timeoutMs": 250, "tools": "a__*",
                                     "passEnv": ["CHECK_*"]}}}"#,
    )
    .unwrap();
    assert_eq!(s.rules.len(), 1);
    assert_eq!(s.ledger.file(), std::path::PathBuf::from("/tmp/l.jsonl"));
    assert!(s.ledger.arguments && s.ledger.enabled);
    let hook = s.hooks.before_call.unwrap();
    assert_eq!(hook.timeout, std::time::Duration::from_millis(250));
    assert!(hook.applies_to("a__x") && !hook.applies_to("b__x"));
    assert_eq!(hook.pass.names, ["CHECK_*"]);
    assert!(!read(r#"{"ledger": false}"#).unwrap().ledger.enabled);
    for (bad, says) in [
        (
            r#"{"hooks": {"beforeCall": {"command": "x", "timeoutMs": 0}}}"#,
            "\"timeoutMs\" must be a whole number from 1 to 600000",
        ),
        (
            r#"{"hooks": {"beforeCall": {"command": "x", "timeoutMs": 600001}}}"#,
            "from 1 to 600000",
        ),
        (
            r#"{"hooks": {"afterCall": {"args": []}}}"#,
            "\"hooks\".\"afterCall\": \"command\"",
        ),
        (
            r#"{"hooks": {"beforeCall": {"command": "x", "shell": true}}}"#,
            "unknown key \"shell\"",
        ),
        (
            r#"{"hooks": {"beforeCall": {"command": "x", "tools": "a["}}}"#,
            "\"tools\"",
        ),
        (r#"{"ledger": {"path": ""}}"#, "\"ledger\".\"path\""),
        (r#"{"ledger": 3}"#, "\"ledger\" must be true, false"),
        (
            r#"{"rules": [{"tool": "*", "decision": "deny"}, {"tool": "*"}]}"#,
            "\"gatehouse\": rules[1]: \"decision\"",
        ),
    ] {
        let err = read(bad).unwrap_err().to_string();
        assert!(err.contains(says), "{bad}: {err}");
    }
}
