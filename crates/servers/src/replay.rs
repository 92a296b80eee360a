//! A recorded server, played back (`gatehouse replay FILE --server NAME`, or `"replay":
//! "FILE"` in a servers file): a recording made with `--record` answers each request from
//! what the server answered then, matched by method and parameters with the id and every
//! `_meta` (trace context, progress token, the 2026-07-28 client fields) left out. The
//! notifications the server sent while a request was in flight (progress, log messages)
//! are sent again before its answer, under the new request's progress token. The same
//! request asked more often than recorded (a task polled longer) gets its last answer
//! again. A request the recording does not hold is answered with an error that names it
//! and the nearest recorded one. No network, no server installed: only the file.

use std::{collections::HashMap, path::Path};

use serde_json::{Value, json};

/// Largest recording read, in bytes.
pub const MAX_RECORDING_BYTES: u64 = 256 << 20;
/// Longest line read from the client, in bytes.
pub const MAX_REQUEST_BYTES: usize = 16 << 20;
/// How much of a request's text the nearest match compares, in characters.
/// (Levenshtein is quadratic in it: 300 characters are 90,000 steps a candidate.)
const COMPARED_CHARS: usize = 300;
/// Most recorded requests the nearest match compares, those of the same method first.
const MAX_COMPARED: usize = 1_000;
/// JSON-RPC error code of a request the recording does not hold.
pub const NOT_RECORDED: i64 = -32601;

/// Something the server did while a request was in flight.
#[derive(Debug, Clone)]
enum Step {
    /// A notification it sent (progress, a log message).
    Notify(Value),
    /// A request of its own to the client (an older revision's `elicitation/create`,
    /// `roots/list`, `sampling/createMessage`) and the client's recorded answer to it
    /// (its `result` or `error`).
    Ask { request: Value, answer: Value },
}

/// One recorded answer: what the server did while the request was in flight, then the
/// answer itself (a result or an error, without its id).
#[derive(Debug, Clone)]
struct Answer {
    steps: Vec<Step>,
    reply: Value,
}

/// A client request of the recording not answered yet, as it is read.
struct Open {
    /// Its place in the recording: answers keep the order their requests came in.
    seq: usize,
    key: String,
    id: Value,
    /// Its progress token (`null` when it has none).
    token: Value,
    steps: Vec<Step>,
}

/// What the replayer does for a request, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    /// Send this message.
    Send(Value),
    /// Ask the client this (its id is the replayer's to give) and go on only if its
    /// answer is `answer`, as recorded.
    Ask {
        /// The server's request.
        request: Value,
        /// The client's recorded answer: `{"result": …}` or `{"error": …}`.
        answer: Value,
    },
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

    /// The answers in `records` (the recording's lines) of server `server`, in one pass:
    /// each client request is open until the server answers it; what the server sends
    /// meanwhile goes to the open requests it belongs to (a notification by its progress
    /// token, or to all when it has none; a question of its own to the latest one).
    pub fn from_records(records: &[Value], server: &str) -> Recording {
        let mut open: Vec<Open> = Vec::new();
        let mut done: Vec<(usize, String, Answer)> = Vec::new();
        for (seq, record) in records.iter().enumerate() {
            if record["server"] != server {
                continue;
            }
            let m = &record["message"];
            let (method, id) = (m.get("method").is_some(), m.get("id").is_some());
            match (record["direction"].as_str(), method, id) {
                (Some("to_server"), true, true) => open.push(Open {
                    seq,
                    key: key_of(m),
                    id: m["id"].clone(),
                    token: m["params"]["_meta"]["progressToken"].clone(),
                    steps: Vec::new(),
                }),
                // The client's answer to the server's own question.
                (Some("to_server"), false, true) => {
                    let asked = open.iter_mut().rev().flat_map(|o| o.steps.iter_mut());
                    for step in asked {
                        if let Step::Ask { request, answer } = step
                            && answer.is_null()
                            && request["id"] == m["id"]
                        {
                            *answer = outcome(m);
                            break;
                        }
                    }
                }
                (Some("from_server"), false, true) => {
                    if let Some(at) = open.iter().position(|o| o.id == m["id"]) {
                        let o = open.remove(at);
                        let mut reply = m.clone();
                        if let Value::Object(r) = &mut reply {
                            r.remove("id");
                        }
                        let steps = o.steps;
                        done.push((o.seq, o.key, Answer { steps, reply }));
                    }
                }
                (Some("from_server"), true, true) => {
                    if let Some(latest) = open.last_mut() {
                        latest.steps.push(Step::Ask {
                            request: m.clone(),
                            answer: Value::Null,
                        });
                    }
                }
                (Some("from_server"), true, false) => {
                    let token = &m["params"]["progressToken"];
                    for o in open
                        .iter_mut()
                        .filter(|o| token.is_null() || &o.token == token)
                    {
                        o.steps.push(Step::Notify(m.clone()));
                    }
                }
                _ => {}
            }
        }
        // Answers in the order their requests came, as a replay asks them.
        done.sort_by_key(|(seq, _, _)| *seq);
        let mut recording = Recording::default();
        for (_, key, answer) in done {
            let entry = recording.answers.entry(key.clone()).or_insert_with(|| {
                recording.keys.push(key);
                (Vec::new(), 0)
            });
            entry.0.push(answer);
        }
        recording
    }

    /// What to do for `request`: the server's notifications and its own requests as they
    /// came, then its answer (under the request's id).
    pub fn answer(&mut self, request: &Value) -> Vec<Out> {
        let id = request["id"].clone();
        let key = key_of(request);
        let Some((answers, given)) = self.answers.get_mut(&key) else {
            return vec![Out::Send(self.not_recorded(&key, id))];
        };
        let answer = &answers[(*given).min(answers.len() - 1)];
        *given += 1;
        let token = request["params"]["_meta"]["progressToken"].clone();
        let mut out: Vec<Out> = answer
            .steps
            .iter()
            .filter_map(|step| match step {
                Step::Ask { request, answer } => Some(Out::Ask {
                    request: request.clone(),
                    answer: answer.clone(),
                }),
                Step::Notify(n) if token.is_null() && !n["params"]["progressToken"].is_null() => {
                    None
                }
                Step::Notify(n) => {
                    let mut n = n.clone();
                    if !token.is_null() && n["params"].get("progressToken").is_some() {
                        n["params"]["progressToken"] = token.clone();
                    }
                    Some(Out::Send(n))
                }
            })
            .collect();
        let mut reply = answer.reply.clone();
        reply["id"] = id;
        out.push(Out::Send(reply));
        out
    }

    fn not_recorded(&self, key: &str, id: Value) -> Value {
        let head = |k: &str| k.chars().take(COMPARED_CHARS).collect::<String>();
        let asked = head(key);
        let method = |k: &str| k.split(' ').next().unwrap_or("").to_owned();
        let same = |k: &&String| method(k) == method(key);
        let candidates: Vec<&String> = if self.keys.iter().any(|k| same(&k)) {
            self.keys.iter().filter(same).take(MAX_COMPARED).collect()
        } else {
            self.keys.iter().take(MAX_COMPARED).collect()
        };
        let nearest = candidates
            .into_iter()
            .map(|k| (strsim::normalized_levenshtein(&asked, &head(k)), k))
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, k)| one_line(k))
            .unwrap_or_default();
        json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": NOT_RECORDED,
            "message": format!(
                "the recording holds no {}; the nearest recorded request is {nearest}",
                one_line(key)
            ),
        }})
    }
}

/// A response's outcome: its `result` (less `_meta`) or its `error`.
pub fn outcome(response: &Value) -> Value {
    match response.get("result") {
        Some(result) => {
            let mut result = sorted(result);
            if let Value::Object(r) = &mut result {
                r.remove("_meta");
            }
            json!({"result": result})
        }
        None => json!({"error": response.get("error").cloned().unwrap_or(Value::Null)}),
    }
}

/// A request's key as said in an error: one line, cut to 300 characters.
fn one_line(key: &str) -> String {
    let line: String = key.chars().filter(|c| !c.is_control()).take(300).collect();
    if key.chars().count() > 300 {
        format!("{line}…")
    } else {
        line
    }
}

mod wire;
pub use wire::{serve, serve_on};

#[cfg(test)]
mod tests {
    use super::*;

    fn record(direction: &str, message: Value) -> Value {
        json!({"server": "s", "direction": direction, "message": message})
    }

    /// The messages sent for `request` (a recording with no questions of its own).
    fn sent(recording: &mut Recording, request: &Value) -> Vec<Value> {
        recording
            .answer(request)
            .into_iter()
            .map(|o| match o {
                Out::Send(v) => v,
                Out::Ask { .. } => panic!("no question recorded"),
            })
            .collect()
    }

    /// The lines `serve_on` writes for these lines of input.
    fn served(recording: Recording, input: &[Value]) -> Vec<Value> {
        let text: String = input.iter().map(|v| format!("{v}\n")).collect();
        let mut out = Vec::new();
        serve_on(recording, text.as_bytes(), &mut out).unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn a_servers_own_question_is_asked_again_and_the_call_goes_on_only_on_the_recorded_answer() {
        let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
            "params": {"name": "pick_color", "arguments": {}}});
        let question = json!({"jsonrpc": "2.0", "id": 0, "method": "elicitation/create",
            "params": {"message": "Which color?"}});
        let records = [
            record("to_server", call.clone()),
            record("from_server", question),
            record(
                "to_server",
                json!({"jsonrpc": "2.0", "id": 0,
                "result": {"action": "accept", "content": {"color": "blue"}}}),
            ),
            record(
                "from_server",
                json!({"jsonrpc": "2.0", "id": 4,
                "result": {"content": [{"type": "text", "text": "the user picked blue"}]}}),
            ),
        ];
        let answer = |color: &str| {
            json!({"jsonrpc": "2.0", "id": "replay-1",
            "result": {"content": {"color": color}, "action": "accept"}})
        };
        let listed = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}});
        // The same answer (its keys in another order): the recorded result. A request
        // that came while the question waited is answered after it.
        let out = served(
            Recording::from_records(&records, "s"),
            &[call.clone(), listed.clone(), answer("blue")],
        );
        assert_eq!(out[0]["method"], "elicitation/create");
        assert_eq!(out[0]["id"], "replay-1");
        assert_eq!(out[1]["id"], 4);
        assert_eq!(
            out[1]["result"]["content"][0]["text"],
            "the user picked blue"
        );
        assert_eq!(out[2]["id"], 9);
        assert_eq!(out[2]["error"]["code"], NOT_RECORDED);
        // Another answer: an error that says so, not the recorded result.
        let out = served(
            Recording::from_records(&records, "s"),
            &[call, answer("red")],
        );
        let said = out[1]["error"]["message"].as_str().unwrap();
        assert!(
            said.contains("answered the server's elicitation/create otherwise than the recording"),
            "{said}"
        );
        assert!(said.contains("red") && said.contains("blue"), "{said}");
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
        let sent = sent(&mut recording, &asked);
        assert_eq!(sent[0]["params"]["progressToken"], "p9");
        assert_eq!(
            sent[1],
            json!({"jsonrpc": "2.0", "id": "abc", "result": {"content": []}})
        );
        // Asked again: the last answer again.
        assert_eq!(
            self::sent(&mut recording, &asked)[1]["result"],
            json!({"content": []})
        );
        // Other arguments: an error naming the request and the nearest recorded one.
        let other = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"x": 2}}});
        let error = &self::sent(&mut recording, &other)[0]["error"];
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
