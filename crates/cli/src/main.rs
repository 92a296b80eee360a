//! `gatehouse`: a thin command over the host library and the reference servers.

mod args;
mod output;

use std::{process::ExitCode, sync::Arc};

use clap::Parser;
use gatehouse::{
    config::{self, Config, Identity},
    model,
    person::{FixedAnswers, Terminal},
    trace::Trace,
    turn::{Host, Run},
};
use serde_json::json;

use args::{AskArgs, Cli, Command, HostArgs};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("gatehouse: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Ask(a) => ask(a).await,
            Command::Serve(s) => gatehouse_servers::serve_stdio(&s.name).await,
        }
    });
    // Servers and the host end with their work; nothing must linger in the background.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gatehouse: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The configuration a command runs with: a servers file, or the built-in servers.
fn load_config(host: &HostArgs) -> anyhow::Result<Config> {
    let identity = Identity {
        user: host.user.clone(),
        tenant: host.tenant.clone(),
    };
    let mut config = match &host.config {
        Some(path) => Config::load(path, &identity)?,
        None => Config::built_in(&std::env::current_exe()?, &identity),
    };
    if let Some(timeout) = config::tool_timeout_from_env().map_err(anyhow::Error::msg)? {
        config.settings.tool_timeout = timeout;
    }
    if let Some(n) = host.max_steps {
        anyhow::ensure!(n > 0, "--max-steps must be at least 1");
        config.settings.max_steps = n;
    }
    Ok(config)
}

async fn ask(args: AskArgs) -> anyhow::Result<()> {
    let config = load_config(&args.host)?;
    let model_spec = args
        .host
        .model
        .clone()
        .or(config.settings.model.clone())
        .unwrap_or_else(|| "scripted".into());
    let mut model = model::from_spec(&model_spec).map_err(anyhow::Error::msg)?;
    let approve = match (args.answers.yes, args.answers.no) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    };
    let person = Arc::new(Terminal::new(FixedAnswers {
        approve,
        ..FixedAnswers::default()
    }));
    let trace = Trace::new(Arc::new(output::Printer {
        steps_on_stdout: !args.json,
    }));
    let host = Host::start(&config, person, trace.clone()).await;
    let mut conversation = Vec::new();
    let (answer, usage) = host
        .ask(model.as_mut(), &mut conversation, &args.question)
        .await;
    host.shutdown().await;
    let usage = if usage.model_calls == 0 && usage.total_tokens == 0 {
        json!({})
    } else {
        serde_json::to_value(&usage)?
    };
    if args.json {
        let run = Run {
            question: args.question,
            answer,
            usage,
            steps: trace.take(),
        };
        println!("{}", serde_json::to_string_pretty(&run)?);
    } else {
        println!("\n{answer}");
    }
    Ok(())
}
