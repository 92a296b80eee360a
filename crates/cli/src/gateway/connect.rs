//! `gatehouse gateway connect|disconnect CLIENT`: the command line over
//! `gatehouse_gateway::clients`, and what it tells the person: the servers moved and
//! those left, where the backup is, how to undo.

use std::path::{Path, PathBuf};

use gatehouse::text::{shell_word, visible};
use gatehouse_gateway::clients::{
    self, Client, Connected, Connection, Disconnected, GATEWAY_ENTRY, Restore, ServersFile,
};

use crate::args::{GatewayClient, GatewayClientArgs};

fn client_of(name: GatewayClient) -> Client {
    match name {
        GatewayClient::ClaudeCode => Client::ClaudeCode,
        GatewayClient::Gemini => Client::Gemini,
        GatewayClient::Cursor => Client::Cursor,
        GatewayClient::Vscode => Client::VsCode,
    }
}

/// The words after `gatehouse gateway connect|disconnect` that name this file again.
fn words(client: Client, file: Option<&Path>) -> String {
    match file {
        None => client.name().into(),
        Some(f) => format!(
            "{} --file {}",
            client.name(),
            shell_word(&f.to_string_lossy())
        ),
    }
}

fn shown(path: &Path) -> String {
    visible(&path.display().to_string()).into_owned()
}

/// `gatehouse gateway connect CLIENT`: what it moved, and how to undo it.
pub fn connect(args: GatewayClientArgs) -> anyhow::Result<()> {
    let client = client_of(args.client);
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|e| anyhow::anyhow!("cannot tell where this gatehouse binary is: {e}"))?;
    let undo = format!(
        "gatehouse gateway disconnect {}",
        words(client, args.file.as_deref())
    );
    match clients::connect(client, args.file.clone(), &exe)? {
        Connected::Already { file, servers_file } => println!(
            "{} is connected already: {} starts the gateway in front of the servers in {}; nothing was written.\nTo undo: {undo}",
            client.title(),
            shown(&file),
            shown(&servers_file)
        ),
        Connected::Now(c) => print_connection(client, &c, &exe, &undo),
    }
    Ok(())
}

fn print_connection(client: Client, c: &Connection, exe: &Path, undo: &str) {
    let names: Vec<String> = c
        .moved
        .iter()
        .map(|m| visible(&m.name).into_owned())
        .collect();
    println!(
        "Connected {}: {} now starts Gatehouse's gateway ({}, its server \"{GATEWAY_ENTRY}\") in front of {} {}: {}.",
        client.title(),
        shown(&c.file),
        shown(exe),
        names.len(),
        if names.len() == 1 {
            "server"
        } else {
            "servers"
        },
        names.join(", ")
    );
    println!(
        "  Their entries are in {}: the gateway's rules and settings go there too.",
        shown(&c.servers_file)
    );
    for moved in &c.moved {
        for note in &moved.notes {
            println!("  {}: {}", visible(&moved.name), visible(note));
        }
    }
    for left in &c.left {
        println!(
            "  Left in {}: {} ({})",
            shown(&c.file),
            visible(&left.name),
            visible(&left.reason)
        );
    }
    for note in &c.notes {
        println!("  Note: {}", visible(note));
    }
    println!(
        "The file as it was is kept in {}.\nTo undo: {undo}\n{}",
        shown(&c.backup),
        next_step(client)
    );
}

/// How the person sees the gateway in the client.
fn next_step(client: Client) -> &'static str {
    match client {
        Client::ClaudeCode => {
            "Start Claude Code again to use it; `claude mcp list` shows the gateway connected."
        }
        Client::Gemini => {
            "Start Gemini CLI again to use it; `gemini mcp list` shows the gateway connected."
        }
        Client::Cursor => "Restart Cursor (or reload its MCP servers in its settings) to use it.",
        Client::VsCode => "Restart VS Code's MCP servers (MCP: List Servers) to use it.",
    }
}

/// `gatehouse gateway disconnect CLIENT`: the client's file given its servers back.
pub fn disconnect(args: GatewayClientArgs) -> anyhow::Result<()> {
    let client = client_of(args.client);
    match clients::disconnect(client, args.file.clone())? {
        Disconnected::NothingToRestore { file } => println!(
            "Nothing to restore: {} was not connected (gatehouse gateway connect {} connects it).",
            shown(&file),
            words(client, args.file.as_deref())
        ),
        Disconnected::Restored {
            file,
            how,
            servers_file,
        } => print_restored(client, &file, &how, &servers_file),
    }
    Ok(())
}

fn print_restored(client: Client, file: &Path, how: &Restore, servers_file: &ServersFile) {
    let file = shown(file);
    let title = client.title();
    match how {
        Restore::Exact => println!(
            "Disconnected {title}: {file} is back as it was before connect, byte for byte."
        ),
        Restore::AsItWas => println!(
            "Disconnected {title}: {file} already had its own servers back, as before connect; nothing was written."
        ),
        Restore::Merged { added } => {
            println!(
                "Disconnected {title}: {file} has its own servers back. It was changed since connect, and those changes are kept."
            );
            if !added.is_empty() {
                let added: Vec<String> = added.iter().map(|n| visible(n).into_owned()).collect();
                println!("  Servers added since, kept: {}.", added.join(", "));
            }
        }
    }
    let (path, what): (&PathBuf, &str) = match servers_file {
        ServersFile::Removed(p) => (p, "removed (as connect wrote it)"),
        ServersFile::KeptChanged(p) => (
            p,
            "kept: it was changed since connect; remove it when you no longer need its rules",
        ),
        ServersFile::KeptYours(p) => (p, "kept: it was yours before connect"),
    };
    println!("  {}: {what}.", shown(path));
}
