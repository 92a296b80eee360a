//! Who is calling a server: on stdio as it was told at start, over HTTP as the request's
//! bearer token says, never from a request's arguments.

use rmcp::{RoleServer, service::RequestContext};

/// Environment variable naming the calling user of a stdio server (and of an HTTP server
/// with `--no-auth`).
pub const ENV_USER: &str = "MCP_USER";
/// Environment variable naming the organization (tenant) the caller acts in.
pub const ENV_TENANT: &str = "MCP_TENANT";
/// Environment variable naming the client, for the logs (defaults to `local` on stdio).
pub const ENV_CLIENT: &str = "MCP_CLIENT";

/// Who is calling: on stdio as the server was told at start, over HTTP as the request's
/// bearer token says. Never taken from a request's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The user, by id (`usr-sam`).
    pub user: String,
    /// The organization the user acts in (`larkfield`).
    pub tenant: String,
    /// The client, for the logs (`local` on stdio, a token's client over HTTP).
    pub client: String,
}

impl Caller {
    /// A caller by name (the tokens file and the tests name them).
    pub fn new(user: &str, tenant: &str, client: &str) -> Self {
        Caller {
            user: user.into(),
            tenant: tenant.into(),
            client: client.into(),
        }
    }

    /// Read the caller from the environment; a missing user or tenant means "nobody",
    /// which every membership check then refuses.
    pub fn from_env() -> Self {
        let get = |k: &str| std::env::var(k).unwrap_or_default().trim().to_owned();
        let client = get(ENV_CLIENT);
        Caller {
            user: get(ENV_USER),
            tenant: get(ENV_TENANT),
            client: if client.is_empty() {
                "local".into()
            } else {
                client
            },
        }
    }

    /// Nobody: the caller a server falls back to when a request names none and the
    /// server was started for no one. Every membership check refuses it.
    pub fn nobody(client: &str) -> Self {
        Caller {
            user: String::new(),
            tenant: String::new(),
            client: client.into(),
        }
    }

    /// The caller of one request: the one the HTTP layer authenticated and attached to
    /// the request (an extension of its `http::request::Parts`, which rmcp hands to the
    /// handler), else `default`, the caller the server was started for (stdio).
    pub fn of_request(default: &Caller, context: &RequestContext<RoleServer>) -> Caller {
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Caller>())
            .cloned()
            .unwrap_or_else(|| default.clone())
    }
}
