//! A project's servers file put to the person: its servers shown exactly (command lines,
//! environment, URLs) and started only once trusted, asked at a terminal and left out with
//! a note anywhere else; its loosening settings ignored unless trusted by name.

use std::io::{BufRead, IsTerminal, Write};

use gatehouse::{
    config::{
        self, Config, Identity,
        project::{self, Found, ProjectServer, ProjectSetting, Review},
        trust::{Part, TrustFile},
    },
    text::{clip, visible_line},
};
use serde_json::Value;

use crate::args::McpTrustArgs;

/// Most characters of a setting's value shown when the person is asked.
const SETTING_CHARS: usize = 240;

/// Whether a command may ask the person to trust a project's servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asking {
    /// At a terminal (stdin and stderr both are one); elsewhere the servers are left out.
    AtTerminal,
    /// Never: what is untrusted is left out (and listed, by `doctor`).
    Never,
}

/// The person's trust records.
pub fn trust_file() -> TrustFile {
    TrustFile::in_state(&config::state_dir())
}

/// The configuration of a project's file beside the person's own: reviewed against their
/// trust, the person asked when `asking` allows and a terminal is there.
pub fn load(
    file: &std::path::Path,
    own: Option<&std::path::Path>,
    identity: &Identity,
    asking: Asking,
) -> anyhow::Result<Config> {
    let project_doc = project::read_document(file)?;
    let own_doc = own.map(project::read_document).transpose()?;
    let trust = trust_file();
    let trusted = trust.load().map_err(anyhow::Error::msg)?;
    let mut review = Review::of(file, &project_doc, own.zip(own_doc.as_ref()), &trusted);
    let untrusted: Vec<ProjectServer> = review.untrusted_servers().cloned().collect();
    if !untrusted.is_empty() {
        // Answers come only from a terminal, as every question's do: a pipe never says yes.
        if asking == Asking::AtTerminal && gatehouse::person::asks_at_terminal() {
            ask_at_terminal(&mut review, &untrusted, &trust)?;
        } else {
            eprintln!("{}", left_out_note(&review));
        }
    }
    let ignored: Vec<&ProjectSetting> = review.untrusted_settings().collect();
    if !ignored.is_empty() && asking == Asking::AtTerminal {
        eprintln!("{}", ignored_note(&review, &ignored));
    }
    Ok(project::load_reviewed(
        &review,
        &project_doc,
        own_doc.as_ref(),
        identity,
    )?)
}

/// The configuration a command runs with, from where [`Found::locate`] found it.
pub fn load_found(
    found: &Found,
    identity: &Identity,
    asking: Asking,
    built_in: impl FnOnce() -> anyhow::Result<Value>,
) -> anyhow::Result<Config> {
    Ok(match found {
        Found::Given(path) | Found::Own(path) => Config::load(path, identity)?,
        Found::Project { file, own } => load(file, own.as_deref(), identity, asking)?,
        Found::BuiltIn => Config::from_value(built_in()?, "built-in servers", identity)?,
    })
}

fn ask_at_terminal(
    review: &mut Review,
    untrusted: &[ProjectServer],
    trust: &TrustFile,
) -> anyhow::Result<()> {
    // Asked on the terminal the answer is typed at, so `2>log` never hides the question.
    let mut screen = gatehouse::person::terminal::screen();
    writeln!(screen, "{}", listing(review, untrusted))?;
    write!(
        screen,
        "Start these servers from {}? [y/N] ",
        review.file.display()
    )?;
    screen.flush()?;
    drop(screen);
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    if !matches!(line.trim(), "y" | "Y" | "yes") {
        eprintln!(
            "gatehouse: left out: {} (not trusted; `gatehouse mcp trust` asks again)",
            names(untrusted)
        );
        return Ok(());
    }
    let parts: Vec<(Part, String, String)> = untrusted
        .iter()
        .map(|s| (Part::Server, s.name.clone(), s.digest.clone()))
        .collect();
    grant(review, trust, &parts)?;
    eprintln!(
        "gatehouse: trusted {} in {} until the file changes (`gatehouse mcp untrust` takes it back)",
        names(untrusted),
        review.file.display()
    );
    Ok(())
}

/// Record the person's yes for these parts and mark them in the review.
pub fn grant(
    review: &mut Review,
    trust: &TrustFile,
    parts: &[(Part, String, String)],
) -> anyhow::Result<()> {
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    trust
        .grant(&review.canonical, parts, &now)
        .map_err(anyhow::Error::msg)?;
    review.mark_trusted(parts);
    Ok(())
}

fn names(servers: &[ProjectServer]) -> String {
    servers
        .iter()
        .map(|s| visible_line(&s.name).into_owned())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a project's file would start, exactly, and what it asks to loosen.
pub fn listing(review: &Review, servers: &[ProjectServer]) -> String {
    let mut out = format!(
        "gatehouse: {} is a project's servers file you have not trusted. It would start:",
        review.file.display()
    );
    for server in servers {
        out.push_str(&format!(
            "\n  {}: {}",
            visible_line(&server.name),
            entry_line(&server.entry)
        ));
        if let Some(note) = runs_a_string_note(&server.entry) {
            out.push_str(&format!("\n    warning: {note}"));
        }
    }
    let loosening: Vec<&ProjectSetting> = review.untrusted_settings().collect();
    if !loosening.is_empty() {
        out.push_str(
            "\nIt also sets what would loosen your policy (ignored unless trusted by name):",
        );
        for setting in loosening {
            out.push_str(&format!("\n  {}", setting_line(setting)));
        }
    }
    out
}

/// A server's entry as one line: the command line quoted as a shell would need it (or
/// the URL), the folder, and the environment's names (values of secret names hidden).
pub fn entry_line(entry: &Value) -> String {
    let mut line = if let Some(url) = entry.get("url").and_then(Value::as_str)
        && entry.get("command").is_none()
    {
        let mut l = format!("http {}", gatehouse::redact::url(url));
        if let Some(headers) = entry.get("headers").and_then(Value::as_object) {
            let names: Vec<&str> = headers.keys().map(String::as_str).collect();
            l.push_str(&format!(" (headers: {})", names.join(", ")));
        }
        l
    } else {
        let mut words = vec![quoted(entry.get("command").unwrap_or(&Value::Null))];
        if let Some(args) = entry.get("args").and_then(Value::as_array) {
            words.extend(args.iter().map(quoted));
        }
        words.join(" ")
    };
    if let Some(cwd) = entry.get("cwd") {
        line.push_str(&format!(" (in {})", quoted(cwd)));
    }
    if let Some(env) = entry.get("env").and_then(Value::as_object) {
        let vars: Vec<String> = env
            .iter()
            .map(|(k, v)| {
                if gatehouse::redact::is_secret_name(k) {
                    format!("{k}=[hidden]")
                } else {
                    format!("{k}={}", quoted(v))
                }
            })
            .collect();
        line.push_str(&format!(" (environment: {})", vars.join(" ")));
    }
    if entry.get("inheritEnv") == Some(&Value::Bool(true)) {
        line.push_str(" (and your whole environment: inheritEnv)");
    } else if let Some(pass) = entry.get("passEnv").and_then(Value::as_array) {
        let names: Vec<String> = pass.iter().map(quoted).collect();
        line.push_str(&format!(" (and your variables {})", names.join(" ")));
    }
    match entry.get("sandbox") {
        None | Some(Value::Bool(false)) => line.push_str(" (no sandbox: your whole account)"),
        Some(Value::Bool(true)) => line.push_str(" (sandbox: the defaults)"),
        // As written, clipped: a project's file is anyone's, and may be long.
        Some(sandbox) => line.push_str(&format!(
            " (sandbox: {})",
            gatehouse::text::clip(&sandbox.to_string(), 300)
        )),
    }
    visible_line(&line).into_owned()
}

/// What a stdio entry's command line would run as a string (`sh -c '…'`), said so a person
/// reads it before it runs; `None` for one that names its program and files.
pub fn runs_a_string_note(entry: &Value) -> Option<String> {
    let command = entry.get("command")?.as_str()?;
    let args: Vec<String> = entry
        .get("args")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let (option, script) = gatehouse::config::command_line::runs_a_string(command, &args)?;
    Some(format!(
        "it runs a string as a program ({} {option}), which reads as one word: {}",
        visible_line(command),
        visible_line(&gatehouse::text::clip(&script, 300))
    ))
}

/// One word of a command line as a POSIX shell would need it written.
fn quoted(word: &Value) -> String {
    let text = match word {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    gatehouse::text::shell_word(&text).into_owned()
}

fn setting_line(setting: &ProjectSetting) -> String {
    let value = if setting.key == "rules" {
        format!("allow rules {}", setting.value)
    } else {
        setting.value.to_string()
    };
    visible_line(&format!("{}: {}", setting.key, clip(&value, SETTING_CHARS))).into_owned()
}

/// Said when a project's servers are left out because nobody could be asked.
pub fn left_out_note(review: &Review) -> String {
    let servers: Vec<ProjectServer> = review.untrusted_servers().cloned().collect();
    format!(
        "gatehouse: {} is not trusted: left out {} (see them and trust them with `gatehouse mcp trust`)",
        review.file.display(),
        names(&servers)
    )
}

fn ignored_note(review: &Review, ignored: &[&ProjectSetting]) -> String {
    let keys: Vec<String> = ignored
        .iter()
        .map(|s| visible_line(&s.key).into_owned())
        .collect();
    format!(
        "gatehouse: {} sets {} which would loosen your policy: ignored (put them in your own servers file, or `gatehouse mcp trust --settings {}`)",
        review.file.display(),
        keys.join(", "),
        keys.join(",")
    )
}

/// The person's own file read beside this folder's `.mcp.json`, if any.
fn own_file() -> Option<std::path::PathBuf> {
    match Found::locate(None) {
        Found::Project { own, .. } => own,
        _ => None,
    }
}

/// Every `--settings` key names a setting of the file that needs trust.
fn settings_named(review: &Review, file: &std::path::Path, keys: &[String]) -> anyhow::Result<()> {
    for key in keys {
        anyhow::ensure!(
            review.settings.iter().any(|s| &s.key == key),
            "{} sets no {:?} that needs trust{}",
            file.display(),
            visible_line(key),
            match review.settings.len() {
                0 => String::new(),
                _ => format!(
                    " (it sets {})",
                    review
                        .settings
                        .iter()
                        .map(|s| visible_line(&s.key).into_owned())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        );
    }
    Ok(())
}

/// Ask at the terminal whether to trust what was listed (none there: the command to run).
fn said_yes(settings: &[String]) -> anyhow::Result<bool> {
    anyhow::ensure!(
        std::io::stdin().is_terminal(),
        "no terminal to ask: read the list above, then run `gatehouse mcp trust --yes{}`",
        if settings.is_empty() {
            String::new()
        } else {
            format!(" --settings {}", settings.join(","))
        }
    );
    print!("Trust them in this folder? [y/N] ");
    std::io::stdout().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes"))
}

/// `gatehouse mcp trust`: show exactly what this folder's `.mcp.json` would start and the
/// settings named with `--settings`, then trust them once the person says yes.
pub fn trust(args: McpTrustArgs) -> anyhow::Result<()> {
    let file = Config::project_path();
    anyhow::ensure!(
        file.is_file(),
        "there is no {} in this folder: nothing to trust",
        file.display()
    );
    let project_doc = project::read_document(&file)?;
    let own = own_file();
    let own_doc = own.as_deref().map(project::read_document).transpose()?;
    let trust = trust_file();
    let trusted = trust.load().map_err(anyhow::Error::msg)?;
    let mut review = Review::of(
        &file,
        &project_doc,
        own.as_deref().zip(own_doc.as_ref()),
        &trusted,
    );
    settings_named(&review, &file, &args.settings)?;
    let servers: Vec<ProjectServer> = review.untrusted_servers().cloned().collect();
    let mut parts: Vec<(Part, String, String)> = servers
        .iter()
        .map(|s| (Part::Server, s.name.clone(), s.digest.clone()))
        .collect();
    parts.extend(
        review
            .untrusted_settings()
            .filter(|s| args.settings.contains(&s.key))
            .map(|s| (Part::Setting, s.key.clone(), s.digest.clone())),
    );
    for shadowed in review.servers.iter().filter(|s| s.shadowed) {
        println!(
            "{}: left out whatever you say: one of your own servers is named so",
            visible_line(&shadowed.name)
        );
    }
    if parts.is_empty() {
        println!(
            "Everything {} would start is trusted already{}",
            file.display(),
            if review.untrusted_settings().next().is_some() {
                "; its settings that loosen your policy are trusted only with --settings KEYS"
            } else {
                ""
            }
        );
        return Ok(());
    }
    println!("{}", listing(&review, &servers));
    if !args.settings.is_empty() {
        println!("Trusting the settings {}.", args.settings.join(", "));
    }
    if !args.yes && !said_yes(&args.settings)? {
        println!("Nothing trusted.");
        return Ok(());
    }
    grant(&mut review, &trust, &parts)?;
    println!(
        "Trusted {} part{} of {} until they change (`gatehouse mcp untrust` takes it back).",
        parts.len(),
        if parts.len() == 1 { "" } else { "s" },
        file.display()
    );
    Ok(())
}

/// `gatehouse mcp untrust`: every record of this folder's `.mcp.json` withdrawn.
pub fn untrust() -> anyhow::Result<()> {
    let file = Config::project_path();
    let removed = trust_file()
        .withdraw(&project::canonical(&file))
        .map_err(anyhow::Error::msg)?;
    println!(
        "{} is no longer trusted ({removed} record{} removed): its servers no longer start",
        file.display(),
        if removed == 1 { "" } else { "s" }
    );
    Ok(())
}

/// What the person adds to this folder's `.mcp.json` with `gatehouse mcp add` is theirs:
/// trusted as written, and nothing else of the file with it.
pub fn trust_added(path: &std::path::Path, name: &str) -> anyhow::Result<()> {
    let project = Config::project_path();
    if project::canonical(path) != project::canonical(&project) {
        return Ok(());
    }
    let doc = project::read_document(path)?;
    let Some(entry) = doc["mcpServers"].get(name) else {
        return Ok(());
    };
    let parts = [(
        Part::Server,
        name.to_owned(),
        gatehouse::digest::json_sha256(entry),
    )];
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    trust_file()
        .grant(&project::canonical(path), &parts, &now)
        .map_err(anyhow::Error::msg)
}
