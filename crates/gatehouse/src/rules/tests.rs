//! The rules as written: parsing errors that name the rule, each test, what cannot be told,
//! globs over names, and paths normalised so that no traversal climbs out of a folder.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::path::{inside_any, normalise};
use super::*;

fn rules(v: Value) -> Rules {
    Rules::parse(&v).unwrap()
}

fn error(v: Value) -> String {
    Rules::parse(&v).unwrap_err()
}

#[test]
fn a_bad_rule_is_an_error_naming_its_index_and_the_problem() {
    let cases = [
        (
            json!([{"tool": "a", "decision": "allow"}, {"tool": "files__[", "decision": "deny"}]),
            "rules[1]: \"tool\"",
        ),
        (
            json!([{"tool": "*", "decision": "ask", "when": {"pointer": "/q", "regex": "(unclosed"}}]),
            "rules[0]: when[0]: \"regex\" does not compile",
        ),
        (
            json!([{"tool": "*", "decision": "ask", "when": [{"pointer": "q", "equals": 1}]}]),
            "rules[0]: when[0]: \"pointer\" \"q\" must be empty or start with /",
        ),
        (
            json!([{"tool": "*", "decision": "ask", "when": {"pointer": "/a~2", "equals": 1}}]),
            "~0 or ~1",
        ),
        (
            json!([{"tool": "*", "decision": "maybe"}]),
            "rules[0]: \"decision\"",
        ),
        (json!([{"tool": "*"}]), "\"decision\""),
        (json!([{"decision": "deny"}]), "\"tool\" must be a glob"),
        (
            json!([{"tool": "*", "decision": "deny", "colour": 1}]),
            "unknown key \"colour\"",
        ),
        (
            json!([{"tool": "*", "decision": "deny", "when": {"pointer": "/a"}}]),
            "has no test",
        ),
        (
            json!([{"tool": "*", "decision": "deny", "when": {"pointer": "/a", "equals": 1, "glob": "x"}}]),
            "more than one test",
        ),
        (
            json!([{"tool": "*", "decision": "deny", "when": {"pointer": "/a", "min": 5, "max": 1}}]),
            "\"min\" 5 is more than \"max\" 1",
        ),
        (
            json!([{"tool": "*", "decision": "deny", "when": {"pointer": "/p", "inside": "relative/dir"}}]),
            "must be an absolute folder",
        ),
        (
            json!([{"tool": "*", "decision": "deny", "when": {"pointer": "/p", "oneOf": []}}]),
            "\"oneOf\" must be a list of 1 to",
        ),
        (
            json!([{"tool": "*", "decision": "deny", "reason": "x".repeat(MAX_REASON_CHARS + 1)}]),
            "\"reason\" must be a string of at most 500",
        ),
        (json!({"tool": "*"}), "\"rules\" must be a list"),
        // A regex whose compiled program is larger than the bound is refused.
        (
            json!([{"tool": "*", "decision": "deny", "when": {"pointer": "/q", "regex": "\\w{1000}"}}]),
            "size limit",
        ),
    ];
    for (value, says) in cases {
        let e = error(value.clone());
        assert!(e.contains(says), "{value}: {e}");
    }
    let many: Vec<Value> = (0..=MAX_RULES)
        .map(|_| json!({"tool": "*", "decision": "ask"}))
        .collect();
    assert!(error(Value::Array(many)).contains("at most 1000"));
}

#[test]
fn tool_globs_match_namespaced_names() {
    let r = rules(json!([
        {"tool": "files__*", "decision": "allow"},
        {"tool": "*__get_*", "decision": "allow"},
        {"tool": "tickets__{open,close}_ticket", "decision": "ask"},
        {"tool": "db__quer?", "decision": "deny"}
    ]));
    let hits = |name: &str| r.for_name(name).map(|r| r.index).collect::<Vec<_>>();
    assert_eq!(hits("files__read"), [0]);
    assert_eq!(hits("files__get_meta"), [0, 1]);
    assert_eq!(hits("support__get_ticket"), [1]);
    assert_eq!(hits("tickets__open_ticket"), [2]);
    assert_eq!(hits("tickets__list_tickets"), Vec::<usize>::new());
    assert_eq!(hits("db__query"), [3]);
    assert_eq!(hits("db__queries"), Vec::<usize>::new());
    assert_eq!(
        hits("myfiles__read"),
        Vec::<usize>::new(),
        "a glob matches the whole name"
    );
    assert!(r.hiding("db__query").is_some() && r.hiding("files__read").is_none());
    assert!(r.may_allow("files__x") && !r.may_allow("db__query"));
}

fn condition(v: Value) -> Condition {
    Condition::parse(&v).unwrap()
}

#[test]
fn each_test_says_yes_no_or_cannot_tell() {
    use Holds::*;
    let args = json!({"n": 5, "f": 2.5, "s": "hello.txt", "p": "/home/me/project/a.txt",
        "list": ["a"], "flag": true, "nested": {"k~/": "v"}});
    let cases = [
        (json!({"pointer": "/n", "equals": 5}), Yes),
        (json!({"pointer": "/n", "equals": 5.0}), Yes),
        (json!({"pointer": "/n", "equals": "5"}), No),
        (json!({"pointer": "/missing", "equals": 5}), Unknown),
        (json!({"pointer": "/nested/k~0~1", "equals": "v"}), Yes),
        (json!({"pointer": "/s", "oneOf": ["a", "hello.txt"]}), Yes),
        (json!({"pointer": "/s", "glob": "*.txt"}), Yes),
        (json!({"pointer": "/s", "glob": "*.md"}), No),
        (json!({"pointer": "/n", "glob": "*"}), Unknown),
        (json!({"pointer": "/s", "regex": "^hel+o"}), Yes),
        (json!({"pointer": "/list", "regex": "\\[\"a\"\\]"}), Yes),
        (json!({"pointer": "/f", "min": 1, "max": 2.5}), Yes),
        (json!({"pointer": "/f", "max": 2}), No),
        (json!({"pointer": "/s", "min": 1}), Unknown),
        (
            json!({"pointer": "/s", "minLength": 9, "maxLength": 9}),
            Yes,
        ),
        (json!({"pointer": "/s", "maxLength": 3}), No),
        (json!({"pointer": "/list", "maxLength": 3}), Unknown),
        (json!({"pointer": "/p", "inside": "/home/me/project"}), Yes),
        (
            json!({"pointer": "/p", "inside": ["/srv", "/home/me"]}),
            Yes,
        ),
        (json!({"pointer": "/p", "inside": "/home/me/proj"}), No),
        (json!({"pointer": "/n", "inside": "/"}), Unknown),
        (json!({"pointer": "/flag", "present": true}), Yes),
        (json!({"pointer": "/missing", "present": false}), Yes),
        (json!({"pointer": "/missing", "present": true}), No),
        (json!({"pointer": "/s", "glob": "*.txt", "not": true}), No),
        (
            json!({"pointer": "/missing", "glob": "*", "not": true}),
            Unknown,
        ),
    ];
    for (c, want) in cases {
        assert_eq!(condition(c.clone()).holds(&args), want, "{c}");
    }
}

#[test]
fn a_path_argument_is_normalised_before_it_is_tested() {
    let args =
        json!({"p": "/home/me/project/../../etc/passwd", "q": "/home/me/project//./src/../a.rs"});
    let inside = condition(json!({"pointer": "/p", "inside": "/home/me/project"}));
    assert_eq!(inside.holds(&args), Holds::No);
    let glob = condition(json!({"pointer": "/p", "glob": "/home/me/project/**"}));
    assert_eq!(
        glob.holds(&args),
        Holds::Yes,
        "a glob alone reads the text as written"
    );
    let as_path = condition(json!({"pointer": "/p", "glob": "/home/me/project/**", "path": true}));
    assert_eq!(
        as_path.holds(&args),
        Holds::No,
        "with path: true it reads the path"
    );
    let equals =
        condition(json!({"pointer": "/q", "equals": "/home/me/project/a.rs", "path": true}));
    assert_eq!(equals.holds(&args), Holds::Yes);
}

#[test]
fn what_cannot_be_told_never_allows_and_always_asks_or_denies() {
    let r = rules(json!([
        {"tool": "*", "decision": "allow", "when": {"pointer": "/path", "inside": "/srv"}},
        {"tool": "*", "decision": "deny", "when": {"pointer": "/path", "inside": "/srv", "not": true}},
        {"tool": "*", "decision": "ask", "when": {"pointer": "/n", "min": 10}}
    ]));
    let [allow, deny, ask] = [&r.all()[0], &r.all()[1], &r.all()[2]];
    let missing = json!({});
    assert!(!allow.applies(&missing) && deny.applies(&missing) && ask.applies(&missing));
    let wrong_type = json!({"path": ["/srv/a"], "n": "12"});
    assert!(!allow.applies(&wrong_type) && deny.applies(&wrong_type) && ask.applies(&wrong_type));
    let fine = json!({"path": "/srv/a", "n": 3});
    assert!(allow.applies(&fine) && !deny.applies(&fine) && !ask.applies(&fine));
}

#[test]
fn paths_normalise_as_a_system_resolves_them() {
    let cases = [
        ("/home/me/project/../../etc/passwd", "/home/etc/passwd"),
        ("/home/me/project/../../../etc/passwd", "/etc/passwd"),
        ("/a//b///c", "/a/b/c"),
        ("/a/./b/.", "/a/b"),
        ("/../../etc", "/etc"),
        ("a/../../b", "../b"),
        ("./x", "x"),
        ("", "."),
        ("C:\\proj\\..\\win", "C:/win"),
        ("/proj\\..\\etc", "/etc"),
    ];
    for (raw, want) in cases {
        assert_eq!(normalise(raw).text(), want, "{raw}");
    }
    let dir = [normalise("/home/me/project")];
    assert_eq!(inside_any("/home/me/project", &dir), Some(true));
    assert_eq!(inside_any("/home/me/project/src/main.rs", &dir), Some(true));
    assert_eq!(inside_any("/home/me/projectx/a", &dir), Some(false));
    assert_eq!(
        inside_any("project/a", &dir),
        Some(false),
        "a relative path is inside no absolute folder"
    );
    assert_eq!(
        inside_any("/home/me/project/a/../../project2", &dir),
        Some(false)
    );
}

/// Components a path may be built of, traversal attempts included.
fn part() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("..".to_string()),
        Just(".".to_string()),
        Just(String::new()),
        Just("a".to_string()),
        Just("b".to_string()),
        Just("..a".to_string()),
        Just("x\\..".to_string()),
        "[a-z.]{1,4}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A path under a folder is inside it exactly when, walked component by component
    /// (both separators), it never climbs above the folder and ends at or below it.
    #[test]
    fn traversal_never_climbs_out_unseen(parts in prop::collection::vec(part(), 0..12)) {
        let dir = "/home/me/project";
        let path = format!("{dir}/{}", parts.join("/"));
        let mut depth: i64 = 0;
        let mut climbed = false;
        for p in path[dir.len()..].split(['/', '\\']) {
            match p {
                "" | "." => {}
                ".." => { depth -= 1; climbed |= depth < 0; }
                _ => depth += 1,
            }
        }
        let inside = inside_any(&path, &[normalise(dir)]);
        // Climbing above and coming back down (`../project/x`) is inside again: compare
        // with the resolved path, not with the walk alone.
        let resolved = normalise(&path).text();
        let expect = if climbed {
            resolved == dir || resolved.starts_with(&format!("{dir}/"))
        } else {
            true
        };
        prop_assert_eq!(inside, Some(expect), "{} -> {}", path, resolved);
        prop_assert!(!resolved.split('/').any(|c| c == "." || c == ".."));
    }

    /// Normalising twice changes nothing, and an absolute path stays absolute.
    #[test]
    fn normalising_is_idempotent(parts in prop::collection::vec(part(), 0..10), absolute in any::<bool>()) {
        let raw = format!("{}{}", if absolute { "/" } else { "" }, parts.join("/"));
        let once = normalise(&raw);
        prop_assert_eq!(normalise(&once.text()), once.clone());
        prop_assert_eq!(once.absolute, raw.starts_with('/'));
    }

    /// `*__get_*` matches exactly the names holding `__get_`, and `server__*` only its own.
    #[test]
    fn name_globs_match_exactly_their_names(server in "[a-z]{1,8}", tool in "[a-z_]{1,12}") {
        let r = rules(json!([{"tool": "*__get_*", "decision": "allow"}, {"tool": format!("{server}__*"), "decision": "ask"}]));
        let name = format!("{server}__{tool}");
        let hits: Vec<usize> = r.for_name(&name).map(|r| r.index).collect();
        prop_assert_eq!(hits.contains(&0), name.contains("__get_"));
        prop_assert!(hits.contains(&1));
        let other = format!("{server}x__{tool}");
        prop_assert!(!r.for_name(&other).any(|r| r.index == 1));
    }
}

/// The red team's probes, and their kin: what a server may read as another path is never
/// inside.
#[test]
fn escapes_controls_and_look_alikes_cannot_be_told_inside() {
    let dir = [normalise("/srv/proj")];
    for path in [
        "/srv/proj/%2e%2e/%2e%2e/etc/passwd",
        "/srv/proj/%2E%2e/etc",
        "/srv/proj/..%2fetc",
        "/srv/proj/..%5Cetc",
        "/srv/proj/%252e%252e/etc",
        "/srv/proj/100%25done",
        "/srv/proj/x\u{0}",
        "/srv/proj/a\u{0}/../../../etc/passwd",
        "/srv/proj/a\nb",
        "/srv/proj/\u{2025}/etc",
        "/srv/proj/\u{FF0E}\u{FF0E}/etc",
        "/srv/proj/..\u{2215}etc",
    ] {
        assert_eq!(inside_any(path, &dir), None, "{path:?}");
    }
    // A percent sign that escapes nothing of a path's shape is read as written.
    assert_eq!(inside_any("/srv/proj/100% sure", &dir), Some(true));
    assert_eq!(inside_any("/srv/proj/a%41b", &dir), Some(true));
}

#[cfg(unix)]
#[test]
fn a_link_out_of_the_folder_is_not_inside_where_the_path_exists() {
    let root = tempfile::tempdir().unwrap();
    let (proj, outside) = (root.path().join("proj"), root.path().join("outside"));
    std::fs::create_dir_all(proj.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, proj.join("link")).unwrap();
    let dir = [normalise(proj.to_str().unwrap())];
    let at = |p: &str| format!("{}/{p}", proj.display());
    assert_eq!(inside_any(&at("sub/file"), &dir), Some(true));
    assert_eq!(inside_any(&at("not/yet/there"), &dir), Some(true));
    // The link leads out: the file system says outside, the text inside: cannot tell.
    assert_eq!(inside_any(&at("link/passwd"), &dir), None);
    assert_eq!(inside_any(&at("link"), &dir), None);
    // A folder given through a link is the folder it leads to.
    let through = root.path().join("via");
    std::os::unix::fs::symlink(&proj, &through).unwrap();
    let via = [normalise(through.to_str().unwrap())];
    assert_eq!(inside_any(&at("sub/file"), &via), None);
    let in_via = format!("{}/sub/file", through.display());
    assert_eq!(inside_any(&in_via, &via), Some(true));
}

/// A piece of a path that a server may read as a dot or a separator.
fn hostile_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("%2e".to_string()),
        Just("%2E".to_string()),
        Just("%2f".to_string()),
        Just("%5c".to_string()),
        Just("%25".to_string()),
        Just("\u{0}".to_string()),
        Just("\u{1b}".to_string()),
        Just("\u{2025}".to_string()),
        Just("\u{FF0E}".to_string()),
        Just("\u{2215}".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Wherever a hostile piece is put in a path, the path is never inside.
    #[test]
    fn a_hostile_piece_anywhere_is_never_inside(
        parts in prop::collection::vec(part(), 0..8),
        piece in hostile_piece(),
        at in 0usize..64,
    ) {
        let mut path = format!("/home/me/project/{}", parts.join("/"));
        let mut cut = at.min(path.len());
        while !path.is_char_boundary(cut) {
            cut -= 1;
        }
        path.insert_str(cut, &piece);
        prop_assert_ne!(inside_any(&path, &[normalise("/home/me/project")]), Some(true), "{:?}", path);
    }
}
