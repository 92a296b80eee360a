//! `gatehouse eval SUITE`: a suite of tasks run through the host and graded
//! (`gatehouse::eval`); here, only what the person sees of it: a progress bar on a
//! terminal, the tables, `--json`, the JUnit and Markdown files, the exit status.

use std::{io::IsTerminal, io::Write, path::Path, sync::Arc};

use anyhow::Context;
use gatehouse::{
    eval::{self, Setting, Suite, formats},
    text::visible_line,
};
use serde_json::Value;

use crate::args::EvalArgs;

/// The suite ran and every variant reached its threshold (or it has none).
pub const EXIT_MET: u8 = 0;
/// A variant's pass rate is below the suite's threshold.
pub const EXIT_MISSED: u8 = 1;

/// Run the suite; the exit status says whether the threshold was met.
pub async fn run(args: EvalArgs) -> anyhow::Result<u8> {
    let mut suite = Suite::load(&args.suite).map_err(anyhow::Error::msg)?;
    if let Some(n) = args.repeat {
        suite.repeat = eval::suite::repeat_option(n).map_err(anyhow::Error::msg)?;
    }
    let scratch = tempfile::Builder::new()
        .prefix("gatehouse-eval-")
        .tempdir()
        .context("a scratch folder for the attempts")?;
    if let Some(dir) = &args.record {
        gatehouse::files::private_dir(dir)
            .with_context(|| format!("the recordings' folder {}", dir.display()))?;
    }
    let setting = Setting {
        built_in: built_in_for(crate::start::built_in_file()),
        system_prompt: crate::start::DEFAULT_SYSTEM_PROMPT.into(),
        variable: Box::new(crate::harden::variable),
        record: args.record.clone().map(recorder),
        replay: args.replay.clone(),
    };
    let bar = std::io::stderr().is_terminal() && !args.quiet;
    let report = eval::run_suite(&suite, &setting, scratch.path(), |p| {
        if bar {
            progress(&p);
        }
    })
    .await
    .map_err(anyhow::Error::msg)?;
    if bar {
        eprint!("\r\x1b[2K");
    }
    // Beside the recordings, the report they belong to.
    if let Some(dir) = &args.record {
        let path = dir.join("report.json");
        std::fs::write(&path, serde_json::to_vec_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.junit {
        std::fs::write(path, formats::junit(&report))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.markdown {
        std::fs::write(path, formats::markdown(&report))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    Ok(if report.meets_threshold() {
        EXIT_MET
    } else {
        EXIT_MISSED
    })
}

/// Each attempt's messages recorded in `dir` as `ask --record` records them.
fn recorder(dir: std::path::PathBuf) -> eval::run::Recorder {
    Box::new(move |stem, inner| {
        let path = dir.join(format!("{stem}.jsonl"));
        crate::record::RecordingObserver::create(&path, inner)
            .map(|r| Arc::new(r) as Arc<dyn gatehouse::trace::Observer>)
            .map_err(|e| e.to_string())
    })
}

/// The built-in servers (`file`, made once), their tickets kept in each attempt's own
/// folder.
#[cfg(feature = "built-in-servers")]
fn built_in_for(file: anyhow::Result<Value>) -> eval::run::BuiltIn {
    // A build without them says so when a suite asks for them, not before.
    let file = file.map_err(|e| format!("{e:#}"));
    Box::new(move |dir: &Path| {
        let mut file = file.clone()?;
        let db = dir.join("tickets.db");
        if let Some(Value::Object(env)) = file.pointer_mut("/mcpServers/tickets/env") {
            env.insert(
                gatehouse_servers::tickets::ENV_DB.into(),
                Value::String(db.to_string_lossy().into_owned()),
            );
        }
        Ok(file)
    })
}

/// No built-in servers in this build: a suite that asks for them is told why.
#[cfg(not(feature = "built-in-servers"))]
fn built_in_for(file: anyhow::Result<Value>) -> eval::run::BuiltIn {
    let why = match file {
        Ok(_) => "this build has no built-in servers".to_owned(),
        Err(e) => format!("{e:#}"),
    };
    Box::new(move |_: &Path| Err(why.clone()))
}

/// One line, drawn again in place: attempts done, and the last one's verdict.
fn progress(p: &eval::Progress<'_>) {
    const WIDTH: usize = 30;
    let filled = WIDTH * p.done / p.total.max(1);
    let verdict = if p.last.passed { "pass" } else { "FAIL" };
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "\r\x1b[2K[{}{}] {}/{} {} ({}) {verdict}",
        "#".repeat(filled),
        " ".repeat(WIDTH - filled),
        p.done,
        p.total,
        visible_line(&p.last.task),
        visible_line(&p.last.variant),
    );
    let _ = err.flush();
}

fn print_report(report: &eval::Report) {
    println!("eval {}\n", formats::headline(report));
    print!("{}", formats::padded(&formats::task_rows(report)));
    println!();
    print!("{}", formats::padded(&formats::total_rows(report)));
    for line in formats::failures(report) {
        println!("FAIL {line}");
    }
    if let Some(t) = report.threshold {
        for total in report.totals.iter().filter(|t| !t.meets_threshold) {
            println!(
                "threshold missed: {} passed {:.0}%, the suite asks for {:.0}%",
                visible_line(&total.variant),
                total.figures.pass.rate * 100.0,
                t * 100.0
            );
        }
    }
}
