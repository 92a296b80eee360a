//! Servers people install with `uvx`, through the real binary and the real uv 0.13.8
//! (`scripts/install-test-peers.sh uv`): a first start that downloads mcp-server-time from
//! PyPI, into a uv cache and a HOME of the test's own, is waited for and says it is still
//! starting (however fast the download); a start stopped in the middle of its download leaves nothing running and a
//! cache the next start uses as it is (uv writes through temporary folders it renames:
//! SIGTERM or SIGKILL at any point of a first download never left it broken); an
//! environment in the cache with a file cut short is named by `doctor` and `mcp get` with
//! the `uv cache clean --cache-dir` that fixes it, which the test runs; a server gets the
//! certificates the machine trusts, without which uv cannot download behind a proxy that
//! re-signs TLS.
//!
//! The uvx tests need PyPI: when it cannot be reached they fail, saying so.

use std::{
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::Stdio,
};

use serde_json::{Value, json};

use crate::{
    common::*,
    interop_peers::require,
    package_runners::{
        NOTE_EVERY_ENV, NOTE_EVERY_MS, doctor_says, listed, listed_with, processes_with,
        still_starting_notes,
    },
};

/// The uvx server of these tests (a few dependencies, on PyPI).
pub(crate) const PACKAGE: &str = "mcp-server-time@2026.10.19";

/// The `uvx` of the `uv` peer.
pub(crate) fn uvx() -> String {
    require("uv/bin/uvx", "uv")
}

/// A servers file with the time server through `uvx`, its uv cache `cache` and a HOME of
/// its own (uvx keeps a lock under `~/.local/share/uv`).
fn uvx_config(dir: &Path, cache: &Path, settings: Value) -> String {
    through(&uvx(), dir, cache, settings)
}

/// As [`uvx_config`], through the `uvx` at `command`.
fn through(command: &str, dir: &Path, cache: &Path, settings: Value) -> String {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let entry = json!({"command": command, "args": [PACKAGE],
        "env": {"UV_CACHE_DIR": cache, "HOME": home}});
    servers_file(dir, json!({"time": entry}), settings)
}

fn assert_reached_pypi(row: &Value, ran: &Ran) {
    let error = row["error"].as_str().unwrap_or("");
    assert!(
        !error.contains("Failed to fetch"),
        "PyPI cannot be reached from here, and this test needs it: {error}\n{}",
        ran.stderr
    );
}

#[test]
fn a_first_uvx_start_is_waited_for_and_says_it_is_still_starting() {
    let dir = scratch_dir();
    let cache = dir.join("uv-cache");
    // connectTimeoutMs is far shorter than a download: only the first-start allowance
    // lets the first start through.
    let config = uvx_config(&dir, &cache, json!({"connectTimeoutMs": 500}));
    let (row, ran) = listed_with(&config, &[(NOTE_EVERY_ENV, NOTE_EVERY_MS)]);
    assert_reached_pypi(&row, &ran);
    assert_eq!(row["state"], "connected", "{row:#}\n{}", ran.stderr);
    assert!(
        row["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("time__get_current_time")),
        "{row:#}"
    );
    let notes = still_starting_notes(&ran.stderr, "time", "uvx", PACKAGE);
    assert!(!notes.is_empty(), "{}", ran.stderr);
    // The next start finds the environment in the cache.
    let (again, ran) = listed(&config);
    assert_eq!(again["state"], "connected", "{again:#}\n{}", ran.stderr);
}

#[test]
fn a_uvx_start_stopped_mid_download_leaves_nothing_running_and_a_cache_that_works() {
    let dir = scratch_dir();
    let cache = dir.join("uv-cache");
    let short = uvx_config(
        &dir,
        &cache,
        json!({"firstStartTimeoutMs": 1000, "connectTimeoutMs": 500}),
    );
    // A host that goes on after the start it stopped (chat, waiting for the person): the
    // stop closed the server's group then, not when the host exits.
    let mut chat = gatehouse_command(&["chat", "--config", &short], &[])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(chat.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let said = rx
        .iter()
        .find(|l| l.contains("server unavailable"))
        .expect("chat said the server is unavailable");
    assert!(
        !said.contains("Failed to fetch"),
        "PyPI cannot be reached from here, and this test needs it: {said}"
    );
    assert!(
        said.contains(
            "no answer within 1.0 s of starting through uvx, which may still have been downloading the package"
        ),
        "{said}"
    );
    let running = processes_with("UV_CACHE_DIR", &cache);
    assert!(chat.try_wait().unwrap().is_none(), "chat ended early");
    assert_eq!(running, Vec::<String>::new(), "uv was left running");
    chat.stdin.take().unwrap().write_all(b"/quit\n").unwrap();
    assert!(chat.wait().unwrap().success());
    // The next start, with the usual allowance, uses the cache as the stop left it.
    let usual = uvx_config(&dir, &cache, json!({}));
    let (row, ran) = listed(&usual);
    assert_eq!(row["state"], "connected", "{row:#}\n{}", ran.stderr);
}

/// The environment uvx keeps for the time server in `cache` (`environments-vN/HASH/HASH`
/// links to it in `archive-vN`).
fn environment(cache: &Path) -> PathBuf {
    let by_hash = std::fs::read_dir(cache)
        .unwrap()
        .flatten()
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("environments-v")
        })
        .unwrap_or_else(|| panic!("no environments in {}", cache.display()))
        .path();
    let links = std::fs::read_dir(by_hash)
        .unwrap()
        .flatten()
        .flat_map(|hash| {
            std::fs::read_dir(hash.path())
                .into_iter()
                .flatten()
                .flatten()
        });
    links
        .map(|e| e.path())
        .find(|p| p.is_symlink())
        .and_then(|link| link.canonicalize().ok())
        .unwrap_or_else(|| panic!("no environment in {}", cache.display()))
}

#[test]
fn a_damaged_uv_environment_is_named_by_doctor_and_mcp_get_with_the_fix_that_works() {
    let dir = scratch_dir();
    let cache = dir.join("uv-cache");
    let config = uvx_config(&dir, &cache, json!({}));
    let (row, ran) = listed(&config);
    assert_reached_pypi(&row, &ran);
    assert_eq!(row["state"], "connected", "{row:#}\n{}", ran.stderr);
    // A file of the environment cut short, as a full disk leaves it. uv links one copy of
    // each file into every environment, so removing the environment would not be enough.
    let lib = environment(&cache).join("lib");
    let python = std::fs::read_dir(&lib)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let package = python.join("site-packages/mcp_server_time");
    std::fs::write(package.join("__init__.py"), "").unwrap();
    let (fix, detail) = doctor_says(&config, "time", &[]);
    assert!(detail.contains("ImportError: "), "{detail}");
    let uv = Path::new(&uvx()).with_file_name("uv");
    let clean = format!(
        "{} cache clean --cache-dir {}",
        uv.display(),
        cache.display()
    );
    assert_eq!(
        fix,
        format!(
            "uv's cache holds a damaged copy of this server's environment (Python could not import from it): clear that cache with `{clean}` and start it again; the next start downloads it whole"
        )
    );
    let ran = run(&["mcp", "get", "time", "--config", &config], &[]);
    assert!(
        ran.stdout.contains(&format!("fix: {fix}")),
        "{}",
        ran.stdout
    );
    // The fix, run as written, is the whole of it.
    let cleaned = std::process::Command::new("sh")
        .args(["-c", &clean])
        .output()
        .unwrap();
    assert!(cleaned.status.success(), "{cleaned:?}");
    let (row, ran) = listed(&config);
    assert_eq!(row["state"], "connected", "{row:#}\n{}", ran.stderr);
}

#[test]
fn a_server_gets_the_certificates_the_machine_trusts() {
    let dir = scratch_dir();
    let script = "import os, sys; sys.stderr.write(repr([os.environ.get(n) for n in ('SSL_CERT_FILE', 'SSL_CERT_DIR')])); sys.exit(1)";
    let entry = json!({"command": "python3", "args": ["-c", script]});
    let config = servers_file(&dir, json!({"certs": entry}), json!({}));
    let env = [
        ("SSL_CERT_FILE", "/etc/proxy/ca.pem"),
        ("SSL_CERT_DIR", "/etc/proxy/certs"),
    ];
    let (_, detail) = doctor_says(&config, "certs", &env);
    assert!(
        detail.contains("['/etc/proxy/ca.pem', '/etc/proxy/certs']"),
        "{detail}"
    );
}

/// Past rmcp's wait for an answer to `server/discover` (10 s), after which it sends
/// `initialize` on the same connection.
const PAST_THE_DISCOVER_WAIT_S: u32 = 11;

#[test]
fn a_uvx_server_slower_than_the_discover_wait_is_connected_on_2026_07_28() {
    let dir = scratch_dir();
    let cache = dir.join("uv-cache");
    let (row, ran) = listed(&uvx_config(&dir, &cache, json!({})));
    assert_reached_pypi(&row, &ran);
    assert_eq!(row["state"], "connected", "{row:#}\n{}", ran.stderr);
    // A first start slower than that wait, as a download on a loaded machine is: a `uvx`
    // that waits once before it runs the real one. The time server (2026-07-28) answers
    // the probe late and refuses the `initialize` sent meanwhile ("-32022 connection is
    // serving the 2026-07-28 protocol"): every uvx server of the newcomer's path failed so.
    let slow = dir.join("bin/uvx");
    std::fs::create_dir_all(slow.parent().unwrap()).unwrap();
    let once = dir.join("waited");
    std::fs::write(
        &slow,
        format!(
            "#!/bin/sh\nif [ ! -e '{}' ]; then : > '{}'; sleep {PAST_THE_DISCOVER_WAIT_S}; fi\nexec '{}' \"$@\"\n",
            once.display(),
            once.display(),
            uvx()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let config = through(slow.to_str().unwrap(), &dir, &cache, json!({}));
    let ran = run(&["tools", "--config", &config], &[]);
    assert!(once.exists(), "the slow start did not run");
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(
        ran.stderr.contains(
            "[host] time: answered server/discover only after the handshake had been tried instead: started again with server/discover alone"
        ),
        "{}",
        ran.stderr
    );
    let discovered = ran
        .stderr
        .lines()
        .find(|l| l.starts_with("[host] discovered 2 tools on time"))
        .unwrap_or_else(|| panic!("{}", ran.stderr));
    assert!(
        discovered.contains("\"protocol\": \"2026-07-28\""),
        "{discovered}"
    );
    assert!(
        ran.stdout.contains("time__get_current_time"),
        "{}",
        ran.stdout
    );
}
