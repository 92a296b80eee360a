//! A reference server's command line, defined once for `gatehouse-servers NAME [OPTIONS]`
//! and `gatehouse serve NAME [OPTIONS]`, which run the same servers. The built-in
//! configuration starts the first, a binary of its own, so that each server process maps
//! only server code, not the host's HTTP client, TLS, lab and schema compiler.

use std::path::PathBuf;

use clap::Args;

use gatehouse_http::args::OAuthArgs;

/// Which server to run, and how.
#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Which server: support, cmdb, tickets, orders, or testbed and hostile (for tests).
    pub name: String,
    /// The tickets server's store (default: $GATEHOUSE_TICKETS_DB, else
    /// ~/.local/share/gatehouse/tickets.db).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// The task store of the servers whose calls may run as tasks (default:
    /// $GATEHOUSE_SERVER_TASKS_DB, else ~/.local/share/gatehouse/server-tasks.db for the
    /// orders server; the testbed keeps its tasks in memory). Instances that share it
    /// answer for each other's tasks.
    #[arg(long, value_name = "PATH")]
    pub tasks_db: Option<PathBuf>,
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio (port 0 picks a free
    /// one; the address is printed on stderr). Stops on SIGTERM or Ctrl-C.
    #[arg(long, value_name = "IP:PORT")]
    pub http: Option<std::net::SocketAddr>,
    /// Bearer tokens over HTTP: a JSON array of {"user", "tenant", "sha256"} (the
    /// SHA-256 of each token in hex: `printf %s TOKEN | sha256sum`).
    #[arg(long, value_name = "FILE", requires = "http")]
    pub tokens: Option<PathBuf>,
    /// OAuth access tokens over HTTP.
    #[command(flatten)]
    pub oauth: OAuthArgs,
    /// Serve HTTP without authentication, every request acting as MCP_USER/MCP_TENANT.
    /// For local testing only (loopback addresses only); not with --tokens or --oauth-issuer.
    #[arg(long, requires = "http", conflicts_with_all = ["tokens", "oauth_issuer"])]
    pub no_auth: bool,
    /// A browser origin allowed to call (repeatable; replaces the default, this server's
    /// own http://127.0.0.1:PORT and http://localhost:PORT).
    #[arg(long = "allowed-origin", value_name = "ORIGIN", requires = "http")]
    pub allowed_origins: Vec<String>,
    /// A Host header value accepted (repeatable; replaces the default, loopback names).
    #[arg(long = "allowed-host", value_name = "HOST", requires = "http")]
    pub allowed_hosts: Vec<String>,
    /// Connections, their times, and legacy sessions over HTTP.
    #[command(flatten)]
    pub limits: gatehouse_http::args::LimitArgs,
}

/// Run the server `args` names until its client goes away (stdio) or SIGTERM (HTTP).
pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    // A stdio server handles one client's messages in order: one thread does it without
    // hand-offs. Over HTTP, requests from many clients share a thread pool.
    let mut builder = if args.http.is_none() {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    let runtime = builder
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the async runtime: {e}"))?;
    let options = crate::ServeOptions {
        db: args.db.clone(),
        tasks_db: args.tasks_db.clone(),
    };
    let limits = args.limits.limits();
    let result = runtime.block_on(async {
        match args.http {
            None => crate::serve_stdio(&args.name, options).await,
            Some(addr) => {
                let http = gatehouse_http::HttpOptions {
                    addr,
                    tokens: args.tokens,
                    no_auth: args.no_auth,
                    allowed_origins: args.allowed_origins,
                    allowed_hosts: args.allowed_hosts,
                    oauth: args.oauth.options(),
                    limits,
                };
                crate::serve_http(&args.name, options, http).await
            }
        }
    });
    // A server ends with its work; nothing must linger in the background.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    result
}
