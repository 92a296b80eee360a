//! Shell completions and the manual page, generated from the one definition of the flags:
//! each shell's script names every command, and the manual holds every flag `--help` shows.

use crate::common::*;

/// The commands of `gatehouse`, and of `gatehouse mcp`.
const COMMANDS: &[&str] = &[
    "ask",
    "chat",
    "tools",
    "serve",
    "lab",
    "mcp",
    "doctor",
    "completions",
    "man",
];
const MCP_COMMANDS: &[&str] = &["add", "remove", "list", "get"];

#[test]
fn every_shell_gets_a_script_that_names_the_commands_and_their_flags() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let ran = run(&["completions", shell], &[]);
        assert_eq!(ran.status, 0, "{shell}: {}", ran.stderr);
        let script = &ran.stdout;
        assert!(script.len() > 1000, "{shell}: {script}");
        for word in COMMANDS.iter().chain(MCP_COMMANDS) {
            assert!(script.contains(word), "{shell} does not name {word}");
        }
        for flag in ["verbose", "quiet", "scope", "replace", "transport"] {
            assert!(script.contains(flag), "{shell} does not name --{flag}");
        }
    }
    // The bash script is valid bash.
    let bash = run(&["completions", "bash"], &[]).stdout;
    let checked = std::process::Command::new("bash")
        .args(["-n", "-c", &bash])
        .status()
        .expect("bash runs");
    assert!(checked.success());
    assert_eq!(run(&["completions", "tcsh"], &[]).status, 2);
}

/// The long flags a command's `--help` lists.
fn flags_in_help(command: &[&str]) -> Vec<String> {
    let mut args = command.to_vec();
    args.push("--help");
    let help = run(&args, &[]).stdout;
    help.split_whitespace()
        .filter_map(|w| w.strip_prefix("--"))
        .map(|w| w.trim_end_matches([',', '.', '>', ')', '`']))
        .map(|w| w.split(['=', '<', '[']).next().unwrap_or("").to_owned())
        .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
        .collect()
}

#[test]
fn the_manual_page_is_made_from_the_same_flags() {
    let ran = run(&["man"], &[]);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let page = &ran.stdout;
    assert!(page.contains(".TH gatehouse 1"), "{page}");
    let sections = ["ASK", "MCP ADD", "DOCTOR", "COMPLETIONS"].map(|s| format!("GATEHOUSE {s}"));
    for section in sections {
        assert!(page.contains(&format!(".SH \"{section}\"")), "no {section}");
    }
    let mut commands: Vec<Vec<&str>> = COMMANDS.iter().map(|c| vec![*c]).collect();
    commands.extend(MCP_COMMANDS.iter().map(|c| vec!["mcp", *c]));
    for command in commands {
        let flags = flags_in_help(&command);
        assert!(!flags.is_empty() || command == ["man"], "{command:?}");
        for flag in flags {
            let roff = format!("\\-\\-{}", flag.replace('-', "\\-"));
            assert!(
                page.contains(&roff),
                "the manual lacks --{flag} of {command:?}"
            );
        }
    }
}
