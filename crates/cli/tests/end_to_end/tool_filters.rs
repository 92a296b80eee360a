//! `enabledTools`, `disabledTools` and `alwaysLoad` in a server's entry: a tool left out
//! is unknown to the model and to the policy; `--tools` narrows further; a pattern that
//! matches nothing is said.

use crate::common;

use common::*;
use serde_json::{Value, json};

fn filtered(dir: &std::path::Path, settings: Value) -> String {
    let mut testbed = json!({"command": exe(), "args": ["serve", "testbed"],
        "enabledTools": ["echo", "repeat", "sle*", "nothing_*"], "disabledTools": ["sleep"],
        "alwaysLoad": ["echo"]});
    testbed["env"] = json!({});
    let mut cmdb = builtin_server("cmdb", json!({}));
    cmdb["disabledTools"] = json!(["find_*"]);
    servers_file(dir, json!({"testbed": testbed, "cmdb": cmdb}), settings)
}

fn names(ran: &Ran) -> Vec<String> {
    let rows: Value =
        serde_json::from_str(&ran.stdout).unwrap_or_else(|e| panic!("{e}: {}", ran.stderr));
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn filtered_tools_are_not_in_the_catalog_and_a_pattern_that_matches_nothing_is_said() {
    let dir = scratch_dir();
    let config = filtered(&dir, json!({}));
    let ran = run(&["tools", "--config", &config, "--json"], &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert_eq!(
        names(&ran),
        ["testbed__echo", "testbed__repeat", "cmdb__get_asset"]
    );
    assert!(
        ran.stderr.contains(
            "testbed: 2 of its 14 tools offered (12 left out by enabledTools and disabledTools)"
        ),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains("cmdb: 1 of its 2 tools offered"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains(
            r#"warning: enabledTools of testbed names "nothing_*", which matches none of its tools"#
        ),
        "{}",
        ran.stderr
    );
    let narrowed = run(
        &[
            "tools",
            "--config",
            &config,
            "--json",
            "--tools",
            "testbed__repeat,testbed__sleep",
        ],
        &[],
    );
    assert_eq!(
        names(&narrowed),
        ["testbed__repeat"],
        "--tools cannot bring a filtered tool back"
    );
    assert!(
        narrowed
            .stderr
            .contains("--tools names testbed__sleep, which no server offers"),
        "{}",
        narrowed.stderr
    );
}

#[test]
fn a_proposal_of_a_filtered_tool_is_refused_as_unknown_and_nothing_is_sent() {
    let dir = scratch_dir();
    let config = filtered(&dir, json!({}));
    let model = playback(
        &dir,
        json!([
            {"tool_calls": [{"name": "testbed__sleep", "arguments": {"seconds": 0}}]},
            {"tool_calls": [{"name": "cmdb__find_assets", "arguments": {}}]},
            {"tool_calls": [{"name": "testbed__echo", "arguments": {"text": "hi"}}]},
            {"answer": "ok"}
        ]),
    );
    let ran = run(&ask_args(&config, &model, &["--yes"]), &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let outcomes = common::expect::pairs(&ran.tool_events(), "tool", "outcome");
    assert_eq!(
        outcomes,
        [
            ("testbed__sleep".into(), "unknown_tool".into()),
            ("cmdb__find_assets".into(), "unknown_tool".into()),
            ("testbed__echo".into(), "ok".into())
        ]
    );
    let sent: Vec<Value> = ran
        .mcp_requests("testbed")
        .into_iter()
        .filter(|r| r["method"] == "tools/call")
        .collect();
    assert!(
        sent.is_empty() || sent.iter().all(|r| r["name"] != "sleep"),
        "{sent:?}"
    );
    assert!(common::expect::find(&ran.server_logs("cmdb"), "tool", "find_assets").is_none());
}

#[test]
fn always_loaded_tools_are_offered_beside_search_tools() {
    let dir = scratch_dir();
    let config = filtered(&dir, json!({"toolSearch": "always"}));
    let model = playback(&dir, json!([{"answer": "ok"}]));
    let ran = run(&ask_args(&config, &model, &[]), &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let data = ran.step_data();
    let deferred = data
        .iter()
        .find(|d| d.get("always_loaded").is_some())
        .unwrap_or_else(|| panic!("{:#?}", ran.step_texts()));
    assert_eq!(deferred["always_loaded"], 1, "testbed__echo: {deferred}");
    assert_eq!(deferred["tools"], 3);
}
