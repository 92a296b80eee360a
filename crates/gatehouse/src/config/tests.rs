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
fn a_server_whose_name_cannot_be_used_is_broken_and_the_others_kept() {
    let long = "x".repeat(super::MAX_SERVER_NAME_CHARS + 1);
    let text = serde_json::json!({"mcpServers": {
        "": {"command": "x"}, "\u{1b}[2Jdesk": {"command": "x"}, long.clone(): {"command": "x"},
        "a__b": {"command": "x"}, "My desk": {"command": "x"}}})
    .to_string();
    let c = Config::parse(&text, "f", &id()).unwrap();
    let kept: Vec<&str> = c.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(kept, ["My desk"]);
    let broken: Vec<(&str, &str)> = (c.broken.iter())
        .map(|(n, why)| (n.as_str(), why.as_str()))
        .collect();
    assert_eq!(broken.len(), 4, "{broken:?}");
    for (name, why) in [
        ("", "empty"),
        ("\u{1b}[2Jdesk", "U+001B"),
        (&long, "65"),
        ("a__b", "__"),
    ] {
        assert!(
            broken.iter().any(|(n, w)| *n == name && w.contains(why)),
            "{name:?}: {broken:?}"
        );
    }
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
    let Transport::Http { url, headers, .. } = &c.servers[0].transport else {
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

#[test]
fn a_servers_entry_filters_its_tools_and_names_what_it_always_loads() {
    let c = Config::parse(
        r#"{"mcpServers": {
            "gh": {"command": "x", "enabledTools": ["get_*", "list_issues"], "disabledTools": ["get_secret*"], "alwaysLoad": ["get_issue"]},
            "all": {"command": "x", "alwaysLoad": true},
            "web": {"url": "https://example.com/mcp", "disabledTools": ["delete_*"]},
            "bad1": {"command": "x", "enabledTools": "get_*"},
            "bad2": {"command": "x", "disabledTools": [3]},
            "bad3": {"command": "x", "alwaysLoad": "yes"},
            "bad4": {"command": "x", "enabledTools": [""]}
        }}"#,
        "f",
        &id(),
    )
    .unwrap();
    let gh = &c.servers[0].tools;
    assert!(gh.offers("get_issue") && gh.offers("list_issues"));
    assert!(!gh.offers("get_secret_key"), "disabled wins over enabled");
    assert!(!gh.offers("create_issue"), "not enabled");
    assert!(gh.always_loads("get_issue") && !gh.always_loads("list_issues"));
    assert_eq!(
        gh.unmatched(&["get_issue", "list_issues"]),
        vec![("disabledTools", "get_secret*".to_string())]
    );
    let all = &c.servers[1].tools;
    assert!(all.offers("anything") && all.always_loads("anything"));
    let web = &c.servers[2];
    assert!(matches!(web.transport, Transport::Http { .. }));
    assert!(!web.tools.offers("delete_repo") && web.tools.offers("get_repo"));
    let broken: Vec<&str> = c.broken.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(broken, ["bad1", "bad2", "bad3", "bad4"]);
    assert!(c.broken[0].1.contains("enabledTools"), "{:?}", c.broken);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert!(c.servers.iter().all(|s| s.name != "bad1"));
}

#[test]
fn the_tool_budget_comes_from_its_setting_or_a_share_of_the_context() {
    let settings = |gatehouse: &str| {
        Config::parse(
            &format!(r#"{{"mcpServers": {{}}, "gatehouse": {gatehouse}}}"#),
            "f",
            &id(),
        )
        .map(|c| c.settings)
    };
    assert_eq!(
        settings("{}").unwrap().tool_budget_bytes,
        DEFAULT_TOOL_BUDGET_BYTES
    );
    assert_eq!(
        settings(r#"{"toolBudgetBytes": 50000}"#)
            .unwrap()
            .tool_budget_bytes,
        50_000
    );
    // 128K tokens × 4 bytes × 10 %.
    let big = settings(r#"{"contextTokens": 128000}"#).unwrap();
    assert_eq!(big.tool_budget_bytes, 51_200);
    assert_eq!(big.context_tokens, Some(128_000));
    // An explicit budget wins, whatever the order of the keys.
    assert_eq!(
        settings(r#"{"toolBudgetBytes": 9000, "contextTokens": 128000}"#)
            .unwrap()
            .tool_budget_bytes,
        9_000
    );
    // A small context still leaves room for search_tools.
    assert_eq!(
        settings(r#"{"contextTokens": 2048}"#)
            .unwrap()
            .tool_budget_bytes,
        MIN_TOOL_BUDGET_BYTES
    );
    for bad in [
        r#"{"toolBudgetBytes": 100}"#,
        r#"{"toolBudgetBytes": 1.5}"#,
        r#"{"contextTokens": 0}"#,
        r#"{"toolSearch": "sometimes"}"#,
        r#"{"schemaDialect": "claude"}"#,
        r#"{"schemaDialect": {"openai:*": "gemini2"}}"#,
        r#"{"schemaDialect": {"": "gemini"}}"#,
    ] {
        let err = settings(bad).unwrap_err().to_string();
        assert!(err.contains("gatehouse"), "{bad}: {err}");
    }
    assert_eq!(
        settings(r#"{"toolSearch": "never"}"#).unwrap().tool_search,
        ToolSearch::Never
    );
}

#[test]
fn each_model_gets_the_schema_dialect_its_api_accepts() {
    let c = Config::parse(
        r#"{"mcpServers": {}, "gatehouse": {"schemaDialect": {
            "openai:gemini-*": "gemini", "openai:gpt-*": "openai-strict", "openai:*": "json-schema"}}}"#,
        "f",
        &id(),
    )
    .unwrap();
    let d = &c.settings.schema_dialect;
    assert_eq!(
        d.for_model("openai:gemini-2.5-flash"),
        SchemaDialect::Gemini
    );
    assert_eq!(d.for_model("openai:gpt-4o"), SchemaDialect::OpenAiStrict);
    assert_eq!(d.for_model("openai:llama3"), SchemaDialect::JsonSchema);
    assert_eq!(d.for_model("scripted"), SchemaDialect::JsonSchema);
    let one = Config::parse(
        r#"{"mcpServers": {}, "gatehouse": {"schemaDialect": "gemini"}}"#,
        "f",
        &id(),
    )
    .unwrap();
    assert_eq!(
        one.settings.schema_dialect.for_model("anything"),
        SchemaDialect::Gemini
    );
}

#[test]
fn unprefixed_gateway_names_need_exactly_one_server() {
    let file = |servers: &str, names: &str| {
        format!(r#"{{"mcpServers": {{{servers}}}, "gatehouse": {{"gatewayNames": {names}}}}}"#)
    };
    let one = r#""fx": {"command": "x"}, "off": {"command": "y", "disabled": true}"#;
    let c = Config::parse(&file(one, r#""unprefixed""#), "f", &id()).unwrap();
    assert_eq!(c.settings.gateway_names, GatewayNames::Unprefixed);
    let two = r#""a": {"command": "x"}, "b": {"command": "y"}"#;
    let err = Config::parse(&file(two, r#""unprefixed""#), "f", &id())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("exactly one server") && err.contains("there are 2"),
        "{err}"
    );
    let c = Config::parse(&file(two, r#""prefixed""#), "f", &id()).unwrap();
    assert_eq!(c.settings.gateway_names, GatewayNames::Prefixed);
    let err = Config::parse(&file(one, r#""bare""#), "f", &id())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(r#""gatewayNames" must be "prefixed" or "unprefixed""#),
        "{err}"
    );
    let plain = Config::parse(r#"{"mcpServers": {}}"#, "f", &id()).unwrap();
    assert_eq!(plain.settings.gateway_names, GatewayNames::Prefixed);
}

#[test]
fn every_setting_key_named_for_suggestions_is_one_the_file_reads() {
    for key in settings::SETTING_KEYS {
        let mut warnings = Vec::new();
        // A wrong value is an error or read; never "unknown".
        let _ = settings::parse(&serde_json::json!({ *key: {"x": []} }), &mut warnings);
        let unknown = format!("unknown setting \"{key}\"");
        assert!(
            !warnings.iter().any(|w| w.contains(&unknown)),
            "{key}: {warnings:?}"
        );
    }
}

#[test]
fn unknown_keys_say_the_nearest_known_one() {
    let c = Config::parse(
        r#"{"mcpServers": {"a": {"command": "x", "arg": ["y"], "autoApprove": ["t"]}},
            "gatehouse": {"alow": ["a__t"]}, "mcpservers": {}}"#,
        "f",
        &id(),
    )
    .unwrap();
    let all = c.warnings.join("\n");
    for expected in [
        "unknown key \"arg\" is ignored (did you mean \"args\"?)",
        "unknown setting \"alow\" is ignored (did you mean \"allow\"?)",
        "unknown key \"mcpservers\" is ignored (did you mean \"mcpServers\"?)",
        "unknown key \"autoApprove\" is ignored (Gatehouse runs a tool unasked when",
    ] {
        assert!(all.contains(expected), "{expected}\n{all}");
    }
}

#[test]
fn another_programs_file_is_read_without_warnings_about_its_own_keys() {
    let doc = serde_json::json!({"globalShortcut": "Ctrl+Space", "numStartups": 3,
        "mcpServers": {"a": {"command": "x"}}});
    let c = Config::from_value_of(doc, "~/.claude.json", &id(), Some("Claude Code")).unwrap();
    assert_eq!(c.servers.len(), 1);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    // Claude Code's file before any server was added to it: no servers, no error.
    let empty = serde_json::json!({"numStartups": 1});
    let c = Config::from_value_of(empty, "~/.claude.json", &id(), Some("Claude Code")).unwrap();
    assert!(c.servers.is_empty());
    assert_eq!(
        Config::owner_of(std::path::Path::new("/h/.cursor/mcp.json")),
        Some("Cursor")
    );
    assert_eq!(Config::owner_of(std::path::Path::new(".mcp.json")), None);
}

#[test]
fn a_servers_file_past_its_bound_is_refused_not_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".mcp.json");
    // Sparse: the disk holds nothing, the reader would read it all.
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(MAX_SERVERS_FILE_BYTES + 1).unwrap();
    let err = Config::load(&path, &id()).unwrap_err().to_string();
    assert!(err.contains("is larger than"), "{err}");
    assert!(read_text(&dir.path().join("none.json")).unwrap().is_none());
}

#[test]
fn a_file_that_cannot_be_read_says_its_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    // As main prints an error: the message, then each cause in its chain.
    let whole = |path: &std::path::Path| {
        let err = anyhow::Error::from(Config::load(path, &id()).unwrap_err());
        format!("{err:#}")
    };
    let missing = dir.path().join("none.json");
    assert_eq!(
        whole(&missing),
        format!("cannot read {}: there is no such file", missing.display())
    );
    // A folder opens but cannot be read as text: the system's reason, said once.
    let text = whole(dir.path());
    let reason = text
        .strip_prefix(&format!("cannot read {}: ", dir.path().display()))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(!reason.is_empty() && !reason.contains(": "), "{text}");
}

#[test]
fn a_stdio_entry_s_sandbox_is_read_and_digested_and_other_entries_cannot_have_one() {
    let c = Config::parse(
        r#"{"mcpServers": {
            "plain": {"command": "x"},
            "boxed": {"command": "x", "sandbox": true},
            "wider": {"command": "x", "sandbox": {"network": "on"}},
            "web": {"url": "https://mcp.example/mcp", "sandbox": true},
            "typo": {"command": "x", "sandbox": {"netwrok": "on"}}}}"#,
        "f",
        &id(),
    )
    .unwrap();
    let server = |n: &str| c.servers.iter().find(|s| s.name == n).unwrap();
    assert_eq!(server("plain").sandbox, None);
    assert_eq!(server("plain").tools.boxed, None);
    assert_eq!(server("boxed").sandbox, Some(Sandbox::default()));
    let (boxed, wider) = (&server("boxed").tools.boxed, &server("wider").tools.boxed);
    assert!(boxed.is_some() && wider.is_some() && boxed != wider);
    let broken = |n: &str| &c.broken.iter().find(|(name, _)| name == n).unwrap().1;
    assert!(broken("web").contains("\"sandbox\" is for a server the host starts"));
    assert!(broken("typo").contains("unknown key \"netwrok\""));
}
