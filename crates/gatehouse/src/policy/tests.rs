//! Every check in order, the size bound, and any proposal given the right verdict.

use super::*;
use crate::config::name::server_name;
use rmcp::model::Tool;

fn catalog() -> Catalog {
    let tool: Tool =
        serde_json::from_value(json!({"name": "get_ticket", "inputSchema": {"type": "object"}}))
            .unwrap();
    let other: Tool =
        serde_json::from_value(json!({"name": "open_ticket", "inputSchema": {"type": "object"}}))
            .unwrap();
    Catalog::build(vec![(server_name("support"), vec![tool, other])])
}

fn call(name: &str, args: &str) -> ToolCall {
    ToolCall {
        id: "c1".into(),
        name: name.into(),
        arguments: args.into(),
    }
}

fn settings() -> Settings {
    Settings {
        allow: vec!["support__get_ticket".into()],
        ..Settings::default()
    }
}

#[test]
fn each_check_in_order() {
    let (c, s) = (catalog(), settings());
    assert!(matches!(
        decide(&call("nope", "{}"), &c, &s),
        Verdict::Refuse(Refusal::UnknownTool { .. })
    ));
    let big = format!("{{\"q\": \"{}\"}}", "x".repeat(50_000));
    assert!(matches!(
        decide(&call("support__get_ticket", &big), &c, &s),
        Verdict::Refuse(Refusal::TooLarge { max: 2000, .. })
    ));
    assert!(matches!(
        decide(&call("support__get_ticket", "{oops"), &c, &s),
        Verdict::Refuse(Refusal::NotJson { .. })
    ));
    assert!(matches!(
        decide(&call("support__get_ticket", "[1]"), &c, &s),
        Verdict::Refuse(Refusal::NotAnObject { found: "an array" })
    ));
    assert!(matches!(
        decide(&call("support__get_ticket", ""), &c, &s),
        Verdict::Run { .. }
    ));
    assert!(matches!(
        decide(&call("support__open_ticket", "{}"), &c, &s),
        Verdict::Ask { .. }
    ));
}

#[test]
fn the_size_bound_counts_characters_not_bytes() {
    let (c, s) = (catalog(), settings());
    let args = format!("{{\"q\": \"{}\"}}", "é".repeat(1_990));
    assert!(matches!(
        decide(&call("support__get_ticket", &args), &c, &s),
        Verdict::Run { .. }
    ));
}

use proptest::prelude::*;

proptest! {
    /// Any proposal (any name, any argument text) gets a verdict: an unknown name or
    /// oversized arguments are refused before anything else, and a call runs without
    /// asking only when the tool is on the allow-list and its arguments are an object.
    #[test]
    fn every_proposal_gets_the_right_verdict(
        name in prop_oneof![
            Just("support__get_ticket".to_string()),
            Just("support__open_ticket".to_string()),
            any::<String>(),
        ],
        arguments in prop_oneof![
            Just("{}".to_string()),
            Just(String::new()),
            any::<String>(),
            ".{0,3000}".prop_map(|s| serde_json::json!({"q": s}).to_string()),
        ],
    ) {
        let (c, s) = (catalog(), settings());
        let verdict = decide(&call(&name, &arguments), &c, &s);
        let known = c.get(&name).is_some();
        let size = if arguments.trim().is_empty() { 2 } else { arguments.chars().count() };
        match verdict {
            Verdict::Refuse(Refusal::UnknownTool { .. }) => prop_assert!(!known),
            Verdict::Refuse(Refusal::TooLarge { chars, .. }) => {
                prop_assert!(known && chars > s.max_argument_chars);
            }
            Verdict::Refuse(_) => prop_assert!(known && size <= s.max_argument_chars),
            Verdict::Run { tool, .. } => prop_assert!(s.allow.contains(&tool.name)),
            Verdict::Ask { tool, .. } => prop_assert!(!s.allow.contains(&tool.name)),
        }
    }
}

mod precedence {
    //! The rule table, as README.md writes it: a matching deny wins, then the first
    //! matching rule, then the allow-list, then an approval remembered for this very
    //! definition, else ask. Annotations never grant anything.

    use super::*;
    use crate::{
        approvals::{Remembered, Scope},
        rules::Rules,
    };

    fn files_catalog() -> Catalog {
        let tool = |name: &str, annotations: Value| -> Tool {
            serde_json::from_value(json!({"name": name, "annotations": annotations,
                "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "n": {"type": "integer"}}}}))
            .unwrap()
        };
        Catalog::build(vec![(
            server_name("files"),
            vec![
                tool("read", json!({"readOnlyHint": true})),
                tool("write", json!({"destructiveHint": true})),
                tool("delete", json!({})),
            ],
        )])
    }

    fn with(rules: Value, allow: &[&str]) -> Settings {
        Settings {
            rules: Rules::parse(&rules).unwrap(),
            allow: allow.iter().map(|a| a.to_string()).collect(),
            ..Settings::default()
        }
    }

    /// `run rules[1]`, `ask default`, `refuse denied`…: the verdict and what decided it.
    fn said(verdict: Verdict<'_>) -> String {
        match verdict {
            Verdict::Run { basis, .. } => format!("run {}", basis.label()),
            Verdict::Ask { basis, .. } => format!("ask {}", basis.label()),
            Verdict::Refuse(Refusal::Denied { rule, hidden, .. }) => {
                format!("deny rules[{rule}]{}", if hidden { " hidden" } else { "" })
            }
            Verdict::Refuse(r) => format!("refuse {}", r.decision()),
        }
    }

    /// The arguments of a call on `path`.
    fn at(path: &str) -> String {
        json!({ "path": path }).to_string()
    }

    #[test]
    fn the_table() {
        let inside = json!({"pointer": "/path", "inside": "/srv/project"});
        let outside = json!({"pointer": "/path", "inside": "/srv/project", "not": true});
        let rules = json!([
            {"tool": "files__*", "decision": "allow", "when": inside},
            {"tool": "files__write", "decision": "deny", "when": outside, "reason": "only the project"},
            {"tool": "files__write", "decision": "ask", "reason": "writes"},
            {"tool": "files__delete", "decision": "deny"}
        ]);
        let s = with(rules, &["files__write", "files__read"]);
        let c = files_catalog();
        let table = [
            // A matching allow that comes first.
            ("files__read", at("/srv/project/a"), "run rules[0]"),
            // No rule applies: the allow-list.
            ("files__read", at("/etc/passwd"), "run allow[1]"),
            // A traversal is outside: the deny wins over the allow-list and any rule before it.
            (
                "files__write",
                at("/srv/project/../../etc/passwd"),
                "deny rules[1]",
            ),
            // Missing path: the deny cannot tell, so it applies.
            ("files__write", "{}".to_string(), "deny rules[1]"),
            // The first matching rule wins over the ask after it and the allow-list.
            ("files__write", at("/srv/project/x"), "run rules[0]"),
            // A deny without conditions hides the tool.
            (
                "files__delete",
                at("/srv/project/x"),
                "deny rules[3] hidden",
            ),
        ];
        for (tool, args, want) in table {
            let got = said(decide(&call(tool, &args), &c, &s));
            assert_eq!(got, want, "{tool} {args}");
        }
        let s = with(
            json!([{"tool": "files__write", "decision": "ask", "reason": "writes"}]),
            &["files__write"],
        );
        assert_eq!(
            said(decide(&call("files__write", "{}"), &c, &s)),
            "ask rules[0]",
            "a rule before the allow-list"
        );
        let s = with(json!([]), &[]);
        assert_eq!(
            said(decide(&call("files__read", "{}"), &c, &s)),
            "ask default",
            "annotations never grant"
        );
    }

    #[test]
    fn a_hidden_tool_is_not_offered_and_is_refused_as_unknown_to_the_model() {
        let s = with(
            json!([{"tool": "files__delete", "decision": "deny", "reason": "never"}]),
            &[],
        );
        let c = files_catalog();
        let mut offered = c.model_tools();
        crate::policy::offered(&mut offered, &s);
        assert!(offered.iter().all(|t| t.name != "files__delete") && offered.len() == 2);
        let Verdict::Refuse(refusal) = decide(&call("files__delete", "not even json"), &c, &s)
        else {
            panic!("a hidden tool is refused");
        };
        assert_eq!(
            refusal.for_model(),
            Refusal::UnknownTool {
                name: "files__delete".into()
            }
            .for_model()
        );
        assert!(
            refusal.for_person().contains("rules[0]"),
            "{}",
            refusal.for_person()
        );
        let conditional = with(
            json!([{"tool": "files__delete", "decision": "deny", "reason": "not there",
            "when": {"pointer": "/path", "glob": "/etc/*"}}]),
            &[],
        );
        let mut offered = c.model_tools();
        crate::policy::offered(&mut offered, &conditional);
        assert_eq!(offered.len(), 3, "a conditional deny hides nothing");
        let Verdict::Refuse(refusal) = decide(
            &call("files__delete", r#"{"path": "/etc/x"}"#),
            &c,
            &conditional,
        ) else {
            panic!("a matching conditional deny refuses");
        };
        assert!(
            refusal.for_model().contains("not there"),
            "{}",
            refusal.for_model()
        );
    }

    /// Before its arguments are known, a tool's standing is each verdict its calls can
    /// meet, in the words the run uses; every call's verdict is among them.
    #[test]
    fn a_tools_standing_is_what_its_calls_can_meet_whatever_the_arguments() {
        let c = files_catalog();
        let outside = json!({"pointer": "/path", "inside": "/srv/project", "not": true});
        let s = with(
            json!([{"tool": "files__write", "decision": "deny", "when": outside,
                    "reason": "writes only inside the project"},
                   {"tool": "files__delete", "decision": "deny", "reason": "never"},
                   {"tool": "files__read", "decision": "ask", "reason": "reads"}]),
            &["files__read"],
        );
        let none = Remembered::default();
        let of = |name: &str, s: &Settings, r: &Remembered| {
            crate::policy::standing(c.get(name).unwrap(), s, r)
        };
        let write = of("files__write", &s, &none);
        assert_eq!(write.kind(), "depends");
        assert_eq!(
            write.words(),
            "depends on the arguments (rules[0]): not on the allow-list: ask the person; \
             or denied by rules[0]: writes only inside the project"
        );
        let delete = of("files__delete", &s, &none);
        assert_eq!(
            (delete.kind(), delete.words().as_str()),
            (
                "denied",
                "denied by rules[1], a tool hidden from the model: never"
            )
        );
        let read = of("files__read", &s, &none);
        assert_eq!(
            (read.kind(), read.words().as_str()),
            ("asked", "rules[2] says ask the person: reads"),
            "a rule that asks comes before the allow-list"
        );
        let allowed = with(json!([]), &["files__read"]);
        assert_eq!(
            of("files__read", &allowed, &none),
            Standing::Allowed("on the allow-list: run it".into())
        );
        let mut remembered = Remembered::default();
        let digest = crate::catalog::definition_digest(&c.get("files__write").unwrap().tool);
        remembered.remember(Scope::Project, "files__write", &digest);
        assert_eq!(
            of("files__write", &with(json!([]), &[]), &remembered),
            Standing::Allowed("approved in this project: run it".into())
        );
        // Every call of the table's settings meets one of its tool's standings.
        let inside = json!({"pointer": "/path", "inside": "/srv/project"});
        let s = with(
            json!([{"tool": "files__*", "decision": "allow", "when": inside},
                   {"tool": "files__write", "decision": "deny", "when": outside, "reason": "no"},
                   {"tool": "files__write", "decision": "ask", "reason": "writes"}]),
            &[],
        );
        let Standing::Depends { rules, outcomes } = of("files__write", &s, &none) else {
            panic!("the arguments decide");
        };
        assert_eq!(rules, ["rules[0]", "rules[1]"]);
        assert_eq!(outcomes.len(), 3, "{outcomes:?}");
        for path in ["/srv/project/a", "/etc/passwd", "/srv/project/../x"] {
            let words = match decide(&call("files__write", &at(path)), &c, &s) {
                Verdict::Run { basis, .. } => basis.for_run(),
                Verdict::Ask { basis, .. } => basis.for_ask(),
                Verdict::Refuse(r) => r.for_person(),
            };
            assert!(
                outcomes.iter().any(|o| o.words() == words),
                "{path}: {words}"
            );
        }
    }

    #[test]
    fn a_hidden_tool_never_runs_unasked_whatever_the_allow_list_says() {
        let s = with(
            json!([{"tool": "files__delete", "decision": "deny", "reason": "never"}]),
            &["files__delete", "files__read"],
        );
        assert!(!crate::policy::may_run_unasked("files__delete", &s));
        assert!(crate::policy::may_run_unasked("files__read", &s));
    }

    #[test]
    fn a_remembered_approval_holds_for_its_definition_only() {
        let c = files_catalog();
        let s = with(json!([]), &[]);
        let tool = c.get("files__write").unwrap();
        let mut remembered = Remembered::default();
        remembered.remember(
            Scope::Project,
            "files__write",
            &crate::catalog::definition_digest(&tool.tool),
        );
        let write = call("files__write", "{}");
        assert_eq!(
            said(decide_remembering(&write, &c, &s, &remembered)),
            "run project"
        );
        let mut changed = Remembered::default();
        changed.remember(Scope::Session, "files__write", "an older definition");
        assert_eq!(
            said(decide_remembering(&write, &c, &s, &changed)),
            "ask changed",
            "asked again, the change said"
        );
        // A rule that asks is not overridden by an approval.
        let asks = with(json!([{"tool": "files__write", "decision": "ask"}]), &[]);
        assert_eq!(
            said(decide_remembering(&write, &c, &asks, &remembered)),
            "ask rules[0]"
        );
    }

    fn rule() -> impl Strategy<Value = Value> {
        let tool = prop_oneof![
            Just("files__*"),
            Just("files__write"),
            Just("*__read"),
            Just("*")
        ];
        let decision = prop_oneof![Just("allow"), Just("ask"), Just("deny")];
        let when = prop_oneof![
            Just(None),
            Just(Some(json!({"pointer": "/path", "inside": "/srv"}))),
            Just(Some(
                json!({"pointer": "/path", "inside": "/srv", "not": true})
            )),
            Just(Some(json!({"pointer": "/n", "min": 5}))),
        ];
        (tool, decision, when).prop_map(|(tool, decision, when)| match when {
            Some(w) => json!({"tool": tool, "decision": decision, "when": w}),
            None => json!({"tool": tool, "decision": decision}),
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Any list of rules, any tool, any arguments: the verdict is the one the table
        /// says, and `policy explain` gives the same one.
        #[test]
        fn the_verdict_follows_the_precedence(
            rules in prop::collection::vec(rule(), 0..8),
            allow_write in any::<bool>(),
            tool in prop_oneof![Just("files__read"), Just("files__write"), Just("files__delete")],
            path in prop_oneof![Just(None), Just(Some("/srv/a")), Just(Some("/srv/../etc")), Just(Some("/etc"))],
            n in prop_oneof![Just(None), Just(Some(1)), Just(Some(9))],
        ) {
            let allow: &[&str] = if allow_write { &["files__write"] } else { &[] };
            let s = with(Value::Array(rules), allow);
            let c = files_catalog();
            let mut args = serde_json::Map::new();
            if let Some(p) = path { args.insert("path".into(), json!(p)); }
            if let Some(n) = n { args.insert("n".into(), json!(n)); }
            let args = Value::Object(args);
            let matching: Vec<_> = s.rules.all().iter().filter(|r| r.matches_name(tool) && r.applies(&args)).collect();
            let want = if let Some(hidden) = s.rules.all().iter().find(|r| r.matches_name(tool) && r.hides()) {
                format!("deny rules[{}] hidden", hidden.index)
            } else if let Some(deny) = matching.iter().find(|r| r.decision == crate::rules::Decision::Deny) {
                format!("deny rules[{}]", deny.index)
            } else if let Some(first) = matching.first() {
                format!("{} rules[{}]", if first.decision == crate::rules::Decision::Allow { "run" } else { "ask" }, first.index)
            } else if allow_write && tool == "files__write" {
                "run allow[0]".to_string()
            } else {
                "ask default".to_string()
            };
            let proposal = call(tool, &args.to_string());
            prop_assert_eq!(said(decide(&proposal, &c, &s)), want.clone());
            let explained = explain(&proposal, &c, &s, &Remembered::default());
            let head = want.split(' ').next().unwrap();
            let verdict = match head { "run" => "run", "ask" => "ask", _ => "refuse" };
            prop_assert_eq!(explained.verdict, verdict);
            prop_assert!(want.contains(&explained.by), "{} vs {}", want, explained.by);
        }
    }
}

mod flows;
