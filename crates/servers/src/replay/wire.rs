//! The replayer on the wire: newline-delimited JSON-RPC read and written in order. A
//! server's own request (recorded inside a call) is sent to the client under an id of the
//! replayer's, and the call goes on only when the client answers as the recording did;
//! messages that come meanwhile wait their turn.

use std::{
    collections::VecDeque,
    io::{BufRead, Read, Write},
};

use serde_json::{Value, json};

use super::{MAX_REQUEST_BYTES, NOT_RECORDED, Out, Recording, outcome};

/// Longest text of an answer quoted in an error, in characters.
const QUOTED_CHARS: usize = 300;

/// Serve `recording` on stdin and stdout until stdin ends.
pub fn serve(recording: Recording) -> std::io::Result<()> {
    let stdin = std::io::stdin();
    serve_on(recording, stdin.lock(), std::io::stdout().lock())
}

/// Serve `recording` on `input` and `out` until `input` ends.
pub fn serve_on(
    mut recording: Recording,
    input: impl BufRead,
    out: impl Write,
) -> std::io::Result<()> {
    let mut wire = Wire {
        input,
        out,
        waiting: VecDeque::new(),
        asked: 0,
    };
    while let Some(message) = wire.next()? {
        // Notifications and stray answers need no answer.
        if message.get("method").is_none() || message.get("id").is_none() {
            continue;
        }
        let id = message["id"].clone();
        for step in recording.answer(&message) {
            match step {
                Out::Send(reply) => wire.send(&reply)?,
                Out::Ask { request, answer } => {
                    let Some(got) = wire.ask(request.clone())? else {
                        return Ok(());
                    };
                    let got = outcome(&got);
                    if got != answer {
                        wire.send(&otherwise(&id, &request, &got, &answer))?;
                        break;
                    }
                }
            }
        }
    }
    Ok(())
}

/// The call's error when the client answered the server's question otherwise than the
/// recording: what follows in the recording was the answer to another answer.
fn otherwise(id: &Value, request: &Value, got: &Value, recorded: &Value) -> Value {
    let quote = |v: &Value| {
        let text: String = v.to_string().chars().take(QUOTED_CHARS).collect();
        text
    };
    let method = request["method"].as_str().unwrap_or("a request");
    json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": NOT_RECORDED,
        "message": format!(
            "the client answered the server's {method} otherwise than the recording: {} (recorded: {})",
            quote(got),
            quote(recorded)
        ),
    }})
}

struct Wire<R, W> {
    input: R,
    out: W,
    /// Messages read while waiting for the client's answer, in order.
    waiting: VecDeque<Value>,
    /// The server's requests sent so far (their ids).
    asked: u64,
}

impl<R: BufRead, W: Write> Wire<R, W> {
    /// The next message: one that waited, else the next line; `None` when input ends.
    fn next(&mut self) -> std::io::Result<Option<Value>> {
        if let Some(m) = self.waiting.pop_front() {
            return Ok(Some(m));
        }
        self.read()
    }

    /// The next line that is JSON; `None` at the end of input or past the line bound.
    fn read(&mut self) -> std::io::Result<Option<Value>> {
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = Read::by_ref(&mut self.input)
                .take(MAX_REQUEST_BYTES as u64 + 1)
                .read_until(b'\n', &mut line)?;
            if n == 0 {
                return Ok(None);
            }
            if line.len() > MAX_REQUEST_BYTES {
                eprintln!("replay: a message longer than {MAX_REQUEST_BYTES} bytes; stopping");
                return Ok(None);
            }
            if let Ok(message) = serde_json::from_slice::<Value>(&line) {
                return Ok(Some(message));
            }
        }
    }

    fn send(&mut self, message: &Value) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.out, message)?;
        self.out.write_all(b"\n")?;
        self.out.flush()
    }

    /// Send the server's `request` under an id of ours and wait for the client's answer;
    /// what else comes meanwhile waits. `None` when input ends first.
    fn ask(&mut self, mut request: Value) -> std::io::Result<Option<Value>> {
        self.asked += 1;
        let id = json!(format!("replay-{}", self.asked));
        request["id"] = id.clone();
        self.send(&request)?;
        while let Some(message) = self.read()? {
            if message.get("method").is_none() && message["id"] == id {
                return Ok(Some(message));
            }
            self.waiting.push_back(message);
        }
        Ok(None)
    }
}
