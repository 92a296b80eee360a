//! How a server is asked to serve over HTTP: where, its bounds, who may call, and who may
//! open a legacy session.

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use crate::{
    Caller, Members, connections,
    oauth::OAuthOptions,
    sessions::SessionLimits,
    tokens::{self, Tokens},
};

/// The bounds of an HTTP server, each with a flag of `gatehouse serve` (checked there).
#[derive(Debug, Clone)]
pub struct HttpLimits {
    /// `--max-connections`: most connections open at once; `None` means
    /// [`connections::DEFAULT_MAX_CONNECTIONS`], or fewer if the open-file limit says so.
    pub max_connections: Option<usize>,
    /// `--header-timeout`: how long a request's headers may take from their first byte.
    pub header_timeout: Duration,
    /// `--body-timeout`: how long a request's body may take after its headers.
    pub body_timeout: Duration,
    /// `--idle-timeout`: how long a connection may wait for a request, or leave its
    /// answer unread.
    pub idle_timeout: Duration,
    /// `--max-sessions`, `--max-sessions-per-caller`, `--session-idle`: legacy sessions.
    pub sessions: SessionLimits,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_connections: None,
            header_timeout: connections::HEADER_TIMEOUT,
            body_timeout: connections::BODY_TIMEOUT,
            idle_timeout: connections::IDLE_TIMEOUT,
            sessions: SessionLimits::default(),
        }
    }
}

/// Who may open a legacy session, beyond holding a valid token.
#[derive(Debug, Clone, Copy)]
pub enum SessionAccess {
    /// Any caller: servers that check no membership (cmdb, orders, testbed).
    AnyCaller,
    /// Only a member of the organization it acts in: servers that check membership on
    /// every call (support, tickets). A session would be of no use to anyone else, and
    /// costs memory; they get 403 with JSON-RPC -32003 instead.
    Members(&'static dyn Members),
}

/// How `gatehouse serve NAME --http ADDR` was asked to serve.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen; port 0 picks a free one (printed on stderr).
    pub addr: SocketAddr,
    /// The tokens file (`--tokens`).
    pub tokens: Option<PathBuf>,
    /// `--no-auth`: every request acts as the caller in the environment. For local tests
    /// only; refused unless `addr` is a loopback address.
    pub no_auth: bool,
    /// Browser origins allowed to call (`--allowed-origin`); empty means this server's own
    /// loopback origins (`http://127.0.0.1:PORT`, `http://localhost:PORT`, `http://[::1]:PORT`).
    pub allowed_origins: Vec<String>,
    /// `Host` values accepted (`--allowed-host`); empty means loopback names only.
    pub allowed_hosts: Vec<String>,
    /// `--oauth-issuer` (and its companions): access tokens from that authorization server.
    pub oauth: Option<OAuthOptions>,
    /// Connections, times and sessions.
    pub limits: HttpLimits,
}

/// How requests are authenticated.
#[derive(Debug, Clone)]
pub enum Auth {
    /// Bearer tokens from a tokens file.
    Tokens(Arc<Tokens>),
    /// Access tokens from an authorization server (checked once the server knows the
    /// address it listens on), and the tokens file's tokens besides, if one is given.
    OAuth {
        /// The authorization server, this resource, and what needs which scope.
        options: OAuthOptions,
        /// The tokens file's tokens, accepted besides.
        tokens: Option<Arc<Tokens>>,
        /// The organization a token that names none acts in: the user's only one.
        members: &'static dyn Members,
    },
    /// None: every request acts as the server's default caller (local testing only).
    Off,
}

impl Auth {
    /// Decide from the options, before any server is built: tokens if given, no
    /// authentication only when asked for explicitly and on loopback. `members` names the
    /// organization of an access token that names none (`--oauth-issuer`).
    pub fn from_options(
        options: &HttpOptions,
        members: &'static dyn Members,
    ) -> anyhow::Result<Self> {
        if let Some(oauth) = &options.oauth {
            anyhow::ensure!(
                !options.no_auth,
                "--oauth-issuer and --no-auth exclude each other"
            );
            let tokens = match &options.tokens {
                Some(path) => Some(Arc::new(Tokens::load(path)?)),
                None => None,
            };
            return Ok(Auth::OAuth {
                options: oauth.clone(),
                tokens,
                members,
            });
        }
        match (&options.tokens, options.no_auth) {
            (Some(_), true) => anyhow::bail!("--tokens and --no-auth exclude each other"),
            (Some(path), false) => Ok(Auth::Tokens(Arc::new(Tokens::load(path)?))),
            (None, true) => {
                anyhow::ensure!(
                    options.addr.ip().is_loopback(),
                    "--no-auth is for local testing only: listen on a loopback address (127.0.0.1 or ::1), not {}",
                    options.addr.ip()
                );
                Ok(Auth::Off)
            }
            (None, false) => anyhow::bail!(
                "serving over HTTP needs --tokens FILE (bearer tokens; see docs/scaling.md) or \
                 --oauth-issuer URL (access tokens from an authorization server; docs/oauth.md), \
                 or --no-auth for local testing only"
            ),
        }
    }

    /// The caller a server falls back to for requests the HTTP layer named no caller for.
    pub fn default_caller(&self) -> Caller {
        match self {
            // Every request is authenticated; an unattributed one acts as nobody.
            Auth::Tokens(_) | Auth::OAuth { .. } => Caller::nobody(tokens::DEFAULT_HTTP_CLIENT),
            Auth::Off => Caller::from_env(),
        }
    }
}

/// The origins a browser page may call from when none are configured: this server's own.
pub(crate) fn default_origins(addr: SocketAddr) -> Vec<String> {
    let port = addr.port();
    let mut origins = vec![
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
        format!("http://[::1]:{port}"),
    ];
    if !addr.ip().is_loopback() && !addr.ip().is_unspecified() {
        origins.push(format!("http://{addr}"));
    }
    origins
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::members::NoMembers;

    fn options(addr: &str, tokens: Option<&str>, no_auth: bool) -> HttpOptions {
        HttpOptions {
            addr: addr.parse().unwrap(),
            tokens: tokens.map(PathBuf::from),
            no_auth,
            allowed_origins: vec![],
            allowed_hosts: vec![],
            oauth: None,
            limits: HttpLimits::default(),
        }
    }

    #[test]
    fn serving_without_tokens_needs_an_explicit_no_auth_on_loopback() {
        let err = Auth::from_options(&options("127.0.0.1:0", None, false), &NoMembers).unwrap_err();
        assert!(err.to_string().contains("--tokens FILE"), "{err}");
        assert!(matches!(
            Auth::from_options(&options("127.0.0.1:0", None, true), &NoMembers).unwrap(),
            Auth::Off
        ));
        assert!(Auth::from_options(&options("[::1]:0", None, true), &NoMembers).is_ok());
        let err = Auth::from_options(&options("0.0.0.0:8080", None, true), &NoMembers).unwrap_err();
        assert!(err.to_string().contains("loopback"), "{err}");
        assert!(
            Auth::from_options(
                &options("127.0.0.1:0", Some("/nonexistent"), false),
                &NoMembers
            )
            .is_err()
        );
    }

    #[test]
    fn default_origins_are_this_servers_own() {
        let o = default_origins("127.0.0.1:4123".parse().unwrap());
        assert!(o.contains(&"http://127.0.0.1:4123".to_owned()));
        assert!(o.contains(&"http://localhost:4123".to_owned()));
        assert!(o.iter().all(|o| o.ends_with(":4123")));
    }
}
