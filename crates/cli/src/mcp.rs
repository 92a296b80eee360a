//! `gatehouse mcp add|remove|list|get`: the servers file edited from the command line, as
//! other hosts do it, and each server's state after a quick connect. The file is the
//! `mcpServers` file people already have; `gatehouse::edit` keeps the rest of it
//! as it was.

use std::{path::PathBuf, sync::Arc, time::Duration};

use gatehouse::{
    config::{Config, Identity, project::Found},
    edit::ServersFile,
    probe::{self, Probe},
    text::{visible, visible_json, visible_line},
    trace::Trace,
};
use serde_json::{Map, Value, json};

use crate::args::{
    McpArgs, McpCommand, McpFileArgs, McpGetArgs, McpListArgs, McpRemoveArgs, Scope,
};

/// The longest `list` and `get` wait for one server: a quick look, not a session.
pub const QUICK_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Most characters of a server's command line or URL in a list row.
mod add;

use add::add;

const TARGET_CHARS: usize = 80;

pub async fn run(args: McpArgs) -> anyhow::Result<()> {
    match args.command {
        McpCommand::Add(a) => add(a),
        McpCommand::Remove(r) => remove(r),
        McpCommand::List(l) => list(l).await,
        McpCommand::Get(g) => get(g).await,
        McpCommand::Trust(t) => crate::project::trust(t),
        McpCommand::Untrust => crate::project::untrust(),
    }
}

/// A servers file, and how to name it to the person.
struct Target {
    path: PathBuf,
    label: &'static str,
}

impl Target {
    fn shown(&self) -> String {
        format!("{} ({})", self.path.display(), self.label)
    }
}

/// The user's servers file, or why there is none.
fn user_file() -> anyhow::Result<Target> {
    let path = Config::user_path().ok_or_else(|| {
        anyhow::anyhow!("no user servers file: neither XDG_CONFIG_HOME nor HOME is set")
    })?;
    Ok(Target {
        path,
        label: "user",
    })
}

/// The file `add` and `remove` change: `--config`, `--scope`, else this project's.
fn file_to_change(file: &McpFileArgs) -> anyhow::Result<Target> {
    match (&file.config, file.scope) {
        (Some(path), _) => Ok(Target {
            path: path.clone(),
            label: "--config",
        }),
        (None, Some(Scope::User)) => user_file(),
        (None, _) => Ok(Target {
            path: Config::project_path(),
            label: "project",
        }),
    }
}

/// The file `list` and `get` read when `--config` or `--scope` names one.
fn file_to_read(file: &McpFileArgs) -> anyhow::Result<Option<Target>> {
    if file.config.is_some() || file.scope.is_some() {
        return file_to_change(file).map(Some);
    }
    Ok(None)
}

/// Every `--env` or `--header` given, each read by `parse`.
fn parsed(
    given: &[String],
    parse: fn(&str) -> Result<(String, String), String>,
) -> anyhow::Result<Vec<(String, String)>> {
    given
        .iter()
        .map(|g| parse(g))
        .collect::<Result<_, _>>()
        .map_err(anyhow::Error::msg)
}

fn remove(args: McpRemoveArgs) -> anyhow::Result<()> {
    let target = file_to_change(&args.file)?;
    anyhow::ensure!(
        target.path.exists(),
        "there is no servers file at {}",
        target.shown()
    );
    let mut file = ServersFile::open(&target.path)?;
    file.remove(&args.name)
        .map_err(|e| anyhow::anyhow!("{}", visible(&e)))?;
    file.save()
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", target.path.display()))?;
    println!(
        "Removed server {} from {}",
        visible_line(&args.name),
        target.shown()
    );
    Ok(())
}

/// Tell the person when the file just changed is not one the host reads.
fn note_if_shadowed(target: &Target) {
    let same = |a: &std::path::Path, b: &std::path::Path| match (a.canonicalize(), b.canonicalize())
    {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    let read = match Found::locate(None) {
        Found::Given(p) | Found::Own(p) => vec![p],
        Found::Project { file, own } => std::iter::once(file).chain(own).collect(),
        Found::BuiltIn => Vec::new(),
    };
    if let Some(first) = read.first()
        && !read.iter().any(|p| same(p, &target.path))
    {
        eprintln!(
            "gatehouse: note: the host reads {} first; it uses {} only with --config {1} or once that one is gone",
            first.display(),
            target.path.display()
        );
    }
}

/// A servers file (or the built-in servers) as `list` and `get` read it: the document,
/// its configuration, and how to name it.
struct Servers {
    doc: Value,
    config: Config,
    heading: String,
}

fn read_servers(file: &McpFileArgs) -> anyhow::Result<Servers> {
    let identity = Identity::default();
    let asking = crate::project::Asking::AtTerminal;
    if let Some(target) = file_to_read(file)? {
        anyhow::ensure!(
            target.path.exists(),
            "there is no servers file at {}; `gatehouse mcp add` creates it",
            target.shown()
        );
        let doc = ServersFile::open(&target.path)?.document();
        let config = if file.scope == Some(Scope::Project) {
            // The project's file alone: still nothing of it starts untrusted.
            crate::project::load(&target.path, None, &identity, asking)?
        } else {
            Config::from_value(doc.clone(), &target.path.display().to_string(), &identity)?
        };
        return Ok(Servers {
            doc,
            config,
            heading: target.shown(),
        });
    }
    match Found::locate(None) {
        Found::Given(path) | Found::Own(path) => {
            let label = if Some(&path) == Config::user_path().as_ref() {
                "user"
            } else if std::env::var_os(gatehouse::config::CONFIG_ENV).is_some() {
                "$GATEHOUSE_CONFIG"
            } else {
                "found"
            };
            let doc = gatehouse::config::project::read_document(&path)?;
            let config = Config::load(&path, &identity)?;
            let label = Config::owner_of(&path)
                .map(|o| format!("{o}'s, read only"))
                .unwrap_or(label.into());
            Ok(Servers {
                doc,
                config,
                heading: format!("{} ({label})", path.display()),
            })
        }
        Found::Project { file, own } => {
            let config = crate::project::load(&file, own.as_deref(), &identity, asking)?;
            let mut doc = match &own {
                Some(own) => ServersFile::open(own)?.document(),
                None => json!({"mcpServers": {}}),
            };
            let project = ServersFile::open(&file)?.document();
            for (name, entry) in project["mcpServers"].as_object().into_iter().flatten() {
                if doc["mcpServers"].get(name).is_none() {
                    doc["mcpServers"][name] = entry.clone();
                }
            }
            let heading = match &own {
                Some(own) => format!("{} and {} (project)", own.display(), file.display()),
                None => format!("{} (project)", file.display()),
            };
            Ok(Servers {
                doc,
                config,
                heading,
            })
        }
        Found::BuiltIn => {
            let doc = crate::start::built_in_file()?;
            let config = Config::from_value(doc.clone(), "built-in servers", &identity)?;
            Ok(Servers {
                doc,
                config,
                heading: "the built-in servers (no servers file found; `gatehouse mcp add` writes ./.mcp.json)".into(),
            })
        }
    }
}

/// A project's server that is not started, and why, as its row's state.
fn held_back(config: &Config, name: &str) -> Option<&'static str> {
    let review = config.project.as_ref()?;
    let server = review.servers.iter().find(|s| s.name == name)?;
    if server.shadowed {
        Some("left out: one of your own servers has this name")
    } else if !server.trusted {
        Some("not trusted: not started (gatehouse mcp trust)")
    } else {
        None
    }
}

/// Quick-connect every server that is not disabled or broken, telling `ready` of each
/// as soon as it is known.
async fn probe_servers(config: &Config, ready: impl FnMut(&Probe)) -> Vec<Probe> {
    let timeout = config.settings.connect_timeout.min(QUICK_CONNECT_TIMEOUT);
    let trace = Trace::new(Arc::new(crate::screen::StartNotes));
    probe::probe_each(config, timeout, &trace, ready).await
}

/// One server as `list` and `get` show it: the entry's facts and its state.
fn row(name: &str, entry: &Value, probes: &[Probe], config: &Config) -> Value {
    let is_http = entry.get("url").is_some() && entry.get("command").is_none()
        || entry["type"].as_str().is_some_and(|t| t != "stdio");
    let target = if is_http {
        gatehouse::redact::url(entry["url"].as_str().unwrap_or(""))
    } else {
        let mut words = vec![entry["command"].as_str().unwrap_or("").to_owned()];
        if let Some(args) = entry["args"].as_array() {
            words.extend(args.iter().map(|a| a.as_str().unwrap_or("?").to_owned()));
        }
        words.join(" ")
    };
    let mut row = json!({
        "name": name,
        "transport": if is_http { "http" } else { "stdio" },
        "target": target,
    });
    if entry.get("disabled") == Some(&Value::Bool(true)) {
        row["state"] = json!("disabled");
        return row;
    }
    if let Some(state) = held_back(config, name) {
        row["state"] = json!(state);
        return row;
    }
    let Some(probe) = probes.iter().find(|p| p.server == name) else {
        row["state"] = json!("not used");
        return row;
    };
    row["ms"] = json!(probe.elapsed.as_millis() as u64);
    match &probe.outcome {
        Ok(reached) => {
            row["state"] = json!("connected");
            row["protocol"] = json!(reached.protocol);
            row["server"] = json!(
                reached
                    .implementation
                    .as_ref()
                    .map(|(n, v)| format!("{n} {v}"))
            );
            row["tools"] = json!(reached.tools);
            row["left_out"] = json!(reached.left_out);
        }
        Err(failure) => {
            row["state"] = json!("failed");
            row["error"] = json!(failure.reason);
            row["fix"] = json!(failure.fix);
        }
    }
    row
}

/// A row's state in words: `connected: 2 tools, protocol 2026-07-28, 41 ms`.
fn state_line(row: &Value) -> String {
    match row["state"].as_str().unwrap_or("") {
        "connected" => {
            let tools = row["tools"].as_array().map_or(0, Vec::len);
            let left_out = row["left_out"].as_array().map_or(0, Vec::len);
            format!(
                "connected: {tools} tool{}{}, protocol {}, {} ms",
                if tools == 1 { "" } else { "s" },
                if left_out > 0 {
                    format!(" ({left_out} left out)")
                } else {
                    String::new()
                },
                row["protocol"].as_str().unwrap_or("?"),
                row["ms"]
            )
        }
        "failed" => format!("failed: {}", row["error"].as_str().unwrap_or("")),
        other => other.to_owned(),
    }
}

/// Every server of the file, each line printed as soon as its server is ready or has
/// failed (the servers start at once; the slowest does not hold back the rest): first
/// the heading and the entries that start nothing, then the others as they answer.
/// `--json` prints one document, in the file's order, at the end.
async fn list(args: McpListArgs) -> anyhow::Result<()> {
    let servers = read_servers(&args.file)?;
    let config = &servers.config;
    let entries = servers.doc["mcpServers"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    if !args.json {
        println!("Servers in {}:", servers.heading);
        if entries.is_empty() {
            println!("  none yet: gatehouse mcp add NAME -- COMMAND [ARGS]…");
        }
    }
    let probed = |name: &str| {
        config.servers.iter().any(|s| s.name == name)
            || config.broken.iter().any(|(n, _)| n == name)
    };
    let mut rows: Vec<(usize, Value)> = Vec::new();
    let mut add = |i: usize, mut row: Value| {
        visible_json(&mut row);
        if !args.json {
            print_row(&row);
        }
        rows.push((i, row));
    };
    for (i, (name, entry)) in entries.iter().enumerate() {
        if !probed(name) {
            add(i, row(name, entry, &[], config));
        }
    }
    probe_servers(config, |probe| {
        if let Some((i, (name, entry))) = entries
            .iter()
            .enumerate()
            .find(|(_, (name, _))| **name == probe.server)
        {
            add(i, row(name, entry, std::slice::from_ref(probe), config));
        }
    })
    .await;
    if args.json {
        rows.sort_by_key(|(i, _)| *i);
        let rows: Value = rows.into_iter().map(|(_, row)| row).collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
    }
    Ok(())
}

/// One server's line of `list` (and its fix below it), as soon as it is known.
fn print_row(row: &Value) {
    let target =
        gatehouse::text::clip(row["target"].as_str().unwrap_or(""), TARGET_CHARS).into_owned();
    println!(
        "  {}: {} ({}) - {}",
        row["name"].as_str().unwrap_or(""),
        visible_line(&target),
        row["transport"].as_str().unwrap_or(""),
        visible_line(&state_line(row))
    );
    if let Some(fix) = row["fix"].as_str() {
        println!("    fix: {}", visible_line(fix));
    }
}

/// An entry as it may be shown: header values and secret-named variables given as plain
/// text hidden, `${VAR}` references shown as written, the URL without its credentials.
fn shown_entry(entry: &Value) -> Value {
    let mut shown = entry.clone();
    let hide = |map: &mut Map<String, Value>, secret: &dyn Fn(&str) -> bool| {
        for (key, value) in map.iter_mut() {
            if secret(key) && !value.as_str().is_some_and(|v| v.contains("${")) {
                *value = json!(gatehouse::redact::REDACTED);
            }
        }
    };
    if let Some(env) = shown.get_mut("env").and_then(Value::as_object_mut) {
        hide(env, &gatehouse::redact::is_secret_name);
    }
    if let Some(headers) = shown.get_mut("headers").and_then(Value::as_object_mut) {
        hide(headers, &|_| true);
    }
    if let Some(url) = shown.get("url").and_then(Value::as_str) {
        shown["url"] = json!(gatehouse::redact::url(url));
    }
    visible_json(&mut shown);
    shown
}

async fn get(args: McpGetArgs) -> anyhow::Result<()> {
    let servers = read_servers(&args.file)?;
    let Some(entry) = servers.doc["mcpServers"].get(&args.name).cloned() else {
        let names: Vec<String> = servers.doc["mcpServers"]
            .as_object()
            .map(|m| m.keys().map(|k| visible_line(k).into_owned()).collect())
            .unwrap_or_default();
        anyhow::bail!(
            "{} has no server named {}{}",
            servers.heading,
            visible_line(&args.name),
            if names.is_empty() {
                String::new()
            } else {
                format!("; it has {}", names.join(", "))
            }
        );
    };
    // Only the server shown is started, not every server of the file.
    let probes = probe_servers(&servers.config.narrowed_to(&args.name), |_| {}).await;
    let mut row = row(&args.name, &entry, &probes, &servers.config);
    visible_json(&mut row);
    let shown = shown_entry(&entry);
    if args.json {
        row["entry"] = shown;
        row["file"] = json!(servers.heading);
        println!("{}", serde_json::to_string_pretty(&row)?);
        return Ok(());
    }
    println!(
        "{}, in {}",
        row["name"].as_str().unwrap_or(""),
        servers.heading
    );
    for (key, value) in shown.as_object().into_iter().flatten() {
        if value.as_array().is_some_and(Vec::is_empty) {
            continue;
        }
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Array(items) => items
                .iter()
                .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(" "),
            Value::Object(m) => {
                let between = if key == "headers" { ": " } else { "=" };
                m.iter()
                    .map(|(k, v)| {
                        let v = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                        format!("{k}{between}{v}")
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            }
            other => other.to_string(),
        };
        println!("  {key}: {}", visible_line(&text));
    }
    println!("  state: {}", visible_line(&state_line(&row)));
    if let Some(server) = row["server"].as_str() {
        println!("  server: {server}");
    }
    for (label, key) in [("tools", "tools"), ("left out", "left_out")] {
        let items: Vec<&str> = row[key]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !items.is_empty() {
            println!("  {label}: {}", items.join(", "));
        }
    }
    if let Some(fix) = row["fix"].as_str() {
        println!("  fix: {fix}");
    }
    Ok(())
}
