//! Hooks that answer, and hooks that hang, crash, print garbage or too much: every failure
//! is an error (the caller fails closed), and no hook sees the host's secrets.

use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::config::EnvPass;

fn sh(script: &str, timeout_ms: u64) -> HookSpec {
    HookSpec {
        name: "beforeCall",
        command: "sh".into(),
        args: vec!["-c".into(), script.into()],
        env: Default::default(),
        pass: EnvPass::default(),
        cwd: None,
        timeout: Duration::from_millis(timeout_ms),
        tools: None,
    }
}

fn input() -> Value {
    json!({"tool": "files__write", "arguments": {"path": "/tmp/x"}})
}

#[tokio::test]
async fn an_answer_is_read_and_rewritten_arguments_come_back() {
    let hook = sh(
        r#"cat >/dev/null; echo '{"decision": "ask", "reason": "check it", "arguments": {"path": "/tmp/y"}}'"#,
        5_000,
    );
    let answer = before_call(&hook, &input()).await.unwrap();
    assert_eq!(answer.decision, Decision::Ask);
    assert_eq!(answer.reason.as_deref(), Some("check it"));
    assert_eq!(answer.arguments.unwrap()["path"], "/tmp/y");
}

#[tokio::test]
async fn the_hook_reads_the_proposed_call_on_stdin() {
    let hook = sh(
        r#"grep -q '"files__write"' && echo '{"decision": "allow"}' || echo '{"decision": "deny"}'"#,
        5_000,
    );
    assert_eq!(
        before_call(&hook, &input()).await.unwrap().decision,
        Decision::Allow
    );
}

#[tokio::test]
async fn a_hook_that_hangs_is_killed_with_what_it_started() {
    let marker = std::env::temp_dir().join(format!("gatehouse-hook-hang-{}", std::process::id()));
    let script = format!("sleep 30 & sleep 30; touch {}", marker.display());
    let started = Instant::now();
    let err = before_call(&sh(&script, 300), &input()).await.unwrap_err();
    assert!(err.contains("no answer within"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!marker.exists());
}

#[tokio::test]
async fn crashes_garbage_and_floods_are_errors() {
    let cases = [
        ("echo 'oops' >&2; exit 3", "failed"),
        ("echo 'not json at all'", "not JSON"),
        ("true", "printed nothing"),
        (r#"echo '{"decision": "maybe"}'"#, "decision"),
        (r#"echo '{"decision": "allow", "extra": 1}'"#, "unknown key"),
        (
            r#"echo '{"decision": "allow", "arguments": [1]}'"#,
            "not an object",
        ),
        (r#"echo '[1, 2]'"#, "not an answer"),
        ("head -c 5000000 /dev/zero", "more than"),
    ];
    for (script, says) in cases {
        let err = before_call(&sh(script, 5_000), &input()).await.unwrap_err();
        assert!(err.contains(says), "{script}: {err}");
    }
    let missing = HookSpec {
        command: "/nonexistent/hook".into(),
        ..sh("", 1_000)
    };
    let err = before_call(&missing, &input()).await.unwrap_err();
    assert!(err.contains("could not start"), "{err}");
}

#[tokio::test]
async fn after_call_keeps_replaces_or_fails() {
    let keep = sh("cat >/dev/null; echo '{}'", 5_000);
    assert_eq!(after_call(&keep, &input()).await.unwrap(), None);
    let replace = sh(
        r#"cat >/dev/null; echo '{"result": {"content": [{"type": "text", "text": "[redacted]"}]}}'"#,
        5_000,
    );
    let result = after_call(&replace, &input()).await.unwrap().unwrap();
    assert_eq!(result.content.len(), 1);
    let bad = sh(r#"echo '{"result": {"content": 3}}'"#, 5_000);
    let err = after_call(&bad, &input()).await.unwrap_err();
    assert!(err.contains("not a tool result"), "{err}");
}

#[tokio::test]
async fn a_hook_never_sees_the_hosts_secrets() {
    // SAFETY: set before the hook starts; no other test reads this variable.
    unsafe { std::env::set_var("GATEHOUSE_TEST_HOOK_TOKEN", "sk-secret-hook-1234") };
    let hook = sh(
        r#"if [ -n "$GATEHOUSE_TEST_HOOK_TOKEN" ]; then echo '{"decision": "allow"}'; else echo '{"decision": "deny", "reason": "clean"}'; fi"#,
        5_000,
    );
    let answer = before_call(&hook, &input()).await.unwrap();
    assert_eq!(answer.reason.as_deref(), Some("clean"));
    let passed = HookSpec {
        pass: EnvPass {
            names: vec!["GATEHOUSE_TEST_HOOK_*".into()],
            all: false,
        },
        ..hook
    };
    assert_eq!(
        before_call(&passed, &input()).await.unwrap().decision,
        Decision::Allow
    );
}
