//! What a person sees at a real terminal (a pseudo-terminal, `tests/peers/pty_run.py`):
//! the questions on the screen the answers are typed at, whatever stderr is sent to.

use std::path::Path;

use crate::common::*;

/// Run `gatehouse ARGS` at a terminal, typing each answer once its prompt shows, with
/// stderr sent to the file `stderr_to` when given. Returns everything the terminal showed.
fn at_terminal(args: &[&str], answers: &[(&str, &str)], stderr_to: Option<&Path>) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(root.join("tests/peers/pty_run.py")).arg("30");
    cmd.args(
        answers
            .iter()
            .map(|(prompt, answer)| format!("{prompt}={answer}")),
    );
    cmd.arg("--");
    if let Some(file) = stderr_to {
        // The shell sends the host's stderr to the file; stdin and stdout stay the terminal.
        cmd.args(["sh", "-c", "exec \"$0\" \"$@\" 2>\"$STDERR_TO\""])
            .env("STDERR_TO", file);
    }
    cmd.arg(exe()).args(args);
    cmd.current_dir(scratch_dir())
        .env("GATEHOUSE_TICKETS_DB", scratch_dir().join("tickets.db"))
        .env("XDG_CONFIG_HOME", scratch_dir())
        .env_remove("GATEHOUSE_CONFIG")
        .env_remove("HOST_TOOL_TIMEOUT")
        .env_remove("GATEHOUSE_TICKETS_KEY");
    let out = cmd.output().expect("python3 runs the pseudo-terminal");
    let screen = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    assert_eq!(out.status.code(), Some(0), "{screen}");
    screen
}

#[test]
fn chat_with_stderr_in_a_log_asks_the_person_on_the_terminal() {
    let log = scratch_dir().join("host.log");
    let screen = at_terminal(
        &["chat"],
        &[
            (
                "you>",
                "who owns jump-prod-02? Open a ticket for it: disk full",
            ),
            ("Run it? [y/N]", "y"),
            ("Accept? [y/N]", "y"),
            ("priority", "P1"),
            ("you>", "/quit"),
        ],
        Some(&log),
    );
    // The call is shown before its question, since the steps that show it are in the log.
    let call = screen
        .find("[host] tickets__open_ticket on tickets wants to run with")
        .unwrap_or_else(|| panic!("the call is not on the screen:\n{screen}"));
    assert!(call < screen.find("Run it? [y/N]").unwrap(), "{screen}");
    for shown in [
        "[tickets asks] Open an incident ticket for jump-prod-02?",
        "priority (string) [P1/P2/P3]",
        "assistant> ",
        "INC-",
    ] {
        assert!(
            screen.contains(shown),
            "{shown} is not on the screen:\n{screen}"
        );
    }
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(log.contains("[person] said yes"), "{log}");
    for question in [
        "Run it?",
        "Accept?",
        "asks] Open an incident",
        "priority (string)",
    ] {
        assert!(
            !log.contains(question),
            "{question} went to the log:\n{log}"
        );
    }
}
