//! Where the secrets go when no keychain runs: with no session bus at all, and with a
//! session bus (`dbus-run-session`, starting nothing by activation) that has no Secret
//! Service on it. `"credentialStore":
//! "keychain"` refuses before the sign-in begins, naming the keychain, and stores
//! nothing; `"auto"` keeps them in the 0600 file. And a real keychain that is locked:
//! Debian's gnome-keyring on a session bus of the test's own, its collection locked
//! (tests/oauth/locked-keychain.sh).

use super::{
    World, assert_login_fails_keeping_nothing, assert_no_sign_in_begun, events, mode, repo_root,
};
use crate::interop_peers::require_program;

/// The session bus of these tests: `dbus-run-session` with tests/oauth/session-bus.conf,
/// which starts nothing by activation; with `then` run on it before the binary.
fn session_bus(then: Option<&str>) -> Vec<String> {
    let program = require_program("dbus-run-session", "oauth", "dbus-daemon");
    let config = repo_root().join("tests/oauth/session-bus.conf");
    let mut wrapper = vec![
        program,
        format!("--config-file={}", config.display()),
        "--".to_owned(),
    ];
    wrapper.extend(then.map(str::to_owned));
    wrapper
}

/// How the binary is started without a keychain: as it is (no session bus), and on a
/// session bus with no Secret Service on it.
fn without_a_keychain() -> [Vec<String>; 2] {
    [Vec::new(), session_bus(None)]
}

/// The binary started on a session bus with gnome-keyring on it, its collection locked
/// (tests/oauth/locked-keychain.sh).
fn locked_keychain() -> Vec<String> {
    require_program("gnome-keyring-daemon", "oauth", "gnome-keyring");
    let script = repo_root().join("tests/oauth/locked-keychain.sh");
    session_bus(Some(&script.to_string_lossy()))
}

/// A wrapper as [`World::run_under`] takes it.
fn words(wrapper: &[String]) -> Vec<&str> {
    wrapper.iter().map(String::as_str).collect()
}

/// `credentialStore: "keychain"` with no keychain: the sign-in is refused before the
/// browser opens or a client is registered, the error names the server and the keychain, nothing
/// is stored, and the CMDB works.
#[test]
fn with_no_keychain_running_a_sign_in_is_refused_and_nothing_is_stored() {
    let w = World::keeping_in(&[], "keychain");
    for wrapper in without_a_keychain() {
        let wrapper = &words(&wrapper)[..];
        assert_login_fails_keeping_nothing(&w, wrapper, "no keychain is running");
        assert_no_sign_in_begun(&w);
    }
}

/// `credentialStore: "auto"` with no keychain: the secrets go to the 0600 file, and the
/// sign-in is used by the next run.
#[test]
fn auto_keeps_the_secrets_in_the_private_file_when_no_keychain_runs() {
    let w = World::keeping_in(&[], "auto");
    for wrapper in without_a_keychain() {
        let wrapper = &words(&wrapper)[..];
        let login = w.run_under(wrapper, &["auth", "login", "support", "--open"], &[]);
        assert_eq!(login.status, 0, "{wrapper:?}: {}", login.stderr);
        assert_eq!(mode(&w.credentials()), 0o600);
        assert!(!w.kept_tokens().is_empty(), "the tokens are in the file");
        let status = w
            .run_under(wrapper, &["auth", "status", "--json"], &[])
            .json();
        let kept_in = status[0]["kept_in"].as_str().unwrap_or_default();
        assert!(kept_in.starts_with("the file "), "{status}");
        let tools = w.run_under(wrapper, &["tools"], &[]);
        assert!(
            tools.stdout.contains("support__get_ticket"),
            "{}",
            tools.stderr
        );
    }
    assert_eq!(events(&w.issuer, "register").len(), 1);
}

/// `credentialStore: "keychain"` with a real Secret Service (gnome-keyring) whose
/// collection is locked, and no one to unlock it (no prompter on a headless machine):
/// the sign-in is refused before the browser opens or a client is registered, naming
/// the keychain and the lock; nothing is stored, and the CMDB works.
#[test]
fn with_the_keychain_locked_a_sign_in_is_refused_and_nothing_is_stored() {
    let w = World::keeping_in(&[], "keychain");
    let wrapper = locked_keychain();
    let locked = words(&wrapper);
    let cause = "the keychain refused access (is it locked?)";
    assert_login_fails_keeping_nothing(&w, &locked, cause);
    assert_no_sign_in_begun(&w);
}
