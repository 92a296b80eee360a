//! A server on Streamable HTTP: rmcp's client with the servers file's headers, and why a
//! connection failed in words, read from the HTTP status or the socket error itself (never
//! from text that happens to contain "401", such as a port number).

use std::collections::{BTreeMap, HashMap};

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::{
    service::ClientInitializeError,
    transport::{
        StreamableHttpClientTransport,
        streamable_http_client::{StreamableHttpClientTransportConfig, StreamableHttpError},
    },
};

/// The transport for a Streamable HTTP server: the revision's headers are rmcp's; the
/// servers file's headers (credentials) are added to every request.
pub(crate) fn transport(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    let mut custom = HashMap::new();
    let mut auth = None;
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("authorization")
            && let Some(token) = value.strip_prefix("Bearer ")
        {
            // rmcp sends bearer credentials itself.
            auth = Some(token.to_owned());
            continue;
        }
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("header name {name:?} is not valid"))?;
        let value = HeaderValue::from_str(value)
            .map_err(|_| format!("the value of header {name} is not a valid header value"))?;
        custom.insert(name, value);
    }
    let mut config = session_config(url).custom_headers(custom);
    if let Some(token) = auth {
        config = config.auth_header(token);
    }
    Ok(StreamableHttpClientTransport::from_config(config))
}

/// The transport for a Streamable HTTP server the host signs in to: as [`transport`], the
/// bearer token coming from the sign-in rather than from the headers.
pub(crate) fn signing_in(
    url: &str,
    headers: &BTreeMap<String, String>,
    client: super::auth::HostHttp,
) -> Result<StreamableHttpClientTransport<super::auth::HostHttp>, String> {
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("header name {name:?} is not valid"))?;
        let value = HeaderValue::from_str(value)
            .map_err(|_| format!("the value of header {name} is not valid header value"))?;
        custom.insert(name, value);
    }
    let config = session_config(url).custom_headers(custom);
    Ok(StreamableHttpClientTransport::with_client(client, config))
}

/// rmcp's transport settings for `url`, with a lost session recovered: a server on an
/// older revision that answers 404 to a request carrying its `Mcp-Session-Id` has
/// forgotten the session (restarted, or expired it) and did not process the request, so
/// the transport runs `initialize` again and sends each such request once more. A request
/// that failed any other way may have run, and is never sent again.
fn session_config(url: &str) -> StreamableHttpClientTransportConfig {
    StreamableHttpClientTransportConfig::with_uri(url.to_owned()).reinit_on_expired_session(true)
}

/// What an HTTP server's failure to connect comes down to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Failure {
    Status(u16),
    Refused,
    /// The server (or something on the way) reset or closed the connection.
    Reset,
    /// No route to the server's network or host.
    Unreachable,
    Unresolved,
    TimedOut,
    /// The server's TLS certificate was not accepted: rustls's reason.
    Certificate(String),
    /// What came back was not TLS (a plain-HTTP server at an https URL): rustls's words.
    NotTls(String),
    /// The TLS handshake failed otherwise (no common version or cipher): why.
    Tls(String),
    /// The connection failed in a way none of the above names: the innermost error's words.
    Connect(String),
    /// A sign-in failed, in the host's words.
    SignIn(String),
}

/// The HTTP status or socket error behind a failed start, if any is there to be read.
fn failure(e: &ClientInitializeError) -> Option<Failure> {
    match e {
        ClientInitializeError::LegacyFallbackFailed { discover, fallback } => {
            failure(fallback).or_else(|| failure(discover))
        }
        ClientInitializeError::TransportError { error, .. } => {
            let mut current: Option<&(dyn std::error::Error + 'static)> =
                Some(error.error.as_ref());
            while let Some(err) = current {
                if let Some(found) = from_error(err) {
                    return Some(found);
                }
                current = err.source();
            }
            e.is_authorization_required()
                .then_some(Failure::Status(401))
        }
        _ => None,
    }
}

/// The host's words for a sign-in that failed under `e`, anywhere in its sources.
pub(crate) fn sign_in_failure(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut current = Some(e);
    while let Some(err) = current {
        if let Some(Failure::SignIn(words)) = from_error(err) {
            return Some(words);
        }
        current = err.source();
    }
    None
}

fn from_error(err: &(dyn std::error::Error + 'static)) -> Option<Failure> {
    if let Some(http) = err.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        return match http {
            StreamableHttpError::Auth(rmcp::transport::auth::AuthError::AuthorizationFailed(
                words,
            )) => Some(Failure::SignIn(words.clone())),
            StreamableHttpError::Auth(e) => Some(Failure::SignIn(e.to_string())),
            StreamableHttpError::HttpStatus(s) => Some(Failure::Status(s.status)),
            StreamableHttpError::AuthRequired(_) => Some(Failure::Status(401)),
            StreamableHttpError::InsufficientScope(_) => Some(Failure::Status(403)),
            StreamableHttpError::SessionExpired => Some(Failure::Status(404)),
            // rmcp's own wording for a status it has no variant for: "HTTP 404 Not Found: …".
            StreamableHttpError::UnexpectedServerResponse(text) => text
                .strip_prefix("HTTP ")
                .and_then(|rest| rest.get(..3))
                .and_then(|code| code.parse().ok())
                .map(Failure::Status),
            StreamableHttpError::Client(e) => from_reqwest(e),
            _ => None,
        };
    }
    if let Some(e) = err.downcast_ref::<reqwest::Error>() {
        return from_reqwest(e);
    }
    if let Some(e) = err.downcast_ref::<std::io::Error>() {
        return from_io(e);
    }
    err.downcast_ref::<rustls::Error>().map(from_tls)
}

/// A socket's error, or the TLS error it carries. An I/O error may wrap another (hyper's
/// `Other` around the TLS stream's `InvalidData` around rustls's error), and its
/// `source()` skips the one it wraps, so each is looked into in turn.
fn from_io(e: &std::io::Error) -> Option<Failure> {
    use std::io::ErrorKind;
    let mut level = Some(e);
    while let Some(io) = level {
        let inner = io.get_ref();
        if let Some(tls) = inner.and_then(|i| i.downcast_ref::<rustls::Error>()) {
            return Some(from_tls(tls));
        }
        let found = match io.kind() {
            ErrorKind::ConnectionRefused => Some(Failure::Refused),
            ErrorKind::TimedOut => Some(Failure::TimedOut),
            ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::BrokenPipe
            | ErrorKind::UnexpectedEof => Some(Failure::Reset),
            ErrorKind::NetworkUnreachable | ErrorKind::HostUnreachable => {
                Some(Failure::Unreachable)
            }
            _ => None,
        };
        if found.is_some() {
            return found;
        }
        level = inner.and_then(|i| i.downcast_ref::<std::io::Error>());
    }
    None
}

fn from_tls(e: &rustls::Error) -> Failure {
    match e {
        rustls::Error::InvalidCertificate(_) => Failure::Certificate(e.to_string()),
        rustls::Error::InvalidMessage(_) => Failure::NotTls(e.to_string()),
        _ => Failure::Tls(e.to_string()),
    }
}

fn from_reqwest(e: &reqwest::Error) -> Option<Failure> {
    if let Some(status) = e.status() {
        return Some(Failure::Status(status.as_u16()));
    }
    if e.is_timeout() {
        return Some(Failure::TimedOut);
    }
    // The socket's own error (or TLS's), under reqwest's and hyper's.
    let mut current: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    let mut innermost = None;
    while let Some(err) = current {
        if let Some(found) = err.downcast_ref::<std::io::Error>().and_then(from_io) {
            return Some(found);
        }
        if let Some(tls) = err.downcast_ref::<rustls::Error>() {
            return Some(from_tls(tls));
        }
        let text = err.to_string();
        if text.contains("dns error") || text.contains("failed to lookup address") {
            return Some(Failure::Unresolved);
        }
        innermost = Some(text);
        current = err.source();
    }
    // A connection that failed for a reason not named above is said in its own words,
    // never as refused.
    e.is_connect()
        .then(|| Failure::Connect(innermost.unwrap_or_else(|| e.to_string())))
}

/// Why an HTTP server could not be reached, in words (never with the credentials).
pub(crate) fn reason(e: &ClientInitializeError) -> String {
    match failure(e) {
        Some(Failure::Status(401)) => "the server wants credentials it did not get or did not accept (401); check the headers in the servers file".into(),
        Some(Failure::Status(403)) => "the server refused these credentials (403)".into(),
        Some(Failure::Status(404)) => "there is no MCP endpoint at this URL (404)".into(),
        Some(Failure::Status(code @ 300..=399)) => format!(
            "the server answered with a redirect ({code}) that the host does not follow; give the URL it redirects to"
        ),
        Some(Failure::Status(429)) => "the server is limiting requests (429); try again later".into(),
        Some(Failure::Status(code @ 500..=599)) => {
            format!("the server failed to answer (HTTP {code})")
        }
        Some(Failure::Status(code)) => format!("the server answered HTTP {code}"),
        Some(Failure::Refused) => {
            "cannot connect: nothing answers at this address (connection refused)".into()
        }
        Some(Failure::Reset) => {
            "the connection was closed or reset before the server answered".into()
        }
        Some(Failure::Unreachable) => {
            "cannot connect: no route to the server's network or host".into()
        }
        Some(Failure::Unresolved) => "cannot connect: the host name does not resolve".into(),
        Some(Failure::TimedOut) => "cannot connect: the connection timed out".into(),
        Some(Failure::Certificate(why)) => format!(
            "the server's TLS certificate is not accepted ({}); check the URL's host name, \
             or that its certificate authority is one this machine trusts",
            words(&why)
        ),
        Some(Failure::NotTls(why)) => format!(
            "the server did not answer in TLS ({}); is the URL https for a server that \
             speaks http?",
            words(&why)
        ),
        Some(Failure::Tls(why)) => format!("the TLS handshake failed ({})", words(&why)),
        Some(Failure::Connect(why)) => format!("cannot connect: {}", words(&why)),
        Some(Failure::SignIn(words)) => words,
        None => format!("the start-up exchange failed: {e}"),
    }
}

/// A peer's or a library's words, on one line, made visible and clipped.
fn words(text: &str) -> String {
    crate::text::visible_line(&crate::text::clip(text, 200)).into_owned()
}
