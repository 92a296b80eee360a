//! A reference server's command line, defined once for `gatehouse-servers NAME [OPTIONS]`
//! and `gatehouse serve NAME [OPTIONS]`, which run the same servers. The built-in
//! configuration starts the first, a binary of its own, so that each server process maps
//! only server code, not the host's HTTP client, TLS, lab and schema compiler.

use std::{path::PathBuf, time::Duration};

use clap::Args;

use crate::http::{connections, sessions};

/// `--oauth-issuer`, `--oauth-resource` and `--oauth-org-claim`: an HTTP server as an
/// OAuth protected resource. Defined once, for `gatehouse serve` and `gatehouse gateway`,
/// whose command lines both name an `http` flag these require.
#[derive(Args, Debug, Clone)]
pub struct OAuthArgs {
    /// Accept OAuth access tokens from this authorization server (its issuer identifier):
    /// protected-resource metadata is served at /.well-known/oauth-protected-resource/mcp,
    /// and a request without a valid token gets 401 naming it. With --tokens, the tokens
    /// file's tokens are accepted too.
    #[arg(long, value_name = "URL", requires = "http")]
    pub oauth_issuer: Option<String>,
    /// The URL clients know this server by (its resource identifier, the tokens' audience);
    /// default http://ADDR/mcp of the address it listens on.
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    pub oauth_resource: Option<String>,
    /// The access-token claim that names the caller's organization (without it in a token,
    /// the user's only organization).
    #[arg(long, value_name = "CLAIM", requires = "oauth_issuer",
          default_value = crate::oauth::DEFAULT_ORG_CLAIM)]
    pub oauth_org_claim: String,
}

impl OAuthArgs {
    /// What the flags ask for, as a reference server means them (its own tools' read-only
    /// hints hold); `None` without `--oauth-issuer`.
    pub fn options(&self) -> Option<crate::oauth::OAuthOptions> {
        self.oauth_issuer
            .as_ref()
            .map(|issuer| crate::oauth::OAuthOptions {
                issuer: issuer.clone(),
                resource: self.oauth_resource.clone(),
                org_claim: self.oauth_org_claim.clone(),
                writes: crate::oauth::Writes::UnlessReadOnly,
            })
    }
}

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
    /// Most HTTP connections open at once [default: 1024, or fewer if the open-file limit
    /// (ulimit -n) leaves room for fewer]. At the bound the connection that has kept the
    /// server waiting longest is closed for a newcomer.
    #[arg(long, value_name = "N", requires = "http",
          value_parser = clap::value_parser!(u64).range(1..=connections::MAX_CONNECTIONS_LIMIT as u64))]
    pub max_connections: Option<u64>,
    /// Seconds a request's headers may take, from their first byte.
    #[arg(long, value_name = "SECS", requires = "http",
          default_value_t = connections::HEADER_TIMEOUT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=connections::MAX_HEADER_TIMEOUT_SECS))]
    pub header_timeout: u64,
    /// Seconds a request's body may take, after its headers.
    #[arg(long, value_name = "SECS", requires = "http",
          default_value_t = connections::BODY_TIMEOUT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=connections::MAX_BODY_TIMEOUT_SECS))]
    pub body_timeout: u64,
    /// Seconds a connection may wait for a request (or leave an answer unread) before it
    /// is closed.
    #[arg(long, value_name = "SECS", requires = "http",
          default_value_t = connections::IDLE_TIMEOUT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=connections::MAX_IDLE_TIMEOUT_SECS))]
    pub idle_timeout: u64,
    /// Most legacy (initialize) sessions the server holds; past it a new one gets 503.
    #[arg(long, value_name = "N", requires = "http",
          default_value_t = sessions::MAX_SESSIONS as u64,
          value_parser = clap::value_parser!(u64).range(1..=sessions::MAX_SESSIONS_LIMIT as u64))]
    pub max_sessions: u64,
    /// Most legacy sessions one caller (user and organization) holds; past it 429.
    #[arg(long, value_name = "N", requires = "http",
          default_value_t = sessions::MAX_SESSIONS_PER_CALLER as u64,
          value_parser = clap::value_parser!(u64).range(1..=sessions::MAX_SESSIONS_LIMIT as u64))]
    pub max_sessions_per_caller: u64,
    /// Seconds a legacy session may go unused before it is ended.
    #[arg(long, value_name = "SECS", requires = "http",
          default_value_t = sessions::SESSION_IDLE.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=sessions::MAX_SESSION_IDLE_SECS))]
    pub session_idle: u64,
}

impl ServeArgs {
    /// The HTTP bounds these flags ask for (clap has checked each range; the connection
    /// bound is checked against the open-file limit when serving starts).
    pub fn http_limits(&self) -> crate::http::HttpLimits {
        crate::http::HttpLimits {
            max_connections: self
                .max_connections
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            header_timeout: Duration::from_secs(self.header_timeout),
            body_timeout: Duration::from_secs(self.body_timeout),
            idle_timeout: Duration::from_secs(self.idle_timeout),
            sessions: sessions::SessionLimits {
                total: usize::try_from(self.max_sessions).unwrap_or(usize::MAX),
                per_caller: usize::try_from(self.max_sessions_per_caller).unwrap_or(usize::MAX),
                idle: Duration::from_secs(self.session_idle),
            },
        }
    }
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
    let limits = args.http_limits();
    let result = runtime.block_on(async {
        match args.http {
            None => crate::serve_stdio(&args.name, options).await,
            Some(addr) => {
                let http = crate::http::HttpOptions {
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
