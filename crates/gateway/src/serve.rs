//! The gateway served: on stdio for one client, calling as the local user, or on the HTTP
//! face (`gatehouse_http`) for many, each request's caller by its token, older clients'
//! sessions as rows of the shared store (so any replica serves them), and beside `/mcp`
//! the approval page (`page/routes.rs`) and the operations routes (`ops/routes.rs`).

use std::sync::Arc;

use gatehouse::{config::Config, trace::Trace};
use gatehouse_http::{
    Auth, Caller, HttpOptions, Members, SessionAccess,
    oauth::{ResourceServer, Writes},
};
use rmcp::ServiceExt;

use crate::{
    Callers, Gateway, PageSettings, Store, ops,
    page::{self, routes::OAuthPages, sign_in::PageClient},
};

/// What the gateway is started with, on either face: the servers file read, the store
/// with its sealing key, the trace, and the approval page's settings.
pub struct Started {
    /// The servers file, read and checked.
    pub config: Config,
    /// The shared store and the key its states are sealed with.
    pub store: (Store, Vec<u8>),
    /// Where every step goes.
    pub trace: Trace,
    /// `--approval-page`: its base URL and how long it waits.
    pub page: Option<PageSettings>,
}

/// The gateway for one client on stdin and stdout, calling as `local`.
pub async fn over_stdio(local: Caller, started: Started) -> anyhow::Result<()> {
    let Started {
        config,
        store,
        trace,
        ..
    } = started;
    let gateway = Gateway::start(&config, store, trace, Callers::One(local), None)
        .await
        .map_err(anyhow::Error::msg)?;
    let service = gateway.clone().serve(rmcp::transport::stdio()).await?;
    let _ = service.waiting().await;
    gateway.shutdown().await;
    Ok(())
}

/// How the gateway is served over HTTP, beyond what any server on the face is asked.
pub struct OverHttp {
    /// Where, its bounds, and who may call (`--tokens`, `--oauth-issuer`).
    pub options: HttpOptions,
    /// The organization of an access token that names none: the user's only one.
    pub members: &'static dyn Members,
    /// The approval page's client at the `--oauth-issuer`, to sign people in there.
    pub page_client: Option<PageClient>,
    /// The policy wants some ask answered on the page: a person signs in there
    /// interactively, never with a bearer token (which the MCP client holds too).
    pub page_only: bool,
}

/// The gateway over HTTP until SIGTERM: callers by their tokens, older clients' sessions
/// in the shared store, the approval page and the operations routes beside `/mcp`.
pub async fn over_http(started: Started, how: OverHttp) -> anyhow::Result<()> {
    let mut options = how.options;
    // Access tokens are checked exactly as a reference server checks them; the caller is
    // the token's user and organization, which approvals, sealed states and the ledger
    // then name. Every call needs mcp:write: a server's read-only hint is its claim, not
    // ours.
    if let Some(oauth) = &mut options.oauth {
        oauth.writes = Writes::EveryCall;
    }
    let auth = Auth::from_options(&options, how.members)?;
    let callers = Callers::OfRequest {
        fallback: auth.default_caller(),
    };
    // Older clients' sessions are rows of the shared store, so any replica serves them.
    let shared = Arc::new(started.store.0.clone());
    let (config, store, trace) = (&started.config, started.store, started.trace);
    let gateway = Gateway::start(config, store, trace, callers, started.page)
        .await
        .map_err(anyhow::Error::msg)?;
    let tokens = match &auth {
        _ if how.page_only => None,
        Auth::Tokens(tokens)
        | Auth::OAuth {
            tokens: Some(tokens),
            ..
        } => Some(tokens.clone()),
        _ => None,
    };
    let approval_page = gateway.page().cloned();
    let operations = ops::routes::routes(gateway.clone());
    let client = how.page_client;
    let pages = move |checks: Option<Arc<ResourceServer>>| -> anyhow::Result<axum::Router> {
        let Some(p) = approval_page else {
            return Ok(operations);
        };
        // The page signs in with the tokens file's tokens, through the authorization
        // server (its client at the issuer the MCP endpoint trusts), or both.
        let oauth = match (client, checks) {
            (Some(client), Some(checks)) => {
                Some(OAuthPages::new(client, checks, &p.callback_url())?)
            }
            _ => None,
        };
        eprintln!(
            "approval page: {}{}/… (signing in {})",
            p.settings().base(),
            page::APPROVE_PATH,
            match (&tokens, &oauth) {
                (Some(_), Some(o)) => format!("with a bearer token, or at {}", o.issuer()),
                (None, Some(o)) => format!("at {}", o.issuer()),
                _ => "with a bearer token".into(),
            }
        );
        Ok(page::routes::routes(p, tokens, oauth).merge(operations))
    };
    let served = gatehouse_http::serve_sharing(
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
