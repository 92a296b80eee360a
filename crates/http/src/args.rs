//! The HTTP face's flags, defined once for every command that serves over HTTP
//! (`gatehouse serve NAME --http`, `gatehouse-servers`, `gatehouse gateway --http`): each
//! names an `http` flag of its own command, which these require.

use std::time::Duration;

use clap::Args;

use crate::{HttpLimits, connections, sessions};

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
    /// Whether access tokens must be bound to a key (DPoP, RFC 9449): `allowed` takes
    /// bearer tokens too (a bound one still only with its proof); `required` takes bound
    /// ones only, and a 401 asks for DPoP.
    #[arg(
        long,
        value_enum,
        value_name = "POLICY",
        requires = "oauth_issuer",
        default_value = "allowed"
    )]
    pub oauth_dpop: crate::oauth::DpopPolicy,
    /// Ask the authorization server whether each access token is still active (token
    /// introspection, RFC 7662), as this client of its (the secret in
    /// $GATEHOUSE_OAUTH_INTROSPECTION_SECRET): a revoked token is refused within
    /// --oauth-revocation-bound, and opaque tokens are taken.
    #[arg(long, value_name = "CLIENT_ID", requires = "oauth_issuer")]
    pub oauth_introspection_client: Option<String>,
    /// Seconds an introspection answer is trusted: a token revoked at the authorization
    /// server is refused at most this long after.
    #[arg(long, value_name = "SECS", requires = "oauth_introspection_client",
          default_value_t = crate::oauth::introspection::DEFAULT_REVOCATION_BOUND.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=crate::oauth::introspection::MAX_REVOCATION_BOUND_SECS))]
    pub oauth_revocation_bound: u64,
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
                dpop: self.oauth_dpop,
                introspection: self.oauth_introspection_client.as_ref().map(|client_id| {
                    crate::oauth::introspection::IntrospectionOptions {
                        client_id: client_id.clone(),
                        bound: Duration::from_secs(self.oauth_revocation_bound),
                    }
                }),
            })
    }
}

/// The bounds of an HTTP server: connections, their times, and legacy sessions.
#[derive(Args, Debug, Clone)]
pub struct LimitArgs {
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

impl LimitArgs {
    /// The HTTP bounds these flags ask for (clap has checked each range; the connection
    /// bound is checked against the open-file limit when serving starts).
    pub fn limits(&self) -> HttpLimits {
        HttpLimits {
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
