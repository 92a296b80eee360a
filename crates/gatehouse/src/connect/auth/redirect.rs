//! The way back from the browser (RFC 8252 §7.3): a listener on 127.0.0.1 for one
//! `GET /callback`, and the redirect it carries read as the MCP spec says, whether it came
//! to the listener or the person pasted it: `state` must be this sign-in's; an `iss`
//! (RFC 9207) must be the authorization server's exactly, and must be there when its
//! metadata says it sends one; an error is shown only once the response is known to come
//! from that server.
//!
//! Written by hand rather than with a web framework: it reads one request line of a
//! loopback connection, bounded in size and time, and answers a fixed page that never
//! echoes what it was sent.

use std::time::Duration;

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
    sync::oneshot,
};
use tokio_util::sync::CancellationToken;

use crate::text::{clip, visible_line};

/// The path the authorization server redirects to.
pub const CALLBACK_PATH: &str = "/callback";
/// The most of a request the listener reads.
pub const MAX_REQUEST_BYTES: usize = 16 * 1024;
/// How long one connection to the listener may take to send its request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Most characters of an authorization server's error text shown.
pub const MAX_ERROR_CHARS: usize = 300;

const PAGE_DONE: &str = "<!doctype html><meta charset=utf-8><title>Gatehouse</title>\
<p>Gatehouse has the answer of the sign-in. You can close this tab and go back to the terminal.</p>";
const PAGE_NOT_HERE: &str = "Not Found";

/// A listener waiting for the browser.
pub struct Listener {
    /// The redirect URI to register and send: `http://127.0.0.1:PORT/callback`.
    pub redirect_uri: String,
    /// The redirect the browser came back with.
    pub arrived: oneshot::Receiver<String>,
    stop: CancellationToken,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Listener {
    /// Listen on 127.0.0.1: on `port` if given and free, else any free port (or, with
    /// `exactly`, the given port or an error). `finished` is cancelled when the browser
    /// came back.
    pub async fn start(
        port: Option<u16>,
        exactly: bool,
        finished: CancellationToken,
    ) -> Result<Listener, String> {
        let socket = match port {
            Some(p) => match TcpListener::bind(("127.0.0.1", p)).await {
                Ok(s) => s,
                Err(e) if exactly => {
                    return Err(format!(
                        "cannot listen on 127.0.0.1:{p} for the sign-in's redirect: {e}"
                    ));
                }
                Err(_) => TcpListener::bind(("127.0.0.1", 0)).await.map_err(|e| {
                    format!("cannot listen on 127.0.0.1 for the sign-in's redirect: {e}")
                })?,
            },
            None => TcpListener::bind(("127.0.0.1", 0)).await.map_err(|e| {
                format!("cannot listen on 127.0.0.1 for the sign-in's redirect: {e}")
            })?,
        };
        let port = socket
            .local_addr()
            .map_err(|e| format!("the listener has no address: {e}"))?
            .port();
        let redirect_uri = format!("http://127.0.0.1:{port}{CALLBACK_PATH}");
        let (tx, arrived) = oneshot::channel();
        let stop = CancellationToken::new();
        tokio::spawn(serve(socket, port, tx, stop.clone(), finished));
        Ok(Listener {
            redirect_uri,
            arrived,
            stop,
        })
    }
}

/// Accept connections until one brings the callback (or the listener is dropped).
async fn serve(
    socket: TcpListener,
    port: u16,
    tx: oneshot::Sender<String>,
    stop: CancellationToken,
    finished: CancellationToken,
) {
    let mut tx = Some(tx);
    loop {
        let (mut conn, _) = tokio::select! {
            accepted = socket.accept() => match accepted {
                Ok(c) => c,
                Err(_) => continue,
            },
            _ = stop.cancelled() => return,
        };
        let target = match tokio::time::timeout(REQUEST_TIMEOUT, request_target(&mut conn)).await {
            Ok(Some(t)) => t,
            _ => continue,
        };
        let is_callback = target.split('?').next() == Some(CALLBACK_PATH);
        let (status, page) = if is_callback {
            ("200 OK", PAGE_DONE)
        } else {
            ("404 Not Found", PAGE_NOT_HERE)
        };
        let answer = format!(
            "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncache-control: no-store\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{page}",
            page.len()
        );
        let _ = conn.write_all(answer.as_bytes()).await;
        let _ = conn.shutdown().await;
        if is_callback && let Some(tx) = tx.take() {
            let _ = tx.send(format!("http://127.0.0.1:{port}{target}"));
            finished.cancel();
            return;
        }
    }
}

/// The target of a `GET` request (`/callback?…`), read within [`MAX_REQUEST_BYTES`].
async fn request_target(conn: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = conn.read(&mut chunk).await.ok()?;
        if n == 0 || buf.len() + n > MAX_REQUEST_BYTES {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = std::str::from_utf8(&buf).ok()?;
    let line = head.lines().next()?;
    let mut parts = line.split(' ');
    (parts.next()? == "GET").then_some(())?;
    let target = parts.next()?;
    target.starts_with('/').then(|| target.to_owned())
}

/// What the authorization server's answer means for this sign-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Callback {
    /// A code to exchange, with the `iss` it came with.
    Code {
        /// The authorization code (a secret: never shown).
        code: String,
        /// The `state`, equal to this sign-in's.
        state: String,
        /// The `iss` parameter, if sent.
        iss: Option<String>,
    },
    /// The authorization server refused (`access_denied`, `invalid_scope`, …), in its words.
    Refused(String),
}

/// Why a redirect was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallbackError {
    /// Not a URL with a query.
    #[error("that is not the address the browser ended on (it has no code or error to read)")]
    NotARedirect,
    /// `state` missing or another sign-in's.
    #[error("the redirect is not for this sign-in (its state differs); start the sign-in again")]
    WrongState,
    /// `iss` missing though the authorization server says it sends one.
    #[error(
        "the redirect has no iss, though {0} says it always sends one (RFC 9207); the answer is not used"
    )]
    MissingIssuer(String),
    /// `iss` of another authorization server.
    #[error(
        "the redirect comes from another authorization server than {0} (its iss differs); the answer is not used"
    )]
    WrongIssuer(String),
}

/// Read a redirect for the sign-in with `state` at `issuer` (`iss_required` when its
/// metadata says `authorization_response_iss_parameter_supported`). The `iss` check comes
/// before anything else is read, so a forged error is never shown.
pub fn read(
    url: &str,
    state: &str,
    issuer: &str,
    iss_required: bool,
) -> Result<Callback, CallbackError> {
    let parsed = reqwest::Url::parse(url.trim()).map_err(|_| CallbackError::NotARedirect)?;
    let mut params = std::collections::HashMap::new();
    for (k, v) in parsed.query_pairs() {
        params
            .entry(k.into_owned())
            .or_insert_with(|| v.into_owned());
    }
    if params.get("state").map(String::as_str) != Some(state) {
        if !params.contains_key("code") && !params.contains_key("error") {
            return Err(CallbackError::NotARedirect);
        }
        return Err(CallbackError::WrongState);
    }
    // RFC 9207 §2.4, exactly: no normalization of case, port or a trailing slash.
    match params.get("iss") {
        Some(iss) if iss != issuer => return Err(CallbackError::WrongIssuer(issuer.to_owned())),
        None if iss_required => return Err(CallbackError::MissingIssuer(issuer.to_owned())),
        _ => {}
    }
    if let Some(error) = params.get("error") {
        let mut words = visible_line(error).into_owned();
        if let Some(d) = params.get("error_description") {
            words.push_str(": ");
            words.push_str(&visible_line(d));
        }
        return Ok(Callback::Refused(
            clip(&words, MAX_ERROR_CHARS).into_owned(),
        ));
    }
    let code = params
        .get("code")
        .filter(|c| !c.is_empty())
        .ok_or(CallbackError::NotARedirect)?;
    Ok(Callback::Code {
        code: code.clone(),
        state: state.to_owned(),
        iss: params.get("iss").cloned(),
    })
}

/// The `state` of an authorization URL.
pub fn state_of(authorization_url: &str) -> Option<String> {
    reqwest::Url::parse(authorization_url)
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
}

#[cfg(test)]
mod tests {
    use super::{Callback, CallbackError, MAX_ERROR_CHARS, read};

    const ISS: &str = "https://as.example.com";
    const BACK: &str = "http://127.0.0.1:5000/callback";

    fn at(query: &str) -> String {
        format!("{BACK}?{query}")
    }

    #[test]
    fn a_code_with_this_state_and_issuer_is_taken() {
        let got = read(
            &at("code=c1&state=s1&iss=https%3A%2F%2Fas.example.com"),
            "s1",
            ISS,
            true,
        );
        assert_eq!(
            got,
            Ok(Callback::Code {
                code: "c1".into(),
                state: "s1".into(),
                iss: Some(ISS.into())
            })
        );
        // Without iss, when the metadata does not promise one.
        assert!(matches!(
            read(&at("code=c1&state=s1"), "s1", ISS, false),
            Ok(Callback::Code { iss: None, .. })
        ));
    }

    #[test]
    fn another_sign_ins_state_is_refused_before_anything_else() {
        for query in [
            "code=c1&state=other",
            "code=c1",
            "error=access_denied&state=other",
        ] {
            assert_eq!(
                read(&at(query), "s1", ISS, false),
                Err(CallbackError::WrongState),
                "{query}"
            );
        }
        assert_eq!(
            read(&at("state=s1"), "s1", ISS, false),
            Err(CallbackError::NotARedirect)
        );
        assert_eq!(
            read("not a url", "s1", ISS, false),
            Err(CallbackError::NotARedirect)
        );
    }

    #[test]
    fn the_issuer_is_compared_exactly_and_a_forged_error_is_not_shown() {
        for iss in [
            "https://evil.example.com",
            "https://as.example.com/",
            "https://AS.example.com",
        ] {
            let query = format!("error=access_denied&error_description=call+us&state=s1&iss={iss}");
            assert_eq!(
                read(&at(&query), "s1", ISS, false),
                Err(CallbackError::WrongIssuer(ISS.into())),
                "{iss}"
            );
        }
        assert_eq!(
            read(&at("code=c1&state=s1"), "s1", ISS, true),
            Err(CallbackError::MissingIssuer(ISS.into()))
        );
    }

    #[test]
    fn the_authorization_servers_refusal_is_shown_visible_and_bounded() {
        let long = "x".repeat(MAX_ERROR_CHARS * 3);
        let query = format!("error=access_denied&error_description=%1B%5B31m{long}&state=s1");
        match read(&at(&query), "s1", ISS, false) {
            Ok(Callback::Refused(words)) => {
                assert!(words.starts_with("access_denied: "), "{words}");
                assert!(!words.contains('\u{1b}'));
                assert!(
                    words.chars().count() <= MAX_ERROR_CHARS + 1,
                    "{}",
                    words.len()
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
