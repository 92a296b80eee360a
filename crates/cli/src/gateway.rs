//! `gatehouse gateway`: the library's gateway served on stdio or Streamable HTTP. Who
//! calls is decided here: over HTTP the bearer token's caller (the reference servers'
//! tokens file, or with `--oauth-issuer` an OAuth access token's user and organization,
//! through their HTTP layer, `gatehouse_http`), on stdio the local user; the
//! approval page's routes and HTML are `gateway/page.rs`; health, readiness and metrics
//! `gateway/ops.rs`; `gateway connect|disconnect CLIENT` is `gateway/connect.rs`.

mod connect;
mod ops;
mod page;

use std::{sync::Arc, time::Duration};

use gatehouse::{config::Identity, ledger::Ledger, trace::Trace};
use gatehouse_gateway::caller::name as named;
use gatehouse_gateway::{
    CallerOf, Gateway, PageSettings, SessionOf, Store,
    key::{KEY_FILE, KeyFile},
    store::Location,
};
use gatehouse_http::{
    self as http, Auth, Caller, HttpLimits, HttpOptions, SessionAccess,
    oauth::{OAuthOptions, ResourceServer, Writes},
};
use gatehouse_servers::membership::Memberships;
use rmcp::ServiceExt;

use crate::{
    args::{GatewayArgs, GatewayCommand},
    project::Asking,
    screen::StepsTo,
};

/// The state file when `--state` is not given.
pub const STATE_FILE: &str = "gateway.db";
/// The header naming an older client's session.
const SESSION_HEADER: &str = "mcp-session-id";
/// The environment variable naming the sealing key's file, as `--key-file` does.
pub const KEY_FILE_ENV: &str = "GATEHOUSE_GATEWAY_KEY_FILE";

/// The file the sealing key is read from: `--key-file`, else `$GATEHOUSE_GATEWAY_KEY_FILE`,
/// else (a SQLite store only) `gateway.key` in the state folder, made if missing. Replicas
/// on PostgreSQL run on several machines: each making a key of its own would refuse the
/// others' states, so the key file must be named, exist, and be the same everywhere.
fn key_file(args: &GatewayArgs, state: &Location) -> anyhow::Result<KeyFile> {
    let named = args.key_file.clone().or_else(|| {
        std::env::var_os(KEY_FILE_ENV)
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
    });
    match (state, named) {
        (Location::File(_), named) => Ok(KeyFile {
            path: named.unwrap_or_else(|| gatehouse::config::state_dir().join(KEY_FILE)),
            make: true,
        }),
        (Location::Postgres(_), Some(path)) => Ok(KeyFile { path, make: false }),
        (Location::Postgres(_), None) => anyhow::bail!(
            "--state {state} is shared by replicas on several machines, which must all seal with one key: give each the same key file with --key-file FILE (or ${KEY_FILE_ENV}), made once with `openssl rand -hex 32 > FILE; chmod 600 FILE`"
        ),
    }
}

/// Does the policy want some ask answered by a person on the approval page
/// (`approvals.via` or an ask rule's `via: "page"`)? Then the page must be set up and sign
/// people in interactively at the --oauth-issuer (never with a bearer token, which the
/// MCP client holds too): without that the gateway does not start, since every such call
/// would be refused, and the mistake is better seen now than at the first call.
fn page_only(settings: &gatehouse::config::Settings, args: &GatewayArgs) -> anyhow::Result<bool> {
    if !settings.approvals.page_anywhere(&settings.rules) {
        return Ok(false);
    }
    if args.approval_page.is_none() || args.approval_page_client_id.is_none() {
        anyhow::bail!(
            "the servers file asks a person on the approval page (\"via\": \"page\"), which \
             needs the page and an interactive sign-in there: give --http, --approval-page URL, \
             --oauth-issuer URL and --approval-page-client-id ID"
        );
    }
    Ok(true)
}

/// `gatehouse gateway migrate --state FILE|URL`: the store taken to this version's schema.
async fn migrate(state: &str) -> anyhow::Result<()> {
    // Read as text and checked here, not by clap: its error would quote the URL whole.
    let location = Location::parse(state).map_err(anyhow::Error::msg)?;
    let migrated = Store::migrate(&location)
        .await
        .map_err(anyhow::Error::msg)?;
    println!("{location}: {migrated}");
    Ok(())
}

/// What the gateway's two faces (stdio and HTTP) share before either is served: the
/// local caller, the servers file read, the store with its key, the trace, and the
/// approval page's settings and sign-in.
struct Started {
    local: Caller,
    config: gatehouse::config::Config,
    store: (Store, Vec<u8>),
    trace: Trace,
    page: Option<PageSettings>,
    page_client: Option<gatehouse_gateway::page::sign_in::PageClient>,
    page_only: bool,
}

/// Read and check everything the gateway needs before it is served.
async fn start(args: &GatewayArgs, servers_file: std::path::PathBuf) -> anyhow::Result<Started> {
    let local = Caller::from_env();
    let identity = Identity {
        user: local.user.clone(),
        tenant: local.tenant.clone(),
    };
    // The file given, or `builtin`: the reference servers, as for `ask` and `tools`.
    let found = gatehouse::config::project::Found::locate(Some(servers_file));
    let mut config = crate::project::load_found(
        &found,
        &identity,
        Asking::Never,
        crate::start::built_in_file,
    )?;
    gatehouse::config::chain::enter(&mut config, &found.files())?;
    let settings = &config.settings;
    let ledger = settings
        .ledger
        .enabled
        .then(|| Ledger::new(settings.ledger.file()));
    // Read as text and checked here, not by clap: its error would quote the URL whole,
    // password and all.
    let state = match &args.state {
        Some(text) => Location::parse(text).map_err(anyhow::Error::msg)?,
        None => Location::File(gatehouse::config::state_dir().join(STATE_FILE)),
    };
    // Checked before anything starts; clap has made sure --tokens or --oauth-issuer (and
    // so --http) is given.
    let page = match &args.approval_page {
        Some(base) => Some(
            PageSettings::parse(base, args.approval_page_wait.map(Duration::from_secs))
                .map_err(anyhow::Error::msg)?,
        ),
        None => None,
    };
    let page_client = page::client_of(args)?;
    let page_only = page_only(settings, args)?;
    let key = key_file(args, &state)?.load().map_err(anyhow::Error::msg)?;
    if let Some(warning) = &key.warning {
        eprintln!("gatehouse: warning: {warning}");
    }
    let store = Store::open(&state, ledger.clone())
        .await
        .map_err(anyhow::Error::msg)?;
    let store = (store, key.bytes);
    // stdout is the MCP channel on stdio: every step goes to stderr.
    let trace = Trace::new(crate::start::printer(
        &args.screen,
        &config,
        StepsTo::Stderr,
    )?);
    if let (true, Some(file)) = (store.0.keeps_the_ledger(), &ledger) {
        eprintln!(
            "gatehouse: the ledger is kept in {state} (`gatehouse ledger verify --state URL`); {} is not used",
            file.path().display()
        );
    }
    Ok(Started {
        local,
        config,
        store,
        trace,
        page,
        page_client,
        page_only,
    })
}

/// Run the gateway until its stdio client leaves, or SIGTERM over HTTP.
pub async fn run(args: GatewayArgs) -> anyhow::Result<()> {
    match args.command {
        Some(GatewayCommand::Connect(client)) => return connect::connect(client),
        Some(GatewayCommand::Disconnect(client)) => return connect::disconnect(client),
        Some(GatewayCommand::Migrate(store)) => return migrate(&store.state).await,
        None => {}
    }
    // clap requires --config when no subcommand is given.
    let servers_file = args
        .config
        .clone()
        .ok_or_else(|| anyhow::anyhow!("--config FILE is required"))?;
    let started = start(&args, servers_file).await?;
    match args.http {
        None => over_stdio(started).await,
        Some(addr) => over_http(addr, args, started).await,
    }
}

/// The gateway for one client on stdin and stdout, calling as the local user.
async fn over_stdio(started: Started) -> anyhow::Result<()> {
    let me = named(&started.local);
    let caller_of: CallerOf = Arc::new(move |_| me.clone());
    let (config, store, trace) = (&started.config, started.store, started.trace);
    let gateway = Gateway::start(config, store, trace, caller_of, None)
        .await
        .map_err(anyhow::Error::msg)?;
    let service = gateway.clone().serve(rmcp::transport::stdio()).await?;
    let _ = service.waiting().await;
    gateway.shutdown().await;
    Ok(())
}

/// The gateway over HTTP at `addr`: callers by their tokens, older clients' sessions in
/// the shared store, the approval page and the operations routes beside `/mcp`.
async fn over_http(
    addr: std::net::SocketAddr,
    args: GatewayArgs,
    started: Started,
) -> anyhow::Result<()> {
    let options = HttpOptions {
        addr,
        tokens: args.tokens,
        no_auth: args.no_auth,
        allowed_origins: Vec::new(),
        allowed_hosts: Vec::new(),
        limits: HttpLimits::default(),
        // Access tokens checked exactly as a reference server checks them; the caller is
        // the token's user and organization, which the gateway's approvals, sealed
        // states and ledger then name. The token itself goes no further than this layer.
        // Every call needs mcp:write: a server's read-only hint is its claim, not ours.
        oauth: args.oauth.options().map(|o| OAuthOptions {
            writes: Writes::EveryCall,
            ..o
        }),
    };
    // An access token that names no organization acts in the user's only one, as the
    // reference servers' memberships say: the servers the gateway is shown with.
    let auth = Auth::from_options(&options, Memberships::embedded()?)?;
    let default = auth.default_caller();
    let caller_of: CallerOf =
        Arc::new(move |context| named(&Caller::of_request(&default, context)));
    // Older clients' sessions are rows of the shared store, so any replica serves them.
    let shared = Arc::new(started.store.0.clone());
    let (config, store, trace) = (&started.config, started.store, started.trace);
    let gateway = Gateway::start(config, store, trace, caller_of, started.page)
        .await
        .map_err(anyhow::Error::msg)?;
    let session_of: SessionOf = Arc::new(|context| {
        let parts = context.extensions.get::<axum::http::request::Parts>()?;
        let id = parts.headers.get(SESSION_HEADER)?.to_str().ok()?;
        Some(id.to_owned())
    });
    gateway.share_sessions(session_of);
    // The page signs in with the tokens file's tokens, through the authorization server
    // (its client at the issuer the MCP endpoint trusts, checked once that is read), or
    // both.
    let tokens = match &auth {
        // Not where the policy wants a person: the client holds its bearer token too.
        _ if started.page_only => None,
        Auth::Tokens(tokens)
        | Auth::OAuth {
            tokens: Some(tokens),
            ..
        } => Some(tokens.clone()),
        _ => None,
    };
    let approval_page = gateway.page().cloned();
    let operations = ops::routes(gateway.clone());
    let pages = move |checks: Option<Arc<ResourceServer>>| -> anyhow::Result<axum::Router> {
        let Some(p) = approval_page else {
            return Ok(operations);
        };
        let oauth = match (started.page_client, checks) {
            (Some(client), Some(checks)) => {
                Some(page::OAuthPages::new(client, checks, &p.callback_url())?)
            }
            _ => None,
        };
        eprintln!(
            "approval page: {}{}/… (signing in {})",
            p.settings().base(),
            gatehouse_gateway::page::APPROVE_PATH,
            match (&tokens, &oauth) {
                (Some(_), Some(o)) => format!("with a bearer token, or at {}", o.issuer()),
                (None, Some(o)) => format!("at {}", o.issuer()),
                _ => "with a bearer token".into(),
            }
        );
        Ok(page::routes(p, tokens, oauth).merge(operations))
    };
    let served = http::serve_sharing(
        gateway.clone(),
        auth,
        SessionAccess::AnyCaller,
        &options,
        pages,
        Some(shared),
    )
    .await;
    gateway.shutdown().await;
    served
}
