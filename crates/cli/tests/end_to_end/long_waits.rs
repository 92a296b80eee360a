//! Long waits show that something happens, through the real binary: `mcp list`, `doctor`
//! and `tools` show each server as soon as it is ready, while a slower one still starts.
//! The slow server is held back by the test itself (a shell that opens a fifo before it
//! starts the testbed; the test opens the other end when it has seen the fast server's
//! line), so nothing here depends on timing.

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::mpsc,
};

use serde_json::json;

use crate::common::{
    self,
    process::{LIMIT, Spawn, Stream},
};

/// A servers file with `fast` (the testbed) and `slow` (the testbed, once the fifo it
/// returns is opened for writing), with a connect time limit far past the test's.
fn held_back(dir: &Path) -> (String, PathBuf) {
    let fifo = dir.join("release");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo {}", fifo.display());
    let exe = common::exe().to_string_lossy().into_owned();
    let held = json!({"command": "/bin/sh",
        "args": ["-c", ": < \"$1\" && exec \"$0\" serve testbed", exe, fifo]});
    let config = common::servers_file(
        dir,
        json!({"fast": {"command": exe, "args": ["serve", "testbed"]}, "slow": held}),
        json!({"connectTimeoutMs": 120000}),
    );
    (config, fifo)
}

/// Let the held server start: open its fifo for writing (which waits until the shell
/// opened it for reading), and close it.
fn release(fifo: &Path) {
    let (tx, rx) = mpsc::channel();
    let fifo = fifo.to_owned();
    std::thread::spawn(move || {
        let opened = std::fs::OpenOptions::new().write(true).open(&fifo);
        let _ = tx.send(opened.map(drop).map_err(|e| e.to_string()));
    });
    match rx.recv_timeout(LIMIT) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("cannot open the fifo: {e}"),
        Err(_) => panic!("the held server never opened its fifo within {LIMIT:?}"),
    }
}

/// `gatehouse ARGS` in a fresh world, its `stream` read line by line as it prints.
fn watched(args: &[&str], stream: Stream) -> common::process::Process {
    let cmd = common::gatehouse_command(args, &[]);
    Spawn::new(cmd, format!("gatehouse {}", args.join(" "))).watched(stream)
}

#[test]
fn mcp_list_prints_each_server_as_soon_as_it_is_ready() {
    let dir = common::scratch_dir();
    let (config, fifo) = held_back(&dir);
    let list = watched(&["mcp", "list", "--config", &config], Stream::Stdout);
    let seen = list.wait_for_line("  fast: ", LIMIT);
    assert!(seen[0].starts_with("Servers in "), "{seen:?}");
    assert!(
        seen.iter()
            .any(|l| l.starts_with("  fast: ") && l.contains("connected")),
        "{seen:?}"
    );
    // The slow server cannot have answered: it has not even started.
    assert!(!seen.iter().any(|l| l.contains("slow")), "{seen:?}");
    release(&fifo);
    let ran = list.wait(LIMIT);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let slow = ran.stdout.lines().position(|l| l.starts_with("  slow: "));
    let fast = ran.stdout.lines().position(|l| l.starts_with("  fast: "));
    assert!(fast < slow, "{}", ran.stdout);
    assert_eq!(
        ran.stdout.matches(" - connected: ").count(),
        2,
        "{}",
        ran.stdout
    );
}

#[test]
fn mcp_list_json_is_one_document_in_the_files_order() {
    let dir = common::scratch_dir();
    let (config, fifo) = held_back(&dir);
    let list = watched(
        &["mcp", "list", "--config", &config, "--json"],
        Stream::Stdout,
    );
    release(&fifo);
    let ran = list.wait(LIMIT);
    let rows: serde_json::Value = serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", ran.stdout, ran.stderr));
    let names: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["fast", "slow"]);
    assert!(
        rows.as_array()
            .unwrap()
            .iter()
            .all(|r| r["state"] == "connected"),
        "{rows:#}"
    );
}

#[test]
fn doctor_prints_each_server_as_soon_as_it_is_ready() {
    let dir = common::scratch_dir();
    let (config, fifo) = held_back(&dir);
    let doctor = watched(&["doctor", "--config", &config], Stream::Stdout);
    // The testbed lists a tool whose schema does not compile: a warning, not broken.
    let seen = doctor.wait_for_line(" fast: started ", LIMIT);
    assert!(
        seen.iter()
            .any(|l| l.starts_with("  warning  fast: started ")),
        "{seen:?}"
    );
    assert!(!seen.iter().any(|l| l.contains(" slow: ")), "{seen:?}");
    release(&fifo);
    let ran = doctor.wait(LIMIT);
    assert!(
        ran.stdout.contains("  warning  slow: started /bin/sh"),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("\n0 broken, "), "{}", ran.stdout);
}

#[test]
fn tools_says_each_server_is_ready_while_another_still_starts() {
    let dir = common::scratch_dir();
    let (config, fifo) = held_back(&dir);
    let tools = watched(&["tools", "--config", &config], Stream::Stderr);
    let seen = tools.wait_for_line(" tools on fast: ", LIMIT);
    assert!(
        !seen.iter().any(|l| l.contains(" tools on slow: ")),
        "{seen:?}"
    );
    release(&fifo);
    let ran = tools.wait(LIMIT);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(ran.stderr.contains(" tools on slow: "), "{}", ran.stderr);
    // The table is whole, in the servers' order.
    let fast = ran.stdout.find("fast__echo");
    let slow = ran.stdout.find("slow__echo");
    assert!(fast.is_some() && fast < slow, "{}", ran.stdout);
}
