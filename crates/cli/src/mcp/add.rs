//! `gatehouse mcp add`: the entry its flags describe, checked against its transport,
//! written to the servers file with the rest of it kept, and what its box lets it do.

use gatehouse::{
    edit::{Added, NewServer, ServersFile, parse_env, parse_header},
    text::{visible, visible_line},
};

use super::{file_to_change, note_if_shadowed, parsed};
use crate::args::{McpAddArgs, McpTransport};

/// The box a stdio server added without `--sandbox*` flags gets: the defaults (network
/// off), with the network on for a package runner, whose first start downloads the
/// package. The real servers people add run in it (docs/sandbox.md), so a new server is
/// boxed unless the person says `--no-sandbox`.
fn default_box(command: &str, args: &[String]) -> serde_json::Value {
    match gatehouse::connect::runner::package_runner(command, args) {
        Some(_) => serde_json::json!({"network": "on"}),
        None => serde_json::Value::Bool(true),
    }
}

/// The server `gatehouse mcp add` describes, its flags checked against its transport.
fn new_server(args: &McpAddArgs) -> anyhow::Result<NewServer> {
    Ok(match args.transport {
        McpTransport::Stdio => {
            anyhow::ensure!(
                args.headers.is_empty(),
                "--header is for http servers; a stdio server takes --env"
            );
            let (command, rest) = args.target.split_first().expect("clap requires one");
            NewServer::Stdio {
                command: command.clone(),
                args: rest.to_vec(),
                env: parsed(&args.env, parse_env)?,
                pass_env: args.pass_env.clone(),
                sandbox: args.sandbox(default_box(command, rest)),
            }
        }
        McpTransport::Http => {
            let flag = if args.env.is_empty() {
                "--pass-env"
            } else {
                "--env"
            };
            anyhow::ensure!(
                args.env.is_empty() && args.pass_env.is_empty(),
                "{flag} is for stdio servers; an http server's credentials go in --header"
            );
            anyhow::ensure!(
                args.asked_sandbox().is_none(),
                "--sandbox is for stdio servers: the host starts those, and an http server runs \
                 where it is"
            );
            let [url] = args.target.as_slice() else {
                anyhow::bail!(
                    "an http server takes one URL after its name, not {} words",
                    args.target.len()
                );
            };
            NewServer::Http {
                url: url.clone(),
                headers: parsed(&args.headers, parse_header)?,
            }
        }
    })
}

pub(super) fn add(args: McpAddArgs) -> anyhow::Result<()> {
    let server = new_server(&args)?;
    let (entry, warnings) = server.entry().map_err(anyhow::Error::msg)?;
    let entry_written = entry.clone();
    let target = file_to_change(&args.file)?;
    let mut file = ServersFile::open(&target.path)?;
    let added = file
        .add(&args.name, entry, args.replace)
        .map_err(anyhow::Error::msg)?;
    file.save()
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", target.path.display()))?;
    for warning in warnings {
        eprintln!("gatehouse: warning: {}", visible(&warning));
    }
    if let Some(note) = crate::project::runs_a_string_note(&entry_written) {
        eprintln!(
            "gatehouse: warning: {}: {note}; read it before you start it",
            visible_line(&args.name)
        );
    }
    let kind = match args.transport {
        McpTransport::Stdio => "stdio",
        McpTransport::Http => "http",
    };
    let verb = match added {
        Added::New => "Added",
        Added::Replaced => "Replaced",
    };
    println!(
        "{verb} {kind} server {} in {}",
        visible_line(&args.name),
        target.shown()
    );
    say_the_box(&entry_written, args.transport);
    crate::project::trust_added(&target.path, &args.name)?;
    note_if_shadowed(&target);
    Ok(())
}

/// What the entry's box lets its server do, in a sentence (none for an http server).
fn say_the_box(entry: &serde_json::Value, transport: McpTransport) {
    match entry.get("sandbox") {
        Some(sandbox) => println!(
            "It runs in a box ({}): it reads the system, its own installation and what its \
             arguments name, writes its own temporary folder and its runner's cache, and \
             nothing else; a wall it hits is told with what would open it (docs/sandbox.md, \
             --no-sandbox for none)",
            match sandbox.get("network").and_then(|n| n.as_str()) {
                Some("on") => "network on",
                _ => "network off",
            }
        ),
        None if transport == McpTransport::Stdio => {
            println!("It runs with your whole account: no box (--no-sandbox)")
        }
        None => {}
    }
}
