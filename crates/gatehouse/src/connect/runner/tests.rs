use std::sync::{Arc, Mutex};

use super::*;

fn words(line: &str) -> Vec<String> {
    line.split(' ').map(str::to_owned).collect()
}

fn runner(line: &str) -> Option<(RunnerKind, Option<String>)> {
    let all = words(line);
    package_runner(&all[0], &all[1..]).map(|r| (r.kind, r.package))
}

#[test]
fn runners_are_told_by_the_commands_file_name_and_name_their_package() {
    let memory = Some("@modelcontextprotocol/server-memory".to_string());
    for (line, kind, package) in [
        (
            "npx -y @modelcontextprotocol/server-memory",
            RunnerKind::Npx,
            memory.clone(),
        ),
        (
            "/usr/local/bin/npx --yes @modelcontextprotocol/server-memory /tmp",
            RunnerKind::Npx,
            memory.clone(),
        ),
        (
            "npx.cmd -y @modelcontextprotocol/server-memory",
            RunnerKind::Npx,
            memory.clone(),
        ),
        (
            "npx -p @modelcontextprotocol/server-memory mcp-server-memory",
            RunnerKind::Npx,
            memory.clone(),
        ),
        (
            "npm exec --yes -- @modelcontextprotocol/server-memory",
            RunnerKind::Npx,
            memory.clone(),
        ),
        (
            "uvx mcp-server-time --local-timezone UTC",
            RunnerKind::Uvx,
            Some("mcp-server-time".into()),
        ),
        (
            "uvx --from mcp-server-git==1.0 mcp-server-git",
            RunnerKind::Uvx,
            Some("mcp-server-git==1.0".into()),
        ),
        (
            "uv tool run mcp-server-fetch",
            RunnerKind::Uvx,
            Some("mcp-server-fetch".into()),
        ),
        (
            "pnpm dlx @scope/server",
            RunnerKind::PnpmDlx,
            Some("@scope/server".into()),
        ),
        (
            "bunx @scope/server",
            RunnerKind::Bunx,
            Some("@scope/server".into()),
        ),
        (
            "bun x @scope/server",
            RunnerKind::Bunx,
            Some("@scope/server".into()),
        ),
        (
            "pipx run mcp-server-time",
            RunnerKind::PipxRun,
            Some("mcp-server-time".into()),
        ),
        ("npx -y", RunnerKind::Npx, None),
    ] {
        assert_eq!(runner(line), Some((kind, package)), "{line}");
    }
}

#[test]
fn other_commands_are_no_runners() {
    for line in [
        "node server.js",
        "npm start",
        "pnpm run serve",
        "bun server.ts",
        "pipx install mcp-server-time",
        "uv run server.py",
        "python3 -m mcp_server_time",
        "/opt/npx-tools/server",
    ] {
        assert_eq!(runner(line), None, "{line}");
    }
}

#[tokio::test]
async fn a_wait_is_noted_every_so_often_and_not_after_it_ends() {
    let every = Duration::from_millis(40);
    let notes = Arc::new(Mutex::new(Vec::new()));
    let kept = notes.clone();
    let out = noting_every(
        async {
            tokio::time::sleep(every * 3 + every / 2).await;
            7
        },
        every,
        move |so_far| kept.lock().unwrap().push(so_far),
    )
    .await;
    assert_eq!(out, 7);
    let notes = notes.lock().unwrap().clone();
    // At least one note (a loaded machine may skip some), each later than the last, the
    // first not before its time.
    assert!(!notes.is_empty() && notes.len() <= 3, "{notes:?}");
    assert!(notes[0] >= every, "{notes:?}");
    assert!(notes.windows(2).all(|w| w[0] < w[1]), "{notes:?}");
    // A start that answers before the first note says nothing.
    let quiet = Arc::new(Mutex::new(0));
    let counted = quiet.clone();
    noting_every(tokio::time::sleep(every / 4), every, move |_| {
        *counted.lock().unwrap() += 1
    })
    .await;
    assert_eq!(*quiet.lock().unwrap(), 0);
}

#[test]
fn the_note_says_the_runner_may_be_downloading_never_that_it_is() {
    let uvx = PackageRunner {
        kind: RunnerKind::Uvx,
        package: Some("mcp-server-time".into()),
    };
    let allowed = Duration::from_secs(180);
    assert_eq!(
        still_starting(&uvx, Duration::from_micros(3_000_412), allowed),
        "still starting after 3 s (uvx may be downloading mcp-server-time on a first start; allowed 180 s)"
    );
    let npx = PackageRunner {
        kind: RunnerKind::Npx,
        package: None,
    };
    assert_eq!(
        still_starting(&npx, Duration::from_millis(499), allowed),
        "still starting after 0.5 s (npx may be downloading its package on a first start; allowed 180 s)"
    );
}

#[test]
fn the_notes_period_is_the_default_or_a_valid_setting() {
    assert_eq!(note_every(None), Ok(STILL_STARTING_NOTE_EVERY));
    assert_eq!(note_every(Some("250")), Ok(Duration::from_millis(250)));
    assert_eq!(
        note_every(Some(" 100 ")),
        Ok(Duration::from_millis(MIN_NOTE_EVERY_MS))
    );
    for bad in ["99", "60001", "0", "-5", "1.5", "fast", ""] {
        let why = note_every(Some(bad)).unwrap_err();
        assert!(
            why.starts_with(&format!(
                "{NOTE_EVERY_ENV}=\"{bad}\" is not a number of milliseconds from 100 to 60000"
            )),
            "{why}"
        );
        assert!(why.ends_with("come every 3 s"), "{why}");
    }
}
