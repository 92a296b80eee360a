//! `gatehouse ask`, `chat` and `tools`: one question, a conversation, and the catalog as
//! the model is offered it.

use std::io::Write;
use std::sync::Arc;

use gatehouse::person::{FixedAnswers, Terminal};
use gatehouse::text::visible;
use gatehouse::trace::Trace;
use serde_json::json;

use crate::args::{AskArgs, RunArgs, ToolsArgs};
use crate::screen::{Level, StepsTo};
use crate::start::{
    level, load_config, load_model, printer_and_person, start_asking_nobody, start_host,
};
use crate::{call, output};

/// A finished question, as `--json` prints it: one object, its steps in order.
#[derive(Debug, serde::Serialize)]
struct Run {
    question: String,
    answer: String,
    usage: serde_json::Value,
    steps: Vec<gatehouse::trace::Step>,
}

pub(crate) async fn ask(args: AskArgs) -> anyhow::Result<()> {
    let run = &args.run;
    let level = level(&run.screen);
    let config = load_config(&run.host, level > Level::Quiet)?;
    let mut model = load_model(&run.host, &config)?;
    // An unusable model endpoint is reported before any server starts.
    model.preflight().await?;
    let steps = if args.json {
        StepsTo::Nowhere
    } else {
        StepsTo::Stdout
    };
    let (printer, person) = printer_and_person(run, &config, steps)?;
    // `--record FILE`: every message of the run, as JSON lines, beside the usual output.
    let observer: Arc<dyn gatehouse::trace::Observer> = match &args.record {
        Some(path) => Arc::new(crate::record::RecordingObserver::create(path, printer)?),
        None => printer,
    };
    let trace = Trace::new(observer);
    let host = start_host(&run.host, &config, person, trace.clone()).await;
    let mut conversation = Vec::new();
    let (answer, usage) = host
        .ask(model.as_mut(), &mut conversation, &args.question)
        .await;
    host.shutdown().await;
    let usage = usage_json(&usage)?;
    if args.json {
        // The strings of `--json` carry the same safe form as the screen: a script that
        // prints the answer must not be hijacked by what a server or the model wrote.
        let run = Run {
            question: visible(&args.question).into_owned(),
            answer: visible(&answer).into_owned(),
            usage,
            steps: trace.take(),
        };
        println!("{}", serde_json::to_string_pretty(&run)?);
    } else if level == Level::Quiet {
        println!("{}", visible(&answer));
    } else {
        println!("\n{}", visible(&answer));
        println!("\n{}", output::usage_line(&usage));
    }
    Ok(())
}

/// Usage as `--json` shows it: empty when the model used no tokens.
fn usage_json(usage: &gatehouse::model::Usage) -> anyhow::Result<serde_json::Value> {
    Ok(if usage.model_calls == 0 && usage.total_tokens == 0 {
        json!({})
    } else {
        serde_json::to_value(usage)?
    })
}

/// The person's next line, or `None` at the end of input. It is read from std's stdin,
/// the same buffered reader `person::Terminal` reads approvals from: a reader of its own
/// would read ahead and take the answers meant for the approvals. Bytes that are not
/// UTF-8 are replaced, not refused.
async fn next_line() -> anyhow::Result<Option<String>> {
    use std::io::BufRead;
    tokio::task::spawn_blocking(|| {
        let mut bytes = Vec::new();
        match std::io::stdin().lock().read_until(b'\n', &mut bytes) {
            Ok(0) => Ok(None),
            Ok(_) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
            Err(e) => Err(anyhow::anyhow!("cannot read your input: {e}")),
        }
    })
    .await
    .map_err(|e| anyhow::anyhow!("cannot read your input: {e}"))?
}

pub(crate) async fn chat(args: RunArgs) -> anyhow::Result<()> {
    let config = load_config(&args.host, level(&args.screen) > Level::Quiet)?;
    let mut model = load_model(&args.host, &config)?;
    model.preflight().await?;
    // Steps go to stderr, beside the host's records; stdout is the conversation.
    let (printer, person) = printer_and_person(&args, &config, StepsTo::Stderr)?;
    let trace = Trace::new(printer);
    let host = start_host(&args.host, &config, person, trace.clone()).await;
    let mut conversation = Vec::new();
    loop {
        print!("\nyou> ");
        std::io::Write::flush(&mut std::io::stdout())?;
        let Some(line) = next_line().await? else {
            break;
        };
        let question = line.trim();
        if question.is_empty() {
            continue;
        }
        if matches!(question, "/quit" | "/exit") {
            break;
        }
        if let Some(rest) = question.strip_prefix("/call")
            && (rest.is_empty() || rest.starts_with(char::is_whitespace))
        {
            call::in_chat(&host, &config, rest).await;
            continue;
        }
        let (answer, _usage) = host.ask(model.as_mut(), &mut conversation, question).await;
        trace.take();
        println!("\nassistant> {}", visible(&answer));
    }
    println!();
    host.shutdown().await;
    Ok(())
}

pub(crate) async fn tools(args: ToolsArgs) -> anyhow::Result<()> {
    let terminal = Arc::new(Terminal::new(FixedAnswers::default()));
    let host = start_asking_nobody(&args.start, terminal).await?;
    if args.json {
        // Each row is written as it is made: a catalog of a thousand tools is never held
        // a second time as rows and text (row 6 of docs/benchmarks.md).
        let written = {
            let catalog = host.catalog();
            let rows = tool_rows(&host, &catalog).map(|mut row| {
                gatehouse::text::visible_json(&mut row);
                row
            });
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            serde_json::to_writer_pretty(&mut out, &output::Streamed::new(rows))
                .map_err(std::io::Error::from)
                .and_then(|()| writeln!(out))
                .and_then(|()| out.flush())
        };
        host.shutdown().await;
        return written.map_err(|e| anyhow::anyhow!("cannot write the tools: {e}"));
    }
    let rows: Vec<serde_json::Value> = tool_rows(&host, &host.catalog()).collect();
    host.shutdown().await;
    println!("{}", output::tool_table(&rows));
    Ok(())
}

/// The catalog's tools as `gatehouse tools` shows them, one row each. A tool a deny rule
/// hides is not offered to the model, so not listed.
fn tool_rows<'a>(
    host: &'a gatehouse::host::Host,
    catalog: &'a gatehouse::catalog::Catalog,
) -> impl Iterator<Item = serde_json::Value> + 'a {
    catalog
        .tools()
        .iter()
        .filter(|t| host.settings().rules.hiding(&t.name).is_none())
        .map(|t| {
            // A map made at its size (`json!` leaves room for seven members in a map of
            // four).
            let row: [(String, serde_json::Value); 4] = [
                ("name".into(), json!(t.name)),
                ("server".into(), json!(t.origin.label())),
                (
                    "description".into(),
                    json!(
                        t.tool
                            .description
                            .as_deref()
                            .unwrap_or("")
                            .lines()
                            .next()
                            .unwrap_or("")
                    ),
                ),
                (
                    "annotations".into(),
                    gatehouse::person::annotations_for_display(t.tool.annotations.as_ref()),
                ),
            ];
            serde_json::Value::Object(row.into_iter().collect())
        })
}
