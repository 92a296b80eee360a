//! `gatehouse policy explain`, `gatehouse approvals list|revoke`, `gatehouse ledger
//! verify|show`: the person's policy, read back. Thin: the library decides, verifies and
//! reads; this prints, and never shows a peer's text raw.

use std::{path::PathBuf, time::SystemTime};

use anyhow::Context;
use gatehouse::{
    approvals::ProjectFile,
    catalog::cached::{self, Unusable},
    config::{self, Identity},
    gate::Gate,
    ledger,
    model::ToolCall,
    person::{FixedAnswers, Terminal},
    policy::Explanation,
    text::{visible, visible_json, visible_line},
    trace::Trace,
};
#[cfg(feature = "gateway")]
use gatehouse_gateway::{self as gateway, store::Location};
use serde_json::{Value, json};

use crate::args::{
    ApprovalsArgs, ApprovalsCommand, ExplainArgs, LedgerArgs, LedgerCommand, PolicyArgs,
    PolicyCommand,
};
use crate::screen::{Level, StepsTo};

/// `gatehouse policy …`.
pub async fn policy(args: PolicyArgs) -> anyhow::Result<()> {
    match args.command {
        PolicyCommand::Explain(e) => explain(e).await,
    }
}

/// Explain one call. The tools come from the catalog the last start kept, when it is
/// fresh for this servers file (said on the screen), else from the servers, started.
async fn explain(args: ExplainArgs) -> anyhow::Result<()> {
    let call = ToolCall {
        id: "explain".into(),
        name: args.tool.clone(),
        arguments: args.arguments.clone().unwrap_or_else(|| "{}".into()),
    };
    let screen = &args.start.screen;
    let config =
        crate::start::load_config(&args.start.host, crate::start::level(screen) > Level::Quiet)?;
    let trace = Trace::new(crate::start::printer(screen, &config, StepsTo::Stderr)?);
    let cached = if args.fresh {
        None
    } else {
        let path = cached::path(&config::state_dir(), &config.source);
        let only = args.start.host.tools.as_deref();
        match cached::load(&path, &config, only, SystemTime::now()) {
            Ok(cached) => Some(cached),
            Err(Unusable::Missing) => None,
            Err(why) => {
                eprintln!("gatehouse: {why}: starting the servers");
                None
            }
        }
    };
    let (explanation, source) = match cached {
        Some(cached) => {
            let here = std::env::current_dir().context("cannot tell the current folder")?;
            let project = ProjectFile::find(&here, &config::state_dir());
            let gate = Gate::new(&config.settings, Some(project), &trace);
            let explanation = gate.explain(&call, &cached.catalog, &config.settings).await;
            (explanation, CatalogFrom::Cache(Box::new(cached)))
        }
        None => {
            // Nobody is asked anything: explaining sends nothing.
            let person = std::sync::Arc::new(Terminal::new(FixedAnswers {
                approve: Some(false),
                ..FixedAnswers::default()
            }));
            let host = crate::start::start_host(&args.start.host, &config, person, trace).await;
            let catalog = host.live().current().clone();
            let explanation = host.gate().explain(&call, &catalog, host.settings()).await;
            host.shutdown().await;
            (explanation, CatalogFrom::Servers)
        }
    };
    if args.json {
        let mut v = serde_json::to_value(&explanation)?;
        v["catalog"] = source.json();
        visible_json(&mut v);
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", explained(&call, &explanation));
        if let Some(note) = source.note() {
            println!("{note}");
        }
    }
    Ok(())
}

/// Where an explanation's tools came from.
enum CatalogFrom {
    /// The servers, started for it.
    Servers,
    /// The catalog a start kept.
    Cache(Box<cached::Cached>),
}

impl CatalogFrom {
    fn cached_at(cached: &cached::Cached) -> String {
        chrono::DateTime::<chrono::Utc>::from(cached.taken_at)
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    }

    /// `--json`'s `catalog`.
    fn json(&self) -> Value {
        match self {
            CatalogFrom::Servers => json!({"from": "servers"}),
            CatalogFrom::Cache(cached) => json!({
                "from": "cache",
                "cached_at": CatalogFrom::cached_at(cached),
                "not_started": cached.not_started,
            }),
        }
    }

    /// The line that says the tools came from a cached catalog.
    fn note(&self) -> Option<String> {
        let CatalogFrom::Cache(cached) = self else {
            return None;
        };
        let missing = if cached.not_started.is_empty() {
            String::new()
        } else {
            format!(
                "; {} did not start then",
                visible_line(&cached.not_started.join(", "))
            )
        };
        Some(format!(
            "  (the tools from the catalog cached at {}{missing}; `--fresh` starts the servers)",
            CatalogFrom::cached_at(cached)
        ))
    }
}

/// The explanation as the person reads it.
fn explained(call: &ToolCall, e: &Explanation) -> String {
    let mut out = format!(
        "{} {}: {} (by {})\n  {}\n",
        visible_line(&call.name),
        visible_line(&call.arguments),
        e.verdict,
        e.by,
        visible(&e.because)
    );
    if e.rules.is_empty() {
        out.push_str("  no rule's tool pattern matches this name\n");
    }
    for r in &e.rules {
        let applies = if r.applies {
            "applies"
        } else {
            "does not apply"
        };
        out.push_str(&format!(
            "  {} (tool {}, {}): {applies}\n",
            r.rule,
            visible_line(&r.tool),
            r.decision.as_str()
        ));
        for (condition, found) in &r.conditions {
            out.push_str(&format!("    {}: {found}\n", visible_line(condition)));
        }
    }
    out
}

/// The project of the current folder, sealed with the person's key.
fn project() -> anyhow::Result<ProjectFile> {
    let here = std::env::current_dir().context("cannot tell the current folder")?;
    Ok(ProjectFile::find(&here, &config::state_dir()))
}

/// `gatehouse approvals …`.
pub fn approvals(args: ApprovalsArgs) -> anyhow::Result<()> {
    let file = project()?;
    match args.command {
        ApprovalsCommand::List { json } => {
            let entries = file.read().map_err(anyhow::Error::msg)?;
            if json {
                let mut rows: Value = entries
                    .iter()
                    .map(|(e, sealed)| json!({"tool": e.tool, "fingerprint": e.fingerprint, "approved_at": e.approved_at, "sealed": sealed}))
                    .collect();
                visible_json(&mut rows);
                println!("{}", serde_json::to_string_pretty(&rows)?);
                return Ok(());
            }
            println!("approvals in {}:", file.path().display());
            if entries.is_empty() {
                println!("  none");
            }
            for (e, sealed) in &entries {
                let note = if *sealed {
                    ""
                } else {
                    "  (not sealed for you: ignored)"
                };
                let short = e.fingerprint.get(..12).unwrap_or(&e.fingerprint);
                println!(
                    "  {}  approved {}  definition {}{note}",
                    visible_line(&e.tool),
                    visible_line(&e.approved_at),
                    visible_line(short)
                );
            }
            Ok(())
        }
        ApprovalsCommand::Revoke { tools, all } => {
            let which = (!all).then_some(tools.as_slice());
            let removed = file.revoke(which).map_err(anyhow::Error::msg)?;
            println!(
                "revoked {removed} approval{} in {}",
                if removed == 1 { "" } else { "s" },
                file.path().display()
            );
            anyhow::ensure!(
                all || removed > 0,
                "no approval of {} in this project",
                visible(&tools.join(", "))
            );
            Ok(())
        }
    }
}

/// The ledger's file: `--file`, else the servers file's `ledger`, else the default.
fn ledger_file(args: &LedgerArgs) -> anyhow::Result<PathBuf> {
    if let Some(file) = &args.file {
        return Ok(file.clone());
    }
    // A project's file names the ledger only when the person trusted that setting.
    let found = gatehouse::config::project::Found::locate(args.config.clone());
    let settings = crate::project::load_found(
        &found,
        &Identity::default(),
        crate::project::Asking::Never,
        crate::start::built_in_file,
    )?
    .settings
    .ledger;
    Ok(settings.file())
}

/// `gatehouse ledger …`.
pub fn ledger(args: LedgerArgs) -> anyhow::Result<()> {
    if let Some(state) = &args.state {
        #[cfg(feature = "gateway")]
        {
            let state = Location::parse(state).map_err(anyhow::Error::msg)?;
            return in_store(&state, args.command);
        }
        #[cfg(not(feature = "gateway"))]
        {
            let _ = state;
            return Err(crate::left_out("gateway", "the gateway's store"));
        }
    }
    let path = ledger_file(&args)?;
    match args.command {
        LedgerCommand::Verify => match ledger::verify(&path) {
            Ok(v) => {
                println!(
                    "{}: {} lines, the chain holds; head {}",
                    path.display(),
                    v.lines,
                    v.head
                );
                if let Some(note) = v.note {
                    println!("note: {note}");
                }
                Ok(())
            }
            Err(bad) => anyhow::bail!("the ledger {} is broken at {bad}", path.display()),
        },
        LedgerCommand::Show { since, json } => show(&path, since.as_deref(), json),
    }
}

/// `gatehouse ledger verify|show --state URL`: the ledger a gateway keeps in PostgreSQL.
#[cfg(feature = "gateway")]
fn in_store(state: &Location, command: LedgerCommand) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let kept = runtime
        .block_on(gateway::store::kept_ledger(state))
        .map_err(anyhow::Error::msg)?;
    match (command, kept.verified) {
        (LedgerCommand::Verify, Ok(v)) => {
            println!(
                "{state}: {} lines, the chain holds; head {}",
                v.lines, v.head
            );
            if let Some(note) = v.note {
                println!("note: {note}");
            }
            Ok(())
        }
        (LedgerCommand::Verify, Err(bad)) => {
            anyhow::bail!("the ledger in {state} is broken at {bad}")
        }
        (LedgerCommand::Show { since, json }, verified) => {
            print_entries(kept.entries, since.as_deref(), json)?;
            if let Err(bad) = verified {
                eprintln!("gatehouse: warning: the ledger is broken at {bad}");
            }
            Ok(())
        }
    }
}

fn show(path: &std::path::Path, since: Option<&str>, json: bool) -> anyhow::Result<()> {
    print_entries(
        ledger::read_entries(path).map_err(anyhow::Error::msg)?,
        since,
        json,
    )?;
    if let Err(bad) = ledger::verify(path) {
        eprintln!("gatehouse: warning: the ledger is broken at {bad}");
    }
    Ok(())
}

/// The decisions, oldest first, since `since`: as lines for a person, or as JSON.
fn print_entries(entries: Vec<Value>, since: Option<&str>, json: bool) -> anyhow::Result<()> {
    let since = since.map(parse_since).transpose()?;
    for mut entry in entries {
        let time = entry["time"]
            .as_str()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
        if let (Some(since), Some(time)) = (since, time)
            && time < since
        {
            continue;
        }
        visible_json(&mut entry);
        if json {
            println!("{entry}");
            continue;
        }
        let s = |k: &str| entry[k].as_str().unwrap_or("-").to_owned();
        let answer = match (entry["answer"].as_str(), entry["by"].as_str()) {
            (Some(a), Some(by)) => format!(" {a} by {by}"),
            _ => String::new(),
        };
        println!(
            "{:>5} {} {:<7} {} on {} ({}){answer}",
            entry["seq"].to_string(),
            s("time"),
            s("decision"),
            visible_line(&s("tool")),
            visible_line(&s("server")),
            s("rule")
        );
    }
    Ok(())
}

/// `--since`: RFC 3339, a date (UTC), or an age (`30m`, `2h`, `7d`, `45s`).
fn parse_since(text: &str) -> anyhow::Result<chrono::DateTime<chrono::FixedOffset>> {
    use chrono::{NaiveDate, TimeDelta, Utc};
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Ok(t);
    }
    if let Ok(d) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(d
            .and_hms_opt(0, 0, 0)
            .expect("midnight exists")
            .and_utc()
            .fixed_offset());
    }
    let (number, unit) = text.split_at(text.len().saturating_sub(1));
    let n: i64 = number.parse().ok().filter(|n| *n >= 0 && *n <= 100_000).with_context(|| {
        format!("--since {text:?}: give a time (2026-12-01T10:00:00Z), a date (2026-12-01) or an age (30m, 2h, 7d)")
    })?;
    let age = match unit {
        "s" => TimeDelta::seconds(n),
        "m" => TimeDelta::minutes(n),
        "h" => TimeDelta::hours(n),
        "d" => TimeDelta::days(n),
        _ => anyhow::bail!("--since {text:?}: an age ends in s, m, h or d"),
    };
    Ok((Utc::now() - age).fixed_offset())
}
