//! The approval page's client at the `--oauth-issuer`, from the flags, checked when read:
//! its id, and its secret from the environment or a file (never the command line).

use gatehouse::text;
use gatehouse_gateway::page::sign_in::{PageClient, Secret};

use crate::args::GatewayArgs;

/// Where the page's client secret may come from besides a file (never the command line).
pub const CLIENT_SECRET_ENV: &str = "GATEHOUSE_APPROVAL_PAGE_CLIENT_SECRET";
/// The largest secret file read.
const MAX_SECRET_FILE_BYTES: u64 = 4096;
/// The longest client id or secret taken.
const MAX_CLIENT_CHARS: usize = 1024;

/// The page's client from the flags, checked when read: `--approval-page-client-id`, its
/// secret from [`CLIENT_SECRET_ENV`] or `--approval-page-client-secret-file` (not both),
/// none for a public client. Required with `--approval-page` and `--oauth-issuer`.
pub fn client_of(args: &GatewayArgs) -> anyhow::Result<Option<PageClient>> {
    let Some(id) = &args.approval_page_client_id else {
        anyhow::ensure!(
            args.approval_page.is_none() || args.oauth.oauth_issuer.is_none(),
            "with --oauth-issuer the approval page signs people in there: give it \
             --approval-page-client-id, the client registered at the issuer for the \
             redirect URI {}/approve/callback",
            text::visible_line(
                args.approval_page
                    .as_deref()
                    .unwrap_or_default()
                    .trim_end_matches('/')
            )
        );
        return Ok(None);
    };
    let usable = |v: &str| {
        !v.is_empty() && v.chars().count() <= MAX_CLIENT_CHARS && !v.chars().any(char::is_control)
    };
    anyhow::ensure!(
        usable(id),
        "--approval-page-client-id must be 1 to {MAX_CLIENT_CHARS} printable characters"
    );
    let from_env = std::env::var(CLIENT_SECRET_ENV)
        .ok()
        .filter(|v| !v.is_empty());
    let secret = match (&args.approval_page_client_secret_file, from_env) {
        (Some(_), Some(_)) => anyhow::bail!(
            "the approval page's client secret is given twice: by {CLIENT_SECRET_ENV} and by \
             --approval-page-client-secret-file; give one"
        ),
        (Some(path), None) => Some(secret_file(path)?),
        (None, env) => env,
    };
    if let Some(secret) = &secret {
        anyhow::ensure!(
            usable(secret),
            "the approval page's client secret must be 1 to {MAX_CLIENT_CHARS} printable characters"
        );
    }
    Ok(Some(PageClient {
        id: id.clone(),
        secret: secret.map(Secret::new),
    }))
}

/// The secret in a file: its first line, at most [`MAX_SECRET_FILE_BYTES`] read.
fn secret_file(path: &std::path::Path) -> anyhow::Result<String> {
    use std::io::Read;
    let shown = path.display();
    let file = std::fs::File::open(path)
        .map_err(|e| anyhow::anyhow!("--approval-page-client-secret-file {shown}: {e}"))?;
    let mut text = String::new();
    file.take(MAX_SECRET_FILE_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| anyhow::anyhow!("--approval-page-client-secret-file {shown}: {e}"))?;
    Ok(text.lines().next().unwrap_or("").trim().to_owned())
}
