//! Hooks: the person's own commands, run around a call. `beforeCall` is given the proposed
//! call as JSON on stdin and answers `{"decision": "allow"|"deny"|"ask", "reason",
//! "arguments"?}`; `afterCall` is given the result before the model reads it and answers
//! `{}` (keep it) or `{"result": …}` (replace it).
//!
//! Everything a hook does is checked: it runs with [`crate::config::BASE_ENV`] and what its
//! entry names, never the host's secrets; it must exit within its time limit (then it and
//! everything it started are killed); it may print at most
//! [`MAX_HOOK_OUTPUT_BYTES`]. A hook that fails, times out or prints anything but an answer
//! is an error, and the caller fails closed: a deny before the call, a withheld result after.

use std::process::Stdio;

use rmcp::model::{CallToolResult, JsonObject};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::{
    config::{HookSpec, MAX_HOOK_OUTPUT_BYTES},
    rules::{Decision, MAX_REASON_CHARS},
    text::{clip, visible_line},
};

/// Most of a hook's stderr kept to explain its failure, in bytes.
pub const MAX_HOOK_STDERR_BYTES: usize = 4 << 10;

/// What `beforeCall` answered.
#[derive(Debug, Clone, PartialEq)]
pub struct BeforeAnswer {
    /// Allow, deny or ask.
    pub decision: Decision,
    /// Its reason (cut to [`MAX_REASON_CHARS`]).
    pub reason: Option<String>,
    /// Arguments to call with instead of the model's.
    pub arguments: Option<JsonObject>,
}

/// Run `beforeCall` on `input` (the proposed call).
pub async fn before_call(spec: &HookSpec, input: &Value) -> Result<BeforeAnswer, String> {
    let answer = run(spec, input).await?;
    parse_before(&answer).map_err(|e| format!("the {} hook printed {e}", spec.name))
}

/// Run `afterCall` on `input` (the call and its result): `Some` result to use instead.
pub async fn after_call(spec: &HookSpec, input: &Value) -> Result<Option<CallToolResult>, String> {
    let answer = run(spec, input).await?;
    parse_after(&answer).map_err(|e| format!("the {} hook printed {e}", spec.name))
}

fn parse_before(answer: &Value) -> Result<BeforeAnswer, String> {
    let Value::Object(map) = answer else {
        return Err(format!("{}, not an answer object", kind(answer)));
    };
    if let Some(k) = map
        .keys()
        .find(|k| !["decision", "reason", "arguments"].contains(&k.as_str()))
    {
        return Err(format!(
            "an answer with an unknown key \"{}\"",
            visible_line(k)
        ));
    }
    let Some(decision) = Decision::of(map) else {
        return Err("an answer without \"decision\": allow, deny or ask".into());
    };
    let reason = match map.get("reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(r)) => Some(clip(r, MAX_REASON_CHARS).into_owned()),
        Some(_) => return Err("a \"reason\" that is not a string".into()),
    };
    let arguments = match map.get("arguments") {
        None | Some(Value::Null) => None,
        Some(Value::Object(a)) => Some(a.clone()),
        Some(other) => {
            return Err(format!(
                "\"arguments\" that are {}, not an object",
                kind(other)
            ));
        }
    };
    Ok(BeforeAnswer {
        decision,
        reason,
        arguments,
    })
}

fn parse_after(answer: &Value) -> Result<Option<CallToolResult>, String> {
    let Value::Object(map) = answer else {
        return Err(format!("{}, not an answer object", kind(answer)));
    };
    if let Some(k) = map.keys().find(|k| k.as_str() != "result") {
        return Err(format!(
            "an answer with an unknown key \"{}\"",
            visible_line(k)
        ));
    }
    match map.get("result") {
        None | Some(Value::Null) => Ok(None),
        Some(result) => serde_json::from_value::<CallToolResult>(result.clone())
            .map(Some)
            .map_err(|e| format!("a \"result\" that is not a tool result ({e})")),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "an object",
        Value::Array(_) => "a list",
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
        Value::Bool(_) => "a boolean",
        Value::Null => "null",
    }
}

/// Run the hook with `input` on stdin; its stdout, parsed as one JSON value.
async fn run(spec: &HookSpec, input: &Value) -> Result<Value, String> {
    let name = spec.name;
    let (status, out, said) = exchange(spec, input).await?;
    if !status.success() {
        return Err(format!("the {name} hook failed ({status}){said}"));
    }
    let (out, cut) = out;
    if cut {
        return Err(format!(
            "the {name} hook printed more than {MAX_HOOK_OUTPUT_BYTES} bytes"
        ));
    }
    if out.iter().all(u8::is_ascii_whitespace) {
        return Err(format!("the {name} hook printed nothing{said}"));
    }
    serde_json::from_slice(&out)
        .map_err(|e| format!("the {name} hook printed something that is not JSON ({e})"))
}

/// Run the command of `spec` with `input` on stdin, within its time limit (then it and its
/// group are killed): its exit status, its stdout (bounded; `true` when cut), and the
/// first line of its stderr as `": …"` (empty when it said nothing).
pub(crate) async fn exchange(
    spec: &HookSpec,
    input: &Value,
) -> Result<(std::process::ExitStatus, (Vec<u8>, bool), String), String> {
    let name = spec.name;
    let mut command = tokio::process::Command::new(&spec.command);
    command
        .args(&spec.args)
        .env_clear()
        .envs(spec.pass.select(std::env::vars_os()))
        .envs(&spec.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    #[cfg(unix)]
    command.process_group(0);
    let mut child = command.spawn().map_err(|e| {
        format!(
            "the {name} hook could not start ({}): {e}",
            visible_line(&spec.command)
        )
    })?;
    let group = child.id();
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let body = input.to_string().into_bytes();
    let talk = async {
        let write = async move {
            if let Some(mut stdin) = stdin {
                // A hook that does not read its input may close it: that is its business.
                let _ = stdin.write_all(&body).await;
            }
        };
        let (_, out, err, status) = tokio::join!(
            write,
            read_bounded(stdout, MAX_HOOK_OUTPUT_BYTES),
            read_bounded(stderr, MAX_HOOK_STDERR_BYTES),
            child.wait()
        );
        (out, err, status)
    };
    let ended = tokio::time::timeout(spec.timeout, talk).await;
    kill_group(group);
    let Ok((out, err, status)) = ended else {
        return Err(format!(
            "the {name} hook gave no answer within {}",
            crate::text::seconds(spec.timeout)
        ));
    };
    let status = status.map_err(|e| format!("the {name} hook could not be waited for: {e}"))?;
    let why = String::from_utf8_lossy(&err.0);
    let why = visible_line(why.lines().next().unwrap_or("").trim()).into_owned();
    let said = if why.is_empty() {
        String::new()
    } else {
        format!(": {}", clip(&why, 200))
    };
    Ok((status, out, said))
}

/// Read at most `max` bytes, draining the rest (so the hook is never stuck writing);
/// `true` when there was more.
async fn read_bounded(
    stream: Option<impl tokio::io::AsyncRead + Unpin>,
    max: usize,
) -> (Vec<u8>, bool) {
    let Some(mut stream) = stream else {
        return (Vec::new(), false);
    };
    let (mut out, mut cut) = (Vec::new(), false);
    let mut buf = vec![0; 64 << 10];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let room = max.saturating_sub(out.len());
        out.extend_from_slice(&buf[..n.min(room)]);
        cut |= n > room;
    }
    (out, cut)
}

/// Kill the hook and everything it started (its process group), whatever state it is in.
fn kill_group(pid: Option<u32>) {
    #[cfg(unix)]
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: kill(2) with a negative pid signals the group the hook leads; it has no
        // memory effects in this process.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    #[cfg(not(unix))]
    let _ = pid;
}

#[cfg(test)]
mod tests;
