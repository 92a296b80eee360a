//! `gatehouse`: a thin command over the host library and the reference servers.

#![warn(clippy::too_many_lines)]

mod allocator;
mod args;
mod ask;
mod auth;
mod call;
mod doctor;
mod eval;
#[cfg(feature = "gateway")]
mod gateway;
mod harden;
#[cfg(feature = "lab")]
mod lab;
mod manual;
mod mcp;
mod output;
mod policy_commands;
mod project;
mod record;
mod screen;
mod start;
mod tasks;
mod ticker;

use std::process::ExitCode;

use clap::Parser;
use gatehouse::text::visible;

use args::{Cli, Command};

fn main() -> ExitCode {
    // The launcher of a server's box (`gatehouse::sandbox`): this binary started by itself
    // to confine itself and exec the server, before anything else runs.
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv
        .get(1)
        .is_some_and(|a| a == gatehouse::connect::sandbox::BOX_ARG)
    {
        gatehouse::connect::sandbox::exec_boxed(argv);
    }
    if let Ok(exe) = std::env::current_exe() {
        gatehouse::connect::sandbox::set_launcher(exe);
    }
    let cli = Cli::parse();
    harden::process(&cli.command);
    let exporter = match telemetry(&cli.command) {
        Ok(exporter) => exporter,
        Err(e) => {
            eprintln!("gatehouse: {}", visible(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    let code = dispatch(cli.command);
    if let Some(exporter) = exporter {
        report_delivery(&exporter.finish());
    }
    code
}

/// The OTLP exporter of a command that makes or answers MCP requests, when the
/// environment names a collector (`gatehouse::telemetry`): the host's commands as the
/// service `gatehouse`, the gateway as `gatehouse-gateway`.
fn telemetry(
    command: &Command,
) -> Result<Option<gatehouse::telemetry::Exporter>, gatehouse::telemetry::TelemetryError> {
    let service = match command {
        Command::Gateway(_) => "gatehouse-gateway",
        Command::Serve(_)
        | Command::Replay(_)
        | Command::Completions(_)
        | Command::Man
        | Command::Approvals(_)
        | Command::Ledger(_) => return Ok(None),
        _ => "gatehouse",
    };
    gatehouse::telemetry::Exporter::start(service)
}

/// Spans that did not reach the collector, said once at exit.
fn report_delivery(delivery: &gatehouse::telemetry::Delivery) {
    let Some(why) = delivery.last_error() else {
        return;
    };
    // No batch failed, but the exporter could not finish (the flush at exit timed out):
    // how many spans that left behind is not known, so no count is given.
    if delivery.lost() == 0 {
        eprintln!(
            "gatehouse: the OpenTelemetry exporter did not finish sending: {}",
            visible(&why)
        );
        return;
    }
    eprintln!(
        "gatehouse: {} of {} spans did not reach the OpenTelemetry collector: {}",
        delivery.lost(),
        delivery.lost() + delivery.sent(),
        visible(&why)
    );
}

/// Run the command; its exit status.
fn dispatch(command: Command) -> ExitCode {
    let result = match command {
        Command::Serve(s) => serve(s),
        Command::Ask(a) => on_thread_pool(ask::ask(a)),
        Command::Chat(c) => on_thread_pool(ask::chat(c)),
        // The status says how the call ended (`call::EXIT_*`).
        Command::Call(c) => match on_thread_pool(call::run(c)) {
            Ok(status) => return status,
            Err(e) => Err(e),
        },
        // The status says whether the suite's threshold was met (`eval::EXIT_*`).
        Command::Eval(e) => match on_thread_pool(eval::run(e)) {
            Ok(status) => return ExitCode::from(status),
            Err(e) => Err(e),
        },
        Command::Replay(r) => replay(r),
        Command::Tools(t) => on_thread_pool(ask::tools(t)),
        Command::Lab(l) => lab(l),
        Command::Mcp(m) => on_thread_pool(mcp::run(m)),
        Command::Auth(a) => on_thread_pool(auth::run(a)),
        Command::Completions(c) => {
            manual::completions(c.shell, &mut std::io::stdout().lock());
            Ok(())
        }
        Command::Man => manual::man(&mut std::io::stdout().lock())
            .map_err(|e| anyhow::anyhow!("cannot write the manual page: {e}")),
        Command::Tasks(t) => match on_thread_pool(tasks::run(t)) {
            // Still running: the report says so, and the status tells scripts.
            Ok(false) => return ExitCode::from(3),
            other => other.map(|_| ()),
        },
        Command::Doctor(d) => match on_thread_pool(doctor::run(d)) {
            // Something is broken: the report says what, and the status says so to scripts.
            Ok(false) => return ExitCode::from(1),
            other => other.map(|_| ()),
        },
        Command::Gateway(g) => gateway(g),
        Command::Policy(p) => on_thread_pool(policy_commands::policy(p)),
        Command::Approvals(a) => policy_commands::approvals(a),
        Command::Ledger(l) => policy_commands::ledger(l),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // An error can quote a servers file, a server or an endpoint: shown, never acted on.
            eprintln!("gatehouse: {}", visible(&format!("{e:#}")));
            ExitCode::from(2)
        }
    }
}

/// `gatehouse serve NAME`, in a build with the reference servers.
#[cfg(feature = "built-in-servers")]
fn serve(args: args::ServeArgs) -> anyhow::Result<()> {
    gatehouse_servers::command::run(args)
}

#[cfg(not(feature = "built-in-servers"))]
fn serve(_: args::ServeArgs) -> anyhow::Result<()> {
    Err(left_out("built-in-servers", "the reference servers"))
}

#[cfg(not(feature = "built-in-servers"))]
fn replay(_: args::ReplayArgs) -> anyhow::Result<()> {
    Err(left_out("built-in-servers", "the replayed servers"))
}

/// `gatehouse replay FILE --server NAME`: the recorded server on stdio until stdin ends.
#[cfg(feature = "built-in-servers")]
fn replay(args: args::ReplayArgs) -> anyhow::Result<()> {
    use gatehouse_servers::replay;
    let recording =
        replay::Recording::load(&args.file, &args.server).map_err(anyhow::Error::msg)?;
    replay::serve(recording).map_err(|e| anyhow::anyhow!("replay: {e}"))
}

/// Run one of the host's commands on a thread pool: servers, the model and the person
/// are all waited on at once.
fn on_thread_pool<T: Send + 'static>(
    work: impl Future<Output = anyhow::Result<T>> + Send + 'static,
) -> anyhow::Result<T> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the async runtime: {e}"))?;
    // The command runs on a worker, beside the connections' tasks, rather than on this
    // thread: every call's answer would otherwise wake this thread from a worker, two
    // thread switches per call (about 8 µs of a call's 90 on one CPU, docs/benchmarks.md).
    let result = runtime
        .block_on(runtime.spawn(work))
        .unwrap_or_else(|e| Err(anyhow::anyhow!("the command's task failed: {e}")));
    // The host ends with its work; nothing must linger in the background.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    result
}

/// `gatehouse lab`, in a build with the lab (the `lab` feature).
#[cfg(feature = "lab")]
fn lab(args: args::LabArgs) -> anyhow::Result<()> {
    on_thread_pool(lab::run(args))
}

#[cfg(not(feature = "lab"))]
fn lab(_: args::LabArgs) -> anyhow::Result<()> {
    Err(left_out("lab", "the lab"))
}

/// `gatehouse gateway`, in a build with the gateway (the `gateway` feature).
#[cfg(feature = "gateway")]
fn gateway(args: args::GatewayArgs) -> anyhow::Result<()> {
    on_thread_pool(gateway::run(args))
}

#[cfg(not(feature = "gateway"))]
fn gateway(_: args::GatewayArgs) -> anyhow::Result<()> {
    Err(left_out("gateway", "the gateway"))
}

/// Why a command this build left out cannot run, and how to build one that has it. The
/// flags stay the same in every build (help and completions come from one definition).
#[cfg_attr(
    all(feature = "lab", feature = "gateway", feature = "built-in-servers"),
    allow(dead_code)
)]
pub(crate) fn left_out(feature: &str, what: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "this gatehouse was built without {what}: build it with `cargo build --release \
         --features {feature}` (the published binaries have it)"
    )
}
