//! A servers file that leads back to itself: a gateway listed as a server of its own file,
//! directly or through another, is refused at once instead of starting itself without end.

use serde_json::json;

use crate::common::*;

/// A servers entry that starts `gatehouse gateway` on the servers file `file`.
fn gateway_of(file: &str) -> serde_json::Value {
    json!({"command": exe().to_string_lossy(), "args": ["gateway", "--config", file]})
}

#[test]
fn a_gateway_listed_in_its_own_file_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("servers.json");
    let file = path.to_str().unwrap();
    write(
        dir.path(),
        "servers.json",
        &json!({"mcpServers": {"self": gateway_of(file),
                               "desk": builtin_server("support", json!({}))}}),
    );
    let ran = run_bounded(&["tools", "--config", file, "--json"], &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains("this servers file leads back to itself"),
        "{}",
        ran.stderr
    );
    // The rest of the file works.
    assert!(ran.stdout.contains("desk__get_ticket"), "{}", ran.stdout);
}

#[test]
fn two_files_that_start_each_other_stop_at_the_second_turn() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    write(
        dir.path(),
        "a.json",
        &json!({"mcpServers": {"b": gateway_of(b)}}),
    );
    write(
        dir.path(),
        "b.json",
        &json!({"mcpServers": {"a": gateway_of(a)}}),
    );
    let ran = run_bounded(&["tools", "--config", a], &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stderr.contains(&format!(
            "{a} is already in use by a host that started this one (the chain: {a} → {b})"
        )),
        "{}",
        ran.stderr
    );
}
