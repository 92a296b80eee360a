//! A recorded server, played back (`gatehouse replay FILE --server NAME`, or `"replay":
//! "FILE"` in a servers file): a recording made with `--record` answers each request from
//! what the server answered then, matched by method and parameters with the id and every
//! `_meta` (trace context, progress token, the 2026-07-28 client fields) left out. The
//! notifications the server sent while a request was in flight (progress, log messages)
//! are sent again before its answer, under the new request's progress token. The same
//! request asked more often than recorded (a task polled longer) gets its last answer
//! again. A request the recording does not hold is answered with an error that names it
//! and the nearest recorded one. No network, no server installed: only the file.

use std::{
    collections::HashMap,
    io::{BufRead, Read, Write},
    path::Path,
};

use serde_json::{Value, json};

/// Largest recording read, in bytes.
pub const MAX_RECORDING_BYTES: u64 = 256 << 20;
/// Longest line read from the client, in bytes.
pub const MAX_REQUEST_BYTES: usize = 16 << 20;
/// How much of a request's text the nearest match compares, in characters.
const COMPARED_CHARS: usize = 2_000;
/// JSON-RPC error code of a request the recording does not hold.
pub const NOT_RECORDED: i64 = -32601;

/// One recorded answer: what the server sent while the request was in flight, then the
/// answer itself (a result or an error, without its id).
#[derive(Debug, Clone)]
struct Answer {
    notifications: Vec<Value>,
    reply: Value,
}

/// A server's recorded answers, by request.
#[derive(Debug, Default)]
pub struct Recording {
    /// Key (method and parameters) → its answers in order, and how many were given.
    answers: HashMap<String, (Vec<Answer>, usize)>,
    /// The keys in the order first recorded, for the nearest match.
    keys: Vec<String>,
}

/// A request as matched: its method and its parameters less `_meta`, as compact JSON with
/// every object's keys in order (a client may write them in any order).
pub fn key_of(message: &Value) -> String {
    let mut params = message.get("params").cloned().unwrap_or(Value::Null);
    if let Value::Object(p) = &mut params {
        p.remove("_meta");
    }
    let method = message["method"].as_str().unwrap_or("");
    format!("{method} {}", sorted(&params))
}

/// `value` with the keys of every object in order.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

impl Recording {
    /// Read server `server`'s messages from the recording at `path`.
    pub fn load(path: &Path, server: &str) -> Result<Recording, String> {
        let shown = path.display();
        let size = std::fs::metadata(path)
            .map_err(|e| format!("{shown}: {e}"))?
            .len();
        if size > MAX_RECORDING_BYTES {
            return Err(format!(
                "{shown}: {size} bytes, more than a recording may hold ({MAX_RECORDING_BYTES})"
            ));
        }
        let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
        let lines: Vec<Value> = text
            .lines()
            .enumerate()
            .map(|(n, l)| {
                serde_json::from_str(l).map_err(|e| format!("{shown}:{}: not a record: {e}", n + 1))
            })
            .collect::<Result<_, _>>()?;
        let recording = Recording::from_records(&lines, server);
        if recording.keys.is_empty() {
            return Err(format!(
                "{shown}: no request to server {server:?} is recorded"
            ));
        }
        Ok(recording)
    }

    /// The answers in `records` (the recording's lines) of server `server`.
    pub fn from_records(records: &[Value], server: &str) -> Recording {
        let mine: Vec<&Value> = records
            .iter()
            .filter(|r| r["server"] == server && r["direction"] != "stderr")
            .collect();
        let mut recording = Recording::default();
        for (at, record) in mine.iter().enumerate() {
            let message = &record["message"];
            let is_request = record["direction"] == "to_server"
                && message.get("method").is_some()
                && message.get("id").is_some();
            if !is_request {
                continue;
            }
            let id = &message["id"];
            let mut notifications = Vec::new();
            let mut reply = None;
            for later in &mine[at + 1..] {
                let m = &later["message"];
                if later["direction"] != "from_server" {
                    continue;
                }
                if m.get("method").is_none() && &m["id"] == id {
                    reply = Some(m.clone());
                    break;
                }
                let token = m["params"]["progressToken"].clone();
                let ours = message["params"]["_meta"]["progressToken"] == token;
                if m.get("id").is_none() && m.get("method").is_some() && (ours || token.is_null()) {
                    notifications.push(m.clone());
                }
            }
            let Some(mut reply) = reply else { continue };
            if let Value::Object(r) = &mut reply {
                r.remove("id");
            }
            let key = key_of(message);
            let entry = recording.answers.entry(key.clone()).or_insert_with(|| {
                recording.keys.push(key);
                (Vec::new(), 0)
            });
            entry.0.push(Answer {
                notifications,
                reply,
            });
        }
        recording
    }

    /// What to send for `request`: notifications, then its answer (under its id).
    pub fn answer(&mut self, request: &Value) -> Vec<Value> {
        let id = request["id"].clone();
        let key = key_of(request);
        let Some((answers, given)) = self.answers.get_mut(&key) else {
            return vec![self.not_recorded(&key, id)];
        };
        let answer = &answers[(*given).min(answers.len() - 1)];
        *given += 1;
        let token = request["params"]["_meta"]["progressToken"].clone();
        let mut out: Vec<Value> = answer
            .notifications
            .iter()
            .filter(|n| !token.is_null() || n["params"]["progressToken"].is_null())
            .map(|n| {
                let mut n = n.clone();
                if !token.is_null() && n["params"].get("progressToken").is_some() {
                    n["params"]["progressToken"] = token.clone();
                }
                n
            })
            .collect();
        let mut reply = answer.reply.clone();
        reply["id"] = id;
        out.push(reply);
        out
    }

    fn not_recorded(&self, key: &str, id: Value) -> Value {
        let head = |k: &str| k.chars().take(COMPARED_CHARS).collect::<String>();
        let asked = head(key);
        let nearest = self
            .keys
            .iter()
            .map(|k| (strsim::normalized_levenshtein(&asked, &head(k)), k))
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, k)| gatehouse_text(k))
            .unwrap_or_default();
        json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": NOT_RECORDED,
            "message": format!(
                "the recording holds no {}; the nearest recorded request is {nearest}",
                gatehouse_text(key)
            ),
        }})
    }
}

/// A request's key as said in an error: one line, cut to 300 characters.
fn gatehouse_text(key: &str) -> String {
    let line: String = key.chars().filter(|c| !c.is_control()).take(300).collect();
    if key.chars().count() > 300 {
        format!("{line}…")
    } else {
        line
    }
}

/// Serve `recording` on stdin and stdout (newline-delimited JSON-RPC) until stdin ends.
pub fn serve(mut recording: Recording) -> std::io::Result<()> {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut out = std::io::stdout().lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = Read::by_ref(&mut input)
            .take(MAX_REQUEST_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(());
        }
        if line.len() > MAX_REQUEST_BYTES {
            eprintln!("replay: a message longer than {MAX_REQUEST_BYTES} bytes; stopping");
            return Ok(());
        }
        let Ok(message) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        // Notifications and the client's answers need no answer.
        if message.get("method").is_none() || message.get("id").is_none() {
            continue;
        }
        for reply in recording.answer(&message) {
            serde_json::to_writer(&mut out, &reply)?;
            out.write_all(b"\n")?;
        }
        out.flush()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(direction: &str, message: Value) -> Value {
        json!({"server": "s", "direction": direction, "message": message})
    }

    #[test]
    fn a_request_is_answered_by_method_and_parameters_whatever_its_id_and_meta() {
        let records = [
            record(
                "to_server",
                json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"x": 1}, "_meta": {"progressToken": 3, "traceparent": "a"}}}),
            ),
            record(
                "from_server",
                json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": 3, "progress": 1}}),
            ),
            record(
                "from_server",
                json!({"jsonrpc": "2.0", "id": 7, "result": {"content": []}}),
            ),
        ];
        let mut recording = Recording::from_records(&records, "s");
        let asked = json!({"jsonrpc": "2.0", "id": "abc", "method": "tools/call",
            "params": {"arguments": {"x": 1}, "name": "echo", "_meta": {"progressToken": "p9"}}});
        let sent = recording.answer(&asked);
        assert_eq!(sent[0]["params"]["progressToken"], "p9");
        assert_eq!(
            sent[1],
            json!({"jsonrpc": "2.0", "id": "abc", "result": {"content": []}})
        );
        // Asked again: the last answer again.
        assert_eq!(
            recording.answer(&asked)[1]["result"],
            json!({"content": []})
        );
        // Other arguments: an error naming the request and the nearest recorded one.
        let other = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"x": 2}}});
        let error = &recording.answer(&other)[0]["error"];
        assert_eq!(error["code"], NOT_RECORDED);
        let said = error["message"].as_str().unwrap();
        assert!(
            said.contains(r#"holds no tools/call {"arguments":{"x":2},"name":"echo"}"#),
            "{said}"
        );
        assert!(
            said.contains(
                r#"nearest recorded request is tools/call {"arguments":{"x":1},"name":"echo"}"#
            ),
            "{said}"
        );
    }
}
