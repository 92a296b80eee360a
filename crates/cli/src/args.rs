//! Every flag of the `gatehouse` command, defined once; `--help` is generated from here.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "gatehouse",
    version,
    about = "An MCP host: it starts MCP servers, offers their tools to a model, and decides which proposals run.",
    long_about = None
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Ask one question and print the run: every step, then the answer.
    Ask(AskArgs),
    /// Run one of the built-in reference servers on stdio.
    Serve(ServeArgs),
}

/// Where the servers come from and who is asking.
#[derive(Args, Debug, Clone)]
pub struct HostArgs {
    /// Servers file in the `mcpServers` shape of .mcp.json / Claude Desktop. Without it,
    /// the built-in reference servers are started from this binary.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The user the servers are told about (GATEHOUSE_USER in a servers file).
    #[arg(long, default_value = "usr-sam")]
    pub user: String,
    /// The organization the user acts in (GATEHOUSE_TENANT in a servers file).
    #[arg(long, default_value = "larkfield")]
    pub tenant: String,
    /// The model: `scripted` (built in, deterministic) or `playback:FILE`.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Most model calls in one question.
    #[arg(long, value_name = "N")]
    pub max_steps: Option<usize>,
}

/// How the person answers when the host must ask.
#[derive(Args, Debug, Clone)]
pub struct AnswerArgs {
    /// Answer yes to every "Run it?" (use with test data only).
    #[arg(long, conflicts_with = "no")]
    pub yes: bool,
    /// Answer no to every "Run it?".
    #[arg(long)]
    pub no: bool,
}

#[derive(Args, Debug)]
pub struct AskArgs {
    /// The question.
    pub question: String,
    #[command(flatten)]
    pub host: HostArgs,
    #[command(flatten)]
    pub answers: AnswerArgs,
    /// Print the run as one JSON object on stdout, and nothing else there.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Which server: support, or testbed (for tests).
    pub name: String,
}
