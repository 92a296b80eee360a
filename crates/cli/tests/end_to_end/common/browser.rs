//! Headless Chromium, as the browser tests drive it: Debian's `chromium` (or `$CHROMIUM`)
//! through playwright-core in `tests/browser/node_modules`, run by `node`. A missing
//! piece fails the test loudly with the fix; it never skips.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use super::{Ran, process::Spawn};

/// The longest a browser script may take.
pub const SCRIPT_LIMIT: Duration = Duration::from_secs(240);

/// The Chromium the scripts drive.
pub fn chromium() -> PathBuf {
    std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
}

/// Fail loudly, with the fix, when a peer the browser tests drive is missing.
pub fn require_peers(root: &Path) {
    let fix = "run scripts/install-test-peers.sh (it installs Debian's chromium and runs npm ci in tests/browser)";
    let node = Command::new("node").arg("--version").output();
    assert!(
        node.is_ok_and(|o| o.status.success()),
        "node is missing: {fix}"
    );
    assert!(
        chromium().exists(),
        "Chromium is missing at {}: {fix}",
        chromium().display()
    );
    assert!(
        root.join("tests/browser/node_modules/playwright-core/package.json")
            .exists(),
        "playwright-core is missing in tests/browser/node_modules: {fix}"
    );
}

/// Where a test's screenshots go: `target/NAME`.
pub fn screenshots(root: &Path, name: &str) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join(name)
}

/// Run `node tests/browser/SCRIPT ARGS…` from the repository's root, with the Chromium
/// to drive, within [`SCRIPT_LIMIT`]; its output is printed.
pub fn run_script(root: &Path, script: &str, args: &[&str]) -> Ran {
    require_peers(root);
    let mut cmd = Command::new("node");
    cmd.arg(root.join("tests/browser").join(script))
        .args(args)
        .current_dir(root)
        .env("CHROMIUM", chromium());
    let ran = Spawn::new(cmd, format!("the browser script {script}"))
        .run()
        .wait(SCRIPT_LIMIT);
    println!("{}", ran.stdout);
    eprintln!("{}", ran.stderr);
    ran
}
