//! One of a client's server entries in Gatehouse's own shape, carried over faithfully: the
//! transport, the command and its arguments, environment and folder, the URL and its
//! headers, each client's references to variables written as Gatehouse reads them. An
//! entry that cannot be carried (the old SSE transport, a value the client asks for when
//! it starts, a key Gatehouse has no meaning for) is an error in words, and stays in the
//! client's file.

use serde_json::{Map, Value};

use super::Client;
use gatehouse::config::NAMESPACE_SEPARATOR;

/// A server's entry in Gatehouse's shape, and what of the client's entry it leaves out.
#[derive(Debug, Clone, PartialEq)]
pub struct Carried {
    /// The entry, as Gatehouse's servers file holds it.
    pub entry: Value,
    /// Keys of the client's entry that Gatehouse does without, each with why.
    pub notes: Vec<String>,
}

/// How a client writes a reference to a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// `${VAR}` and `${VAR:-default}`, as Gatehouse does (Claude Code).
    Same,
    /// `$VAR` and `${VAR}` (Gemini CLI).
    Dollar,
    /// `${env:VAR}`, `${userHome}`, and the editor's own (`${input:…}`,
    /// `${workspaceFolder}`): Cursor and VS Code.
    Editor,
}

impl Style {
    fn of(client: Client) -> Style {
        match client {
            Client::ClaudeCode => Style::Same,
            Client::Gemini => Style::Dollar,
            Client::Cursor | Client::VsCode => Style::Editor,
        }
    }
}

/// What becomes of one key of a client's entry.
#[derive(Debug, Clone, Copy)]
enum Role {
    /// A string, under this key of Gatehouse's.
    Text(&'static str),
    /// A list of strings, under this key.
    Texts(&'static str),
    /// An object of strings, under this key.
    Pairs(&'static str),
    /// The transport, read before the rest.
    Transport,
    /// Claude Code's `oauth` (`clientId`, `callbackPort`).
    OAuth,
    /// Not carried; the person is told why.
    Dropped(&'static str),
}

/// What `key` of `client`'s entries means here; `None` for a key Gatehouse has no meaning
/// for, which keeps the entry in the client's file.
fn role(client: Client, key: &str) -> Option<Role> {
    let common = match key {
        "command" => Some(Role::Text("command")),
        "args" => Some(Role::Texts("args")),
        "env" => Some(Role::Pairs("env")),
        "cwd" => Some(Role::Text("cwd")),
        "url" => Some(Role::Text("url")),
        "headers" => Some(Role::Pairs("headers")),
        "type" => Some(Role::Transport),
        _ => None,
    };
    common.or(match (client, key) {
        (Client::ClaudeCode, "oauth") => Some(Role::OAuth),
        (Client::Gemini, "httpUrl") => Some(Role::Text("url")),
        (Client::Gemini, "includeTools") => Some(Role::Texts("enabledTools")),
        (Client::Gemini, "excludeTools") => Some(Role::Texts("disabledTools")),
        (Client::Gemini, "timeout") => Some(Role::Dropped(
            "Gatehouse's time limit for a call is its settings' toolTimeoutMs, for every server",
        )),
        (Client::Gemini, "trust") => Some(Role::Dropped(
            "Gatehouse's policy decides which calls run without asking: write allow rules in the servers file",
        )),
        (Client::Gemini, "description") => Some(Role::Dropped("a description for Gemini's own list")),
        (Client::VsCode, "dev") => Some(Role::Dropped(
            "VS Code's development mode (restart on change, debugger) is the editor's",
        )),
        _ => None,
    })
}

/// The client's entry `entry`, named `name`, in Gatehouse's shape; or why it cannot be.
pub fn convert(client: Client, name: &str, entry: &Value) -> Result<Carried, String> {
    if name.contains(NAMESPACE_SEPARATOR) || name.ends_with('_') {
        return Err(format!(
            "its name holds \"{NAMESPACE_SEPARATOR}\" or ends with \"_\", and Gatehouse names its tools {name}{NAMESPACE_SEPARATOR}TOOL, which must read one way only: rename it first"
        ));
    }
    let Value::Object(map) = entry else {
        return Err("the entry is not a JSON object".into());
    };
    let style = Style::of(client);
    let http = is_http(client, map)?;
    let mut out = Map::new();
    if http {
        out.insert("type".into(), "http".into());
    }
    let mut notes = Vec::new();
    for (key, value) in map {
        let Some(role) = role(client, key) else {
            return Err(format!(
                "\"{key}\" is not something Gatehouse can carry over"
            ));
        };
        let (to, carried) = match role {
            Role::Transport => continue,
            Role::Dropped(why) => {
                notes.push(format!("\"{key}\" is left out: {why}"));
                continue;
            }
            Role::Text(to) => (to, Value::String(text(key, value, style)?)),
            Role::Texts(to) => (to, texts(key, value, style)?),
            Role::Pairs(to) => (to, pairs(key, value, style, client)?),
            Role::OAuth => ("oauth", oauth(value)?),
        };
        if out.insert(to.into(), carried).is_some() {
            return Err(format!(
                "it gives \"{to}\" twice (\"{key}\" and another key meaning the same)"
            ));
        }
    }
    let (needs, refuses) = if http {
        ("url", "command")
    } else {
        ("command", "url")
    };
    match (out.get(needs), out.contains_key(refuses)) {
        (_, true) => Err(
            "it has both a \"command\" and a URL: which one the client uses is its own guess"
                .into(),
        ),
        (Some(Value::String(s)), false) if !s.trim().is_empty() => Ok(Carried {
            entry: Value::Object(out),
            notes,
        }),
        _ => Err(format!("it has no \"{needs}\"")),
    }
}

/// The old HTTP+SSE transport, which Gatehouse does not speak.
const SSE: &str = "it uses the old HTTP+SSE transport, which Gatehouse does not speak; give the server's Streamable HTTP endpoint instead";

/// Does the entry speak Streamable HTTP (else stdio)?
fn is_http(client: Client, map: &Map<String, Value>) -> Result<bool, String> {
    let kind = match map.get("type") {
        None => None,
        Some(Value::String(t)) => Some(t.as_str()),
        Some(_) => return Err("its \"type\" is not a string".into()),
    };
    let has = |key: &str| map.contains_key(key);
    match (client, kind) {
        (_, Some("stdio")) => Ok(false),
        (_, Some("http" | "streamable-http" | "streamableHttp")) => Ok(true),
        (_, Some("sse")) => Err(SSE.into()),
        (_, Some(other)) => Err(format!(
            "its transport \"{other}\" is not one Gatehouse speaks (stdio, or Streamable HTTP)"
        )),
        (Client::Gemini, None) if has("httpUrl") => Ok(true),
        (Client::Gemini, None) if has("url") => Err(
            "Gemini CLI reads a \"url\" without \"type\": \"http\" as the old HTTP+SSE transport, which Gatehouse does not speak; give the server's Streamable HTTP endpoint as \"httpUrl\""
                .into(),
        ),
        (_, None) if has("command") => Ok(false),
        (_, None) if has("url") => Ok(true),
        (_, None) => Err("it has neither a \"command\" nor a \"url\"".into()),
    }
}

/// A string value, its references written as Gatehouse reads them.
fn text(key: &str, value: &Value, style: Style) -> Result<String, String> {
    match value {
        Value::String(s) => translate(s, style).map_err(|e| format!("\"{key}\": {e}")),
        _ => Err(format!("\"{key}\" is not a string")),
    }
}

/// A list of strings.
fn texts(key: &str, value: &Value, style: Style) -> Result<Value, String> {
    let Value::Array(items) = value else {
        return Err(format!("\"{key}\" is not a list of strings"));
    };
    items
        .iter()
        .map(|item| text(key, item, style).map(Value::String))
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

/// An object of strings (`env`, `headers`). VS Code's `env` may hold numbers, carried as
/// their text, and `null`, which unsets a variable of the editor's: a server behind
/// Gatehouse never gets it anyway, so it is left out.
fn pairs(key: &str, value: &Value, style: Style, client: Client) -> Result<Value, String> {
    let Value::Object(map) = value else {
        return Err(format!("\"{key}\" is not an object of strings"));
    };
    let mut out = Map::new();
    for (name, v) in map {
        let v = match (client, v) {
            (Client::VsCode, Value::Null) => continue,
            (Client::VsCode, Value::Number(n)) => Value::String(n.to_string()),
            _ => v.clone(),
        };
        out.insert(
            name.clone(),
            Value::String(text(&format!("{key} {name}"), &v, style)?),
        );
    }
    Ok(Value::Object(out))
}

/// Claude Code's `oauth` (`clientId`, `callbackPort`) as Gatehouse's (`clientId`,
/// `redirectPort`).
fn oauth(value: &Value) -> Result<Value, String> {
    let Value::Object(map) = value else {
        return Err("\"oauth\" is not an object".into());
    };
    let mut out = Map::new();
    for (key, v) in map {
        match (key.as_str(), v) {
            ("clientId", Value::String(_)) => out.insert("clientId".into(), v.clone()),
            ("callbackPort", Value::Number(_)) => out.insert("redirectPort".into(), v.clone()),
            _ => {
                return Err(format!(
                    "\"oauth\" {key:?} is not something Gatehouse can carry over"
                ));
            }
        };
    }
    Ok(Value::Object(out))
}

/// A value with the client's references to variables written as Gatehouse's `${VAR}`;
/// a reference only the client can resolve is an error naming it.
fn translate(text: &str, style: Style) -> Result<String, String> {
    let out = match style {
        Style::Same => text.to_owned(),
        Style::Dollar => braced(text),
        Style::Editor => editor(text)?,
    };
    gatehouse::config::references(&out)?;
    Ok(out)
}

/// Gemini CLI's `$VAR` as `${VAR}`; `${VAR}` as it is.
fn braced(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let name = after
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
            .count();
        if name == 0 {
            out.push('$');
        } else {
            out.push_str(&format!("${{{}}}", &after[..name]));
        }
        rest = &after[name..];
    }
    out.push_str(rest);
    out
}

/// The editors' `${env:VAR}` as `${VAR}`, `${userHome}` as `${HOME}`, `${pathSeparator}`
/// and `${/}` as `/`; anything else only the editor can resolve.
fn editor(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("an unclosed \"${{\" in {text:?}"))?;
        let inner = &after[..end];
        match inner.split_once(':') {
            Some(("env", name)) => out.push_str(&format!("${{{name}}}")),
            Some(("input", id)) => {
                return Err(format!(
                    "it uses ${{input:{id}}}, an answer the editor asks for when the server starts, which Gatehouse cannot ask"
                ));
            }
            None if inner == "userHome" => out.push_str("${HOME}"),
            None if inner == "pathSeparator" || inner == "/" => out.push('/'),
            _ => {
                return Err(format!(
                    "it uses ${{{inner}}}, which only the editor knows (its open folder, its settings)"
                ));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}
