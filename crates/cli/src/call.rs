//! `gatehouse call TOOL [ARGS-JSON]` and chat's `/call TOOL [ARGS-JSON]`: one call the
//! person makes themselves, with no model, through the host's one path for every proposal
//! ([`Host::call_by_person`]: rules, hooks, "Run it?", the ledger line, the time limit, the
//! result's bound), its result printed. Text from the server reaches the screen and
//! `--json` only made visible. `gatehouse call SERVER__TOOL` starts SERVER alone
//! ([`Host::start_only`]); any other name starts every server.

use std::{process::ExitCode, sync::Arc};

use gatehouse::{
    catalog::{Catalog, NAMESPACE_SEPARATOR},
    config::Config,
    host::Host,
    person::Terminal,
    text::{visible, visible_json},
    trace::{Outcome, Trace, Who},
    turn::Called,
};
use serde_json::{Value, json};

use crate::{
    args::{CallArgs, HostArgs},
    screen::{Level, StepsTo},
};

/// The exit status of a call that ran and whose tool reported an error, or that failed,
/// timed out, was stopped, refused or declined.
pub const EXIT_FAILED: u8 = 1;
/// The exit status of a mistake in the command: arguments that are not a JSON object, a
/// tool no server offers, a servers file that cannot be used (as every command's errors).
pub const EXIT_USAGE: u8 = 2;
/// The exit status of a call the server runs as a task that was still going when the host
/// stopped waiting (`gatehouse tasks result ID` gets its end), as `tasks result`'s.
pub const EXIT_STILL_RUNNING: u8 = 3;
/// Most names a "did you mean" offers.
pub const MAX_SUGGESTIONS: usize = 3;
/// Most edits between a mistyped name and a real one still offered: a typo, not another
/// tool. Longer names allow more, up to a third of their length.
pub const MIN_NAME_DISTANCE: usize = 3;
/// Characters of the arguments shown on each side of a syntax error.
const EXCERPT_CHARS: usize = 30;

/// `gatehouse call`: the arguments read first (nothing starts for a mistake in them), then
/// the servers, the one call, the result on stdout; steps go to stderr, or with `--json`
/// nowhere but the one object.
pub async fn run(args: CallArgs) -> anyhow::Result<ExitCode> {
    let arguments = arguments_text(args.arguments.as_deref())?;
    let run = &args.run;
    let level = crate::start::level(&run.screen);
    let config = crate::start::load_config(&run.host, level > Level::Quiet)?;
    let steps = if args.json {
        StepsTo::Nowhere
    } else {
        StepsTo::Stderr
    };
    let (printer, person) = crate::start::printer_and_person(run, &config, steps)?;
    let trace = Trace::new(printer);
    let host = start_for(&run.host, &config, &args.tool, person, &trace).await;
    let called = host.call_by_person(&args.tool, &arguments).await;
    let suggested =
        (called.outcome == Outcome::UnknownTool).then(|| unknown_tool(&host, &config, &args.tool));
    host.shutdown().await;
    let for_model = for_model(&called);
    if args.json {
        let mut out = json!({
            "tool": args.tool,
            "arguments": serde_json::from_str::<Value>(&arguments)?,
            "outcome": called.outcome,
            "chars": called.shown.chars,
            "clipped": called.shown.clipped,
            "result": for_model,
        });
        if let Some(help) = &suggested {
            out["unknown_tool"] = json!(help);
        }
        visible_json(&mut out);
        out["steps"] = serde_json::to_value(trace.take())?;
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else if let Some(help) = &suggested {
        eprintln!("gatehouse: {}", visible(help));
    } else {
        print_result(&for_model, level);
    }
    Ok(ExitCode::from(status(called.outcome)))
}

/// The host for one call of `tool`: only the server its name names (`SERVER__TOOL`, SERVER
/// a server of the file) when that server offers exactly that tool, or did not start (its
/// error is the answer); else, and for any other name, every server, so that the nearest
/// names can be found among all their tools.
async fn start_for(
    host_args: &HostArgs,
    config: &Config,
    tool: &str,
    person: Arc<Terminal>,
    trace: &Trace,
) -> Host {
    if let Some(server) = named_server(config, tool) {
        let only = Some(server);
        let host =
            crate::start::start_host_for(host_args, config, only, person.clone(), trace.clone())
                .await;
        if !host.is_connected(server) || offers_exactly(&host.catalog(), server, tool) {
            return host;
        }
        trace.add(
            Who::Host,
            format!("server {server} offers no tool named {tool}: starting every server to find the nearest names"),
            json!({"server": server, "tool": tool}),
        );
        host.shutdown().await;
    }
    crate::start::start_host(host_args, config, person, trace.clone()).await
}

/// The server of the file that `tool` (`SERVER__TOOL`) names, if it names one.
fn named_server<'c>(config: &'c Config, tool: &str) -> Option<&'c str> {
    let (server, _) = tool.split_once(NAMESPACE_SEPARATOR)?;
    config
        .servers
        .iter()
        .find(|s| s.name == server)
        .map(|s| s.name.as_str())
}

/// Does `catalog` hold `server`'s own tool under `name`, exactly `server__tool` as the
/// server calls it? Such a name is never renamed, so a start of every server gives it to the
/// same tool; a name the catalog had to make safe could be numbered otherwise there.
fn offers_exactly(catalog: &Catalog, server: &str, name: &str) -> bool {
    let own = name
        .strip_prefix(server)
        .and_then(|rest| rest.strip_prefix(NAMESPACE_SEPARATOR));
    catalog.get(name).is_some_and(|t| {
        t.origin.server().is_some_and(|s| s == server) && own == Some(t.tool.name.as_ref())
    })
}

/// `/call TOOL [ARGS-JSON]` in `gatehouse chat` (`line` is what follows `/call`): the
/// same call, its steps on stderr with the chat's, its result or what went wrong on
/// stdout. It is not added to the conversation: the model did not ask for it.
pub async fn in_chat(host: &Host, config: &Config, line: &str) {
    let line = line.trim();
    let (tool, arguments) = line
        .split_once(char::is_whitespace)
        .map_or((line, None), |(t, a)| (t, Some(a.trim())));
    if tool.is_empty() {
        println!("\ncall> usage: /call TOOL [ARGS-JSON], the tool as `gatehouse tools` names it");
        return;
    }
    let arguments = match arguments_text(arguments.filter(|a| !a.is_empty())) {
        Ok(text) => text,
        Err(e) => return println!("\ncall> {}", visible(&e.to_string())),
    };
    let called = host.call_by_person(tool, &arguments).await;
    host.trace().take();
    println!();
    if called.outcome == Outcome::UnknownTool {
        return println!("call> {}", visible(&unknown_tool(host, config, tool)));
    }
    let for_model = for_model(&called);
    if let Some(error) = for_model.get("error").and_then(Value::as_str) {
        return println!("call> {tool}: {}", visible(error));
    }
    println!("call> {}", result_text(&for_model));
}

/// The exit status for how a call ended.
fn status(outcome: Outcome) -> u8 {
    match outcome {
        Outcome::Ok => 0,
        Outcome::Background => EXIT_STILL_RUNNING,
        Outcome::UnknownTool => EXIT_USAGE,
        Outcome::ToolError
        | Outcome::Error
        | Outcome::Refused
        | Outcome::Declined
        | Outcome::Timeout
        | Outcome::Stopped => EXIT_FAILED,
    }
}

/// ARGS-JSON as the gate will read it (`{}` when not given), once it is known to be a
/// JSON object: a syntax error named by its line and column, with the text around it.
pub fn arguments_text(given: Option<&str>) -> anyhow::Result<String> {
    let Some(text) = given else {
        return Ok("{}".into());
    };
    let value: Value = serde_json::from_str(text).map_err(|e| syntax_error(text, &e))?;
    let kind = match value {
        Value::Object(_) => return Ok(text.to_owned()),
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
    };
    anyhow::bail!(
        "ARGS-JSON must be a JSON object of the tool's arguments, such as '{{\"ticket_id\": \"T-30002\"}}', not {kind}"
    )
}

/// A JSON syntax error in words: what, where (line and column), and the text there with
/// a caret under the place, so a quote eaten by the shell can be seen.
fn syntax_error(text: &str, e: &serde_json::Error) -> anyhow::Error {
    let full = e.to_string();
    let what = full
        .rsplit_once(" at line ")
        .map_or(full.as_str(), |(w, _)| w);
    let (line_no, column) = (e.line(), e.column());
    let line = text.lines().nth(line_no.saturating_sub(1)).unwrap_or("");
    let at = column.saturating_sub(1).min(line.chars().count());
    let from = at.saturating_sub(EXCERPT_CHARS);
    let shown: String = line.chars().skip(from).take(2 * EXCERPT_CHARS).collect();
    let shown = gatehouse::text::visible_line(&shown);
    let caret = " ".repeat(at - from);
    anyhow::anyhow!(
        "ARGS-JSON is not valid JSON: {what} at line {line_no}, column {column}\n    {shown}\n    {caret}^"
    )
}

/// What the model would read of the call, as JSON (`{tool, result | error, note?}`), its
/// strings made visible.
fn for_model(called: &Called) -> Value {
    let mut value = serde_json::from_str(&called.shown.text)
        .unwrap_or_else(|_| json!({"result": called.shown.text}));
    visible_json(&mut value);
    value
}

/// The result on stdout (a text as it is, anything else as indented JSON), any note about
/// it on stderr; an error on stderr.
fn print_result(for_model: &Value, level: Level) {
    if let Some(error) = for_model.get("error").and_then(Value::as_str) {
        let tool = for_model["tool"].as_str().unwrap_or("the tool");
        eprintln!("gatehouse: {tool}: {error}");
        return;
    }
    println!("{}", result_text(for_model));
    if let (Some(note), true) = (
        for_model.get("note").and_then(Value::as_str),
        level > Level::Quiet,
    ) {
        eprintln!("[host] {note}");
    }
}

/// The result itself, with the descriptions of what was saved from it after it.
fn result_text(for_model: &Value) -> String {
    let mut text = match &for_model["result"] {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    };
    for attachment in for_model["attachments"].as_array().into_iter().flatten() {
        text.push('\n');
        text.push_str(attachment.as_str().unwrap_or_default());
    }
    text
}

/// Why `name` is not a tool here, and the nearest real names: a server of the file that
/// did not start, or "did you mean".
fn unknown_tool(host: &Host, config: &Config, name: &str) -> String {
    let catalog = host.catalog();
    let names: Vec<&str> = catalog.tools().iter().map(|t| t.name.as_str()).collect();
    if let Some((server, _)) = name.split_once(NAMESPACE_SEPARATOR)
        && config.servers.iter().any(|s| s.name == server)
        && !catalog.tools().iter().any(|t| t.origin.label() == server)
    {
        return format!(
            "no tool named {name}: server {server} is not running (its error is above; `gatehouse mcp get {server}` says more)"
        );
    }
    let near = nearest(name, &names);
    if near.is_empty() {
        format!("no tool named {name}; `gatehouse tools` lists the tools")
    } else {
        format!("no tool named {name}; did you mean {}?", near.join(", "))
    }
}

/// The real names nearest to `name`, the nearest first, at most [`MAX_SUGGESTIONS`]: the
/// same tool on any server (a bare name, a wrong prefix, Claude Code's
/// `mcp__server__tool`), then names within a few edits.
pub fn nearest(name: &str, names: &[&str]) -> Vec<String> {
    let typed = name.to_ascii_lowercase();
    let own = |n: &str| {
        n.rsplit_once(NAMESPACE_SEPARATOR)
            .map_or(n, |(_, tool)| tool)
            .to_ascii_lowercase()
    };
    let most = MIN_NAME_DISTANCE.max(typed.chars().count() / 3);
    let mut ranked: Vec<(usize, &str)> = names
        .iter()
        .filter_map(|&real| {
            let distance = if own(real) == own(&typed) {
                0
            } else {
                strsim::damerau_levenshtein(&typed, &real.to_ascii_lowercase())
            };
            (distance <= most).then_some((distance, real))
        })
        .collect();
    ranked.sort();
    ranked
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, real)| real.to_owned())
        .collect()
}

#[cfg(test)]
mod tests;
