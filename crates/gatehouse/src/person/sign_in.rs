//! Signing in to a server: what the person is shown (the server, the authorization server,
//! the scopes, the address to open) and how the sign-in comes back: by itself, when the
//! browser returns to the host's listener on 127.0.0.1, or as the address the browser
//! ended on, pasted at the terminal (a machine without a browser, or another machine's).
//!
//! The address is always shown, and opened in a browser only when the person asked for
//! that (`gatehouse auth login --open`, the `openBrowser` setting): never silently.

use std::io::Write;

use tokio_util::sync::CancellationToken;

use crate::text::visible_line;

/// What the person is asked to do to sign in.
#[derive(Debug, Clone)]
pub struct SignInRequest {
    /// The server that needs the sign-in.
    pub server: String,
    /// The authorization server's issuer.
    pub issuer: String,
    /// The scopes asked for.
    pub scopes: Vec<String>,
    /// The address to open in a browser (the authorization request).
    pub url: String,
    /// Cancelled when the sign-in finished another way (the browser came back to the
    /// listener) or ran out of time: stop waiting for the person then.
    pub finished: CancellationToken,
}

/// How the person answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignInAnswer {
    /// The address the browser ended on, pasted.
    Pasted(String),
    /// The sign-in finished another way while the person was asked ([`SignInRequest::finished`]).
    Finished,
    /// The person cancelled.
    Declined,
}

/// How the terminal signs in.
#[derive(Debug, Clone, Copy, Default)]
pub struct SignInOptions {
    /// Open the address in the browser (`$BROWSER`, else the system's opener).
    pub open_browser: bool,
    /// Sign in even without a terminal, waiting for the browser to come back
    /// (`gatehouse auth login`); otherwise a run without a terminal cannot sign in.
    pub without_terminal: bool,
}

/// Open `url` in the person's browser: `$BROWSER` (its first command, given the URL as its
/// one argument, never through a shell), else `xdg-open` or `open`. Whether it started.
pub fn open_browser(url: &str) -> Result<(), String> {
    let program = std::env::var("BROWSER")
        .ok()
        .and_then(|b| b.split(':').next().map(str::trim).map(str::to_owned))
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| {
            if cfg!(target_os = "macos") {
                "open"
            } else {
                "xdg-open"
            }
            .into()
        });
    let mut child = std::process::Command::new(&program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    // Reaped when it ends, whenever that is.
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}

/// Tell the person what to do to sign in.
pub fn show(screen: &mut dyn Write, request: &SignInRequest, opened: Option<&Result<(), String>>) {
    let scopes = if request.scopes.is_empty() {
        "no particular scope".to_owned()
    } else {
        request.scopes.join(" ")
    };
    let _ = writeln!(
        screen,
        "\n[host] {} needs you to sign in at {} (for {}).\n  Open this address in a browser:\n\n  {}\n",
        visible_line(&request.server),
        visible_line(&request.issuer),
        visible_line(&scopes),
        visible_line(&request.url)
    );
    match opened {
        Some(Ok(())) => {
            let _ = writeln!(screen, "  (opened in your browser)");
        }
        Some(Err(e)) => {
            let _ = writeln!(screen, "  (could not open a browser: {})", visible_line(e));
        }
        None => {}
    }
    let _ = screen.flush();
}

/// Wait for a line typed at the terminal, or for `finished`: `None` when finished first,
/// `Some(None)` at the end of input, `Some(Some(line))` for a line. Blocking; nothing is
/// read from stdin once `finished` is cancelled, so no later answer is taken.
#[cfg(unix)]
pub fn line_or_finished(finished: &CancellationToken) -> Option<Option<String>> {
    use std::io::BufRead;
    loop {
        if finished.is_cancelled() {
            return None;
        }
        let mut fd = libc::pollfd {
            fd: 0,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, for the duration of the call.
        let ready = unsafe { libc::poll(&mut fd, 1, 100) };
        if ready < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return Some(None);
        }
        if ready > 0 {
            let mut line = String::new();
            return match std::io::stdin().lock().read_line(&mut line) {
                Ok(0) | Err(_) => Some(None),
                Ok(_) => Some(Some(line.trim().to_owned())),
            };
        }
    }
}

/// Wait for a line typed at the terminal (without `poll`, `finished` is not watched).
#[cfg(not(unix))]
pub fn line_or_finished(_finished: &CancellationToken) -> Option<Option<String>> {
    use std::io::BufRead;
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => Some(None),
        Ok(_) => Some(Some(line.trim().to_owned())),
    }
}
