//! `gatehouse-servers NAME`: the reference MCP servers as a binary of their own, which the
//! host starts for its built-in servers. It links the servers and nothing of the host, so
//! each server process stays small (`gatehouse serve NAME` runs the same code).
//!
//! It keeps the system allocator: mimalloc (the `gatehouse` binary's) adds about half a
//! megabyte to a process that lives for one session, while the throughput it buys matters
//! for a long-running HTTP server, which `gatehouse serve NAME --http` is.

#![warn(clippy::too_many_lines)]

use std::process::ExitCode;

use clap::Parser;
use gatehouse_servers::command::{self, ServeArgs};

// The same closing of `/proc` as the host's: a server holds its callers' tokens and keys,
// and its sibling servers run as the same user.
#[path = "../harden/dumpable.rs"]
mod dumpable;

/// The reference MCP servers Gatehouse is shown and tested with.
#[derive(Parser, Debug)]
#[command(name = "gatehouse-servers", version)]
struct Cli {
    #[command(flatten)]
    serve: ServeArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    dumpable::forbid_or_warn("gatehouse-servers");
    match command::run(cli.serve) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gatehouse-servers: {e:#}");
            ExitCode::from(2)
        }
    }
}
