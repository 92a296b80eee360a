//! One server's entry of a servers file, read and checked: its transport (a command on
//! stdio, or an HTTP URL with its headers and sign-in), its environment and its tool
//! filters; a broken entry is an error in words, and the host skips it.

use std::{collections::BTreeMap, path::PathBuf};

use serde_json::{Map, Value};

use super::{EnvPass, ServerName, ServerSpec, Transport, Variables, oauth, suggest, tools};

/// The keys a server's entry may have; others are warned about.
const ENTRY_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "type",
    "url",
    "headers",
    "disabled",
    "passEnv",
    "inheritEnv",
    "oauth",
    "enabledTools",
    "disabledTools",
    "alwaysLoad",
    "replay",
    "sandbox",
];

/// The transports a servers file may name in `type`.
const STDIO_TYPES: &[&str] = &["stdio"];
const HTTP_TYPES: &[&str] = &["http", "streamable-http", "streamableHttp"];

fn strings(
    name: &str,
    value: Option<&Value>,
    vars: &Variables,
) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    match value {
        None => {}
        Some(Value::Object(map)) => {
            for (k, v) in map {
                let Value::String(v) = v else {
                    return Err(format!("{name} {k} must be a string"));
                };
                out.insert(
                    k.clone(),
                    vars.expand(v).map_err(|e| format!("{name} {k}: {e}"))?,
                );
            }
        }
        Some(_) => return Err(format!("\"{name}\" must be an object of strings")),
    }
    Ok(out)
}

pub(super) fn server_spec(
    name: &ServerName,
    entry: &Value,
    vars: &Variables,
    warnings: &mut Vec<String>,
) -> Result<ServerSpec, String> {
    let entry_digest = crate::digest::json_sha256(entry);
    let Value::Object(entry) = entry else {
        return Err("the entry must be an object".into());
    };
    for key in entry.keys().filter(|k| !ENTRY_KEYS.contains(&k.as_str())) {
        let hint = suggest::hint(key, ENTRY_KEYS);
        warnings.push(format!(
            "server {name}: unknown key \"{key}\" is ignored{hint}"
        ));
    }
    let kind = match entry.get("type") {
        None => None,
        Some(Value::String(t)) => Some(t.as_str()),
        Some(_) => return Err("\"type\" must be a string".into()),
    };
    let is_http = match kind {
        Some(t) if HTTP_TYPES.contains(&t) => true,
        Some(t) if STDIO_TYPES.contains(&t) => false,
        Some("sse") => {
            return Err("the old HTTP+SSE transport (\"type\": \"sse\") is not supported; give the server's Streamable HTTP endpoint with \"type\": \"http\"".into());
        }
        Some(other) => {
            return Err(format!(
                "unknown transport type \"{other}\" (use stdio or http)"
            ));
        }
        None => entry.contains_key("url") && !entry.contains_key("command"),
    };
    let mut tools = tools::rules(entry)?;
    let sandbox = super::Sandbox::parse(entry.get("sandbox"), &|s| folder(vars, s))?;
    tools.boxed = sandbox
        .as_ref()
        .map(|s| crate::digest::json_sha256(&serde_json::json!(s)));
    if sandbox.is_some() && (is_http || entry.contains_key("replay")) {
        return Err(
            "\"sandbox\" is for a server the host starts (stdio), not one it reaches or replays"
                .into(),
        );
    }
    if let Some(file) = entry.get("replay") {
        return Ok(ServerSpec {
            name: name.clone(),
            transport: replay_transport(name, file, entry, vars)?,
            tools,
            entry_digest,
            sandbox: None,
        });
    }
    if is_http {
        let transport = http_transport(name, entry, vars, warnings)?;
        return Ok(ServerSpec {
            name: name.clone(),
            transport,
            tools,
            entry_digest,
            sandbox: None,
        });
    }
    Ok(ServerSpec {
        name: name.clone(),
        transport: stdio_transport(entry, vars)?,
        tools,
        entry_digest,
        sandbox,
    })
}

/// A sandbox's folder as written: variables substituted, a leading `~/` the home folder.
fn folder(vars: &Variables, text: &str) -> Result<String, String> {
    let text = vars.expand(text)?;
    match (text.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Ok(PathBuf::from(home).join(rest).display().to_string()),
        (Some(_), None) => Err(format!("{text}: HOME is not set, so ~ cannot be found")),
        (None, _) => Ok(text),
    }
}

/// A stdio entry: its command, arguments, environment and folder, substituted and checked.
fn stdio_transport(entry: &Map<String, Value>, vars: &Variables) -> Result<Transport, String> {
    let command = match entry.get("command") {
        Some(Value::String(c)) if !c.trim().is_empty() => vars.expand(c)?,
        Some(_) => return Err("\"command\" must be a non-empty string".into()),
        None => {
            return Err(
                "no \"command\" to start the server with (or \"url\" for an http server)".into(),
            );
        }
    };
    let args = match entry.get("args") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|a| match a {
                Value::String(s) => vars.expand(s),
                other => Err(format!("\"args\" must hold strings, found {other}")),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("\"args\" must be an array of strings".into()),
    };
    let env = strings("env", entry.get("env"), vars)?;
    let cwd = match entry.get("cwd") {
        None => None,
        Some(Value::String(c)) => Some(PathBuf::from(vars.expand(c)?)),
        Some(_) => return Err("\"cwd\" must be a string".into()),
    };
    Ok(Transport::Stdio {
        command,
        args,
        env,
        cwd,
        pass: env_pass(entry)?,
    })
}

/// Each entry's relative `"replay"` path read from `dir`, the servers file's folder (a
/// path that starts with a variable is left for the variables to make).
pub(super) fn anchor_replays(doc: &mut Value, dir: &std::path::Path) {
    let Some(Value::Object(servers)) = doc.get_mut("mcpServers") else {
        return;
    };
    for entry in servers.values_mut() {
        if let Some(Value::String(file)) = entry.get_mut("replay")
            && !file.starts_with('$')
            && std::path::Path::new(file.as_str()).is_relative()
        {
            *file = dir.join(&*file).to_string_lossy().into_owned();
        }
    }
}

/// A `"replay": "FILE"` entry: this program's `replay FILE --server NAME` on stdio, which
/// answers from a recording made with `--record` (no network, no server installed). The
/// program is the running one, so the recording is played by the same build that reads it.
fn replay_transport(
    name: &str,
    file: &Value,
    entry: &Map<String, Value>,
    vars: &Variables,
) -> Result<Transport, String> {
    if entry.contains_key("command") || entry.contains_key("url") {
        return Err("\"replay\" plays a recording instead of a server: give it without \"command\" or \"url\"".into());
    }
    let file = match file {
        Value::String(f) if !f.trim().is_empty() => vars.expand(f)?,
        _ => return Err("\"replay\" must name a recording (a file --record wrote)".into()),
    };
    let program = std::env::current_exe()
        .map_err(|e| format!("\"replay\" needs this program's own path: {e}"))?;
    Ok(Transport::Stdio {
        command: program.to_string_lossy().into_owned(),
        args: vec!["replay".into(), file, "--server".into(), name.into()],
        env: strings("env", entry.get("env"), vars)?,
        cwd: None,
        pass: env_pass(entry)?,
    })
}

/// A Streamable HTTP entry: its URL and headers, substituted and checked.
fn http_transport(
    name: &str,
    entry: &Map<String, Value>,
    vars: &Variables,
    warnings: &mut Vec<String>,
) -> Result<Transport, String> {
    let url = match entry.get("url") {
        Some(Value::String(u)) => vars.expand(u)?,
        Some(_) => return Err("\"url\" must be a string".into()),
        None => return Err("an http server needs a \"url\"".into()),
    };
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(format!(
            "\"url\" must start with http:// or https://, not {url:?}"
        ));
    }
    let headers = strings("headers", entry.get("headers"), vars)?;
    for (k, v) in &headers {
        check_header(k, v)?;
    }
    let sends_credentials = headers
        .keys()
        .any(|k| k.eq_ignore_ascii_case("authorization"));
    let oauth = match (sends_credentials, entry.get("oauth")) {
        (true, None | Some(Value::Bool(false))) => None,
        (true, Some(_)) => {
            return Err(
                "\"oauth\" and an Authorization header exclude each other: the header's credentials would be sent instead of the sign-in's".into(),
            );
        }
        (false, value) => oauth::parse(name, value, vars, warnings)?,
    };
    Ok(Transport::Http {
        url,
        headers,
        oauth,
    })
}

/// A header an http server is sent: a valid name, and a value HTTP can carry. The value
/// is a credential: an error names the header, never the value.
pub(crate) fn check_header(name: &str, value: &str) -> Result<(), String> {
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(format!(
            "header name {name:?} is not a valid HTTP header name"
        ));
    }
    if value.bytes().any(|b| b == b'\r' || b == b'\n') {
        return Err(format!("header {name} has a line break in its value"));
    }
    if !value
        .bytes()
        .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
    {
        return Err(format!(
            "header {name} has a value that is not valid in HTTP (visible ASCII only; the value is not shown)"
        ));
    }
    Ok(())
}

/// `passEnv` and `inheritEnv` of a stdio entry.
pub(crate) fn env_pass(entry: &Map<String, Value>) -> Result<EnvPass, String> {
    let names = match entry.get("passEnv") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| match i.as_str() {
                Some(n)
                    if !n.is_empty()
                        && n.trim_end_matches('*')
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_')
                        && n.find('*').is_none_or(|i| i == n.len() - 1) =>
                {
                    Ok(n.to_owned())
                }
                _ => Err(format!(
                    "\"passEnv\" holds variable names (or prefixes ending in *), not {i}"
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("\"passEnv\" must be an array of variable names".into()),
    };
    let all = match entry.get("inheritEnv") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("\"inheritEnv\" must be true or false".into()),
    };
    Ok(EnvPass { names, all })
}
