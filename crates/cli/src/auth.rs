//! `gatehouse auth login|status|logout`: the sign-ins to HTTP servers that ask for one
//! (OAuth), from the command line. The host library does the work
//! (`gatehouse::connect::auth::account`); this shows it. No token is ever printed.

use std::sync::Arc;

use gatehouse::{
    config::Config,
    connect::{
        self,
        auth::{
            SignInLimits,
            account::{self, Status},
            revoke::Revoked,
        },
    },
    person::{FixedAnswers, SignInOptions, Terminal},
    text::{visible, visible_json},
    trace::Trace,
};

use crate::{
    args::{AuthArgs, AuthCommand, AuthLoginArgs, AuthLogoutArgs, AuthStatusArgs, HostArgs},
    screen::{Level, Printer, StepsTo},
};

pub async fn run(args: AuthArgs) -> anyhow::Result<()> {
    match args.command {
        AuthCommand::Login(a) => login(a).await,
        AuthCommand::Status(s) => status(s).await,
        AuthCommand::Logout(l) => logout(l).await,
    }
}

/// The servers file and the named server in it.
fn server(host: &HostArgs, name: &str) -> anyhow::Result<(Config, gatehouse::config::ServerSpec)> {
    let config = crate::start::load_config(host, true)?;
    let spec = config
        .servers
        .iter()
        .find(|s| s.name == name)
        .cloned()
        .ok_or_else(|| match config.broken.iter().find(|(n, _)| n == name) {
            Some((_, why)) => anyhow::anyhow!("server {name} cannot be used: {why}"),
            None => anyhow::anyhow!("there is no server named {name:?} in {}", config.source),
        })?;
    Ok((config, spec))
}

/// Sign in now, then connect once with the new sign-in to show that it works.
async fn login(args: AuthLoginArgs) -> anyhow::Result<()> {
    let (config, spec) = server(&args.host, &args.name)?;
    account::signable(&spec).map_err(anyhow::Error::msg)?;
    let person = Arc::new(
        Terminal::new(FixedAnswers::default()).signing_in(SignInOptions {
            open_browser: args.open || config.settings.open_browser,
            without_terminal: true,
        }),
    );
    // The host's steps (discovery, registration) go to stderr, beside the prompt.
    let printer = Arc::new(Printer::new(
        StepsTo::Stderr,
        Level::Normal,
        clap::ColorChoice::Auto,
        None,
    ));
    let trace = Trace::new(printer);
    let limits = SignInLimits::from_settings(&config.settings);
    let signed_in = account::login(&spec, person.clone(), &trace, limits)
        .await
        .map_err(|e| anyhow::anyhow!("server {}: {e}", args.name))?;
    let scopes = if signed_in.scopes.is_empty() {
        "no scope named".to_owned()
    } else {
        signed_in.scopes.join(" ")
    };
    println!(
        "Signed in to {} at {} ({scopes}).",
        visible(&args.name),
        visible(&signed_in.issuer)
    );
    let limits = connect::Limits::from_settings(&config.settings);
    let tools = tools_with_sign_in(&spec, person, &trace, limits).await?;
    println!(
        "{} answers with the sign-in: {tools} tools.",
        visible(&args.name)
    );
    Ok(())
}

/// Connect with the kept sign-in and count the server's tools.
async fn tools_with_sign_in(
    spec: &gatehouse::config::ServerSpec,
    person: Arc<Terminal>,
    trace: &Trace,
    limits: connect::Limits,
) -> anyhow::Result<usize> {
    let conn = connect::connect(spec, person, trace, limits).await?;
    let listed = gatehouse::catalog::list_tools(&conn, gatehouse::catalog::live::MAX_LIST_PAGES)
        .await
        .map(|l| l.tools.len())
        .map_err(|e| e.to_string());
    conn.close().await;
    listed.map_err(|e| {
        anyhow::anyhow!(
            "signed in, but {} does not list its tools with the sign-in: {e}",
            spec.name
        )
    })
}

/// When `at` (seconds since 1970) is from now, in words.
fn expiry(at: u64, now: u64) -> String {
    if at <= now {
        format!(
            "expired {} ago",
            gatehouse::text::seconds(std::time::Duration::from_secs(now - at))
        )
    } else {
        format!(
            "expires in {}",
            gatehouse::text::seconds(std::time::Duration::from_secs(at - now))
        )
    }
}

fn status_line(s: &Status, now: u64) -> String {
    if !s.signed_in {
        return format!(
            "{}  not signed in ({})  grant: {}",
            s.server,
            gatehouse::redact::url(&s.url),
            s.grant
        );
    }
    let expires = s
        .expires_at
        .map_or_else(|| "no expiry given".to_owned(), |at| expiry(at, now));
    format!(
        "{}  signed in at {}  grant: {}  scopes: {}  access token {}{}  client: {}  kept in {}",
        s.server,
        s.issuer.as_deref().unwrap_or("?"),
        s.grant,
        if s.scopes.is_empty() {
            "(none named)".to_owned()
        } else {
            s.scopes.join(" ")
        },
        expires,
        if s.refreshable { ", refreshable" } else { "" },
        s.client.as_deref().unwrap_or("?"),
        s.kept_in.as_deref().unwrap_or("?"),
    )
}

async fn status(args: AuthStatusArgs) -> anyhow::Result<()> {
    let config = crate::start::load_config(&args.host, !args.json)?;
    let limits = SignInLimits::from_settings(&config.settings);
    let all = account::status(&config.servers, limits)
        .await
        .map_err(anyhow::Error::msg)?;
    if args.json {
        let mut value = serde_json::to_value(&all)?;
        visible_json(&mut value);
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    if all.is_empty() {
        println!(
            "No server in {} asks for a sign-in (HTTP servers without an Authorization header do).",
            config.source
        );
        return Ok(());
    }
    let now = gatehouse::connect::auth::store::now_secs();
    for s in &all {
        println!("{}", visible(&status_line(s, now)));
    }
    Ok(())
}

async fn logout(args: AuthLogoutArgs) -> anyhow::Result<()> {
    let (config, spec) = server(&args.host, &args.name)?;
    let limits = SignInLimits::from_settings(&config.settings);
    let out = account::logout(&spec, limits)
        .await
        .map_err(anyhow::Error::msg)?;
    if out.is_empty() {
        println!("{} was not signed in.", visible(&args.name));
        return Ok(());
    }
    for signed_out in out {
        let what = match &signed_out.revoked {
            Revoked::Done => "its tokens revoked there".to_owned(),
            Revoked::NotOffered => {
                "the authorization server offers no revocation; the tokens lapse by themselves"
                    .to_owned()
            }
            Revoked::Failed(why) => {
                format!("revoking the tokens there failed ({why}); they lapse by themselves")
            }
        };
        println!(
            "Signed out of {} at {}: {}; nothing is kept here.",
            visible(&args.name),
            visible(&signed_out.issuer),
            visible(&what)
        );
    }
    Ok(())
}
