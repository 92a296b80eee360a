//! `gatehouse gateway`: its flags read and checked, then the gateway crate's own serving
//! (`gatehouse_gateway::serve`) on stdio, as the local user, or on the HTTP face, each
//! request as its token's caller (a tokens file's, or with `--oauth-issuer` an OAuth
//! access token's user and organization). `gateway connect|disconnect CLIENT` is
//! `gateway/connect.rs`; the approval page's client at the issuer `gateway/page_client.rs`.

mod connect;
mod page_client;

use std::time::Duration;

use gatehouse::{config::Identity, ledger::Ledger, trace::Trace};
use gatehouse_gateway::{
    PageSettings, Store,
    key::{KEY_FILE, KeyFile},
    serve::{self, OverHttp},
    store::Location,
};
use gatehouse_http::{Caller, HttpLimits, HttpOptions};

use crate::{
    args::{GatewayArgs, GatewayCommand},
    project::Asking,
    screen::StepsTo,
};

/// The state file when `--state` is not given.
pub const STATE_FILE: &str = "gateway.db";
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
    match (state.is_shared(), named) {
        (false, named) => Ok(KeyFile {
            path: named.unwrap_or_else(|| gatehouse::config::state_dir().join(KEY_FILE)),
            make: true,
        }),
        (true, Some(path)) => Ok(KeyFile { path, make: false }),
        (true, None) => anyhow::bail!(
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

/// What the gateway's two faces share before either is served, and what the HTTP face
/// needs of the flags read at start: the local caller, the approval page's client at the
/// issuer, and whether the policy asks only there.
struct Started {
    local: Caller,
    served: serve::Started,
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
    let page_client = page_client::client_of(args)?;
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
        served: serve::Started {
            config,
            store,
            trace,
            page,
        },
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
        None => serve::over_stdio(started.local, started.served).await,
        Some(addr) => over_http(addr, args, started).await,
    }
}

/// The gateway over HTTP at `addr`, as the flags ask: callers by their tokens (an
/// access token that names no organization acts in the user's only one, as the reference
/// servers' memberships say: the servers the gateway is shown with).
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
        oauth: args.oauth.options(),
    };
    let how = OverHttp {
        options,
        members: members()?,
        page_client: started.page_client,
        page_only: started.page_only,
    };
    serve::over_http(started.served, how).await
}

/// Whose organization an access token that names none acts in: the user's only one, as
/// the reference servers' memberships say (the servers the gateway is shown with); in a
/// build without them, none.
fn members() -> anyhow::Result<&'static dyn gatehouse_http::Members> {
    #[cfg(feature = "built-in-servers")]
    return Ok(gatehouse_servers::membership::Memberships::embedded()?);
    #[cfg(not(feature = "built-in-servers"))]
    Ok(&gatehouse_http::members::NoMembers)
}
