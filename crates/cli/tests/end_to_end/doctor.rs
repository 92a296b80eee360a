//! `gatehouse doctor` through the real binary: a server that does not start, one that
//! stops at once, an endpoint that does not answer, a model that is not served, places
//! the host writes that others can read; each said plainly, with the fix, and the exit
//! status non-zero when anything is broken.

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};

use crate::common::*;
use crate::fake_model::{self, Models};

/// The doctor's checks, by name.
fn checks(ran: &Ran) -> Vec<Value> {
    let report: Value = serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", ran.stdout, ran.stderr));
    report["checks"].as_array().unwrap().clone()
}

fn named<'a>(checks: &'a [Value], name: &str) -> &'a Value {
    checks
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {checks:#?}"))
}

/// A servers file of the support desk and `more` entries.
fn servers_file(more: Value, settings: Value) -> String {
    let dir = scratch_dir();
    let mut servers = json!({"support": builtin_server("support", json!({}))});
    servers
        .as_object_mut()
        .unwrap()
        .extend(more.as_object().unwrap().clone());
    crate::common::servers_file(&dir, servers, settings)
}

#[test]
fn a_broken_server_and_a_dead_model_endpoint_are_named_with_their_fixes() {
    let config = servers_file(
        json!({
            "gone": {"command": "/nonexistent/gatehouse-test-server"},
            "quits": {"command": "sh", "args": ["-c", "echo cannot open the database >&2; exit 3"]},
            "desk": {"type": "http", "url": "http://127.0.0.1:1/mcp"}
        }),
        json!({}),
    );
    let env = [
        ("OPENAI_BASE_URL", "http://127.0.0.1:1/v1"),
        ("OPENAI_API_KEY", ""),
    ];
    let ran = run(
        &[
            "doctor", "--config", &config, "--model", "openai:m", "--json",
        ],
        &env,
    );
    assert_eq!(ran.status, 1, "{}", ran.stderr);
    let checks = checks(&ran);
    let support = named(&checks, "support");
    assert_eq!(support["verdict"], "ok");
    let detail = support["detail"].as_str().unwrap();
    assert!(
        detail.contains("started ")
            && detail.contains("revision 2026-07-28, 2 tools (search_knowledge, get_ticket), "),
        "{detail}"
    );
    assert!(detail.ends_with(" ms"), "{detail}");
    for (name, says, fix) in [
        (
            "gone",
            "no such command",
            "install /nonexistent/gatehouse-test-server",
        ),
        ("quits", "cannot open the database", "run it by hand"),
        ("desk", "connection refused", "check that the server runs"),
        (
            "openai:m",
            "cannot reach the model endpoint http://127.0.0.1:1/v1",
            "start the model server",
        ),
    ] {
        let c = named(&checks, name);
        assert_eq!(c["verdict"], "broken", "{c}");
        assert!(c["detail"].as_str().unwrap().contains(says), "{c}");
        assert!(c["fix"].as_str().unwrap().contains(fix), "{c}");
    }
    // The same, for a person.
    let ran = run(
        &["doctor", "--config", &config, "--model", "openai:m"],
        &env,
    );
    assert_eq!(ran.status, 1);
    let out = &ran.stdout;
    assert!(
        out.contains(
            "  broken   gone: cannot start `/nonexistent/gatehouse-test-server`: no such command"
        ),
        "{out}"
    );
    assert!(
        out.contains("           fix: install /nonexistent/gatehouse-test-server"),
        "{out}"
    );
    assert!(
        out.contains("\n4 broken, 0 warnings: the fixes are above."),
        "{out}"
    );
}

/// A server that is gone before the reason reaches its stderr (here a launcher whose child
/// says it later): the reason is read to the end of the server's stderr, not cut by a
/// fixed pause (on a loaded machine that pause lost even a reason written before the exit),
/// nor by a SIGTERM to its group. "lingering" closes its stdout and exits a while later:
/// its group was signalled while its leader was still there, which killed the child
/// before it spoke (what a busy machine made of "late" now and then).
#[test]
fn a_server_that_says_why_after_it_is_gone_is_heard() {
    let says = "(exec 1>&-; sleep 0.2; echo the licence file is missing >&2) &";
    let config = servers_file(
        json!({
            "late": {"command": "sh", "args": ["-c", format!("{says} exit 3")]},
            "lingering": {"command": "sh", "args": ["-c", format!("{says} exec 1>&-; sleep 0.4; exit 3")]}
        }),
        json!({}),
    );
    let ran = run(&["doctor", "--config", &config, "--json"], &[]);
    assert_eq!(ran.status, 1, "{}", ran.stderr);
    for name in ["late", "lingering"] {
        let server = named(&checks(&ran), name).clone();
        assert_eq!(server["verdict"], "broken", "{server}");
        assert!(
            server["detail"]
                .as_str()
                .unwrap()
                .contains("the licence file is missing"),
            "{server}"
        );
    }
}

#[test]
fn the_model_must_be_served_and_an_endpoint_without_a_list_is_a_warning() {
    let config = servers_file(json!({}), json!({}));
    let listed = fake_model::start(Models::List(vec!["gpt-oss-120b", "small"]), "unused");
    let doctor = |model: &str, base: &str| {
        run(
            &["doctor", "--config", &config, "--model", model, "--json"],
            &[("OPENAI_BASE_URL", base), ("OPENAI_API_KEY", "")],
        )
    };
    let unlisted = fake_model::start(Models::Status(405), "unused");
    let refusing = fake_model::start(Models::Status(401), "unused");
    for (model, base, status, verdict, says) in [
        (
            "gpt-oss-120b",
            &listed.base,
            0,
            "ok",
            "serves gpt-oss-120b (2 models listed)",
        ),
        (
            "gpt-4o",
            &listed.base,
            1,
            "broken",
            "does not list gpt-4o; it lists gpt-oss-120b, small",
        ),
        // A missing list is no failure.
        ("m", &unlisted.base, 0, "warning", "has no model list (405)"),
        (
            "m",
            &refusing.base,
            1,
            "broken",
            "wants a key (401), and OPENAI_API_KEY is not set",
        ),
    ] {
        let spec = format!("openai:{model}");
        let ran = doctor(&spec, base);
        assert_eq!(ran.status, status, "{spec}: {}", ran.stdout);
        let c = named(&checks(&ran), &spec).clone();
        assert_eq!(c["verdict"], verdict, "{c}");
        assert!(c["detail"].as_str().unwrap().contains(says), "{c}");
        if verdict != "ok" {
            assert!(!c["fix"].as_str().unwrap_or("").is_empty(), "{c}");
        }
    }
}

#[test]
fn every_place_the_host_writes_is_checked_for_being_private() {
    let dir = scratch_dir();
    let save = dir.join("saved");
    std::fs::create_dir(&save).unwrap();
    std::fs::set_permissions(&save, std::fs::Permissions::from_mode(0o755)).unwrap();
    let log = dir.join("host.log");
    std::fs::write(&log, "").unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o600)).unwrap();
    let store = dir.join("store/tickets.db");
    std::fs::create_dir(store.parent().unwrap()).unwrap();
    std::fs::set_permissions(
        store.parent().unwrap(),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    std::fs::write(&store, "").unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o644)).unwrap();
    let exe = exe();
    let config = servers_file(
        json!({
            "tickets": {"command": exe.to_str().unwrap(), "args": ["serve", "tickets", "--db", store.to_str().unwrap()],
                        "env": {"MCP_USER": "usr-sam", "MCP_TENANT": "larkfield"}},
            "testbed": builtin_server("testbed", json!({}))
        }),
        json!({"saveDir": save.to_str().unwrap(), "logFile": log.to_str().unwrap()}),
    );
    let ran = run(&["doctor", "--config", &config, "--json"], &[]);
    let checks = checks(&ran);
    let verdict = |name: &str| named(&checks, name)["verdict"].as_str().unwrap().to_owned();
    let fix = |name: &str| {
        named(&checks, name)["fix"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    assert_eq!(
        verdict("saved results (images, audio, files) (saveDir)"),
        "warning"
    );
    assert_eq!(
        fix("saved results (images, audio, files) (saveDir)"),
        format!("chmod 700 {}", save.display())
    );
    assert_eq!(verdict("the log of every record (logFile)"), "ok");
    assert_eq!(verdict("tickets store folder"), "ok");
    assert_eq!(verdict("tickets store"), "warning");
    assert_eq!(
        fix("tickets store"),
        format!("chmod 600 {}", store.display())
    );
    // The testbed lists a tool whose schema does not compile: it works, and says so.
    assert_eq!(verdict("testbed"), "warning");
    let testbed = named(&checks, "testbed")["detail"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        testbed.contains("left out: testbed's tool \"broken_schema\" is left out"),
        "{testbed}"
    );
    assert_eq!(ran.status, 0, "warnings only: {}", ran.stdout);
}
