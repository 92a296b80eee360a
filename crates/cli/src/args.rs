//! Every flag of the `gatehouse` command, defined once; `--help` is generated from here.
//! Longer than 600 lines because every command's flags live in this one file, as
//! ripgrep's do: help, completions and the man page (`manual.rs`) come from it alone.

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
    /// A conversation: questions from the terminal, the history kept across turns.
    Chat(RunArgs),
    /// Print the tools the model would be offered, as the host names them. Needs no model.
    Tools(ToolsArgs),
    /// Call one tool yourself, with no model, and print its result.
    ///
    /// The call passes the same gate as a model's proposal (rules, hooks, "Run it?", the
    /// ledger, the time limit, the result's bound); the result goes to stdout, the steps to
    /// stderr. Exits 0 when the tool answered; 1 when it reported an error, failed, timed
    /// out, or was refused or declined; 2 for a mistake in the command (ARGS-JSON not a
    /// JSON object, a tool no server offers, a servers file that cannot be used); 3 when
    /// the server runs it as a task still going (`gatehouse tasks result ID`).
    Call(CallArgs),
    /// Run a suite of tasks through the host and grade them: each task's questions asked
    /// as `ask` asks them (the same policy, person, ledger and bounds), its checks graded
    /// (the answer, the calls made and never made, the ledger's decisions, the run's size,
    /// the world afterwards), repeated under each of the suite's variants, and reported
    /// side by side with 95% intervals (docs/evals.md). Exits 0 when every variant reaches
    /// the suite's threshold (or it has none), 1 when one does not, 2 for a suite that
    /// cannot be read.
    Eval(EvalArgs),
    /// Play a recorded server on stdio: the recording a `--record` run wrote answers each
    /// request as server NAME answered it then (matched by method and parameters; ids and
    /// `_meta` left out), its progress sent again; a request it does not hold gets an
    /// error naming the nearest recorded one. A servers file's `"replay": "FILE"` entry
    /// starts this.
    Replay(ReplayArgs),
    /// Run one of the built-in reference servers on stdio, or over HTTP with `--http`.
    Serve(ServeArgs),
    /// Serve the servers of a servers file as one MCP server, under its policy, for any MCP
    /// client: on stdio, or over Streamable HTTP with `--http`.
    Gateway(GatewayArgs),
    /// The person's policy: `policy explain TOOL [ARGS-JSON]` says which rule decides.
    Policy(PolicyArgs),
    /// Approvals remembered in this project (`A` at the prompt): list, revoke.
    Approvals(ApprovalsArgs),
    /// The ledger of every decision: verify its chain, show it.
    Ledger(LedgerArgs),
    /// Serve the lab: a local web interface to the host (conversation, tool calls, forms,
    /// a manual panel and a message explorer) on 127.0.0.1.
    Lab(LabArgs),
    /// Add, remove, list and show servers in a servers file (this project's .mcp.json, or
    /// yours).
    Mcp(McpArgs),
    /// Check everything the host needs: each server, the model endpoint, the places it
    /// writes; each with a verdict and the fix. Exits 1 when anything is broken.
    Doctor(DoctorArgs),
    /// Sign in to an HTTP server that asks for it (OAuth), see the sign-ins kept, or sign
    /// out. Tokens are never shown.
    Auth(AuthArgs),
    /// Calls the servers run as tasks, from any terminal: list them, look at one, cancel
    /// one, or get one's result.
    Tasks(TasksArgs),
    /// Print a completion script for a shell, made from these very flags:
    /// `gatehouse completions bash > ~/.local/share/bash-completion/completions/gatehouse`.
    Completions(CompletionsArgs),
    /// Print the manual page (roff), made from these very flags: `gatehouse man | man -l -`.
    Man,
}

/// `gatehouse gateway`.
#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("page_sign_in").args(["tokens", "oauth_issuer"]).multiple(true)))]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct GatewayArgs {
    /// Put the gateway in front of a client's servers, or take it away; migrate its
    /// store.
    #[command(subcommand)]
    pub command: Option<GatewayCommand>,
    /// The servers file (`mcpServers`, with its rules, allow-list, hooks and ledger);
    /// `builtin` names the built-in reference servers (a file named so is `./builtin`).
    #[arg(long, value_name = "FILE", required = true)]
    pub config: Option<PathBuf>,
    /// Serve Streamable HTTP on this address (port 0 picks one, printed on stderr)
    /// instead of stdio.
    #[arg(long, value_name = "IP:PORT")]
    pub http: Option<std::net::SocketAddr>,
    /// Bearer tokens of the callers (the reference servers' tokens file).
    #[arg(long, value_name = "FILE", requires = "http")]
    pub tokens: Option<PathBuf>,
    /// Who calls over HTTP may also be an OAuth access token's user and organization, as
    /// for `gatehouse serve`.
    #[command(flatten)]
    pub oauth: gatehouse_http::args::OAuthArgs,
    /// Every request acts as the local user (loopback addresses only; for tests); not
    /// with --tokens or --oauth-issuer.
    #[arg(long, requires = "http", conflicts_with_all = ["tokens", "oauth_issuer"])]
    pub no_auth: bool,
    /// The state replicas share: sealing key, callers' approvals, used confirmations.
    /// A SQLite FILE (replicas on one machine; default: gateway.db in the state folder),
    /// or a postgres://USER@HOST:PORT/DB URL (replicas on several; the ledger is then a
    /// table there too).
    #[arg(long, value_name = "FILE|URL")]
    pub state: Option<String>,
    /// The file holding the key every replica seals its requestStates with (at least 32
    /// bytes; a secret manager's mounted file will do), kept out of the state store;
    /// also $GATEHOUSE_GATEWAY_KEY_FILE. Default with a SQLite --state: gateway.key in
    /// the state folder, made 0600 on first start. With a postgres:// --state it must be
    /// given, and be the same file on every replica.
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,
    /// Ask clients that cannot show a form (only URL questions) on an approval page of
    /// this listener's own, which people reach at this base URL (http:// or https://,
    /// e.g. https://gw.example.com); they sign in there with their bearer token
    /// (--tokens) or through the --oauth-issuer (--approval-page-client-id). Needs --http
    /// and --tokens or --oauth-issuer. Without it such clients are refused where the
    /// policy asks.
    #[arg(long, value_name = "URL", requires = "page_sign_in")]
    pub approval_page: Option<String>,
    /// How long one round of a 2026-07-28 call waits for the decision on the approval
    /// page before it asks again with the same URL (1 to 120; default 20).
    #[arg(long, value_name = "SECONDS", requires = "approval_page")]
    pub approval_page_wait: Option<u64>,
    /// The client the approval page signs people in as at the --oauth-issuer (needed with
    /// both), registered there with the redirect URI URL/approve/callback. Its secret, if
    /// it has one, comes from $GATEHOUSE_APPROVAL_PAGE_CLIENT_SECRET or
    /// --approval-page-client-secret-file, never the command line; without one it is a
    /// public client (PKCE alone).
    #[arg(long, value_name = "ID", requires_all = ["approval_page", "oauth_issuer"])]
    pub approval_page_client_id: Option<String>,
    /// A file whose first line is the approval page's client secret.
    #[arg(long, value_name = "FILE", requires = "approval_page_client_id")]
    pub approval_page_client_secret_file: Option<PathBuf>,
    #[command(flatten)]
    pub screen: ScreenArgs,
}

/// `gatehouse gateway connect|disconnect CLIENT`, `gatehouse gateway migrate`.
#[derive(Subcommand, Debug)]
pub enum GatewayCommand {
    /// Move a client's MCP servers behind one gateway entry in its own configuration:
    /// they go to a Gatehouse servers file of their own, the client's file keeps every
    /// other setting, and a backup of it is kept.
    Connect(GatewayClientArgs),
    /// Give a client's configuration its own servers back, as it was before connect.
    Disconnect(GatewayClientArgs),
    /// Take the gateway's shared store to this version's schema (or make it). Replicas
    /// refuse to start on a store at another version: stop them all, back the store up,
    /// run this once, then start them at the new version.
    Migrate(GatewayMigrateArgs),
}

/// The store of `gatehouse gateway migrate`.
#[derive(Args, Debug)]
pub struct GatewayMigrateArgs {
    /// The store: a SQLite file, or a PostgreSQL URL (postgres://USER@HOST/DB), as the
    /// replicas' --state names it.
    #[arg(long, value_name = "FILE|URL")]
    pub state: String,
}

/// The client of `gatehouse gateway connect|disconnect`.
#[derive(Args, Debug)]
pub struct GatewayClientArgs {
    /// The client.
    #[arg(value_enum)]
    pub client: GatewayClient,
    /// Another file of the client's than its usual one: a project's .mcp.json (Claude
    /// Code), .gemini/settings.json, .cursor/mcp.json, .vscode/mcp.json.
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
}

/// A client whose servers `gatehouse gateway connect` moves (its usual file).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum GatewayClient {
    /// Claude Code: ~/.claude.json (user scope).
    ClaudeCode,
    /// Gemini CLI: ~/.gemini/settings.json.
    Gemini,
    /// Cursor: ~/.cursor/mcp.json.
    Cursor,
    /// VS Code: the user profile's mcp.json (~/.config/Code/User/mcp.json).
    Vscode,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// Print the checks as JSON: {checks: [{area, name, verdict, detail, fix}], broken,
    /// warnings}.
    #[arg(long)]
    pub json: bool,
}

/// `gatehouse auth …`.
#[derive(Args, Debug)]
pub struct AuthArgs {
    #[command(subcommand)]
    pub command: AuthCommand,
}

#[derive(Subcommand, Debug)]
pub enum AuthCommand {
    /// Sign in to a server now. The address to open is shown; with --open (or the
    /// openBrowser setting) it is opened in your browser ($BROWSER, else the system's).
    /// The browser comes back to a listener on 127.0.0.1 by itself; on a machine without
    /// a browser, open the address elsewhere and paste the address the browser ends on.
    Login(AuthLoginArgs),
    /// Each server's sign-in: its authorization server, scopes, expiry, where it is kept.
    Status(AuthStatusArgs),
    /// Sign out of a server: its tokens revoked at the authorization server where it
    /// offers that, and forgotten here.
    Logout(AuthLogoutArgs),
}

#[derive(Args, Debug)]
pub struct AuthLoginArgs {
    /// The server's name in the servers file.
    pub name: String,
    /// Open the sign-in address in your browser.
    #[arg(long)]
    pub open: bool,
    #[command(flatten)]
    pub host: HostArgs,
}

#[derive(Args, Debug)]
pub struct AuthStatusArgs {
    /// Print the sign-ins as JSON: [{server, url, signed_in, issuer, scopes, expires_at,
    /// refreshable, client, kept_in}].
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub host: HostArgs,
}

#[derive(Args, Debug)]
pub struct AuthLogoutArgs {
    /// The server's name in the servers file.
    pub name: String,
    #[command(flatten)]
    pub host: HostArgs,
}

/// `gatehouse tasks …`.
#[derive(Args, Debug)]
pub struct TasksArgs {
    #[command(subcommand)]
    pub command: TasksCommand,
}

#[derive(Subcommand, Debug)]
pub enum TasksCommand {
    /// Every task the host has a record of, the newest first. No server is reached.
    List(TasksListArgs),
    /// One task: its record, and its status asked of its server now.
    Show(TaskArgs),
    /// Cancel a task on its server (`tasks/cancel`); one that has ended is left as it is.
    Cancel(TaskArgs),
    /// A task's result, waiting up to --wait seconds for it to end (its questions are put
    /// to you). Exits 3 while it is still running.
    Result(TaskResultArgs),
}

#[derive(Args, Debug)]
pub struct TasksListArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// Print the records as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct TaskArgs {
    /// The task's id (or the start of it, if no other task's id starts so).
    pub id: String,
    #[command(flatten)]
    pub run: RunArgs,
    /// Print the record (and the end, when there is one) as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct TaskResultArgs {
    #[command(flatten)]
    pub task: TaskArgs,
    /// How long to wait for the task to end, in seconds (0: look once).
    #[arg(long, value_name = "SECS", default_value_t = 0,
          value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub wait: u64,
}

/// `gatehouse mcp …`.
#[derive(Args, Debug)]
pub struct McpArgs {
    #[command(subcommand)]
    pub command: McpCommand,
}

#[derive(Subcommand, Debug)]
pub enum McpCommand {
    /// Add a server: `NAME -- COMMAND [ARGS]…` (stdio) or `--transport http NAME URL`.
    Add(McpAddArgs),
    /// Remove a server by its name.
    Remove(McpRemoveArgs),
    /// Each server of the servers file, with its state after a quick connect.
    List(McpListArgs),
    /// One server's entry (secrets hidden) and its state after a quick connect.
    Get(McpGetArgs),
    /// Show exactly what this folder's .mcp.json would start, and trust it: its servers
    /// start from then on, until the file changes. Settings that loosen your policy are
    /// trusted only when named with --settings.
    Trust(McpTrustArgs),
    /// Take back the trust given to this folder's .mcp.json: its servers no longer start.
    Untrust,
}

/// Which servers file a `gatehouse mcp` command works on.
#[derive(Args, Debug, Clone)]
pub struct McpFileArgs {
    /// `project`: ./.mcp.json; `user`: your own file,
    /// $XDG_CONFIG_HOME/gatehouse/servers.json (~/.config/gatehouse/servers.json).
    /// `add` and `remove` default to `project`; `list` and `get` to the file the host
    /// would use.
    #[arg(long, value_enum, conflicts_with = "config")]
    pub scope: Option<Scope>,
    /// This servers file instead.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// Where a server is kept.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// This project's `.mcp.json`, in the current folder.
    Project,
    /// Your own servers file.
    User,
}

/// How the host reaches a server being added.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpTransport {
    /// A program the host starts, speaking on its stdin and stdout.
    Stdio,
    /// A Streamable HTTP endpoint.
    #[value(alias = "streamable-http")]
    Http,
}

#[derive(Args, Debug)]
pub struct McpAddArgs {
    /// The server's name: its tools are offered as NAME__TOOL.
    pub name: String,
    /// stdio: the command and its arguments, after `--` when they start with `-`; http:
    /// the URL.
    #[arg(value_name = "COMMAND|URL", required = true, num_args = 1..)]
    pub target: Vec<String>,
    /// How the host reaches it.
    #[arg(long, value_enum, default_value = "stdio")]
    pub transport: McpTransport,
    /// A variable for a stdio server (repeatable): `KEY=VALUE`. A value written
    /// `'${VAR}'` is stored as that reference, never expanded.
    #[arg(short, long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// A variable of your environment a stdio server is given as it is (repeatable):
    /// `NAME`, or a prefix ending in `*` (`AWS_*`); stored in its entry's `passEnv`.
    #[arg(long = "pass-env", value_name = "NAME")]
    pub pass_env: Vec<String>,
    /// A header for an http server (repeatable): `'Authorization: Bearer ${TOKEN}'` is
    /// stored as written, the token read from TOKEN when the host connects.
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// Start a stdio server in a box (its entry's "sandbox", docs/sandbox.md): what it may
    /// read and write, no network. The default for a stdio server (with the network on for
    /// a package runner, which downloads on its first start); the flags below add to it.
    #[arg(long, conflicts_with = "no_sandbox")]
    pub sandbox: bool,
    /// Write no box: the server runs with your whole account.
    #[arg(long, conflicts_with_all = ["sandbox_read", "sandbox_write", "sandbox_network"])]
    pub no_sandbox: bool,
    /// A folder (or file) it may also read in its box (repeatable; implies --sandbox).
    #[arg(long = "sandbox-read", value_name = "PATH")]
    pub sandbox_read: Vec<String>,
    /// A folder (or file) it may also write in its box (repeatable; implies --sandbox).
    #[arg(long = "sandbox-write", value_name = "PATH")]
    pub sandbox_write: Vec<String>,
    /// Its network in its box: off (the default) or on (implies --sandbox).
    #[arg(long = "sandbox-network", value_name = "off|on", value_parser = ["off", "on"])]
    pub sandbox_network: Option<String>,
    /// Replace a server of the same name (it keeps its place in the file).
    #[arg(long)]
    pub replace: bool,
    #[command(flatten)]
    pub file: McpFileArgs,
}

impl McpAddArgs {
    /// The entry's "sandbox" the flags ask for: `default` when they say nothing, none with
    /// `--no-sandbox`.
    pub fn sandbox(&self, default: serde_json::Value) -> Option<serde_json::Value> {
        if self.no_sandbox {
            return None;
        }
        Some(self.asked_sandbox().unwrap_or(default))
    }

    /// The box the `--sandbox*` flags name, if any does.
    pub fn asked_sandbox(&self) -> Option<serde_json::Value> {
        let mut shape = serde_json::Map::new();
        if !self.sandbox_read.is_empty() {
            shape.insert("read".into(), self.sandbox_read.clone().into());
        }
        if !self.sandbox_write.is_empty() {
            shape.insert("write".into(), self.sandbox_write.clone().into());
        }
        if let Some(network) = &self.sandbox_network {
            shape.insert("network".into(), network.as_str().into());
        }
        match (self.sandbox, shape.is_empty()) {
            (false, true) => None,
            (true, true) => Some(serde_json::Value::Bool(true)),
            (_, false) => Some(serde_json::Value::Object(shape)),
        }
    }
}

#[derive(Args, Debug)]
pub struct McpRemoveArgs {
    /// The server's name.
    pub name: String,
    #[command(flatten)]
    pub file: McpFileArgs,
}

#[derive(Args, Debug)]
pub struct McpGetArgs {
    /// The server's name.
    pub name: String,
    #[command(flatten)]
    pub file: McpFileArgs,
    /// Print it as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct McpTrustArgs {
    /// Also trust these settings of the file that loosen your policy (comma-separated
    /// keys of its "gatehouse" part, e.g. allow,hooks,ledger).
    #[arg(long, value_name = "KEYS", value_delimiter = ',')]
    pub settings: Vec<String>,
    /// Trust what is listed without asking (you have read it).
    #[arg(long)]
    pub yes: bool,
}

#[derive(Args, Debug)]
pub struct McpListArgs {
    #[command(flatten)]
    pub file: McpFileArgs,
    /// Print the list as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Where the servers come from and who is asking.
#[derive(Args, Debug, Clone)]
pub struct HostArgs {
    /// Servers file in the `mcpServers` shape of .mcp.json / Claude Desktop. Without it,
    /// the file found as the README says, else the built-in reference servers; `builtin`
    /// names those even when a file is found (a file named so is `./builtin`).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The user the servers are told about (GATEHOUSE_USER in a servers file).
    #[arg(long, default_value = "usr-sam")]
    pub user: String,
    /// The organization the user acts in (GATEHOUSE_TENANT in a servers file).
    #[arg(long, default_value = "larkfield")]
    pub tenant: String,
    /// The model: `scripted` (built in, deterministic), `playback:FILE`, or `openai:MODEL`
    /// (any OpenAI-compatible endpoint: OPENAI_BASE_URL, OPENAI_API_KEY).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Most model calls in one question.
    #[arg(long, value_name = "N")]
    pub max_steps: Option<usize>,
    /// Offer the model only these tools (comma-separated names as `gatehouse tools` shows).
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
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
    /// Answer a server's form field (repeatable): `--answer priority=P1`, or only that
    /// server's form: `--answer tickets:priority=P1`. A form these answers do not fill is
    /// asked at the terminal, or declined.
    #[arg(long = "answer", value_name = "[SERVER:]FIELD=VALUE", value_parser = gatehouse::person::FormAnswer::parse)]
    pub answers: Vec<gatehouse::person::FormAnswer>,
    /// Decline every form a server sends.
    #[arg(long, conflicts_with = "answers")]
    pub decline: bool,
}

/// How much of a run is shown, and where every record is kept.
#[derive(Args, Debug, Clone)]
pub struct ScreenArgs {
    /// Show everything: every line the servers write on stderr (their `mcp.request`
    /// records too) and the host's `host.tool_call` records.
    #[arg(short, long, conflicts_with = "quiet")]
    pub verbose: bool,
    /// Show only the answer (and the questions you must answer).
    #[arg(short, long)]
    pub quiet: bool,
    /// Add every record of the run (the host's steps and records, every server's stderr
    /// lines, as JSON lines) to FILE, readable by you only. Overrides `logFile`.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Colour for who acted and for refusals: auto (on a terminal, unless NO_COLOR is
    /// set), always or never.
    #[arg(long, value_name = "WHEN", default_value = "auto")]
    pub color: clap::ColorChoice,
}

/// What a command that runs the host and may ask the person takes: the servers and the
/// model, how the person answers, and the screen (`chat`, `ask`, `tasks show|cancel|result`).
#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub host: HostArgs,
    #[command(flatten)]
    pub answers: AnswerArgs,
    #[command(flatten)]
    pub screen: ScreenArgs,
}

/// What a command that starts the host and asks the person nothing takes: the servers,
/// and the screen (`tools`, `policy explain`).
#[derive(Args, Debug)]
pub struct StartArgs {
    #[command(flatten)]
    pub host: HostArgs,
    #[command(flatten)]
    pub screen: ScreenArgs,
}

#[derive(Args, Debug)]
pub struct ToolsArgs {
    #[command(flatten)]
    pub start: StartArgs,
    /// Print the catalog as JSON (name, server, description, annotations).
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct AskArgs {
    /// The question.
    pub question: String,
    #[command(flatten)]
    pub run: RunArgs,
    /// Print the run as one JSON object on stdout, and nothing else there.
    #[arg(long)]
    pub json: bool,
    /// Write every message of the run to FILE as JSON lines (for the lab's explorer).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct CallArgs {
    /// The tool, as `gatehouse tools` names it (`server__tool`).
    pub tool: String,
    /// The call's arguments, a JSON object (default `{}`): `'{"ticket_id": "T-30002"}'`.
    #[arg(value_name = "ARGS-JSON")]
    pub arguments: Option<String>,
    #[command(flatten)]
    pub run: RunArgs,
    /// Print one JSON object on stdout, and nothing else there: {tool, arguments, outcome,
    /// chars, clipped, result (what a model would read: {tool, result | error, note}),
    /// unknown_tool (why, and the nearest names), steps}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct EvalArgs {
    /// The suite: a JSON or YAML file of tasks, variants and checks (docs/evals.md).
    pub suite: PathBuf,
    /// Run each task this many times under each variant (instead of the suite's `repeat`).
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,
    /// Print the report as one JSON object on stdout, and nothing else there.
    #[arg(long)]
    pub json: bool,
    /// Also write the report as JUnit XML to FILE (a test suite per variant, a test case
    /// per task), for CI.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write the report as Markdown to FILE.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// No progress bar.
    #[arg(short, long)]
    pub quiet: bool,
    /// Record every attempt's messages in DIR, one `TASK--VARIANT--N.jsonl` each (as
    /// `ask --record` writes), and the report beside them (`report.json`), for `--replay`
    /// and the lab's explorer.
    #[arg(long, value_name = "DIR", conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Play every server from the recordings `--record DIR` made, instead of starting it:
    /// no network, no server installed.
    #[arg(long, value_name = "DIR")]
    pub replay: Option<PathBuf>,
}

/// `gatehouse serve`'s flags: the reference servers' own, defined once for both binaries.
#[cfg(feature = "built-in-servers")]
pub use gatehouse_servers::command::ServeArgs;

/// `gatehouse serve` in a build without the reference servers: whatever follows is taken
/// as it comes, and the command says which feature it needs.
#[cfg(not(feature = "built-in-servers"))]
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The server and its flags, in a build that has them.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub rest: Vec<String>,
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The recording (`gatehouse ask --record FILE`, `gatehouse eval --record DIR`).
    pub file: PathBuf,
    /// The server of the recording to play, by its name in the servers file it ran with.
    #[arg(long, value_name = "NAME")]
    pub server: String,
}

#[derive(Args, Debug)]
pub struct LabArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 8765)]
    pub port: u16,
    /// No model: tools are run by hand from the manual panel.
    #[arg(long)]
    pub manual: bool,
    /// Show an eval's report (its Eval tab), from a folder `gatehouse eval --record DIR`
    /// wrote: the tasks and variants, and each failed check, whose run opens in the
    /// explorer.
    #[arg(long, value_name = "DIR")]
    pub eval: Option<PathBuf>,
}

/// `gatehouse policy …`: the person's rules at work.
#[derive(Args, Debug)]
pub struct PolicyArgs {
    #[command(subcommand)]
    pub command: PolicyCommand,
}

#[derive(Subcommand, Debug)]
pub enum PolicyCommand {
    /// Say which rule decides a call and why, with the code the host decides with. Starts
    /// the servers to know the tool's definition; sends nothing to them.
    Explain(ExplainArgs),
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// The tool, as `gatehouse tools` names it (`server__tool`).
    pub tool: String,
    /// The call's arguments, as JSON (default `{}`).
    pub arguments: Option<String>,
    #[command(flatten)]
    pub start: StartArgs,
    /// Print the explanation as JSON.
    #[arg(long)]
    pub json: bool,
    /// Start the servers for their tools, even when the catalog of the last start (kept
    /// for an hour, for an unchanged servers file) could explain.
    #[arg(long)]
    pub fresh: bool,
}

/// `gatehouse approvals …`: the approvals remembered in this project (`A` at the prompt).
#[derive(Args, Debug)]
pub struct ApprovalsArgs {
    #[command(subcommand)]
    pub command: ApprovalsCommand,
}

#[derive(Subcommand, Debug)]
pub enum ApprovalsCommand {
    /// List this project's approvals: tool, when, and whether it is sealed for you.
    List {
        /// Print them as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Revoke approvals by tool name (or all of them): the next call asks again.
    Revoke {
        /// The tools, exactly as listed.
        #[arg(required_unless_present = "all")]
        tools: Vec<String>,
        /// Revoke every approval of this project.
        #[arg(long, conflicts_with = "tools")]
        all: bool,
    },
}

/// `gatehouse ledger …`: the record of every decision.
#[derive(Args, Debug)]
pub struct LedgerArgs {
    #[command(subcommand)]
    pub command: LedgerCommand,
    /// The ledger file (default: the servers file's `ledger.path`, else
    /// ~/.local/state/gatehouse/ledger.jsonl).
    #[arg(long, value_name = "FILE", global = true)]
    pub file: Option<PathBuf>,
    /// The servers file whose `ledger` setting names the ledger.
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
    /// The ledger a gateway keeps in PostgreSQL, by its `--state` postgres://USER@HOST:PORT/DB
    /// (instead of --file or --config).
    #[arg(long, value_name = "URL", global = true)]
    pub state: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum LedgerCommand {
    /// Walk the hash chain: name the first edited, removed, reordered or cut line.
    Verify,
    /// Show the decisions, oldest first.
    Show {
        /// Only those since a time: RFC 3339 (`2026-12-01T10:00:00Z`), a date
        /// (`2026-12-01`, UTC), or an age (`30m`, `2h`, `7d`).
        #[arg(long, value_name = "WHEN")]
        since: Option<String>,
        /// Print them as JSON lines, as written.
        #[arg(long)]
        json: bool,
    },
}
